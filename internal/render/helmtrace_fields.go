package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// docKey names a rendered object: apiVersion, kind, namespace and name.
type docKey struct{ apiVersion, kind, namespace, name string }

func keyOf(o map[string]any, demark func(string) string) docKey {
	meta, _ := o["metadata"].(map[string]any)
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return demark(s)
	}
	return docKey{str(o, "apiVersion"), str(o, "kind"), str(meta, "namespace"), str(meta, "name")}
}

// readMarkers finds the markers in the traced objects: each traced object
// is matched to the real one of the same identity (its markers read back
// as their leaves' values), and each field holding a marker is recorded
// with its parts. Where the traced object's shape (keys, list lengths)
// differs from the real one — a template compared a marked leaf — only the
// fields whose parts give the real value are kept.
func readMarkers(traced, real []helmDoc, leaves []leaf, marked map[int]bool) []service.HelmField {
	lookup := func(num bool, i int) (leaf, bool) {
		if i < 0 || i >= len(leaves) || !marked[i] || leaves[i].num != num {
			return leaf{}, false
		}
		return leaves[i], true
	}
	demark := func(s string) string {
		return markerRE.ReplaceAllStringFunc(s, func(m string) string {
			num, i := markerIndex(m)
			if l, ok := lookup(num, i); ok {
				return l.text
			}
			return m
		})
	}
	realIndex := map[docKey]int{}
	for i := len(real) - 1; i >= 0; i-- {
		realIndex[keyOf(real[i].obj.Object, func(s string) string { return s })] = i
	}
	var out []service.HelmField
	for _, d := range traced {
		ri, ok := realIndex[keyOf(d.obj.Object, demark)]
		if !ok {
			continue
		}
		realObj := real[ri].obj.Object
		sameShape := shapeEqual(d.obj.Object, realObj)
		walkScalars(d.obj.Object, nil, func(tokens []string, v any) {
			parts := markerParts(v, lookup)
			if parts == nil {
				return
			}
			want, _ := service.LookupPointer(realObj, tokens)
			verified := partsGive(parts, leaves, want)
			if verified || sameShape {
				out = append(out, service.HelmField{Doc: ri, Pointer: service.JoinPointer(tokens), Parts: parts, Verified: verified})
			}
		})
	}
	return out
}

// markerIndex reads a marker: a number marker, and the leaf's index.
func markerIndex(m string) (bool, int) {
	if strings.HasPrefix(m, "kkm") {
		i, _ := strconv.Atoi(m[3:9])
		return false, i
	}
	n, _ := strconv.Atoi(m)
	return true, n - markerNumberBase
}

// markerParts splits a scalar into literal text and leaves; nil when it
// holds no marker of a marked leaf.
func markerParts(v any, lookup func(bool, int) (leaf, bool)) []service.HelmPart {
	switch t := v.(type) {
	case float64:
		if t == float64(int64(t)) {
			if _, ok := lookup(true, int(t)-markerNumberBase); ok {
				return []service.HelmPart{{Leaf: int(t) - markerNumberBase + 1}}
			}
		}
		return nil
	case int64:
		if _, ok := lookup(true, int(t)-markerNumberBase); ok {
			return []service.HelmPart{{Leaf: int(t) - markerNumberBase + 1}}
		}
		return nil
	case string:
		var parts []service.HelmPart
		last, found := 0, false
		for _, loc := range markerRE.FindAllStringIndex(t, -1) {
			num, i := markerIndex(t[loc[0]:loc[1]])
			if _, ok := lookup(num, i); !ok {
				continue
			}
			if loc[0] > last {
				parts = append(parts, service.HelmPart{Text: t[last:loc[0]]})
			}
			parts = append(parts, service.HelmPart{Leaf: i + 1})
			last, found = loc[1], true
		}
		if !found {
			return nil
		}
		if last < len(t) {
			parts = append(parts, service.HelmPart{Text: t[last:]})
		}
		return parts
	}
	return nil
}

// partsGive reports whether the parts, with each leaf's real value, give
// want: the same string, or the same number for one number leaf.
func partsGive(parts []service.HelmPart, leaves []leaf, want any) bool {
	if len(parts) == 1 && parts[0].Leaf > 0 {
		l := leaves[parts[0].Leaf-1]
		switch w := want.(type) {
		case string:
			return w == l.text
		case float64, int64:
			return l.num && fmt.Sprint(w) == l.text
		}
		return false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Leaf > 0 {
			b.WriteString(leaves[p.Leaf-1].text)
		} else {
			b.WriteString(p.Text)
		}
	}
	w, ok := want.(string)
	return ok && w == b.String()
}

// walkScalars calls fn with each scalar below v and its pointer tokens.
func walkScalars(v any, tokens []string, fn func([]string, any)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			walkScalars(t[k], append(tokens[:len(tokens):len(tokens)], k), fn)
		}
	case []any:
		for i, e := range t {
			walkScalars(e, append(tokens[:len(tokens):len(tokens)], strconv.Itoa(i)), fn)
		}
	default:
		fn(tokens, v)
	}
}

// shapeEqual reports the same keys and list lengths at every level.
func shapeEqual(a, b any) bool {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for k, v := range at {
			bv, ok := bt[k]
			if !ok || !shapeEqual(v, bv) {
				return false
			}
		}
		return true
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !shapeEqual(at[i], bt[i]) {
				return false
			}
		}
		return true
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}
