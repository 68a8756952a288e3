package argocd

import (
	"strings"

	"github.com/gobwas/glob"
)

// globMatch matches a group or kind of an ignoreDifferences rule the way
// Argo CD does (util/glob/glob.go Match over github.com/gobwas/glob, with
// no separators, as util/argo/normalizers/diff_normalizer.go calls it):
// "*" matches any text, including the empty core group; an empty pattern
// matches only the empty text; a pattern that does not compile matches
// nothing.
func globMatch(pattern, text string) (matched bool) {
	if !strings.ContainsAny(pattern, `*?[]{}\!`) {
		return pattern == text
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
