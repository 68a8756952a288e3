package render

import (
	"encoding/base64"
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
// leafLookup finds the marked leaf a marker names.
func leafLookup(leaves []leaf, marked map[int]bool) func(num bool, i int) (leaf, bool) {
	return func(num bool, i int) (leaf, bool) {
		if i < 0 || i >= len(leaves) || !marked[i] || leaves[i].num != num || (num && numberMarker(i) > markerNumberMax) {
			return leaf{}, false
		}
		return leaves[i], true
	}
}

func readMarkers(traced, real []helmDoc, leaves []leaf, marked map[int]bool) []service.HelmField {
	lookup := leafLookup(leaves, marked)
	demark := func(s string) string {
		return markerRE.ReplaceAllStringFunc(s, func(m string) string {
			num, i, _, ok := parseMarker(m)
			if l, found := lookup(num, i); ok && found {
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
			parts, transformed := markerParts(v, lookup)
			if parts == nil {
				return
			}
			want, _ := service.LookupPointer(realObj, tokens)
			verified := !transformed && partsGive(parts, leaves, want)
			if verified || sameShape {
				out = append(out, service.HelmField{Doc: ri, Pointer: service.JoinPointer(tokens), Parts: parts, Verified: verified})
			}
		})
	}
	return out
}

// markerParts splits a scalar into literal text and leaves; nil when it
// holds no marker of a marked leaf. transformed reports a marker a
// template changed (its case).
func markerParts(v any, lookup func(bool, int) (leaf, bool)) ([]service.HelmPart, bool) {
	var n int64
	switch t := v.(type) {
	case float64:
		if t != float64(int64(t)) {
			return nil, false
		}
		n = int64(t)
	case int64:
		n = t
	case string:
		return stringParts(t, lookup)
	default:
		return nil, false
	}
	if num, i, _, ok := parseMarker(strconv.FormatInt(n, 10)); ok && num {
		if _, found := lookup(true, i); found {
			return []service.HelmPart{{Leaf: i + 1}}, false
		}
	}
	return nil, false
}

func stringParts(t string, lookup func(bool, int) (leaf, bool)) ([]service.HelmPart, bool) {
	var parts []service.HelmPart
	last, found, transformed := 0, false, false
	for _, loc := range markerRE.FindAllStringIndex(t, -1) {
		num, i, intact, ok := parseMarker(t[loc[0]:loc[1]])
		if _, known := lookup(num, i); !ok || !known {
			continue
		}
		transformed = transformed || !intact
		if loc[0] > last {
			parts = append(parts, service.HelmPart{Text: t[last:loc[0]]})
		}
		parts = append(parts, service.HelmPart{Leaf: i + 1})
		last, found = loc[1], true
	}
	if !found {
		return nil, false
	}
	if last < len(t) {
		parts = append(parts, service.HelmPart{Text: t[last:]})
	}
	return parts, transformed
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

// secretLeaves are the leaves whose markers a core Secret's data (base64
// decoded, as b64enc writes it) or stringData holds: values the revert
// preview must never show, even as a patch's context.
func secretLeaves(traced []helmDoc, lookup func(bool, int) (leaf, bool)) []int {
	var out []int
	for _, d := range traced {
		o := d.obj.Object
		if o["apiVersion"] != "v1" || o["kind"] != "Secret" {
			continue
		}
		var texts []string
		for _, key := range []string{"data", "stringData"} {
			m, _ := o[key].(map[string]any)
			for _, v := range m {
				s, _ := v.(string)
				texts = append(texts, s)
				if b, err := base64.StdEncoding.DecodeString(s); key == "data" && err == nil {
					texts = append(texts, string(b))
				}
			}
		}
		for _, t := range texts {
			for _, m := range markerRE.FindAllString(t, -1) {
				if num, i, _, ok := parseMarker(m); ok {
					if _, known := lookup(num, i); known {
						out = append(out, i+1)
					}
				}
			}
		}
	}
	return out
}
