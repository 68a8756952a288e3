// Package argocdtest builds Argo CD Application objects shaped like the
// ones a real Argo CD (v3) writes, for benchmarks and load tests: with
// managedFields, an operation state whose sync result lists every
// resource, history and a compared source, so decoding meets what it meets
// in production and not a trimmed fixture.
package argocdtest

import (
	"encoding/json"
	"fmt"
)

// Revision is the commit every fixture app is synced to (apps of one
// repository share it, as they do in a fleet).
const Revision = "8f3b2a91c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9"

// Application returns app number i of a fleet as the API server returns it
// (keys in encoding/json's order): namespace argocd, an auto-sync
// self-heal policy, one Git source, and rows status.resources rows (a
// Deployment, a Service, then ConfigMaps), each in the sync result too.
// Names, paths and namespaces are unique per app; repository, revision,
// kinds and statuses are shared.
func Application(i, rows int) map[string]any {
	name := fmt.Sprintf("app-%05d", i)
	ns := "team-" + name
	source := map[string]any{"repoURL": "https://github.com/example-org/deploy.git", "path": "apps/" + name,
		"targetRevision": "main"}
	kinds := []struct{ group, kind, name string }{{"apps", "Deployment", name + "-web"}, {"", "Service", name + "-web"}}
	for len(kinds) < rows {
		kinds = append(kinds, struct{ group, kind, name string }{"", "ConfigMap", fmt.Sprintf("%s-config-%d", name, len(kinds))})
	}
	var resources, results []any
	for _, k := range kinds[:rows] {
		version := "v1"
		resources = append(resources, map[string]any{"group": k.group, "version": version, "kind": k.kind,
			"namespace": ns, "name": k.name, "status": "Synced", "health": map[string]any{"status": "Healthy"}})
		results = append(results, map[string]any{"group": k.group, "version": version, "kind": k.kind,
			"namespace": ns, "name": k.name, "status": "Synced", "message": k.kind + "/" + k.name + " configured",
			"hookPhase": "Running", "syncPhase": "Sync"})
	}
	history := []any{}
	for id := 1; id <= 2; id++ {
		history = append(history, map[string]any{"id": id, "revision": Revision, "source": source,
			"deployStartedAt": "2026-11-30T00:59:50Z", "deployedAt": "2026-11-30T00:59:55Z",
			"initiatedBy": map[string]any{"automated": true}})
	}
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": name, "namespace": "argocd", "uid": fmt.Sprintf("0d6c3c8e-5a4b-4c1e-9f0a-%012d", i),
			"resourceVersion": fmt.Sprint(100000 + i), "generation": 42, "creationTimestamp": "2026-10-01T08:00:00Z",
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
			"labels":     map[string]any{"team": "payments", "env": "prod"},
			"managedFields": []any{
				map[string]any{"apiVersion": "argoproj.io/v1alpha1", "fieldsType": "FieldsV1", "manager": "argocd-server",
					"operation": "Update", "time": "2026-10-01T08:00:00Z", "fieldsV1": map[string]any{
						"f:metadata": map[string]any{"f:finalizers": map[string]any{".": map[string]any{},
							`v:"resources-finalizer.argocd.argoproj.io"`: map[string]any{}},
							"f:labels": map[string]any{".": map[string]any{}, "f:env": map[string]any{}, "f:team": map[string]any{}}},
						"f:spec": map[string]any{".": map[string]any{}, "f:destination": map[string]any{".": map[string]any{},
							"f:namespace": map[string]any{}, "f:server": map[string]any{}}, "f:project": map[string]any{},
							"f:source": map[string]any{".": map[string]any{}, "f:path": map[string]any{}, "f:repoURL": map[string]any{},
								"f:targetRevision": map[string]any{}},
							"f:syncPolicy": map[string]any{".": map[string]any{}, "f:automated": map[string]any{".": map[string]any{},
								"f:prune": map[string]any{}, "f:selfHeal": map[string]any{}}, "f:syncOptions": map[string]any{}}}}},
				map[string]any{"apiVersion": "argoproj.io/v1alpha1", "fieldsType": "FieldsV1", "manager": "argocd-application-controller",
					"operation": "Update", "time": "2026-11-30T01:00:00Z", "fieldsV1": map[string]any{
						"f:status": map[string]any{".": map[string]any{}, "f:controllerNamespace": map[string]any{},
							"f:health":  map[string]any{".": map[string]any{}, "f:lastTransitionTime": map[string]any{}, "f:status": map[string]any{}},
							"f:history": map[string]any{}, "f:operationState": map[string]any{".": map[string]any{},
								"f:finishedAt": map[string]any{}, "f:message": map[string]any{}, "f:operation": map[string]any{},
								"f:phase": map[string]any{}, "f:startedAt": map[string]any{}, "f:syncResult": map[string]any{}},
							"f:reconciledAt": map[string]any{}, "f:resourceHealthSource": map[string]any{}, "f:resources": map[string]any{},
							"f:sourceType": map[string]any{}, "f:summary": map[string]any{".": map[string]any{}, "f:images": map[string]any{}},
							"f:sync": map[string]any{".": map[string]any{}, "f:comparedTo": map[string]any{".": map[string]any{},
								"f:destination": map[string]any{}, "f:source": map[string]any{}}, "f:revision": map[string]any{},
								"f:status": map[string]any{}}}}},
			},
		},
		"spec": map[string]any{
			"project":     "default",
			"source":      source,
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"syncPolicy": map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"CreateNamespace=true"}},
		},
		"status": map[string]any{
			"controllerNamespace": "argocd", "sourceType": "Directory", "resourceHealthSource": "appTree",
			"reconciledAt": "2026-11-30T01:00:00Z",
			"health":       map[string]any{"status": "Healthy", "lastTransitionTime": "2026-11-30T00:59:58Z"},
			"sync": map[string]any{"status": "Synced", "revision": Revision, "comparedTo": map[string]any{"source": source,
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}}},
			"resources": resources,
			"summary":   map[string]any{"images": []any{"ghcr.io/example-org/" + name + ":1.4.2"}},
			"history":   history,
			"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)",
				"startedAt": "2026-11-30T00:59:50Z", "finishedAt": "2026-11-30T00:59:55Z",
				"operation": map[string]any{"initiatedBy": map[string]any{"automated": true}, "retry": map[string]any{"limit": 5},
					"sync": map[string]any{"prune": true, "revision": Revision, "syncOptions": []any{"CreateNamespace=true"}}},
				"syncResult": map[string]any{"revision": Revision, "source": source, "resources": results}},
		},
	}
}

// ApplicationJSON is Application encoded as the API server encodes it.
func ApplicationJSON(i, rows int) []byte {
	b, err := json.Marshal(Application(i, rows))
	if err != nil {
		panic(err) // only JSON types above
	}
	return b
}
