package argocd

import (
	"encoding/json"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// Where Argo CD records what Git sets on an object.
const (
	// FieldManager is Argo CD's field manager for client- and server-side
	// apply (common/common.go ArgoCDSSAManager, passed on every sync by
	// controller/sync.go).
	FieldManager = "argocd-controller"
	// LastAppliedAnnotation holds the manifest of the last client-side
	// apply, the "original" of Argo CD's default three-way diff
	// (gitops-engine pkg/diff/diff.go).
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// gitFields is the record of the fields Git sets on one object: the
// fieldsV1 trees argocd-controller owns through server-side apply, or the
// last-applied-configuration document.
type gitFields struct {
	owned       []map[string]any
	lastApplied any
}

// readGitFields finds the record for a target. Argo CD's server-side apply
// (a managedFields entry by argocd-controller with operation Apply) comes
// first; else the last-applied-configuration of a client-side apply. ok is
// false when neither is there or the record does not parse: then nothing
// can be narrowed.
func readGitFields(lastApplied string, managed []service.ManagedFieldsEntry) (gitFields, bool) {
	var g gitFields
	for _, e := range managed {
		if e.Manager != FieldManager || e.Operation != "Apply" {
			continue
		}
		var tree map[string]any
		if json.Unmarshal(e.FieldsV1, &tree) != nil {
			return gitFields{}, false
		}
		g.owned = append(g.owned, tree)
	}
	if len(g.owned) > 0 {
		return g, true
	}
	if lastApplied == "" || json.Unmarshal([]byte(lastApplied), &g.lastApplied) != nil {
		return gitFields{}, false
	}
	return g, true
}

// sets reports whether Git sets the field a JSON pointer names. It is
// conservative: a pointer that is not valid, or that reaches through a list
// or a value Git sets as a whole, counts as set.
func (g gitFields) sets(pointer string) bool {
	tokens, ok := splitPointer(pointer)
	if !ok {
		return true
	}
	if g.owned != nil {
		for _, tree := range g.owned {
			if ownsField(tree, tokens) {
				return true
			}
		}
		return false
	}
	return setInDocument(g.lastApplied, tokens)
}

// splitPointer is service.SplitPointer, the one reading of pointers.
func splitPointer(p string) ([]string, bool) { return service.SplitPointer(p) }

// setInDocument reports whether a JSON document sets the field: it exists
// (and with it its descendants), or a proper prefix of it is a list or a
// scalar (what lies inside a list is not followed: conservatively set).
func setInDocument(doc any, tokens []string) bool {
	cur := doc
	for _, t := range tokens {
		obj, isObject := cur.(map[string]any)
		if !isObject {
			return true
		}
		v, ok := obj[t]
		if !ok {
			return false
		}
		cur = v
	}
	return true
}

// ownsField reports whether a fieldsV1 tree owns the field: "f:<name>"
// members lead to it, a leaf ({}) owns everything below it, and a list
// (members "k:{...}", "v:<json>" or "i:<n>") counts as owned whatever
// element the pointer steps into.
func ownsField(tree map[string]any, tokens []string) bool {
	cur := tree
	for _, t := range tokens {
		if len(cur) == 0 {
			return true
		}
		if next, ok := cur["f:"+t]; ok {
			m, isMap := next.(map[string]any)
			if !isMap {
				return true
			}
			cur = m
			continue
		}
		for k := range cur {
			if strings.HasPrefix(k, "k:") || strings.HasPrefix(k, "v:") || strings.HasPrefix(k, "i:") {
				return true
			}
		}
		return false
	}
	return true
}
