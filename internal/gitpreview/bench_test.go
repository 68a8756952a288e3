package gitpreview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// benchWorld is a directory source of 50 manifest files (one Deployment
// each, 40 lines), the app, the object of the last file, and its fields.
func benchWorld(b *testing.B) (trees, service.Cluster, service.Application, service.ObjectInfo, []service.FieldPreview) {
	b.Helper()
	files := map[string][]byte{}
	for i := range 50 {
		doc := strings.Replace(deployment, "name: web\nspec:", fmt.Sprintf("name: web-%02d\nspec:", i), 1)
		files[fmt.Sprintf("apps/many/deploy-%02d.yaml", i)] = []byte(strings.Repeat("# padding\n", 15) + doc)
	}
	tr := trees{"c1": files}
	_, c, app, obj := fixture()
	app.Sources[0].Path = "apps/many"
	obj.Name = "web-49"
	fields := []service.FieldPreview{
		{Field: "/spec/replicas", Live: json.RawMessage(`2`), Planned: json.RawMessage(`3`)},
		{Field: "/spec/template/spec/containers/0/image", Live: json.RawMessage(`"nginx:1.26"`), Planned: json.RawMessage(`"nginx:1.28"`)},
	}
	return tr, c, app, obj, fields
}

// BenchmarkLocateWarm is the preview's cost on detection when the commit's
// index is cached (the tree itself comes from the fetcher's cache): what a
// repeated check of the same app adds. Target: ≤ 2 ms.
func BenchmarkLocateWarm(b *testing.B) {
	tr, c, app, obj, fields := benchWorld(b)
	l := &Locator{Fetcher: tr, Masker: mustMasker(b)}
	l.Locate(context.Background(), c, app, obj, fields) // builds the index
	b.ReportAllocs()
	for b.Loop() {
		if got := l.Locate(context.Background(), c, app, obj, fields); got[0].Git.State != service.GitSet {
			b.Fatalf("%+v", got[0].Git)
		}
	}
}

// BenchmarkLocateCold is the first preview of a commit: every manifest
// file of the source parsed into the index.
func BenchmarkLocateCold(b *testing.B) {
	tr, c, app, obj, fields := benchWorld(b)
	masker := mustMasker(b)
	b.ReportAllocs()
	for b.Loop() {
		l := &Locator{Fetcher: tr, Masker: masker}
		if got := l.Locate(context.Background(), c, app, obj, fields); got[0].Git.State != service.GitSet {
			b.Fatalf("%+v", got[0].Git)
		}
	}
}

// helmBenchWorld is a chart of 50 templates (a Deployment each, values
// through include, toYaml, range and default), the app, the last
// Deployment and its fields.
func helmBenchWorld(b *testing.B) (trees, service.Cluster, service.Application, service.ObjectInfo, []service.FieldPreview) {
	b.Helper()
	files := map[string][]byte{
		"charts/many/Chart.yaml": []byte("apiVersion: v2\nname: many\nversion: 0.1.0\nappVersion: \"1.0\"\n"),
		"charts/many/templates/_helpers.tpl": []byte(`{{- define "many.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
`),
	}
	var values strings.Builder
	for i := range 50 {
		fmt.Fprintf(&values, "svc%02d:\n  replicas: %d\n  image: {repository: nginx, tag: \"1.%d\"}\n  env: [{name: MODE, value: fast}, {name: LEVEL, value: info}]\n  resources: {limits: {cpu: 500m, memory: 128Mi}}\n", i, i%5+1, i)
		files[fmt.Sprintf("charts/many/templates/svc%02d.yaml", i)] = []byte(fmt.Sprintf(`{{- with .Values.svc%02d }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc%02d
  labels:
    {{- include "many.labels" $ | nindent 4 }}
spec:
  replicas: {{ .replicas }}
  revisionHistoryLimit: 5
  template:
    spec:
      containers:
        - name: app
          image: "{{ .image.repository }}:{{ .image.tag | default $.Chart.AppVersion }}"
          env:
          {{- range .env }}
            - name: {{ .name }}
              value: {{ .value | quote }}
          {{- end }}
          resources:
            {{- toYaml .resources | nindent 12 }}
{{- end }}
`, i, i))
	}
	files["charts/many/values.yaml"] = []byte(values.String())
	c, app, obj := helmApp(`{"path":"charts/many"}`)
	app.Sources[0].Path = "charts/many"
	obj.Name = "svc49"
	obj.Object = map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": "nginx:1.49"}}}}}}
	fields := []service.FieldPreview{
		{Field: "/spec/replicas", Live: json.RawMessage(`5`), Planned: json.RawMessage(`3`)},
		{Field: "/spec/template/spec/containers/0/image", Live: json.RawMessage(`"nginx:1.49"`), Planned: json.RawMessage(`"nginx:1.50"`)},
	}
	return trees{"c1": files}, c, app, obj, fields
}

// BenchmarkLocateHelmWarm is a Helm preview when the commit's traced
// render is cached: no fetch, no render.
func BenchmarkLocateHelmWarm(b *testing.B) {
	tr, c, app, obj, fields := helmBenchWorld(b)
	l := &Locator{Fetcher: tr, Masker: mustMasker(b), Tracer: &inProcess{}}
	if got := l.Locate(context.Background(), c, app, obj, fields); got[1].Git.Source.Via != ViaHelmValues {
		b.Fatalf("%+v", got[1].Git)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := l.Locate(context.Background(), c, app, obj, fields); got[0].Git.State != service.GitSet {
			b.Fatalf("%+v", got[0].Git)
		}
	}
}

// BenchmarkLocateHelmCold is the first Helm preview of a commit: the
// chart rendered, then rendered again with traced values (in this process
// here; the server adds the render child's start), and the index built.
func BenchmarkLocateHelmCold(b *testing.B) {
	tr, c, app, obj, fields := helmBenchWorld(b)
	masker := mustMasker(b)
	b.ReportAllocs()
	for b.Loop() {
		l := &Locator{Fetcher: tr, Masker: masker, Tracer: &inProcess{}}
		if got := l.Locate(context.Background(), c, app, obj, fields); got[1].Git.Source.Via != ViaHelmValues {
			b.Fatalf("%+v", got[1].Git)
		}
	}
}
