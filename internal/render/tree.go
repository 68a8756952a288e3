package render

import (
	"path"
	"sort"
	"strings"
)

// tree is a repository at one commit: file paths relative to the root.
type tree map[string][]byte

// cleanPath turns a path written in an Application or a kustomization into
// one relative to the tree root ("" for the root); ok is false when it leaves
// the tree.
func cleanPath(p string) (string, bool) {
	// Cleaning "/"+p would clamp "/../x" to "/x": clean the relative form,
	// where a ".." that leaves the root stays visible.
	c := path.Clean(strings.TrimLeft(p, "/"))
	switch {
	case c == ".":
		return "", true
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", false
	}
	return c, true
}

// join resolves rel against dir inside the tree; ok is false when it leaves it.
func join(dir, rel string) (string, bool) {
	if strings.HasPrefix(rel, "/") {
		return cleanPath(rel)
	}
	j := path.Join(dir, rel)
	if j == ".." || strings.HasPrefix(j, "../") {
		return "", false
	}
	if j == "." {
		j = ""
	}
	return j, true
}

func (t tree) isFile(p string) bool {
	_, ok := t[p]
	return ok
}

func (t tree) isDir(p string) bool {
	if p == "" {
		return len(t) > 0
	}
	prefix := p + "/"
	for name := range t {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// under lists the files below dir, relative to dir, sorted the way
// filepath.Walk visits them (lexical order within each directory).
func (t tree) under(dir string) []string {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []string
	for name := range t {
		if strings.HasPrefix(name, prefix) {
			out = append(out, strings.TrimPrefix(name, prefix))
		}
	}
	sort.Slice(out, func(i, j int) bool { return walkLess(out[i], out[j]) })
	return out
}

// walkLess orders paths as a depth-first walk with lexically sorted entries
// does: component by component.
func walkLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}
