// Package argocd holds pure Argo CD logic: reading Application objects into
// service types. It does no I/O. Real clusters hold objects of every shape,
// so parsing is defensive: what cannot be read is skipped, and one odd
// object never fails a whole list.
package argocd

import (
	"encoding/json"
	"maps"
	"strconv"

	"github.com/kukie/gitops-server/service"
)

// ParseApplication reads an Application from its unstructured form (a
// JSON-shaped map, as json.Unmarshal or the dynamic client give it) by
// encoding it and decoding that with DecodeApplication, so both forms are
// read by one set of rules. controlNamespace is Argo CD's own namespace,
// which decides the app's id. It reports false when the object has no name.
func ParseApplication(obj map[string]any, controlNamespace string) (service.Application, bool) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return service.Application{}, false
	}
	return DecodeApplication(raw, controlNamespace)
}

// finish sets what follows from the parsed fields: the id, the level and
// its reason, each row's level, the Unknown statuses and the problems.
func finish(a *service.Application, controlNamespace string) {
	a.ID = service.AppID(a.Name, a.Namespace, controlNamespace)
	d := appDecision(*a)
	a.Level, a.LevelReason = d.Level, d.Reason
	// Each row's level, by the card's own rule, so the detail never
	// disagrees with the approval card (argocd-cm's rules matter only for
	// changed fields, which rows have none of).
	for i, r := range a.Resources {
		row := DecideRow(*a, service.ArgoCDSettings{}, r)
		if row.Reason == a.LevelReason {
			row.Reason = a.LevelReason // one string for the app's rows
		}
		a.Resources[i].RowLevel, a.Resources[i].RowCause, a.Resources[i].RowReason = row.Level, row.Cause, row.Reason
	}
	if a.SyncStatus == "" {
		a.SyncStatus = "Unknown"
	}
	if a.HealthStatus == "" {
		a.HealthStatus = "Unknown"
	}
	a.ComputeProblems()
}

// skipReconcile reads the skip-reconcile annotation
// (common/common.go AnnotationKeyAppSkipReconcile): any value
// strconv.ParseBool reads as true; controller/appcontroller.go
// canProcessApp ignores unparsable values.
func skipReconcile(value string) bool {
	skip, err := strconv.ParseBool(value)
	return err == nil && skip
}

// Application annotations that change what Argo CD does with an app.
const (
	AnnotationSkipReconcile         = "argocd.argoproj.io/skip-reconcile"
	AnnotationManifestGeneratePaths = "argocd.argoproj.io/manifest-generate-paths"
)

// sourceFromMap reads a source object in unstructured form, keeping it
// whole (repoURL without credentials) as its Spec for rendering.
// Repository URLs lose their credentials here, so no snapshot, list or
// ownership answer built from the app can show them to the team.
func sourceFromMap(m map[string]any) service.AppSource {
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
	return src
}

// mapAt returns m[key] when it is an object, or nil (reads on nil maps are safe).
func mapAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func str(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}
