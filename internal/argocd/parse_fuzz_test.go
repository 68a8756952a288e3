package argocd

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/testkit/argocdtest"
)

// maxFuzzInput caps what a fuzz target of this package reads in all.
const maxFuzzInput = 64 << 10

// The parsers below run once per object or app of every cluster read, so
// their allocations are guarded, with bounds about twice what they take
// (allocation counts do not depend on the machine). A change that trips one
// should say why in its commit, or give the allocations back.

// TestParseTrackingIDAllocs: three (the splits) for a valid tracking id.
func TestParseTrackingIDAllocs(t *testing.T) {
	for _, s := range []string{"web:apps/Deployment:sandbox/web", "team_web:/Service:ns/x", "no-colon"} {
		if n := testing.AllocsPerRun(100, func() { ParseTrackingID(s) }); n > 6 {
			t.Errorf("ParseTrackingID(%q): %v allocations, want at most 6", s, n)
		}
	}
}

// TestDecodeApplicationAllocs: a reused decoder takes about a dozen
// allocations per app and one per resource row (the strings kept), never
// one per byte or per field skipped.
func TestDecodeApplicationAllocs(t *testing.T) {
	for _, rows := range []int{0, 3, 30} {
		raw := argocdtest.ApplicationJSON(1, rows)
		d := NewApplicationDecoder("argocd", nil)
		if _, ok := d.Decode(raw); !ok {
			t.Fatalf("fixture with %d rows does not decode", rows)
		}
		limit := float64(24 + 2*rows)
		if n := testing.AllocsPerRun(50, func() { d.Decode(raw) }); n > limit {
			t.Errorf("Decode of an app with %d resource rows (%d bytes): %v allocations, want at most %v", rows, len(raw), n, limit)
		}
	}
}

// TestGlobMatchBoundsPatterns: patterns that would take gobwas/glob seconds
// (found by FuzzGlobMatch; testdata/fuzz/FuzzGlobMatch keeps its input)
// match nothing and return at once; the bounds leave real patterns alone.
func TestGlobMatchBoundsPatterns(t *testing.T) {
	tests := []struct {
		name, pattern, text string
		want                bool
	}{
		{"ErrManyStars", strings.Repeat("*a", 40), strings.Repeat("a", 80) + "b", false},
		{"ErrManyAlternatives", strings.Repeat("{a,aa}", 25), strings.Repeat("a", 40) + "b", false},
		{"ErrLong", "0000" + strings.Repeat("?", 1900) + "000000[000000]", "\x00", false},
		{"ErrNestedBraces", "*{*{*{*{*0", strings.Repeat("ab", 1000), false},
		{"ErrLongText", "*{a,b}", strings.Repeat("a", 254), false},
		{"SixStars", strings.Repeat("*.", 6) + "io", "a.b.c.d.e.f.io", true},
		{"StarMatchesAnyText", "*", strings.Repeat("a", 1000), true},
		{"Alternatives", "{apps,batch,extensions,networking.k8s.io}", "batch", true},
		{"LongPattern", strings.Repeat("?", 250) + "*", strings.Repeat("x", 251), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := globMatch(tt.pattern, tt.text); got != tt.want {
				t.Errorf("globMatch(%d-byte pattern) = %v, want %v", len(tt.pattern), got, tt.want)
			}
		})
	}
}
