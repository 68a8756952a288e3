package service

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// applicationSetStep is, for an Application an ApplicationSet generates,
// the patch that keeps the ApplicationSet controller from undoing the
// pause — an ignoreApplicationDifferences rule for this app's
// /spec/syncPolicy, added as the plan's first step — unless the
// ApplicationSet already ignores it or only creates its apps
// (applicationsSync create-only or create-delete): Argo CD's "temporarily
// toggling auto-sync for applications managed by ApplicationSets". The
// note says why; an ApplicationSet that cannot be read gives a warning
// note and no step, never a silent pause.
func (s *SyncPauses) applicationSetStep(ctx context.Context, c Cluster, ns, app, lang string) (*syncStep, string, string) {
	info, err := s.Objects.ReadObject(ctx, c, ResourceRef{Group: "argoproj.io", Kind: "Application", Namespace: ns, Name: app})
	if err != nil || !info.Found {
		return nil, "", ""
	}
	set := ownerApplicationSet(info.Object)
	if set == "" {
		return nil, "", ""
	}
	setInfo, err := s.Objects.ReadObject(ctx, c, ResourceRef{Group: "argoproj.io", Kind: "ApplicationSet", Namespace: ns, Name: set})
	if err != nil || !setInfo.Found {
		return nil, set, pauseText(lang, noteSetUnreadable, set, app)
	}
	if applicationSetIgnoresPolicy(setInfo.Object, app) {
		return nil, set, ""
	}
	rule := pauseRule(app)
	op := map[string]any{"op": "add", "path": "/spec/ignoreApplicationDifferences/-", "value": rule}
	if list, _ := LookupPointer(setInfo.Object, []string{"spec", "ignoreApplicationDifferences"}); list == nil {
		op = map[string]any{"op": "add", "path": "/spec/ignoreApplicationDifferences", "value": []any{rule}}
	}
	patch, _ := json.Marshal([]any{op})
	return &syncStep{namespace: ns, name: set, resource: "applicationsets.argoproj.io", kind: "json", patch: string(patch)}, set,
		pauseText(lang, noteSetRule, set)
}

// ownerApplicationSet is the ApplicationSet an object's ownerReferences
// name ("" when none).
func ownerApplicationSet(obj map[string]any) string {
	refs, _ := LookupPointer(obj, []string{"metadata", "ownerReferences"})
	list, _ := refs.([]any)
	for _, r := range list {
		m, _ := r.(map[string]any)
		kind, _ := m["kind"].(string)
		apiVersion, _ := m["apiVersion"].(string)
		name, _ := m["name"].(string)
		if kind == "ApplicationSet" && strings.HasPrefix(apiVersion, "argoproj.io/") && name != "" {
			return name
		}
	}
	return ""
}

// applicationSetIgnoresPolicy reports an ApplicationSet that leaves app's
// automated policy alone: it only creates apps, or a rule of its
// ignoreApplicationDifferences (for every app, or this one) covers
// /spec/syncPolicy/automated.
func applicationSetIgnoresPolicy(set map[string]any, app string) bool {
	if sync, _ := LookupPointer(set, []string{"spec", "syncPolicy", "applicationsSync"}); sync == "create-only" || sync == "create-delete" {
		return true
	}
	rules, _ := LookupPointer(set, []string{"spec", "ignoreApplicationDifferences"})
	list, _ := rules.([]any)
	for _, r := range list {
		m, _ := r.(map[string]any)
		if name, _ := m["name"].(string); name != "" && name != app {
			continue
		}
		pointers, _ := m["jsonPointers"].([]any)
		for _, p := range pointers {
			ps, _ := p.(string)
			if want := "/spec/syncPolicy/automated"; ps != "" && (want == ps || strings.HasPrefix(want, strings.TrimSuffix(ps, "/")+"/")) {
				return true
			}
		}
	}
	return false
}

// pauseRule is the ignoreApplicationDifferences rule a pause adds for app.
func pauseRule(app string) map[string]any {
	return map[string]any{"name": app, "jsonPointers": []any{"/spec/syncPolicy"}}
}

// removeRuleStep is, for a resume, the patch that takes the pause's rule
// out of the ApplicationSet again, so the app's policy follows the
// template in Git once more: a JSON patch that tests the rule at its index
// before removing it, so a list changed meanwhile fails the command
// instead of losing another rule. nil when the rule is gone already; a
// note when the ApplicationSet cannot be read.
func (s *SyncPauses) removeRuleStep(ctx context.Context, c Cluster, ns, set, app, lang string) (*syncStep, string) {
	info, err := s.Objects.ReadObject(ctx, c, ResourceRef{Group: "argoproj.io", Kind: "ApplicationSet", Namespace: ns, Name: set})
	if err != nil || !info.Found {
		return nil, pauseText(lang, noteSetRuleUnremoved, set, app)
	}
	rules, _ := LookupPointer(info.Object, []string{"spec", "ignoreApplicationDifferences"})
	list, _ := rules.([]any)
	for i, r := range list {
		if reflect.DeepEqual(r, pauseRule(app)) {
			path := "/spec/ignoreApplicationDifferences/" + strconv.Itoa(i)
			patch, _ := json.Marshal([]any{map[string]any{"op": "test", "path": path, "value": r}, map[string]any{"op": "remove", "path": path}})
			return &syncStep{namespace: ns, name: set, resource: "applicationsets.argoproj.io", kind: "json", patch: string(patch)}, ""
		}
	}
	return nil, ""
}
