package argocd

import (
	"strings"

	"github.com/gobwas/glob"
)

// Bounds past which a glob pattern matches nothing, as if it did not
// compile. gobwas/glob backtracks: its matching is exponential in the
// choices a pattern offers ("*a*a…" against "aa…ab" takes seconds from
// about twenty "*", "{a,aa}{a,aa}…" from about twenty groups, nested
// "*{" from five against a long text) and its
// compilation superlinear in length (two thousand "?" take seconds).
// Application authors write these rules, and one must not stall a read;
// within the bounds a match takes milliseconds at worst. Real group and
// kind patterns are far below them.
const (
	maxGlobPatternBytes = 256
	maxGlobChoices      = 6 // "*", "{" and "," together
	// maxGlobText is the longest text matched: a Kubernetes API group is at
	// most 253 bytes and a kind shorter, so longer text names nothing. The
	// cost of a match grows with a power of the text's length ("*{*{*{*{*0"
	// takes 40 ms on 60 bytes, 20 s on 253), so the bounds hold together.
	maxGlobText = 253
)

// globChoices counts what makes gobwas/glob backtrack.
func globChoices(pattern string) int {
	return strings.Count(pattern, "*") + strings.Count(pattern, "{") + strings.Count(pattern, ",")
}

// globMatch matches a group or kind of an ignoreDifferences rule the way
// Argo CD does (util/glob/glob.go Match over github.com/gobwas/glob, with
// no separators, as util/argo/normalizers/diff_normalizer.go calls it):
// "*" matches any text, including the empty core group; an empty pattern
// matches only the empty text; a pattern that does not compile, or is past
// maxGlobPatternBytes or maxGlobChoices (or a text past maxGlobText),
// matches nothing (so the rule is
// not taken to hide a change, the cautious side).
func globMatch(pattern, text string) (matched bool) {
	if !strings.ContainsAny(pattern, `*?[]{}\!`) {
		return pattern == text
	}
	if pattern == "*" {
		return true
	}
	if len(pattern) > maxGlobPatternBytes || globChoices(pattern) > maxGlobChoices || len(text) > maxGlobText {
		return false
	}
	defer func() {
		// The library is old; a pattern it cannot handle must not take the
		// server down. Argo CD logs and treats it as no match.
		if recover() != nil {
			matched = false
		}
	}()
	g, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	return g.Match(text)
}
