package gitpreview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/service"
)

// trees is a fetcher of fixed trees by commit; main resolves to "c2".
type trees map[string]map[string][]byte

func (t trees) Resolve(_ context.Context, _ service.Cluster, ref string) (string, error) {
	if ref == "main" {
		return "c2", nil
	}
	return "", service.ReasonError(service.ENOTFOUND, service.ReasonRefNotFound, "no such ref")
}

func (t trees) Tree(ctx context.Context, _ service.Cluster, _, commit string) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files, ok := t[commit]
	if !ok {
		return nil, service.ReasonError(service.ENOTFOUND, service.ReasonRefNotFound, "no such commit")
	}
	return files, nil
}

const repo = "https://git.example.com/org/gitops.git"

var deployment = `apiVersion: v1
kind: Service
metadata: { name: web }
---
# The web Deployment.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: sidecar
          image: envoy:1.30
        - name: web
          image: nginx:1.27
          env:
            - name: MODE
              value: fast
            - name: DB_PASSWORD
              value: hunter2-in-git-value
`

func fixture() (trees, service.Cluster, service.Application, service.ObjectInfo) {
	t := trees{
		"c1": {"apps/plain/deploy.yaml": []byte(strings.Replace(deployment, "replicas: 1", "replicas: 5", 1))},
		"c2": {"apps/plain/deploy.yaml": []byte(deployment), "apps/plain/README.md": []byte("# web\n")},
	}
	c := service.Cluster{TeamID: "t", ID: "c", GitOpsRepo: repo}
	app := service.Application{Name: "web", Sources: []service.AppSource{{RepoURL: repo + "/", Path: "apps/plain", TargetRevision: "main"}},
		Destination: service.AppDestination{Namespace: "shop"}, Sync: service.AppSync{Revision: "c1"}}
	// The live list holds web first: index 0 names the container called web.
	obj := service.ObjectInfo{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Namespaced: true,
		Object: map[string]any{"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "web", "image": "nginx:1.26", "env": []any{
					map[string]any{"name": "DB_PASSWORD", "value": "live"}, map[string]any{"name": "MODE", "value": "slow"}}},
				map[string]any{"name": "sidecar", "image": "envoy:1.30"}}}}}}}
	return t, c, app, obj
}

func mustMasker(t testing.TB) *mask.Masker {
	t.Helper()
	m, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLocatePlainManifest checks the Git part of each field on a plain
// manifest at the compared revision (c1, not the branch head c2): the value
// and the line of the key, list items matched by their merge key, unset
// fields, and masking of a value the masker masks in Git.
func TestLocatePlainManifest(t *testing.T) {
	tr, c, app, obj := fixture()
	l := &Locator{Fetcher: tr, Masker: mustMasker(t)}
	fields := []service.FieldPreview{
		{Field: "/spec/replicas", Live: json.RawMessage(`2`), Planned: json.RawMessage(`3`)},
		{Field: "/spec/template/spec/containers/0/image", Live: json.RawMessage(`"nginx:1.26"`)},
		{Field: "/spec/template/spec/containers/0/env/1/value", Live: json.RawMessage(`"slow"`)},
		{Field: "/spec/template/spec/containers/0/env/0/value"},
		{Field: "/spec/paused"},
	}
	got := l.Locate(context.Background(), c, app, obj, fields)
	want := []string{
		`{"field":"/spec/replicas","live":2,"planned":3,"git":{"state":"set","value":5,"source":{"revision":"c1","path":"apps/plain/deploy.yaml","line":11,"via":"manifest"}}}`,
		`{"field":"/spec/template/spec/containers/0/image","live":"nginx:1.26","git":{"state":"set","value":"nginx:1.27","source":{"revision":"c1","path":"apps/plain/deploy.yaml","line":18,"via":"manifest"}}}`,
		`{"field":"/spec/template/spec/containers/0/env/1/value","live":"slow","git":{"state":"set","value":"fast","source":{"revision":"c1","path":"apps/plain/deploy.yaml","line":21,"via":"manifest"}}}`,
		`{"field":"/spec/template/spec/containers/0/env/0/value","masked":true,"git":{"state":"set","source":{"revision":"c1","path":"apps/plain/deploy.yaml","line":23,"via":"manifest"}}}`,
		`{"field":"/spec/paused","git":{"state":"unset","source":{"revision":"c1","path":"apps/plain/deploy.yaml","line":6,"via":"manifest"}}}`,
	}
	for i, f := range got {
		b, _ := json.Marshal(f)
		if string(b) != want[i] {
			t.Errorf("field %d\n got %s\nwant %s", i, b, want[i])
		}
	}
	// Argo CD has compared nothing yet: the target revision, resolved now.
	app.Sync.Revision = ""
	got = l.Locate(context.Background(), c, app, obj, fields[:1])
	if g := got[0].Git; g.Value == nil || string(g.Value) != "1" || g.Source.Revision != "c2" {
		t.Errorf("at the head: %+v", g)
	}
}

// TestLocateUnavailable checks the states when the preview cannot trace
// the field, one reason each.
func TestLocateUnavailable(t *testing.T) {
	tr, c, app, obj := fixture()
	l := &Locator{Fetcher: tr, Masker: mustMasker(t)}
	fields := []service.FieldPreview{{Field: "/spec/replicas"}}
	state := func(c service.Cluster, app service.Application, obj service.ObjectInfo, ctx context.Context) string {
		g := l.Locate(ctx, c, app, obj, fields)[0].Git
		return g.State + " " + string(g.Reason)
	}
	bg := context.Background()
	noRepo := c
	noRepo.GitOpsRepo = ""
	other := c
	other.GitOpsRepo = "https://git.example.com/org/other.git"
	multi := app
	multi.Sources = append(multi.Sources, app.Sources[0])
	missingRev := app
	missingRev.Sync.Revision = "c9"
	helm := trees{"c1": {"apps/plain/Chart.yaml": []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"), "apps/plain/deploy.yaml": []byte(deployment)}}
	otherObj := obj
	otherObj.Name = "api"
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	for name, c := range map[string]struct{ got, want string }{
		"NotConnected": {state(noRepo, app, obj, bg), "unavailable repo_not_connected"},
		"Mismatch":     {state(other, app, obj, bg), "unavailable repo_mismatch"},
		"MultiSource":  {state(c, multi, obj, bg), "unavailable multi_source_unsupported"},
		"RevisionGone": {state(c, missingRev, obj, bg), "unavailable ref_not_found"},
		"NotRendered":  {state(c, app, otherObj, bg), "unavailable object_not_rendered"},
		"BudgetRanOut": {state(c, app, obj, cancelled), "pending "},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", name, c.got, c.want)
		}
	}
	l.Fetcher = helm
	if got := state(c, app, obj, bg); got != "unavailable source_type_unsupported" {
		t.Errorf("helm: %q", got)
	}
	l.Fetcher = trees{}
	if got := l.Locate(bg, c, app, obj, fields)[0].Git; got.State != service.GitUnavailable || got.Reason == "" {
		t.Errorf("a fetch failure: %+v", got)
	}
}

// TestLocateBounds checks the parse bounds: a source over MaxSourceBytes is
// not parsed (repo_too_large), and the cache keeps at most MaxCachedBytes
// of parsed YAML, the oldest going first.
func TestLocateBounds(t *testing.T) {
	tr, c, app, obj := fixture()
	big := strings.Repeat("# padding line of a large manifest file\n", MaxSourceBytes/40+1) + deployment
	tr["c1"] = map[string][]byte{"apps/plain/deploy.yaml": []byte(big)}
	l := &Locator{Fetcher: tr, Masker: mustMasker(t)}
	if g := l.Locate(context.Background(), c, app, obj, []service.FieldPreview{{Field: "/spec/replicas"}})[0].Git; g.Reason != service.ReasonRepoTooLarge {
		t.Errorf("a large source: %+v", g)
	}
	// Sources of 3 MiB each: the cache holds five at most.
	files := strings.Repeat("# padding line of a large manifest file\n", (3<<20)/40) + deployment
	for i := range 8 {
		commit := fmt.Sprintf("x%d", i)
		tr[commit] = map[string][]byte{"apps/plain/deploy.yaml": []byte(files)}
		a := app
		a.Sync.Revision = commit
		l.Locate(context.Background(), c, a, obj, []service.FieldPreview{{Field: "/spec/replicas"}})
		if l.cachedBytes > MaxCachedBytes {
			t.Fatalf("after %d sources the cache holds %d bytes", i+1, l.cachedBytes)
		}
	}
	if n := l.indexes.Len(); n < 2 || n > 5 {
		t.Errorf("%d indexes kept", n)
	}
}

// TestLocateAliasesAndMergeKeys checks fields reached through YAML aliases
// and << merges (the line is where this object uses them, not the anchor),
// and list items matched by each list's own merge key (mounts by path).
func TestLocateAliasesAndMergeKeys(t *testing.T) {
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  <<: {replicas: 2}
  template:
    spec:
      containers:
        - name: a
          resources: &r
            limits: {cpu: "1"}
          volumeMounts:
            - {name: data, mountPath: /a}
            - {name: data, mountPath: /b, readOnly: true}
        - name: b
          resources: *r
`
	tr := trees{"c1": {"apps/plain/deploy.yaml": []byte(manifest)}}
	_, c, app, obj := fixture()
	obj.Object = map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "b"},
		map[string]any{"name": "a", "volumeMounts": []any{
			map[string]any{"name": "data", "mountPath": "/b"}, map[string]any{"name": "data", "mountPath": "/a"}}}}}}}}
	l := &Locator{Fetcher: tr, Masker: mustMasker(t)}
	got := l.Locate(context.Background(), c, app, obj, []service.FieldPreview{
		{Field: "/spec/replicas"},
		{Field: "/spec/template/spec/containers/0/resources/limits/cpu"},
		{Field: "/spec/template/spec/containers/1/volumeMounts/0/readOnly"},
	})
	want := []string{`2 6`, `"1" 17`, `true 15`}
	for i, f := range got {
		if f.Git == nil || f.Git.Source == nil || fmt.Sprintf("%s %d", f.Git.Value, f.Git.Source.Line) != want[i] {
			b, _ := json.Marshal(f.Git)
			t.Errorf("%s: %s, want value and line %s", f.Field, b, want[i])
		}
	}
}

// TestLocateDirectoryFilters checks directory.include and exclude: a file
// Argo CD does not deploy is not where Git sets the field.
func TestLocateDirectoryFilters(t *testing.T) {
	tr, c, app, obj := fixture()
	other := strings.Replace(deployment, "replicas: 1", "replicas: 9", 1)
	tr["c1"] = map[string][]byte{"apps/plain/a-old.yaml": []byte(other), "apps/plain/deploy.yaml": []byte(deployment)}
	l := &Locator{Fetcher: tr, Masker: mustMasker(t)}
	at := func(spec string) string {
		a := app
		a.Sources = []service.AppSource{app.Sources[0]}
		a.Sources[0].Spec = json.RawMessage(spec)
		g := l.Locate(context.Background(), c, a, obj, []service.FieldPreview{{Field: "/spec/replicas"}})[0].Git
		return fmt.Sprintf("%s %s", g.Value, g.Source.Path)
	}
	if got := at(`{}`); got != "9 apps/plain/a-old.yaml" {
		t.Errorf("no filter: %s", got)
	}
	if got := at(`{"directory":{"exclude":"a-*.yaml"}}`); got != "1 apps/plain/deploy.yaml" {
		t.Errorf("exclude: %s", got)
	}
	if got := at(`{"directory":{"include":"{deploy.yaml,x.yaml}"}}`); got != "1 apps/plain/deploy.yaml" {
		t.Errorf("include: %s", got)
	}
}
