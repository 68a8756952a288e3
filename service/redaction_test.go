package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
)

// The redaction set of one request, end to end with the real masker and a
// real Helm render: a value masked in the app's inputs is cut from the render
// error that quotes it, from the tool answer, and from the error the API
// logs.

type oneCluster struct {
	service.ClusterStore
	c service.Cluster
}

func (s oneCluster) GetCluster(_ context.Context, teamID, id string) (service.Cluster, error) {
	if teamID != s.c.TeamID || id != s.c.ID {
		return service.Cluster{}, service.ErrClusterNotFound()
	}
	return s.c, nil
}

type apps []service.Application

func (a apps) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return service.AppRead{Apps: a}, nil
}

type tree map[string][]byte

func (tree) Resolve(context.Context, service.Cluster, string) (string, error) {
	return "0123456789abcdef0123", nil
}

func (t tree) Tree(context.Context, service.Cluster, string, string) (map[string][]byte, error) {
	return t, nil
}

// renderHere renders in this process (the server renders in a child).
type renderHere struct{}

func (renderHere) Render(_ context.Context, in service.RenderInput) (service.RenderOutput, error) {
	var src render.Source
	_ = json.Unmarshal(in.Spec, &src)
	res := render.Render(render.Request{Files: in.Files, RefFiles: in.RefFiles, Source: src, AppName: in.AppName, Namespace: in.Namespace})
	out := service.RenderOutput{Manifests: res.Manifests, SourceType: res.SourceType, Notes: res.Notes}
	if res.Error != nil {
		out.Code, out.Message = service.Reason(res.Error.Code), res.Error.Message
	}
	return out, nil
}

func TestRenderErrorsAreCutOfTheRequestsSecrets(t *testing.T) {
	masker, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	const repo = "https://github.com/org/gitops"
	chart := func(values, schema, template string) map[string][]byte {
		files := map[string][]byte{
			"Chart.yaml":            []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
			"values.yaml":           []byte(values),
			"templates/secret.yaml": []byte(template),
		}
		if schema != "" {
			files["values.schema.json"] = []byte(schema)
		}
		return files
	}
	okTemplate := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  mode: {{ .Values.mode | quote }}\n"
	tests := []struct {
		name   string
		files  map[string][]byte
		spec   string
		secret string
	}{
		{"FailQuotesAValuesFileSecret", chart("mode: a\ndatabase:\n  password: FailQuotedPw-9xQ2\n", "",
			"{{ fail .Values.database.password }}\n"), `{"path":"apps/web"}`, "FailQuotedPw-9xQ2"},
		{"FailQuotesAnInlineValuesSecret", chart("mode: a\n", "", "{{ fail .Values.apiToken }}\n"),
			`{"path":"apps/web","helm":{"values":"apiToken: InlineTokenVal-4Wq\n"}}`, "InlineTokenVal-4Wq"},
		{"FailQuotesAValueFileOfARefSource", chart("mode: a\n", "", "{{ fail .Values.signing_key }}\n"),
			`{"path":"apps/web","helm":{"valueFiles":["../../env/prod-values.yaml"]}}`, "RefSigningKey-6Tz"},
		{"SchemaPatternErrorQuotesTheValue", chart("mode: a\nsalt: SchemaSaltValue-3Jm\n",
			`{"type":"object","properties":{"salt":{"type":"string","pattern":"^[a-z]+$"}}}`, okTemplate),
			`{"path":"apps/web"}`, "SchemaSaltValue-3Jm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{"env/prod-values.yaml": []byte("signing_key: RefSigningKey-6Tz\n")}
			for k, v := range tt.files {
				files["apps/web/"+k] = v
			}
			src := service.AppSource{RepoURL: repo, Path: "apps/web", Spec: json.RawMessage(tt.spec)}
			app := service.Application{ID: "web", Name: "web", Namespace: "argocd", Sources: []service.AppSource{src},
				Sync: service.AppSync{Revision: "abc", ComparedTo: []service.AppSource{src}}}
			cache, err := service.NewSnapshotCache(apps{app}, 4, time.Now, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := service.Cluster{ID: "c1", TeamID: "t1", AccessLevel: service.AccessFull, GitOpsRepo: repo, ArgoCDNamespace: "argocd"}
			store := oneCluster{c: c}
			view := &service.RepoView{Clusters: store, ArgoCD: &service.ArgoCD{Clusters: store, Cache: cache}, Fetcher: tree(files),
				Masker: mask.ForService{M: masker}, ManifestMasker: mask.ForService{M: masker}, Renderer: renderHere{}}
			p := service.Principal{TeamID: "t1"}

			// The value is in the raw render error: without the cut it
			// would be shown.
			raw, _ := renderHere{}.Render(context.Background(), service.RenderInput{Files: files, Spec: json.RawMessage(tt.spec), AppName: "web"})
			if !strings.Contains(raw.Message, tt.secret) {
				t.Fatalf("the render error does not quote the value, the test proves nothing: %+v", raw)
			}
			_, err = view.Manifests(context.Background(), p, "c1", "web")
			if service.ErrorReason(err) != service.ReasonRenderFailed {
				t.Fatalf("Manifests: %v, want render_failed", err)
			}
			// What the API answers and what it logs (the error's text).
			for _, text := range []string{service.ErrorMessage(err), err.Error()} {
				if strings.Contains(text, tt.secret) || !strings.Contains(text, mask.Marker) {
					t.Errorf("render error not cut: %q", text)
				}
			}
			// The tool answers a single source's failure as a sentence for
			// the model, cut the same way.
			a, err := view.ManifestsTool(context.Background(), p, "c1", "web", "en")
			if err != nil || strings.Contains(a.Text, tt.secret) || !strings.Contains(a.Text, mask.Marker) {
				t.Errorf("tool answer = %q, %v", a.Text, err)
			}
		})
	}
}

// One redaction set for the whole request: a secret masked in one source's
// inputs is cut from another source's error, in the API answer and the tool.
func TestRedactionSpansTheRequestsSources(t *testing.T) {
	masker, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	const repo = "https://github.com/org/gitops"
	const secret = "CrossSourcePw-8Lm"
	files := tree{
		"apps/ok/Chart.yaml":              []byte("apiVersion: v2\nname: ok\nversion: 0.1.0\n"),
		"apps/ok/values.yaml":             []byte("password: " + secret + "\n"),
		"apps/ok/templates/cm.yaml":       []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n"),
		"apps/broken/Chart.yaml":          []byte("apiVersion: v2\nname: broken\nversion: 0.1.0\n"),
		"apps/broken/templates/fail.yaml": []byte(`{{ fail "` + secret + `" }}` + "\n"),
	}
	srcs := []service.AppSource{
		{RepoURL: repo, Path: "apps/ok", Spec: json.RawMessage(`{"path":"apps/ok"}`)},
		{RepoURL: repo, Path: "apps/broken", Spec: json.RawMessage(`{"path":"apps/broken"}`)},
	}
	app := service.Application{ID: "multi", Name: "multi", Namespace: "argocd", Sources: srcs,
		Sync: service.AppSync{Revisions: []string{"abc", "abc"}, ComparedTo: srcs}}
	cache, err := service.NewSnapshotCache(apps{app}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := service.Cluster{ID: "c1", TeamID: "t1", AccessLevel: service.AccessFull, GitOpsRepo: repo, ArgoCDNamespace: "argocd"}
	store := oneCluster{c: c}
	view := &service.RepoView{Clusters: store, ArgoCD: &service.ArgoCD{Clusters: store, Cache: cache}, Fetcher: files,
		Masker: mask.ForService{M: masker}, ManifestMasker: mask.ForService{M: masker}, Renderer: renderHere{}}
	p := service.Principal{TeamID: "t1"}
	m, err := view.Manifests(context.Background(), p, "c1", "multi")
	if err != nil || len(m.Sources) != 2 || m.Sources[1].Error == nil {
		t.Fatalf("Manifests = %+v, %v", m, err)
	}
	if msg := m.Sources[1].Error.Message; strings.Contains(msg, secret) || !strings.Contains(msg, mask.Marker) {
		t.Errorf("the broken source's error is not cut: %q", msg)
	}
	a, err := view.ManifestsTool(context.Background(), p, "c1", "multi", "en")
	if err != nil || strings.Contains(a.Text, secret) || !strings.Contains(a.Text, "render_failed") {
		t.Errorf("tool answer = %q, %v", a.Text, err)
	}
}
