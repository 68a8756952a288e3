package render

import (
	"path"
	"strings"
	"testing"
)

// maxFuzzInput caps what a fuzz target of this package reads.
const maxFuzzInput = 64 << 10

// lexicalResolve is the reference for cleanPath and join: rel's elements
// applied one by one to dir's (to the root's when rel starts with "/"),
// each ".." removing one; ok is false as soon as a ".." has nothing left to
// remove, which is how Argo CD refuses an app path or value file that
// "resolved to outside repository root".
func lexicalResolve(dir, rel string) (string, bool) {
	var elems []string
	if dir != "" && !strings.HasPrefix(rel, "/") {
		elems = strings.Split(dir, "/")
	}
	for _, e := range strings.Split(rel, "/") {
		switch e {
		case "", ".":
		case "..":
			if len(elems) == 0 {
				return "", false
			}
			elems = elems[:len(elems)-1]
		default:
			elems = append(elems, e)
		}
	}
	return strings.Join(elems, "/"), true
}

// insideTree reports whether p is a path cleanPath and join may return: ""
// for the root, or clean, relative and without "." or ".." elements.
func insideTree(p string) bool {
	if p == "" {
		return true
	}
	if path.Clean(p) != p || path.IsAbs(p) {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if e == "." || e == ".." {
			return false
		}
	}
	return true
}

// FuzzResolvePath checks the two functions every path of a rendered source
// goes through — the app path (cleanPath), value files, "$ref/..." value
// files, kustomize resources and components (join) — against
// lexicalResolve: what they accept stays inside the tree, and what leaves
// it is refused rather than clamped to the root.
func FuzzResolvePath(f *testing.F) {
	for _, s := range [][2]string{
		{"charts/web", "values-prod.yaml"}, {"charts/web", "../../env/values-shared.yaml"},
		{"charts/web", "/env/values-shared.yaml"}, {"charts/web", "../../../etc/passwd"},
		{"", "../x"}, {"", "/../x"}, {"apps/shop/overlays/prod", "../../base"},
		{"apps/shop", "./a/./b/../c//d/"}, {"a", "..."}, {"a", "..x/y"}, {"", "//"}, {"a/b", "x/../../../b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, dir, rel string) {
		if len(dir)+len(rel) > maxFuzzInput {
			return
		}
		if got, ok := cleanPath(rel); ok {
			want, wantOK := lexicalResolve("", rel)
			if !wantOK || got != want || !insideTree(got) {
				t.Fatalf("cleanPath(%q) = %q, true; want %q, %v", rel, got, want, wantOK)
			}
		} else if _, wantOK := lexicalResolve("", rel); wantOK {
			t.Fatalf("cleanPath(%q) refused a path inside the tree", rel)
		}
		if !insideTree(dir) {
			return // join's callers pass a directory cleanPath or join returned
		}
		got, ok := join(dir, rel)
		want, wantOK := lexicalResolve(dir, rel)
		if ok != wantOK || ok && (got != want || !insideTree(got)) {
			t.Fatalf("join(%q, %q) = %q, %v; want %q, %v", dir, rel, got, ok, want, wantOK)
		}
	})
}

// TestRenderRefusesPathsLeavingTheTree: an app path or value file with more
// ".." than it has folders fails as in Argo CD, instead of being read from
// the root ("../charts/web" used to render charts/web).
func TestRenderRefusesPathsLeavingTheTree(t *testing.T) {
	files := MustLoadRepo(t, "helm")
	refs := map[string]map[string][]byte{"values": files}
	tests := []struct {
		name string
		src  Source
		want string
	}{
		{"AppPath", Source{Path: "../charts/web"}, "outside the repository"},
		{"AbsoluteValueFile", Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"/../env/values-shared.yaml"}}}, "outside repository root"},
		{"RefValueFile", Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"$values/../env/values-shared.yaml"}}}, "outside repository root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Render(Request{Files: files, RefFiles: refs, AppName: "shop", Namespace: "shop", Source: tt.src})
			assertErrorCode(t, res, CodeRenderFailed, "")
			assertContains(t, res.Error.Message, tt.want)
		})
	}
}
