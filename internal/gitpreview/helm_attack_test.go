package gitpreview

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/service"
)

// Regression tests from an attacker's read of the Helm trace: each chart
// is one a tenant could write.

func chartRepo(extra map[string]string) trees {
	files := map[string][]byte{
		"charts/web/Chart.yaml": []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
	}
	for k, v := range extra {
		files[k] = []byte(v)
	}
	return trees{"c1": files}
}

func appFor(spec string) (service.Cluster, service.Application) {
	c := service.Cluster{TeamID: "t", ID: "c", GitOpsRepo: repo}
	app := service.Application{Name: "shop", Sources: []service.AppSource{{RepoURL: repo, Path: "charts/web", TargetRevision: "main",
		Spec: json.RawMessage(spec)}}, Destination: service.AppDestination{Namespace: "shop"}, Sync: service.AppSync{Revision: "c1"}}
	return c, app
}

// changeFor locates one field of obj and writes the plan's Git change.
func changeFor(t *testing.T, tr trees, spec string, obj service.ObjectInfo, f service.FieldPreview) (service.FieldPreview, service.GitChange) {
	t.Helper()
	c, app := appFor(spec)
	l := &Locator{Fetcher: tr, Masker: mustMasker(t), Tracer: &inProcess{}}
	fields := l.Locate(context.Background(), c, app, obj, []service.FieldPreview{f})
	w := service.ArgoCDWarning{Resources: []service.OwnershipResource{{Kind: obj.Kind, Name: obj.Name, Application: "shop",
		Level: service.LevelSelfHeal, Fields: fields}}}
	payload, _ := json.Marshal(map[string]any{"argocd": w})
	changes := &service.GitChanges{Plans: onePlan{plan: service.Plan{ClusterID: "c", Payload: payload}},
		Clusters: oneCluster{c: c}, Fetcher: tr, Masker: mask.ForService{M: mustMasker(t)}}
	ch, err := changes.Change(context.Background(), service.Principal{TeamID: "t"}, "00000000-0000-4000-8000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	return fields[0], ch
}

func unsupportedAs(t *testing.T, ch service.GitChange, reason string) {
	t.Helper()
	if len(ch.Files) != 0 || len(ch.Unsupported) != 1 || ch.Unsupported[0].Reason != reason {
		t.Errorf("want the field left out as %s: %+v", reason, ch)
	}
}

func cm(name string) service.ObjectInfo {
	return service.ObjectInfo{Kind: "ConfigMap", Namespace: "shop", Name: name, Namespaced: true, Object: map[string]any{}}
}

// A values leaf that feeds a Secret (by a key name the masker does not
// know) is never a patch's context.
func TestHelmPatchKeepsSecretFedValuesOutOfContext(t *testing.T) {
	for name, secret := range map[string]string{
		"stringData": "stringData:\n  password: {{ .Values.db.x1 }}\n",
		"b64enc":     "data:\n  password: {{ .Values.db.x1 | b64enc }}\n",
	} {
		t.Run(name, func(t *testing.T) {
			tr := chartRepo(map[string]string{
				"charts/web/values.yaml":      "replicaCount: 1\ndb:\n  user: app\n  x1: hunter2-Sup3r\n",
				"charts/web/templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {{ .Values.replicaCount }}\n",
				"charts/web/templates/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n" + secret,
			})
			f, ch := changeFor(t, tr, `{"path":"charts/web"}`, service.ObjectInfo{Group: "apps", Kind: "Deployment", Namespace: "shop",
				Name: "web", Namespaced: true, Object: map[string]any{}}, service.FieldPreview{Field: "/spec/replicas", Planned: json.RawMessage(`5`)})
			if f.Git.Source.Via != ViaHelmValues || f.Git.Reason != ReasonSecretInContext || f.Git.Source.KeyPlanned != nil {
				t.Errorf("git %+v %+v", f.Git, f.Git.Source)
			}
			unsupportedAs(t, ch, service.UnsupportedSecretInContext)
		})
	}
}

// A values key that is itself a secret (a webhook URL as a map key) masks
// the field: the key is not shown.
func TestHelmKeyThatIsASecretIsNotShown(t *testing.T) {
	url := "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/abcdefghijklmnopqrstuvwx"
	tr := chartRepo(map[string]string{
		"charts/web/values.yaml": "hooks:\n  \"" + url + "\":\n    name: ops\n    channel: \"#ops\"\n",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooks\ndata:\n" +
			"{{- range $u, $h := .Values.hooks }}\n  hook: {{ $h.channel | quote }}\n{{- end }}\n",
	})
	c, app := appFor(`{"path":"charts/web"}`)
	l := &Locator{Fetcher: tr, Masker: mustMasker(t), Tracer: &inProcess{}}
	fields := l.Locate(context.Background(), c, app, cm("hooks"), []service.FieldPreview{{Field: "/data/hook", Planned: json.RawMessage(`"#dev"`)}})
	b, _ := json.Marshal(fields[0])
	if strings.Contains(string(b), "abcdefghijklmnopqrstuvwx") || !fields[0].Masked {
		t.Errorf("the secret key shows: %s", b)
	}
}

// Lists of lists keep each object's trace on its own document (the one
// expansion Argo CD makes, counted once).
func TestHelmNestedListsKeepTheirDocuments(t *testing.T) {
	tpl := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n" +
		"  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: \"{{ .Values.a }}\"}}\n" +
		"  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {x: \"{{ .Values.b }}\"}}\n" +
		"- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {x: \"{{ .Values.c }}\"}}\n"
	tr := chartRepo(map[string]string{"charts/web/values.yaml": "a: alpha\nb: bravo\nc: charlie\n", "charts/web/templates/l.yaml": tpl})
	c, app := appFor(`{"path":"charts/web"}`)
	l := &Locator{Fetcher: tr, Masker: mustMasker(t), Tracer: &inProcess{}}
	g := l.Locate(context.Background(), c, app, cm("c"), []service.FieldPreview{{Field: "/data/x"}})[0].Git
	if g.Source == nil || g.Source.Key != "c" || string(g.Value) != `"charlie"` || g.Source.Path != "charts/web/values.yaml" {
		t.Errorf("ConfigMap c: %+v %+v", g, g.Source)
	}
	// Argo CD expands one level of List (GenerateManifests upstream): the
	// inner list's items are not objects of the app.
	for _, name := range []string{"a", "b"} {
		if g := l.Locate(context.Background(), c, app, cm(name), []service.FieldPreview{{Field: "/data/x"}})[0].Git; g.Reason != service.ReasonObjectNotRendered {
			t.Errorf("ConfigMap %s: %+v", name, g)
		}
	}
}

// A key set through a << merge or an alias is an anchor's line other
// places share: shown, never rewritten.
func TestHelmSharedAnchorsAreNotRewritten(t *testing.T) {
	merge := chartRepo(map[string]string{
		"charts/web/values.yaml":       "image:\n  tag: \"1.0\"\n",
		"charts/web/values-prod.yaml":  "common: &c\n  tag: \"2.0\"\nimage:\n  <<: *c\n",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  tag: {{ .Values.image.tag | quote }}\n",
	})
	f, ch := changeFor(t, merge, `{"path":"charts/web","helm":{"valueFiles":["values-prod.yaml"]}}`, cm("cm"),
		service.FieldPreview{Field: "/data/tag", Planned: json.RawMessage(`"3.0"`)})
	if f.Git.Source.Path != "charts/web/values-prod.yaml" || f.Git.Source.Line != 4 || f.Git.Reason != ReasonHelmKeyShared {
		t.Errorf("merge: %+v %+v", f.Git, f.Git.Source)
	}
	unsupportedAs(t, ch, service.UnsupportedSharedAnchor)
	alias := chartRepo(map[string]string{
		"charts/web/values.yaml":       "web: &w\n  tag: \"1.0\"\nworker: *w\n",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  worker: {{ .Values.worker.tag | quote }}\n",
	})
	_, ch = changeFor(t, alias, `{"path":"charts/web"}`, cm("cm"), service.FieldPreview{Field: "/data/worker", Planned: json.RawMessage(`"2.0"`)})
	unsupportedAs(t, ch, service.UnsupportedSharedAnchor)
}

// lower turns the marker's case: the key is named, its new value is not
// guessed.
func TestHelmLowerIsTransformed(t *testing.T) {
	tr := chartRepo(map[string]string{
		"charts/web/values.yaml":       "name: web\n",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  nm: {{ .Values.name | lower | quote }}\n",
	})
	f, ch := changeFor(t, tr, `{"path":"charts/web"}`, cm("cm"), service.FieldPreview{Field: "/data/nm", Planned: json.RawMessage(`"WEB"`)})
	if f.Git.Source.Key != "name" || f.Git.Source.KeyPlanned != nil {
		t.Errorf("lower: %+v", f.Git.Source)
	}
	unsupportedAs(t, ch, service.UnsupportedTransformed)
}

// The cache counts what a trace holds, its leaves' text included.
func TestHelmBytesCountsTheTrace(t *testing.T) {
	tr := chartRepo(map[string]string{
		"charts/web/values.yaml":       "blob: " + strings.Repeat("A", 1<<20) + "\nname: " + strings.Repeat("B", 1<<20) + "\n",
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  nm: {{ .Values.name | quote }}\n",
	})
	_, app := appFor(`{"path":"charts/web"}`)
	trace, _ := (&inProcess{}).TraceHelm(context.Background(), service.RenderInput{Files: tr["c1"], Spec: app.Sources[0].Spec, AppName: "shop", Namespace: "shop"})
	js, _ := json.Marshal(trace)
	if helmBytes(trace) < int64(len(js)) || strings.Contains(string(js), strings.Repeat("A", 100)) {
		t.Errorf("helmBytes %d for a trace of %d bytes (unused leaves keep no text)", helmBytes(trace), len(js))
	}
}
