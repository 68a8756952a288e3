package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

// appReader serves the same Applications for every cluster.
type appReader struct{ apps []service.Application }

func (r appReader) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return service.AppRead{Apps: r.apps}, nil
}

// renderHere renders in this process (the server renders in a child).
type renderHere struct{}

func (renderHere) Render(_ context.Context, in service.RenderInput) (service.RenderOutput, error) {
	var src render.Source
	_ = json.Unmarshal(in.Spec, &src)
	res := render.Render(render.Request{Files: in.Files, Source: src, AppName: in.AppName, Namespace: in.Namespace})
	out := service.RenderOutput{Manifests: res.Manifests, SourceType: res.SourceType, Notes: res.Notes}
	if res.Error != nil {
		out.Code, out.Message = service.Reason(res.Error.Code), res.Error.Message
	}
	return out, nil
}

// TestRepoRoutesValidate: the repo tab's routes and tools over a real Git
// server, every answer validated against the OpenAPI document.
func TestRepoRoutesValidate(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Commit(t, map[string]string{
		"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
		"apps/web/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: planted-pw-123\n",
		"logo.png":             "\x89PNG\x00\x01",
	}, "first")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{})
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	for _, c := range []service.Cluster{
		{ID: "prod", TeamID: "team-a", Name: "prod", Kind: service.ClusterStatic, AccessLevel: service.AccessFull, ArgoCDNamespace: "argocd"},
		{ID: "bare", TeamID: "team-a", Name: "bare", Kind: service.ClusterStatic, AccessLevel: service.AccessFull, ArgoCDNamespace: "argocd"},
	} {
		if _, err := db.UpsertCluster(ctx, c, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SetGitOpsRepo(ctx, "team-a", "prod", git.URL, time.Now()); err != nil {
		t.Fatal(err)
	}
	spec := json.RawMessage(`{"path":"apps/web"}`)
	app := service.Application{ID: "web", Name: "web", Namespace: "argocd",
		Sources: []service.AppSource{{RepoURL: git.URL, Path: "apps/web", Spec: spec}}}
	cache, err := service.NewSnapshotCache(appReader{apps: []service.Application{app}}, 8, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	argo := &service.ArgoCD{Clusters: db, Cache: cache}
	view := &service.RepoView{Clusters: db, ArgoCD: argo, Masker: mask.ForService{M: m}, ManifestMasker: mask.ForService{M: m},
		Renderer: renderHere{}, Fetcher: &gitrepo.ClusterRepos{Fetcher: gitrepo.New(gitrepo.Options{HTTPClient: git.Client()})}}
	verifier, err := jwtauth.NewHS256(testSecret, testIssuer, testAudience, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Verifier: verifier,
		Clusters: &service.Clusters{Store: db, Now: time.Now}, ArgoCD: argo, RepoView: view, Metrics: NewMetrics(prometheus.NewRegistry())}))
	t.Cleanup(srv.Close)
	doc, router := mustSpec(t)
	a := &testAPI{t: t, srv: srv, router: router, doc: doc}
	member, agent := token(t, "alice", "team-a", "member"), token(t, "bot", "team-a", "agent")
	other := token(t, "eve", "team-b", "member")

	noSecret := func(r response) response {
		t.Helper()
		if strings.Contains(string(r.body), "planted-pw-123") {
			t.Errorf("a planted secret is in the answer: %s", r.body)
		}
		return r
	}
	var tree service.RepoTree
	noSecret(a.do("GET", "/v1/clusters/prod/gitops-repo/tree", member, nil, nil)).decode(t, &tree)
	if len(tree.Folders) != 3 || tree.Commit == "" {
		t.Errorf("tree = %+v", tree)
	}
	var f service.RepoFile
	noSecret(a.do("GET", "/v1/clusters/prod/gitops-repo/file?path=apps/web/secret.yaml", member, nil, nil)).decode(t, &f)
	if !strings.Contains(f.Content, "<masked>") {
		t.Errorf("file = %+v", f)
	}
	noSecret(a.do("GET", "/v1/clusters/prod/gitops-repo/file?path=logo.png", member, nil, nil)).decode(t, &f)
	if !f.Binary || f.Content != "" {
		t.Errorf("binary file = %+v", f)
	}
	var man service.AppManifests
	noSecret(a.do("GET", "/v1/clusters/prod/argocd/applications/web/manifests", member, nil, nil)).decode(t, &man)
	if len(man.Sources) != 1 || man.Sources[0].SourceType != "directory" || !strings.Contains(man.Sources[0].Manifests, "<masked>") {
		t.Errorf("manifests = %+v", man)
	}
	for _, tool := range []struct{ name, body string }{
		{"repo_tree", `{"cluster_id":"prod"}`},
		{"repo_file", `{"cluster_id":"prod","path":"apps/web/secret.yaml"}`},
		{"app_manifests", `{"cluster_id":"prod","app_id":"web"}`},
		{"repo_file", `{"cluster_id":"prod","path":"nope.yaml"}`},
		{"repo_tree", `{"cluster_id":"bare"}`},
	} {
		var ans service.ToolAnswer
		noSecret(a.do("POST", "/v1/tools/"+tool.name, agent, json.RawMessage(tool.body), nil)).decode(t, &ans)
		if ans.Text == "" {
			t.Errorf("%s %s: empty text", tool.name, tool.body)
		}
	}
	a.do("GET", "/v1/clusters/prod/gitops-repo/file?path=nope.yaml", member, nil, nil).wantProblem(t, 404, "path_not_found")
	a.do("GET", "/v1/clusters/prod/gitops-repo/file?path=../x", member, nil, nil).wantProblem(t, 422, "validation_failed")
	a.do("GET", "/v1/clusters/prod/gitops-repo/tree?ref=no-such-branch", member, nil, nil).wantProblem(t, 404, "ref_not_found")
	a.do("GET", "/v1/clusters/bare/gitops-repo/tree", member, nil, nil).wantProblem(t, 409, "repo_not_connected")
	a.do("GET", "/v1/clusters/prod/gitops-repo/tree", other, nil, nil).wantProblem(t, 404, "cluster_not_found")
	a.do("POST", "/v1/tools/repo_tree", member, json.RawMessage(`{"cluster_id":"prod"}`), nil).wantProblem(t, 403, "forbidden")
	// A tool call that names no cluster is malformed, whichever tool; a
	// path that leaves the repository is too.
	for _, tool := range []string{"repo_tree", "repo_file", "app_manifests", "git_change"} {
		a.do("POST", "/v1/tools/"+tool, agent, json.RawMessage(`{}`), nil).wantProblem(t, 422, "validation_failed")
	}
	a.do("POST", "/v1/tools/repo_file", agent, json.RawMessage(`{"cluster_id":"prod","path":"../x"}`), nil).wantProblem(t, 422, "validation_failed")
}
