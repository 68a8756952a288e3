package render

import (
	"math"
	"strings"
	"testing"
)

func TestChildMemoryLimit(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name        string
		container   uint64
		goMemLimit  int64
		concurrency int
		want        int64
		wantErr     bool
	}{
		{"NoContainerLimit", 0, math.MaxInt64, 4, DefaultChildMemoryBytes, false},
		{"NoContainerLimitWithGOMEMLIMIT", 0, gib, 4, DefaultChildMemoryBytes, false},
		{"UnlimitedCgroup", math.MaxUint64, math.MaxInt64, 2, DefaultChildMemoryBytes, false},
		{"UnlimitedCgroupV1", 9223372036854771712, math.MaxInt64, 2, DefaultChildMemoryBytes, false},
		{"ProductionOverlay", 2 * gib, gib, 2, 512 << 20, false},
		{"SharedByConcurrency", 4 * gib, gib, 6, 512 << 20, false},
		{"OneRenderCappedAtDefault", 16 * gib, gib, 1, DefaultChildMemoryBytes, false},
		{"ExactlyTheMinimum", 2 * gib, gib, 4, MinChildMemoryBytes, false},
		{"BelowTheMinimum", 2 * gib, gib, 5, 0, true},
		{"AutomemlimitDefaultRatioLeavesTooLittle", gib, gib * 9 / 10, 2, 0, true},
		{"GOMEMLIMITAboveContainer", gib, 2 * gib, 1, 0, true},
		{"NoGOMEMLIMITInAContainer", 2 * gib, math.MaxInt64, 1, 0, true},
		{"ZeroConcurrency", 2 * gib, gib, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChildMemoryLimit(tt.container, tt.goMemLimit, tt.concurrency)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ChildMemoryLimit = %d, %v; want %d (error %v)", got, err, tt.want, tt.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "KUKIE_RENDER_CONCURRENCY")) {
				t.Errorf("the start-up line %q must be one line naming KUKIE_RENDER_CONCURRENCY", err)
			}
		})
	}
}
