package service

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type listApps struct{ apps []Application }

func (l listApps) ListApplications(context.Context, Cluster) (AppRead, error) {
	return AppRead{Apps: l.apps}, nil
}

type countingRenderer struct {
	n    atomic.Int32
	kube atomic.Value // the last KubeVersion rendered with
}

func (r *countingRenderer) Render(_ context.Context, in RenderInput) (RenderOutput, error) {
	r.n.Add(1)
	r.kube.Store(in.KubeVersion + " " + strings.Join(in.APIVersions, ","))
	if strings.Contains(string(in.Spec), "broken") {
		return RenderOutput{SourceType: "helm", Code: ReasonRenderFailed, Message: "template: boom"}, nil
	}
	return RenderOutput{SourceType: "directory", Manifests: []byte("kind: Secret\ndata:\n  password: hunter2\n")}, nil
}

type fixedVersions struct{}

func (fixedVersions) ClusterVersion(context.Context, Cluster) (string, []string, error) {
	return "v1.37.2", []string{"apps/v1", "v1"}, nil
}

// chartRepo serves one chart version.
type chartRepo struct{ calls atomic.Int32 }

func (r *chartRepo) Chart(_ context.Context, repoURL, chart, version string) (map[string][]byte, error) {
	r.calls.Add(1)
	if chart != "redis" || version != "18.1.0" {
		return nil, ReasonError(ENOTFOUND, ReasonRefNotFound, "No chart "+chart+" "+version+" in "+repoURL+".")
	}
	return map[string][]byte{"redis/Chart.yaml": []byte("name: redis\n")}, nil
}

// maskAll masks the planted word hunter2 and reports it as a secret.
type maskAll struct{}

func (maskAll) File(_ string, b []byte) MaskedText { return maskHunter(b) }
func (maskAll) Manifests(b []byte) MaskedText      { return maskHunter(b) }
func (maskAll) Redactor(secrets []string, join ...Redactor) Redactor {
	r := hunterRedactor(slices.Clone(secrets))
	for _, j := range join {
		r = append(r, j.(hunterRedactor)...)
	}
	return r
}

// hunterRedactor cuts its secrets by replacing them.
type hunterRedactor []string

func (r hunterRedactor) Redact(text string) string {
	for _, s := range r {
		text = strings.ReplaceAll(text, s, "<masked>")
	}
	return text
}

func maskHunter(b []byte) MaskedText {
	m := MaskedText{Content: []byte(strings.ReplaceAll(string(b), "hunter2", "<masked>"))}
	if strings.Contains(string(b), "hunter2") {
		m.Secrets = []string{"hunter2"}
	}
	return m
}

func TestManifests(t *testing.T) {
	const repo = "https://github.com/org/gitops"
	c := Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo, ArgoCDNamespace: "argocd"}
	spec := func(s string) json.RawMessage { return json.RawMessage(s) }
	web := Application{ID: "web", Name: "web", Namespace: "argocd",
		Sources: []AppSource{{RepoURL: repo, Path: "apps/web", Spec: spec(`{"path":"apps/web"}`)}},
		Sync:    AppSync{Revision: "abc", ComparedTo: []AppSource{{RepoURL: repo, Path: "apps/web", Spec: spec(`{"path":"apps/web"}`)}}}}
	multi := Application{ID: "multi", Name: "multi", Namespace: "argocd", Sync: AppSync{Revisions: []string{"abc", "def"},
		ComparedTo: []AppSource{
			{RepoURL: repo, Path: "apps/ok", Spec: spec(`{"path":"apps/ok"}`)},
			{RepoURL: repo, Path: "apps/broken", Spec: spec(`{"path":"apps/broken"}`)}}}}
	// The same app after a new commit was compared.
	webNext := web
	webNext.ID, webNext.Sync.Revision = "web-next", "def"
	chart := Application{ID: "redis", Name: "redis", Namespace: "argocd", Sync: AppSync{Revision: "18.1.0",
		ComparedTo: []AppSource{{RepoURL: "https://charts.example.com", Chart: "redis", TargetRevision: "18.*",
			Spec: spec(`{"repoURL":"https://charts.example.com","chart":"redis","targetRevision":"18.*"}`)}}}}
	elsewhere := Application{ID: "elsewhere", Name: "elsewhere", Namespace: "argocd",
		Sources: []AppSource{{RepoURL: "https://github.com/org/other", Path: "x", Spec: spec(`{"path":"x"}`)}}}
	cache, err := NewSnapshotCache(listApps{apps: []Application{web, multi, elsewhere, chart, webNext}}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: c}
	renderer := &countingRenderer{}
	charts := &chartRepo{}
	view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: maskAll{}, Renderer: renderer, ManifestMasker: maskAll{}, Charts: charts, Versions: fixedVersions{}}
	p := Principal{TeamID: "t1"}
	ctx := context.Background()

	m, err := view.Manifests(ctx, p, "c1", "web")
	if err != nil || m.RevisionSource != "compared" || len(m.Sources) != 1 || m.Sources[0].Commit != "abc" ||
		!strings.Contains(m.Sources[0].Manifests, "<masked>") || strings.Contains(m.Sources[0].Manifests, "hunter2") {
		t.Fatalf("manifests = %+v, %v", m, err)
	}
	if got := renderer.kube.Load(); got != "v1.37.2 apps/v1,v1" {
		t.Errorf("rendered with cluster versions %q", got)
	}
	// Same commit, same spec: answered from the cache, no render.
	if _, err := view.Manifests(ctx, p, "c1", "web"); err != nil || renderer.n.Load() != 1 {
		t.Errorf("second call rendered again: %d renders, %v", renderer.n.Load(), err)
	}
	// A new commit is rendered (once).
	if m, err := view.Manifests(ctx, p, "c1", "web-next"); err != nil || m.Sources[0].Commit != "def" || renderer.n.Load() != 2 {
		t.Errorf("new commit: %+v, %v, %d renders", m, err, renderer.n.Load())
	}
	// Multi-source: each source's error beside the ones that rendered.
	m, err = view.Manifests(ctx, p, "c1", "multi")
	if err != nil || len(m.Sources) != 2 || m.Sources[0].Error != nil || m.Sources[1].Error == nil ||
		m.Sources[1].Error.Code != ReasonRenderFailed || m.Sources[1].Commit != "def" {
		t.Errorf("multi = %+v, %v", m, err)
	}
	// A Git source of another repository: repo_mismatch (409).
	if _, err := view.Manifests(ctx, p, "c1", "elsewhere"); ErrorReason(err) != ReasonRepoMismatch || ErrorCode(err) != ECONFLICT {
		t.Errorf("other repository: %v", err)
	}
	a, err := view.ManifestsTool(ctx, p, "c1", "multi", "en")
	if err != nil || !strings.Contains(a.Text, "render_failed") || strings.Contains(a.Text, "hunter2") {
		t.Errorf("tool = %+v, %v", a, err)
	}
	// A Helm-repository chart renders at the compared chart version.
	m, err = view.Manifests(ctx, p, "c1", "redis")
	if err != nil || len(m.Sources) != 1 || m.Sources[0].Commit != "18.1.0" || charts.calls.Load() != 1 {
		t.Errorf("chart = %+v, %v (%d downloads)", m, err, charts.calls.Load())
	}
	if _, err := view.Manifests(ctx, p, "c1", "nope"); ErrorCode(err) != ENOTFOUND {
		t.Errorf("unknown app: %v", err)
	}
}

type notingRenderer struct{}

func (notingRenderer) Render(context.Context, RenderInput) (RenderOutput, error) {
	return RenderOutput{SourceType: "helm", Manifests: []byte("kind: Secret\ndata:\n  password: hunter2\n"),
		Notes: []string{"a note quoting hunter2"}}, nil
}

// A note quoting a value masked in the output is cut like an error.
func TestManifestNotesAreCutOfTheRequestsSecrets(t *testing.T) {
	const repo = "https://github.com/org/gitops"
	src := AppSource{RepoURL: repo, Path: "apps/web", Spec: json.RawMessage(`{"path":"apps/web"}`)}
	web := Application{ID: "web", Name: "web", Namespace: "argocd", Sources: []AppSource{src},
		Sync: AppSync{Revision: "abc", ComparedTo: []AppSource{src}}}
	cache, err := NewSnapshotCache(listApps{apps: []Application{web}}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo}}
	view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: maskAll{}, Renderer: notingRenderer{}, ManifestMasker: maskAll{}}
	m, err := view.Manifests(context.Background(), Principal{TeamID: "t1"}, "c1", "web")
	if err != nil || len(m.Sources) != 1 || len(m.Sources[0].Notes) != 1 {
		t.Fatalf("Manifests = %+v, %v", m, err)
	}
	if n := m.Sources[0].Notes[0]; n != "a note quoting <masked>" {
		t.Errorf("note = %q", n)
	}
}

// compileCounter is maskAll counting the sets it compiles (Redactor with
// secrets) apart from the joins (Redactor without).
type compileCounter struct {
	maskAll
	compiled, joined *atomic.Int32
}

func (c compileCounter) Redactor(secrets []string, join ...Redactor) Redactor {
	if secrets == nil {
		c.joined.Add(1)
	} else {
		c.compiled.Add(1)
	}
	return c.maskAll.Redactor(secrets, join...)
}

// A render's redaction set is compiled once, with the render, and reused
// from the cache: a request only joins the sets of its sources, however
// many notes and tool lines it cuts them from.
func TestRenderRedactorIsCompiledOncePerRender(t *testing.T) {
	const repo = "https://github.com/org/gitops"
	src := AppSource{RepoURL: repo, Path: "apps/web", Spec: json.RawMessage(`{"path":"apps/web"}`)}
	web := Application{ID: "web", Name: "web", Namespace: "argocd", Sources: []AppSource{src},
		Sync: AppSync{Revision: "abc", ComparedTo: []AppSource{src}}}
	cache, err := NewSnapshotCache(listApps{apps: []Application{web}}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo}}
	masker := compileCounter{compiled: new(atomic.Int32), joined: new(atomic.Int32)}
	view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: masker, Renderer: notingRenderer{}, ManifestMasker: maskAll{}}
	for range 3 {
		answer, err := view.ManifestsTool(context.Background(), Principal{TeamID: "t1"}, "c1", "web", "en")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(answer.Text, "hunter2") {
			t.Errorf("answer holds the secret:\n%s", answer.Text)
		}
	}
	if c, j := masker.compiled.Load(), masker.joined.Load(); c != 1 || j != 3 {
		t.Errorf("compiled %d sets and joined %d, want 1 compiled (the render's) and 3 joins (one per request)", c, j)
	}
}
