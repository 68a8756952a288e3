package argocd

import "reflect"

// lastSyncAttemptFailed reports whether Argo CD holds back auto-sync (and
// with it self-heal) because the last sync operation to the current
// revision and source failed: controller/appcontroller.go
// alreadyAttemptedSync (Argo CD 3.2+), which autoSync consults before its
// self-heal branch. Who started the operation does not matter. It is
// decided from status.operationState, status.sync and spec alone, never
// from message text; a field of an unexpected type means "not paused", so
// an odd object never hides a revert.
//
// The revisions are always compared. Upstream skips that comparison when
// manifest-generate-paths found no change under the app's paths; that
// cannot be known here, and assuming a new revision lifts the pause errs
// towards the stronger warning.
func lastSyncAttemptFailed(spec, status map[string]any) bool {
	op, ok := status["operationState"].(map[string]any)
	if !ok {
		return false
	}
	phase, _ := op["phase"].(string)
	// gitops-engine pkg/sync/common/types.go: Completed is Failed, Error or
	// Succeeded; Successful is Succeeded.
	if phase != "Failed" && phase != "Error" {
		return false
	}
	raw, present := op["syncResult"]
	if !present || raw == nil {
		return true
	}
	result, ok := raw.(map[string]any)
	if !ok {
		return false
	}
	sync, _ := status["sync"].(map[string]any)
	if _, hydrated := spec["sourceHydrator"]; hydrated {
		want, ok := syncSource(spec["sourceHydrator"])
		return ok && sameString(result["revision"], sync["revision"]) && sameSource(result["source"], want)
	}
	if sources, ok := spec["sources"].([]any); ok && len(sources) > 0 {
		// HasMultipleSources: spec.sources non-empty (and no hydrator).
		return sameStrings(result["revisions"], sync["revisions"]) && sameSource(result["sources"], spec["sources"])
	}
	return sameString(result["revision"], sync["revision"]) && sameSource(result["source"], spec["source"])
}

// syncSource is what ApplicationSpec.GetSource returns for a hydrated app
// (types.go SourceHydrator.GetSyncSource): the sync source's path and
// target branch, in its repository or else the dry source's.
func syncSource(hydrator any) (map[string]any, bool) {
	h, ok := hydrator.(map[string]any)
	if !ok {
		return nil, false
	}
	dry, _ := h["drySource"].(map[string]any)
	sync, _ := h["syncSource"].(map[string]any)
	repo := sync["repoURL"]
	if s, _ := repo.(string); s == "" {
		repo = dry["repoURL"]
	}
	return map[string]any{"repoURL": repo, "path": sync["path"], "targetRevision": sync["targetBranch"]}, true
}

// sameString compares two optional strings (absent is ""); any other type
// compares unequal.
func sameString(a, b any) bool {
	x, okA := optString(a)
	y, okB := optString(b)
	return okA && okB && x == y
}

func optString(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

// sameStrings compares two optional lists of strings (absent is empty).
func sameStrings(a, b any) bool {
	x, okA := optStrings(a)
	y, okB := optStrings(b)
	return okA && okB && reflect.DeepEqual(x, y)
}

func optStrings(v any) ([]string, bool) {
	if v == nil {
		return []string{}, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// sameSource compares sources the way upstream's reflect.DeepEqual on the
// typed structs does: a field that is null, "", false or 0 decodes to the
// same zero value as an absent one.
// An absent single source equals an empty one (a struct, not a pointer).
func sameSource(a, b any) bool {
	if a == nil {
		a = map[string]any{}
	}
	if b == nil {
		b = map[string]any{}
	}
	return reflect.DeepEqual(dropZero(a), dropZero(b))
}

// dropZero returns v without zero-valued object members, with numbers as
// float64 (the dynamic client decodes integers as int64).
func dropZero(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if e = dropZero(e); !isZero(e) {
				out[k] = e
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = dropZero(e)
		}
		return out
	case int64:
		return float64(t)
	case int:
		return float64(t)
	}
	return v
}

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case float64:
		return t == 0
	}
	return false
}
