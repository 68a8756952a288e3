// Package argocd holds pure Argo CD logic: reading Application objects into
// service types. It does no I/O. Real clusters hold objects of every shape,
// so parsing is defensive: what cannot be read is skipped, and one odd
// object never fails a whole list.
package argocd

import (
	"encoding/json"
	"maps"
	"strconv"
	"time"

	"github.com/kukie/gitops-server/service"
)

// ParseApplication reads an Application from its unstructured form (as the
// dynamic client returns it). controlNamespace is Argo CD's own namespace,
// which decides the app's id. It reports false when the object has no name.
func ParseApplication(obj map[string]any, controlNamespace string) (service.Application, bool) {
	meta := mapAt(obj, "metadata")
	name := str(meta, "name")
	if name == "" {
		return service.Application{}, false
	}
	spec, status := mapAt(obj, "spec"), mapAt(obj, "status")
	a := service.Application{
		Name:      name,
		Namespace: str(meta, "namespace"),
		Project:   str(spec, "project"),
		Sources:   parseSources(spec),
		Destination: service.AppDestination{
			Server:    str(mapAt(spec, "destination"), "server"),
			Name:      str(mapAt(spec, "destination"), "name"),
			Namespace: str(mapAt(spec, "destination"), "namespace"),
		},
		SyncStatus:    str(mapAt(status, "sync"), "status"),
		HealthStatus:  str(mapAt(status, "health"), "status"),
		HealthMessage: str(mapAt(status, "health"), "message"),
		Operation:     parseOperation(mapAt(status, "operationState")),
		ReconciledAt:  timeAt(status, "reconciledAt"),
		Resources:     parseResources(status),
		Sync:          parseSync(status),
		Conditions:    parseConditions(status),
		History:       parseHistory(status),
	}
	a.ID = service.AppID(a.Name, a.Namespace, controlNamespace)
	a.IgnoreDifferences = parseIgnoreDifferences(spec)
	a.HydratedSource = hydratedSource(spec)
	for _, opt := range sliceAt(mapAt(spec, "syncPolicy"), "syncOptions") {
		// Argo CD matches sync options exactly.
		if s, ok := opt.(string); ok && s == "RespectIgnoreDifferences=true" {
			a.RespectIgnoreDifferences = true
		}
	}
	a.AutoSync, a.SelfHeal, a.Prune = SyncPolicy(spec)
	annotations := mapAt(meta, "annotations")
	// common/common.go AnnotationKeyAppSkipReconcile: any value
	// strconv.ParseBool reads as true; controller/appcontroller.go
	// canProcessApp ignores unparsable values.
	if skip, err := strconv.ParseBool(str(annotations, AnnotationSkipReconcile)); err == nil && skip {
		a.SkipReconcile = true
	}
	a.ManifestGeneratePaths = str(annotations, AnnotationManifestGeneratePaths) != ""
	a.SelfHealPaused = a.SelfHeal && lastSyncAttemptFailed(spec, status)
	d := appDecision(a)
	a.Level, a.LevelReason = d.Level, d.Reason
	// Each row's level, by the card's own rule, so the detail never
	// disagrees with the approval card (argocd-cm's rules matter only for
	// changed fields, which rows have none of).
	for i, r := range a.Resources {
		row := DecideRow(a, service.ArgoCDSettings{}, r)
		a.Resources[i].RowLevel, a.Resources[i].RowCause, a.Resources[i].RowReason = row.Level, row.Cause, row.Reason
	}
	if a.SyncStatus == "" {
		a.SyncStatus = "Unknown"
	}
	if a.HealthStatus == "" {
		a.HealthStatus = "Unknown"
	}
	a.ComputeProblems()
	return a, true
}

// SyncPolicy reads spec.syncPolicy.automated. Auto-sync is on when
// automated is present and enabled is absent or true (enabled exists since
// Argo CD 3.1). selfHeal and prune count only with auto-sync on.
func SyncPolicy(spec map[string]any) (autoSync, selfHeal, prune bool) {
	policy := mapAt(spec, "syncPolicy")
	automated, present := policy["automated"].(map[string]any)
	if !present {
		// "automated: {}" decodes as an empty map; null or a wrong type means off.
		return false, false, false
	}
	if enabled, ok := automated["enabled"]; ok {
		if b, isBool := enabled.(bool); !isBool || !b {
			return false, false, false
		}
	}
	return true, boolAt(automated, "selfHeal"), boolAt(automated, "prune")
}

// Application annotations that change what Argo CD does with an app.
const (
	AnnotationSkipReconcile         = "argocd.argoproj.io/skip-reconcile"
	AnnotationManifestGeneratePaths = "argocd.argoproj.io/manifest-generate-paths"
)

// parseSources reads spec.sources (or the single spec.source); with
// spec.sourceHydrator, its drySource (where people commit; see
// pkg/apis/application/v1alpha1/types.go SourceHydrator). Repository URLs
// lose their credentials here, so no snapshot, list or ownership answer
// built from the app can show them to the team.
func parseSources(spec map[string]any) []service.AppSource {
	var raw []any
	if dry, ok := mapAt(spec, "sourceHydrator")["drySource"].(map[string]any); ok {
		raw = []any{map[string]any{"repoURL": dry["repoURL"], "path": dry["path"], "targetRevision": dry["targetRevision"]}}
	} else if list, ok := spec["sources"].([]any); ok && len(list) > 0 {
		raw = list
	} else if one, ok := spec["source"].(map[string]any); ok {
		raw = []any{one}
	}
	return sourcesOf(raw)
}

// sourcesOf reads source objects, keeping each whole (repoURL without
// credentials) for rendering.
func sourcesOf(raw []any) []service.AppSource {
	out := []service.AppSource{}
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		src := service.AppSource{
			RepoURL: service.StripRepoCredentials(str(m, "repoURL")), Path: str(m, "path"), Chart: str(m, "chart"),
			TargetRevision: str(m, "targetRevision"), Ref: str(m, "ref"),
		}
		clean := maps.Clone(m)
		if _, has := clean["repoURL"]; has {
			clean["repoURL"] = src.RepoURL
		}
		if spec, err := json.Marshal(clean); err == nil {
			src.Spec = spec
		}
		out = append(out, src)
	}
	return out
}

// parseSync reads status.sync: the revision(s) and the compared source(s)
// (upstream SyncStatus.ComparedTo in pkg/apis/application/v1alpha1/types.go).
func parseSync(status map[string]any) service.AppSync {
	sync := mapAt(status, "sync")
	out := service.AppSync{Revision: str(sync, "revision"), Revisions: []string{}}
	for _, r := range sliceAt(sync, "revisions") {
		if s, ok := r.(string); ok {
			out.Revisions = append(out.Revisions, s)
		}
	}
	compared := mapAt(sync, "comparedTo")
	if list := sliceAt(compared, "sources"); len(list) > 0 {
		out.ComparedTo = sourcesOf(list)
	} else if one, ok := compared["source"].(map[string]any); ok && len(one) > 0 {
		out.ComparedTo = sourcesOf([]any{one})
	}
	return out
}

// hydratedSource is a spec.sourceHydrator app's hydrated branch
// (syncSource.targetBranch and path, in the sync source's repository or
// else the dry source's), rendered as a plain directory; nil otherwise.
func hydratedSource(spec map[string]any) *service.AppSource {
	h := mapAt(spec, "sourceHydrator")
	if h == nil {
		return nil
	}
	dry, sync := mapAt(h, "drySource"), mapAt(h, "syncSource")
	repo := str(sync, "repoURL")
	if repo == "" {
		repo = str(dry, "repoURL")
	}
	src := sourcesOf([]any{map[string]any{"repoURL": repo, "path": str(sync, "path"), "targetRevision": str(sync, "targetBranch"),
		"directory": map[string]any{}}})
	if len(src) == 0 {
		return nil
	}
	return &src[0]
}

func parseIgnoreDifferences(spec map[string]any) []service.IgnoreRule {
	var out []service.IgnoreRule
	for _, r := range sliceAt(spec, "ignoreDifferences") {
		m, ok := r.(map[string]any)
		if !ok || str(m, "kind") == "" {
			continue
		}
		rule := service.IgnoreRule{Group: str(m, "group"), Kind: str(m, "kind"), Name: str(m, "name"),
			Namespace: str(m, "namespace")}
		for _, p := range sliceAt(m, "jsonPointers") {
			if s, ok := p.(string); ok {
				rule.JSONPointers = append(rule.JSONPointers, s)
			}
		}
		rule.HasUnevaluated = len(sliceAt(m, "jqPathExpressions")) > 0 || len(sliceAt(m, "managedFieldsManagers")) > 0
		out = append(out, rule)
	}
	return out
}

func parseOperation(op map[string]any) *service.AppOperation {
	if len(op) == 0 {
		return nil
	}
	initiated := mapAt(mapAt(op, "operation"), "initiatedBy")
	return &service.AppOperation{
		Phase:       str(op, "phase"),
		Message:     str(op, "message"),
		StartedAt:   timeAt(op, "startedAt"),
		FinishedAt:  timeAt(op, "finishedAt"),
		InitiatedBy: str(initiated, "username"),
		Automated:   boolAt(initiated, "automated"),
	}
}

func parseResources(status map[string]any) []service.AppResource {
	out := []service.AppResource{}
	for _, r := range sliceAt(status, "resources") {
		m, ok := r.(map[string]any)
		if !ok || str(m, "name") == "" || str(m, "kind") == "" {
			continue
		}
		out = append(out, service.AppResource{
			Group: str(m, "group"), Version: str(m, "version"), Kind: str(m, "kind"),
			Namespace: str(m, "namespace"), Name: str(m, "name"), Status: str(m, "status"),
			Health: optionalStr(mapAt(m, "health"), "status"), Hook: boolAt(m, "hook"),
			RequiresPruning: boolAt(m, "requiresPruning"),
		})
	}
	return out
}

func parseConditions(status map[string]any) []service.AppCondition {
	out := []service.AppCondition{}
	for _, c := range sliceAt(status, "conditions") {
		m, ok := c.(map[string]any)
		if !ok || str(m, "type") == "" {
			continue
		}
		out = append(out, service.AppCondition{
			Type: str(m, "type"), Message: str(m, "message"), LastTransitionTime: timeAt(m, "lastTransitionTime"),
		})
	}
	return out
}

func parseHistory(status map[string]any) []service.AppHistoryEntry {
	out := []service.AppHistoryEntry{}
	for _, h := range sliceAt(status, "history") {
		m, ok := h.(map[string]any)
		if !ok {
			continue
		}
		e := service.AppHistoryEntry{
			Revision: str(m, "revision"), DeployedAt: timeAt(m, "deployedAt"),
			InitiatedBy: str(mapAt(m, "initiatedBy"), "username"), Revisions: []string{},
		}
		switch id := m["id"].(type) {
		case int64:
			e.ID = id
		case float64:
			e.ID = int64(id)
		}
		for _, r := range sliceAt(m, "revisions") {
			if s, ok := r.(string); ok {
				e.Revisions = append(e.Revisions, s)
			}
		}
		out = append(out, e)
	}
	return out
}

// mapAt returns m[key] when it is an object, or nil (reads on nil maps are safe).
func mapAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func sliceAt(m map[string]any, key string) []any {
	v, _ := m[key].([]any)
	return v
}

func str(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}

// optionalStr returns m[key] when it is a non-empty string, else nil.
func optionalStr(m map[string]any, key string) *string {
	if v := str(m, key); v != "" {
		return &v
	}
	return nil
}

func boolAt(m map[string]any, key string) bool {
	v, _ := m[key].(bool)
	return v
}

func timeAt(m map[string]any, key string) *time.Time {
	s, ok := m[key].(string)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil
	}
	return &t
}
