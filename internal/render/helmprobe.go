package render

import (
	"github.com/kukie/gitops-server/service"
)

// emptyString picks the values leaves that are empty strings: a template
// that reads such a key only when it is set (if, with) renders nothing
// from it, so the field it would feed is unset in the render.
func emptyString(v any) (leaf, bool) {
	s, ok := v.(string)
	return leaf{value: v}, ok && s == ""
}

// probeEmpty renders once more with the empty string leaves replaced by
// markers and returns the leaves with them appended and, per real
// document, the fields that appear only then: where a values key the
// template already reads would set a field the render does not have (a
// patch can give that key the planned value).
func probeEmpty(h helmRun, full map[string]any, leaves []leaf, real []helmDoc) ([]leaf, []service.HelmField) {
	empties := collectLeaves(full, nil, nil, emptyString)
	if len(empties) == 0 || len(leaves)+len(empties) > maxMarkedLeaves {
		return leaves, nil
	}
	base := len(leaves)
	all := append(leaves[:len(leaves):len(leaves)], empties...)
	marked := map[int]bool{}
	for i := range empties {
		marked[base+i] = true
	}
	counter := base
	vals, _ := markValues(full, marked, &counter, emptyString).(map[string]any)
	docs, rerr := h.render(vals, false)
	if rerr != nil {
		return leaves, nil
	}
	lookup := leafLookup(all, marked)
	demark := func(s string) string { return markerRE.ReplaceAllString(s, "") }
	realIndex := map[docKey]int{}
	for i := len(real) - 1; i >= 0; i-- {
		realIndex[keyOf(real[i].obj.Object, func(s string) string { return s })] = i
	}
	var out []service.HelmField
	for _, d := range flattenDocs(docs) {
		ri, ok := realIndex[keyOf(d.obj.Object, demark)]
		if !ok {
			continue
		}
		walkScalars(d.obj.Object, nil, func(tokens []string, v any) {
			if _, exists := service.LookupPointer(real[ri].obj.Object, tokens); exists {
				return // the render sets it already: the trace says where
			}
			if parts, transformed := markerParts(v, lookup); parts != nil {
				out = append(out, service.HelmField{Doc: ri, Pointer: service.JoinPointer(tokens), Parts: parts, Verified: !transformed})
			}
		})
	}
	return all, out
}
