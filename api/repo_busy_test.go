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
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

// expiredTimer is a queue timeout that has already passed.
func expiredTimer(time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch, func() bool { return false }
}

// TestManifestsRenderBusy: while every render slot is taken, the
// manifests route answers 503 render_busy with Retry-After (the queue
// timeout in seconds) and the tool answers 200 with a sentence, both
// validated against the OpenAPI document.
func TestManifestsRenderBusy(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Commit(t, map[string]string{"apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"}, "first")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{})
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	c := service.Cluster{ID: "prod", TeamID: "team-a", Name: "prod", Kind: service.ClusterStatic, AccessLevel: service.AccessFull, ArgoCDNamespace: "argocd"}
	if _, err := db.UpsertCluster(ctx, c, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetGitOpsRepo(ctx, "team-a", "prod", git.URL, time.Now()); err != nil {
		t.Fatal(err)
	}
	app := service.Application{ID: "web", Name: "web", Namespace: "argocd",
		Sources: []service.AppSource{{RepoURL: git.URL, Path: "apps/web", Spec: json.RawMessage(`{"path":"apps/web"}`)}}}
	cache, err := service.NewSnapshotCache(appReader{apps: []service.Application{app}}, 8, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	queue := service.NewRenderQueue(1, 10*time.Second, service.RenderQueueOptions{Timer: expiredTimer})
	argo := &service.ArgoCD{Clusters: db, Cache: cache}
	view := &service.RepoView{Clusters: db, ArgoCD: argo, Masker: mask.ForService{M: m}, ManifestMasker: mask.ForService{M: m},
		Renderer: renderHere{}, Queue: queue,
		Fetcher: &gitrepo.ClusterRepos{Fetcher: gitrepo.New(gitrepo.Options{HTTPClient: git.Client()})}}
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

	// Another team's render holds the only slot.
	release, err := queue.Acquire(ctx, "team-b")
	if err != nil {
		t.Fatal(err)
	}
	r := a.do("GET", "/v1/clusters/prod/argocd/applications/web/manifests", member, nil, nil)
	r.wantProblem(t, 503, "render_busy")
	if got := r.header.Get("Retry-After"); got != "10" {
		t.Errorf("Retry-After = %q, want 10 (the queue timeout)", got)
	}
	var ans service.ToolAnswer
	a.do("POST", "/v1/tools/app_manifests", agent, json.RawMessage(`{"cluster_id":"prod","app_id":"web"}`), nil).decode(t, &ans)
	if ans.Text == "" || strings.Contains(ans.Text, "ConfigMap") {
		t.Errorf("tool answer while busy = %+v", ans)
	}
	release()
	var man service.AppManifests
	a.do("GET", "/v1/clusters/prod/argocd/applications/web/manifests", member, nil, nil).decode(t, &man)
	if len(man.Sources) != 1 || man.Sources[0].Error != nil {
		t.Errorf("manifests once the slot is free = %+v", man)
	}
}
