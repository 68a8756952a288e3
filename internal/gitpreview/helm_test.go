package gitpreview

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
)

// inProcess traces in the test's process (the server runs the render
// child); gate, when set, holds each trace until it is closed.
type inProcess struct {
	started chan struct{}
	gate    chan struct{}
	calls   int
}

func (p *inProcess) TraceHelm(_ context.Context, in service.RenderInput) (service.HelmTrace, error) {
	p.calls++
	if p.gate != nil {
		close(p.started)
		<-p.gate
	}
	var src render.Source
	if err := json.Unmarshal(in.Spec, &src); err != nil {
		return service.HelmTrace{}, err
	}
	return render.TraceHelm(render.Request{Files: in.Files, Source: src, AppName: in.AppName, Namespace: in.Namespace}), nil
}

// tracedRepo is the render package's traced chart repository at commit c1.
func tracedRepo(t *testing.T) trees {
	t.Helper()
	root := filepath.Join("..", "render", "testdata", "repos", "traced")
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return trees{"c1": files}
}

func helmApp(spec string) (service.Cluster, service.Application, service.ObjectInfo) {
	c := service.Cluster{TeamID: "t", ID: "c", GitOpsRepo: repo}
	app := service.Application{Name: "shop", Sources: []service.AppSource{{RepoURL: repo, Path: "charts/web", TargetRevision: "main",
		Spec: json.RawMessage(spec)}}, Destination: service.AppDestination{Namespace: "shop"}, Sync: service.AppSync{Revision: "c1"}}
	obj := service.ObjectInfo{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "shop-web", Namespaced: true,
		Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "nginx:1.26"}}}}}}}
	return c, app, obj
}

// TestLocateHelm checks each via of a Helm source: the values file and the
// key's line (with what the key must hold for the planned value), the
// Application's parameter, a literal in a template, a value tpl computes,
// one the template computes from .Release, and an unset field.
func TestLocateHelm(t *testing.T) {
	c, app, obj := helmApp(`{"path":"charts/web","helm":{"valueFiles":["values-prod.yaml"],"parameters":[{"name":"image.pullPolicy","value":"Always"}]}}`)
	l := &Locator{Fetcher: tracedRepo(t), Masker: mustMasker(t), Tracer: &inProcess{}}
	fields := []service.FieldPreview{
		{Field: "/spec/replicas", Planned: json.RawMessage(`5`)},
		{Field: "/spec/template/spec/containers/0/image", Planned: json.RawMessage(`"nginx:1.29"`)},
		{Field: "/spec/template/spec/containers/0/imagePullPolicy"},
		{Field: "/spec/revisionHistoryLimit", Planned: json.RawMessage(`2`)},
		{Field: "/metadata/annotations/note", Planned: json.RawMessage(`"x"`)},
		{Field: "/metadata/labels/app.kubernetes.io~1instance"},
		{Field: "/spec/paused"},
	}
	got := l.Locate(context.Background(), c, app, obj, fields)
	want := []string{
		`{"state":"set","value":3,"source":{"revision":"c1","path":"charts/web/values-prod.yaml","line":2,"via":"helm_values","key":"replicaCount","key_planned":5}}`,
		`{"state":"set","value":"nginx:1.27","source":{"revision":"c1","path":"charts/web/values.yaml","line":4,"via":"helm_values","key":"image.tag","key_planned":"1.29"}}`,
		`{"state":"set","value":"Always","source":{"revision":"c1","path":"","line":0,"via":"application_override","key":"image.pullPolicy","override":"spec.source.helm.parameters[name=image.pullPolicy]"}}`,
		`{"state":"set","value":5,"source":{"revision":"c1","path":"charts/web/templates/deployment.yaml","line":12,"via":"helm_template"}}`,
		`{"state":"set","value":"shop-web","source":{"revision":"c1","path":"charts/web/values.yaml","line":18,"via":"helm_values","key":"annotation"}}`,
		`{"state":"set","value":"shop","reason":"helm_value_not_traced","source":{"revision":"c1","path":"charts/web/templates/deployment.yaml","line":0,"via":"unsupported"}}`,
		`{"state":"unset","source":{"revision":"c1","path":"charts/web/templates/deployment.yaml","line":3,"via":"helm_template"}}`,
	}
	for i, f := range got {
		b, _ := json.Marshal(f.Git)
		if string(b) != want[i] {
			t.Errorf("%s\n got %s\nwant %s", f.Field, b, want[i])
		}
	}
	// valuesObject names the key under it.
	c, app, obj = helmApp(`{"path":"charts/web","helm":{"valuesObject":{"replicaCount":7}}}`)
	g := l.Locate(context.Background(), c, app, obj, fields[:1])[0].Git
	if g.Source.Via != ViaApplicationOverride || g.Source.Override != "spec.source.helm.valuesObject.replicaCount" || string(g.Value) != "7" {
		t.Errorf("valuesObject: %+v %+v", g, g.Source)
	}
}

// TestLocateHelmPending checks that a traced render the detection budget
// cuts is pending, goes on, and is found by the next detection; and that
// the same commit is rendered once.
func TestLocateHelmPending(t *testing.T) {
	c, app, obj := helmApp(`{"path":"charts/web"}`)
	tracer := &inProcess{started: make(chan struct{}), gate: make(chan struct{})}
	l := &Locator{Fetcher: tracedRepo(t), Masker: mustMasker(t), Tracer: tracer}
	fields := []service.FieldPreview{{Field: "/spec/replicas"}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tracer.started // the render runs: the budget ends now
		cancel()
	}()
	if g := l.Locate(ctx, c, app, obj, fields)[0].Git; g.State != service.GitPending {
		t.Fatalf("budget cut: %+v", g)
	}
	close(tracer.gate)
	var g *service.GitValue
	for range 2 {
		g = l.Locate(context.Background(), c, app, obj, fields)[0].Git
	}
	if g.State != service.GitSet || string(g.Value) != "1" || tracer.calls != 1 {
		t.Errorf("after the render: %+v, %d renders", g, tracer.calls)
	}
	// A chart that does not render is render_failed.
	broken := tracedRepo(t)
	broken["c1"]["charts/web/templates/bad.yaml"] = []byte("{{ fail \"no\" }}")
	l = &Locator{Fetcher: broken, Masker: mustMasker(t), Tracer: &inProcess{}}
	if g := l.Locate(context.Background(), c, app, obj, fields)[0].Git; g.State != service.GitUnavailable || g.Reason != service.ReasonRenderFailed {
		t.Errorf("broken chart: %+v", g)
	}
	if !strings.Contains(string(broken["c1"]["charts/web/Chart.yaml"]), "name: web") {
		t.Error("fixture")
	}
}
