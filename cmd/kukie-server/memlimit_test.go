package main

import (
	"math"
	"strings"
	"testing"
)

// GOMEMLIMIT wins, then KUKIE_MEMORY_LIMIT, then 90% of the container's
// limit less the render children's budget; a container too small for
// both is one start-up line naming what to change.
func TestGoMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name          string
		gomemlimitSet bool
		goMemLimit    int64
		kukie         int64
		container     uint64
		concurrency   int
		want          int64
		from          string
	}{
		{"GOMEMLIMITWins", true, 700 * mib, 300 * mib, 2048 * mib, 2, 700 * mib, limitFromGOMEMLIMIT},
		{"KukieBeforeTheContainer", false, math.MaxInt64, 300 * mib, 2048 * mib, 2, 300 * mib, limitFromKukie},
		{"ContainerLessChildren", false, math.MaxInt64, 0, 2048 * mib, 2, 2048*mib/10*9 - 2*256*mib, limitFromContainer},
		{"NoContainerLimit", false, math.MaxInt64, 0, 0, 2, math.MaxInt64, limitNone},
		{"CgroupV1Unlimited", false, math.MaxInt64, 0, math.MaxInt64 &^ 4095, 2, math.MaxInt64, limitNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from, err := goMemoryLimit(tt.gomemlimitSet, tt.goMemLimit, tt.kukie, uint64(tt.container), tt.concurrency)
			if err != nil || got != tt.want || from != tt.from {
				t.Errorf("got %d from %s (%v), want %d from %s", got, from, err, tt.want, tt.from)
			}
		})
	}
	_, _, err := goMemoryLimit(false, math.MaxInt64, 0, 512*mib, 4)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "KUKIE_RENDER_CONCURRENCY") ||
		!strings.Contains(err.Error(), "KUKIE_MEMORY_LIMIT") {
		t.Errorf("a 512 MiB pod with 4 renders: %v", err)
	}
}

func TestMemorySize(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1GiB": 1 << 30, "134217728": 128 << 20, "200000KiB": 200000 << 10} {
		var got int64
		if err := memorySize(&got, in); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"64MiB", "1.5GiB", "1GB", "-1", "MiB", "99999999999TiB"} {
		var got int64
		if err := memorySize(&got, in); err == nil {
			t.Errorf("%s: accepted as %d", in, got)
		}
	}
}
