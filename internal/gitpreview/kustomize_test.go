package gitpreview

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// kustomizeTree is an overlay on a base: a strategic merge patch (a file),
// a JSON 6902 patch (inline), and the replicas and images transformers.
var kustomizeTree = map[string][]byte{
	"base/kustomization.yaml": []byte("resources:\n  - deploy.yaml\n"),
	"base/deploy.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  revisionHistoryLimit: 5
  template:
    metadata:
      labels: { app: web }
    spec:
      containers:
        - name: web
          image: nginx:1.27
          env:
            - name: MODE
              value: base
        - name: sidecar
          image: envoy:1.30
`),
	"overlays/prod/kustomization.yaml": []byte(`resources:
  - ../../base
namespace: shop
namePrefix: prod-
patches:
  - path: env.yaml
  - target: { kind: Deployment, name: web }
    patch: |-
      - op: replace
        path: /spec/revisionHistoryLimit
        value: 10
replicas:
  - name: web
    count: 4
images:
  - name: envoy
    newTag: "1.31"
`),
	"overlays/prod/env.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - name: MODE
              value: prod
`),
}

// TestLocateKustomize checks the trace of each way a kustomize source sets
// a field: the resource, a strategic merge patch (list items matched by
// name), a JSON 6902 patch inline in the kustomization, and the replicas
// and images transformers; a field nothing sets is unset.
func TestLocateKustomize(t *testing.T) {
	c := service.Cluster{TeamID: "t", GitOpsRepo: repo}
	app := service.Application{Name: "web", Sources: []service.AppSource{{RepoURL: repo, Path: "overlays/prod", TargetRevision: "main"}},
		Destination: service.AppDestination{Namespace: "default"}, Sync: service.AppSync{Revision: "k1"}}
	obj := service.ObjectInfo{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "prod-web", Namespaced: true,
		Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "image": "envoy:1.31"},
			map[string]any{"name": "web", "image": "nginx:1.27", "env": []any{map[string]any{"name": "MODE", "value": "x"}}},
		}}}}}}
	l := &Locator{Fetcher: trees{"k1": kustomizeTree}, Masker: mustMasker(t)}
	fields := []service.FieldPreview{
		{Field: "/spec/template/spec/containers/1/image"},
		{Field: "/spec/template/spec/containers/1/env/0/value"},
		{Field: "/spec/revisionHistoryLimit"},
		{Field: "/spec/replicas"},
		{Field: "/spec/template/spec/containers/0/image"},
		{Field: "/spec/paused"},
	}
	want := []string{
		`{"state":"set","value":"nginx:1.27","source":{"revision":"k1","path":"base/deploy.yaml","line":14,"via":"kustomize_resource"}}`,
		`{"state":"set","value":"prod","source":{"revision":"k1","path":"overlays/prod/env.yaml","line":12,"via":"kustomize_patch"}}`,
		`{"state":"set","value":10,"source":{"revision":"k1","path":"overlays/prod/kustomization.yaml","line":11,"via":"kustomize_patch"}}`,
		`{"state":"set","value":4,"source":{"revision":"k1","path":"overlays/prod/kustomization.yaml","line":14,"via":"kustomize_transformer"}}`,
		`{"state":"set","value":"envoy:1.31","source":{"revision":"k1","path":"overlays/prod/kustomization.yaml","line":16,"via":"kustomize_transformer"}}`,
		`{"state":"unset","source":{"revision":"k1","path":"base/deploy.yaml","line":1,"via":"kustomize_resource"}}`,
	}
	for i, f := range l.Locate(context.Background(), c, app, obj, fields) {
		b, _ := json.Marshal(f.Git)
		if string(b) != want[i] {
			t.Errorf("%s\n got %s\nwant %s", f.Field, b, want[i])
		}
	}
}

// TestLocateKustomizeApplicationOverrides checks the Application's own
// spec.source.kustomize: its images, replicas and patches apply after the
// kustomization's and name the entry (path empty); its namePrefix
// replaces the kustomization's.
func TestLocateKustomizeApplicationOverrides(t *testing.T) {
	c := service.Cluster{TeamID: "t", GitOpsRepo: repo}
	spec := `{"path":"overlays/prod","kustomize":{"namePrefix":"live-","images":["nginx=registry.example.com/nginx:1.30"],` +
		`"replicas":[{"name":"web","count":7}],"patches":[{"target":{"kind":"Deployment","name":"web"},` +
		`"patch":"- op: replace\n  path: /spec/revisionHistoryLimit\n  value: 3"}]}}`
	app := service.Application{Name: "web", Sources: []service.AppSource{{RepoURL: repo, Path: "overlays/prod", TargetRevision: "main",
		Spec: json.RawMessage(spec)}}, Destination: service.AppDestination{Namespace: "default"}, Sync: service.AppSync{Revision: "k1"}}
	obj := service.ObjectInfo{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "live-web", Namespaced: true,
		Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "image": "registry.example.com/nginx:1.30"}}}}}}}
	l := &Locator{Fetcher: trees{"k1": kustomizeTree}, Masker: mustMasker(t)}
	fields := []service.FieldPreview{
		{Field: "/spec/template/spec/containers/0/image"},
		{Field: "/spec/replicas"},
		{Field: "/spec/revisionHistoryLimit"},
	}
	want := []string{
		`{"state":"set","value":"registry.example.com/nginx:1.30","source":{"revision":"k1","path":"","line":0,"via":"application_override","override":"spec.source.kustomize.images[0]"}}`,
		`{"state":"set","value":7,"source":{"revision":"k1","path":"","line":0,"via":"application_override","override":"spec.source.kustomize.replicas[name=web]"}}`,
		`{"state":"set","value":3,"source":{"revision":"k1","path":"","line":0,"via":"application_override","override":"spec.source.kustomize.patches"}}`,
	}
	for i, f := range l.Locate(context.Background(), c, app, obj, fields) {
		b, _ := json.Marshal(f.Git)
		if string(b) != want[i] {
			t.Errorf("%s\n got %s\nwant %s", f.Field, b, want[i])
		}
	}
}
