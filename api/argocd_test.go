package api

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/service"
)

// sandbox is a real API server with the Argo CD fixtures, started by the
// first test that needs it and stopped by TestMain.
var sandbox struct {
	once    sync.Once
	cluster *k8stest.Cluster
	err     error
}

// snsCA is the test authority this process trusts (SSL_CERT_FILE), so the
// SNS webhook's verifier trusts an snstest.Host standing in for SNS.
var snsCA *snstest.Authority

func TestMain(m *testing.M) {
	k8stest.QuietClientGo()
	// Go reads SSL_CERT_FILE once per process: before any test runs.
	ca, cleanup, err := snstest.InstallAuthority("kukie api tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, "api tests:", err)
		os.Exit(1)
	}
	snsCA = ca
	code := m.Run()
	cleanup()
	if sandbox.cluster != nil {
		_ = sandbox.cluster.Stop()
	}
	os.Exit(code)
}

func mustSandbox(t *testing.T) *k8stest.Cluster {
	t.Helper()
	sandbox.once.Do(func() { sandbox.cluster, sandbox.err = k8stest.Start(k8stest.Options{ArgoCD: true}) })
	if sandbox.err != nil {
		t.Fatalf("a Kubernetes API server is needed: %v", sandbox.err)
	}
	return sandbox.cluster
}

// listCounter counts LIST calls made to clusters.
type listCounter struct {
	n atomic.Int64
	// notInstalled and forbidden count the LISTs that found no Argo CD
	// and that were refused.
	notInstalled, forbidden atomic.Int64
}

func (c *listCounter) ObserveList(outcome string, _ time.Duration) {
	c.n.Add(1)
	switch service.Reason(outcome) {
	case service.ReasonArgoCDNotInstalled:
		c.notInstalled.Add(1)
	case service.ReasonArgoCDForbidden:
		c.forbidden.Add(1)
	}
}

// argoAPI is the API with a real reader and these clusters:
//
//	team-a: prod-eks (admin), limited-cl (LIMITED, the limited user: edit in
//	        the sandbox namespaces only), forbidden-cl (full level,
//	        but a user without rights on argocd), down-cl (closed port)
//	team-b: prod-eks (admin, the same cluster)
type argoAPI struct {
	*testAPI
	lists *listCounter
	clock *testclock.Clock // the snapshot cache's clock
}

// newArgoAPI builds the API; extra adds clusters of team-a whose kubeconfig
// points at the given servers (id → https://host:port, token auth).
func newArgoAPI(t *testing.T, extra ...[2]string) *argoAPI {
	t.Helper()
	return newArgoAPIWith(t, func(r *kube.Reader) service.ApplicationReader { return r }, extra...)
}

// newArgoAPIWith is newArgoAPI with the cluster reader wrapped by wrap
// (to inject failures into real reads).
func newArgoAPIWith(t *testing.T, wrap func(*kube.Reader) service.ApplicationReader, extra ...[2]string) *argoAPI {
	t.Helper()
	k := mustSandbox(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	kc := func(user string) string {
		b, err := k.Kubeconfig(user)
		if err != nil {
			t.Fatal(err)
		}
		return write(user+".kubeconfig", b)
	}
	down := write("down.kubeconfig", k8stest.TokenKubeconfig("https://"+k8stest.ClosedAddr(t), "x"))
	admin := kc(k8stest.UserAdmin)
	file := write("clusters.yaml", []byte(fmt.Sprintf(`clusters:
  - {id: prod-eks, team: team-a, name: prod, kubeconfig: %[1]s, access_level: full}
  - {id: limited-cl, team: team-a, name: limited, kubeconfig: %[2]s, access_level: limited, namespaces: [sandbox-plain]}
  - {id: forbidden-cl, team: team-a, name: forbidden, kubeconfig: %[2]s, access_level: full}
  - {id: down-cl, team: team-a, name: down, kubeconfig: %[3]s, access_level: full}
  - {id: prod-eks, team: team-b, name: prod, kubeconfig: %[1]s, access_level: full}
%[4]s`, admin, kc(k8stest.UserLimited), down, extraClusters(t, write, extra))))
	return argoAPIFromFile(t, wrap, file)
}

// argoAPIFromFile serves the API on the static clusters file's clusters.
func argoAPIFromFile(t *testing.T, wrap func(*kube.Reader) service.ApplicationReader, file string) *argoAPI {
	t.Helper()
	clusters, conn, err := kube.LoadStaticClusters(file)
	if err != nil {
		t.Fatal(err)
	}
	lists := &listCounter{}
	reader, err := kube.NewReader(conn, kube.ReaderOptions{Timeout: 2 * time.Second, Observer: lists})
	if err != nil {
		t.Fatal(err)
	}
	srv, clock := mustServeWith(t, wrap(reader), clusters...)
	doc, router := mustSpec(t)
	return &argoAPI{testAPI: &testAPI{t: t, srv: srv, router: router, doc: doc}, lists: lists, clock: clock}
}

func extraClusters(t *testing.T, write func(string, []byte) string, extra [][2]string) string {
	var b strings.Builder
	for _, e := range extra {
		path := write(e[0]+".kubeconfig", k8stest.TokenKubeconfig(e[1], "x"))
		fmt.Fprintf(&b, "  - {id: %s, team: team-a, name: %s, kubeconfig: %s, access_level: full}\n", e[0], e[0], path)
	}
	return b.String()
}

type appListResponse struct {
	Summary      service.AppSummary    `json:"summary"`
	Applications []service.Application `json:"applications"`
	FetchedAt    time.Time             `json:"fetched_at"`
}

type appDetailResponse struct {
	ID                 string                `json:"id"`
	Sources            []service.AppSource   `json:"sources"`
	OutOfSyncResources []service.AppResource `json:"out_of_sync_resources"`
	Resources          []service.AppResource `json:"resources"`
	Conditions         struct{ Errors, Warnings []service.AppCondition }
	History            []service.AppHistoryEntry `json:"history"`
	HealthMessage      string                    `json:"health_message"`
}

const appsPath = "/v1/clusters/prod-eks/argocd/applications"

func TestAppListCountsAndOrder(t *testing.T) {
	a := newArgoAPI(t)
	var list appListResponse
	a.do("GET", appsPath, token(t, "alice", "team-a", "member"), nil, nil).decode(t, &list)
	var names []string
	for _, app := range list.Applications {
		names = append(names, app.Name)
	}
	want := "analytics checkout billing legacy sandbox-helm broken-types payments batch broken-rows cache sandbox-kustomize sandbox-plain"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order:\n got %s\nwant %s", got, want)
	}
	s := list.Summary
	got := fmt.Sprintf("total=%d synced=%d out_of_sync=%d sync_unknown=%d healthy=%d progressing=%d degraded=%d suspended=%d missing=%d health_unknown=%d self_heal=%d auto_sync=%d operation_failed=%d",
		s.Total, s.Synced, s.OutOfSync, s.SyncUnknown, s.Healthy, s.Progressing, s.Degraded, s.Suspended, s.Missing, s.HealthUnknown, s.SelfHeal, s.AutoSync, s.OperationFailed)
	if wantSummary := "total=12 synced=7 out_of_sync=3 sync_unknown=2 healthy=7 progressing=1 degraded=1 suspended=1 missing=1 health_unknown=1 self_heal=3 auto_sync=5 operation_failed=1"; got != wantSummary {
		t.Errorf("summary:\n got %s\nwant %s", got, wantSummary)
	}
	if s.KukieRepo.URL != "" || s.KukieRepo.Connected {
		t.Errorf("kukie_repo before connecting one: %+v", s.KukieRepo)
	}
	sandboxForms := 0 // the sandbox repo is used in three spellings and listed once
	for _, r := range s.SourceRepos {
		if service.NormalizeRepoURL(r) == "github.com/example-org/kukie-gitops-sandbox" {
			sandboxForms++
		}
	}
	if sandboxForms != 1 || len(s.SourceRepos) != 9 {
		t.Errorf("source_repos = %v", s.SourceRepos)
	}
}

func TestAppDetail(t *testing.T) {
	a := newArgoAPI(t)
	tok := token(t, "alice", "team-a", "member")
	var d appDetailResponse
	a.do("GET", appsPath+"/analytics", tok, nil, nil).decode(t, &d)
	if len(d.Conditions.Errors) != 1 || d.Conditions.Errors[0].Type != "ComparisonError" ||
		len(d.Conditions.Warnings) != 1 || d.Conditions.Warnings[0].Type != "SharedResourceWarning" {
		t.Errorf("conditions = %+v", d.Conditions)
	}
	d = appDetailResponse{}
	a.do("GET", appsPath+"/sandbox-helm", tok, nil, nil).decode(t, &d)
	if len(d.OutOfSyncResources) != 1 || d.OutOfSyncResources[0].Name != "worker" || len(d.Resources) != 3 {
		t.Errorf("sandbox-helm resources = %+v / %+v", d.OutOfSyncResources, d.Resources)
	}
	d = appDetailResponse{}
	a.do("GET", appsPath+"/sandbox-plain", tok, nil, nil).decode(t, &d)
	if len(d.History) != 2 || d.History[1].InitiatedBy != "alice" {
		t.Errorf("history = %+v", d.History)
	}
	d = appDetailResponse{}
	a.do("GET", appsPath+"/cache", tok, nil, nil).decode(t, &d)
	if len(d.Sources) != 2 || d.Sources[0].Chart != "redis" || d.Sources[1].Path != "values/cache" {
		t.Errorf("multi-source = %+v", d.Sources)
	}
	d = appDetailResponse{}
	a.do("GET", appsPath+"/team-apps_payments", tok, nil, nil).decode(t, &d)
	if d.ID != "team-apps_payments" || d.HealthMessage != "waiting for rollout to finish" {
		t.Errorf("app in another namespace = %+v", d)
	}
	for _, id := range []string{"nope", "gone-namespace_payments", "team-apps_nope", "payments"} {
		a.do("GET", appsPath+"/"+id, tok, nil, nil).wantProblem(t, 404, "app_not_found")
	}
}

func TestDeletedAppIsNotFound(t *testing.T) {
	k := mustSandbox(t)
	ctx := context.Background()
	if err := k.Apply(ctx, []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: short-lived, namespace: team-apps}
spec: {project: default}
`)); err != nil {
		t.Fatal(err)
	}
	tok := token(t, "alice", "team-a", "member")
	newArgoAPI(t).do("GET", appsPath+"/team-apps_short-lived", tok, nil, nil).decode(t, &appDetailResponse{})
	if err := k.Delete(ctx, "Application", "team-apps", "short-lived"); err != nil {
		t.Fatal(err)
	}
	newArgoAPI(t).do("GET", appsPath+"/team-apps_short-lived", tok, nil, nil).wantProblem(t, 404, "app_not_found")
}

func TestClusterAccessProblems(t *testing.T) {
	a := newArgoAPI(t)
	tok := token(t, "alice", "team-a", "member")
	before := a.lists.n.Load()
	a.do("GET", "/v1/clusters/limited-cl/argocd/applications", tok, nil, nil).wantProblem(t, 403, "limited_access")
	a.do("GET", "/v1/clusters/limited-cl/argocd/applications/sandbox-plain", tok, nil, nil).wantProblem(t, 403, "limited_access")
	if a.lists.n.Load() != before {
		t.Error("a LIMITED cluster was called")
	}
	a.do("GET", "/v1/clusters/forbidden-cl/argocd/applications", tok, nil, nil).wantProblem(t, 403, "argocd_forbidden")
	p := a.do("GET", "/v1/clusters/down-cl/argocd/applications", tok, nil, nil).wantProblem(t, 502, "cluster_unreachable")
	// The cause (with the cluster's address) goes to the log, not to clients.
	if strings.Contains(p.Detail, "127.0.0.1") || strings.Contains(p.Detail, "dial") {
		t.Errorf("problem detail leaks the client-go error: %q", p.Detail)
	}
	a.do("GET", "/v1/clusters/nope/argocd/applications", tok, nil, nil).wantProblem(t, 404, "cluster_not_found")
	// Another team cannot reach team-a's clusters, even by a known id.
	a.do("GET", "/v1/clusters/limited-cl/argocd/applications", token(t, "eve", "team-b", "admin"), nil, nil).
		wantProblem(t, 404, "cluster_not_found")
	// Plans must name one of the team's clusters.
	body := planBody("shared")
	body["cluster_id"] = "not-ours"
	a.do("POST", "/v1/plans", token(t, "alice", "team-a", "agent"), body, nil).wantProblem(t, 404, "cluster_not_found")
}

func TestSidebar(t *testing.T) {
	a := newArgoAPI(t)
	tok := token(t, "alice", "team-a", "member")
	var sb service.Sidebar
	// The first sidebar answers at once: no FULL cluster was read yet.
	a.do("GET", "/v1/argocd/clusters", tok, nil, nil).decode(t, &sb)
	if len(sb.Clusters) != 4 || len(sb.Unavailable) != 0 {
		t.Fatalf("first sidebar: clusters %+v, unavailable %+v; want 4 pending cards", sb.Clusters, sb.Unavailable)
	}
	for _, c := range sb.Clusters {
		if c.State != service.CardPending || c.Summary != nil || c.FetchedAt != nil {
			t.Errorf("first card %+v, want pending", c)
		}
	}
	// The app polls; the background reads finish (the deadline only catches a hang).
	deadline := time.Now().Add(time.Minute)
	for pending := true; pending; {
		if time.Now().After(deadline) {
			t.Fatalf("cards still pending after a minute: %+v", sb.Clusters)
		}
		time.Sleep(20 * time.Millisecond)
		sb = service.Sidebar{}
		a.do("GET", "/v1/argocd/clusters", tok, nil, nil).decode(t, &sb)
		pending = false
		for _, c := range sb.Clusters {
			pending = pending || c.State == service.CardPending
		}
	}
	if len(sb.Clusters) != 1 || sb.Clusters[0].ID != "prod-eks" || sb.Clusters[0].Summary == nil ||
		sb.Clusters[0].Summary.Total != 12 || sb.Clusters[0].State != service.CardFresh || sb.Clusters[0].FetchedAt == nil {
		t.Errorf("clusters = %+v", sb.Clusters)
	}
	if len(sb.Limited) != 1 || sb.Limited[0].ID != "limited-cl" {
		t.Errorf("limited = %+v", sb.Limited)
	}
	reasons := map[string]string{}
	for _, u := range sb.Unavailable {
		reasons[u.ID] = string(u.Reason)
	}
	// c (from the base test clusters) has no connection configured: internal.
	if reasons["forbidden-cl"] != "argocd_forbidden" || reasons["down-cl"] != "cluster_unreachable" ||
		reasons["c"] != "internal" || len(reasons) != 3 {
		t.Errorf("unavailable = %+v", sb.Unavailable)
	}
}

func TestGitOpsRepoAndETag(t *testing.T) {
	a := newArgoAPI(t)
	admin, member := token(t, "carol", "team-a", "admin"), token(t, "alice", "team-a", "member")
	first := a.do("GET", appsPath, member, nil, nil)
	etag := first.header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if res := a.do("GET", appsPath, member, nil, header{"If-None-Match": etag}); res.status != http.StatusNotModified {
		t.Fatalf("If-None-Match with the current ETag: %d", res.status)
	}
	a.do("PUT", "/v1/clusters/prod-eks/gitops-repo", member, map[string]any{"repo_url": "https://github.com/x/y"}, nil).
		wantProblem(t, 403, "forbidden")
	a.do("PUT", "/v1/clusters/prod-eks/gitops-repo", admin, map[string]any{"repo_url": "not a url"}, nil).
		wantProblem(t, 422, "validation_failed")
	a.do("PUT", "/v1/clusters/prod-eks/gitops-repo", admin, map[string]any{"repo_url": "https://bob:ghp_secret@github.com/x/y"}, nil).
		wantProblem(t, 422, "validation_failed")
	a.do("PUT", "/v1/clusters/nope/gitops-repo", admin, map[string]any{"repo_url": "https://github.com/x/y"}, nil).
		wantProblem(t, 404, "cluster_not_found")

	for repo, connected := range map[string]bool{
		"https://github.com/example-org/kukie-gitops-sandbox":       true, // apps use git@…:…​.git and ssh://
		"ssh://git@github.com/Example-Org/kukie-gitops-sandbox.git": true,
		"https://github.com/example-org/other":                      false,
	} {
		var c service.Cluster
		a.do("PUT", "/v1/clusters/prod-eks/gitops-repo", admin, map[string]any{"repo_url": repo}, nil).decode(t, &c)
		if c.GitOpsRepo != repo {
			t.Errorf("stored repo %q, want %q", c.GitOpsRepo, repo)
		}
		res := a.do("GET", appsPath, member, nil, header{"If-None-Match": etag})
		var list appListResponse
		res.decode(t, &list)
		if res.status != 200 || list.Summary.KukieRepo.Connected != connected || list.Summary.KukieRepo.URL != repo {
			t.Errorf("%s: status %d, kukie_repo %+v, want connected=%v", repo, res.status, list.Summary.KukieRepo, connected)
		}
		etag = res.header.Get("ETag")
	}
}

func TestSharedCacheCallsCluster(t *testing.T) {
	a := newArgoAPI(t)
	tokA, tokB := token(t, "alice", "team-a", "member"), token(t, "bob", "team-b", "member")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			path := appsPath
			if i%2 == 1 {
				path += "/sandbox-plain"
			}
			if res := a.do("GET", path, tokA, nil, nil); res.status != 200 {
				t.Errorf("GET %s: %d", path, res.status)
			}
		})
	}
	wg.Wait()
	if n := a.lists.n.Load(); n != 1 {
		t.Errorf("20 concurrent list/detail calls made %d LIST calls, want 1", n)
	}
	// The same cluster under team-b is a separate snapshot: one more read.
	a.do("GET", appsPath, tokB, nil, nil).decode(t, &appListResponse{})
	if n := a.lists.n.Load(); n != 2 {
		t.Errorf("after team-b's first list: %d LIST calls, want 2", n)
	}
	// An explicit refresh right away reuses the under-2 s snapshot.
	a.do("GET", appsPath+"?refresh=true", tokA, nil, nil).decode(t, &appListResponse{})
	if n := a.lists.n.Load(); n != 2 {
		t.Errorf("refresh inside the 2 s floor made a LIST call (%d)", n)
	}
	// Past the floor a refresh reads again; a plain read does not.
	a.clock.Advance(2 * time.Second)
	a.do("GET", appsPath, tokA, nil, nil).decode(t, &appListResponse{})
	if n := a.lists.n.Load(); n != 2 {
		t.Errorf("a plain read of a 2 s old snapshot made a LIST call (%d)", n)
	}
	a.do("GET", appsPath+"?refresh=true", tokA, nil, nil).decode(t, &appListResponse{})
	if n := a.lists.n.Load(); n != 3 {
		t.Errorf("refresh past the 2 s floor: %d LIST calls, want 3", n)
	}
	// The snapshot expires 10 s after its read started.
	a.clock.Advance(9 * time.Second)
	a.do("GET", appsPath+"/sandbox-plain", tokA, nil, nil).decode(t, &appDetailResponse{})
	if n := a.lists.n.Load(); n != 3 {
		t.Errorf("9 s old snapshot: %d LIST calls, want 3", n)
	}
	a.clock.Advance(time.Second)
	a.do("GET", appsPath+"/sandbox-plain", tokA, nil, nil).decode(t, &appDetailResponse{})
	if n := a.lists.n.Load(); n != 4 {
		t.Errorf("expired snapshot: %d LIST calls, want 4", n)
	}
}

func TestClusterList(t *testing.T) {
	a := newArgoAPI(t)
	var got struct{ Clusters []service.Cluster }
	a.do("GET", "/v1/clusters", token(t, "alice", "team-a", "member"), nil, nil).decode(t, &got)
	levels := map[string]service.AccessLevel{}
	for _, c := range got.Clusters {
		levels[c.ID] = c.AccessLevel
	}
	if len(got.Clusters) != 5 || levels["limited-cl"] != service.AccessLimited || levels["prod-eks"] != service.AccessFull {
		t.Errorf("team-a clusters = %+v", got.Clusters)
	}
	for _, c := range got.Clusters {
		if c.ID == "limited-cl" && (len(c.Namespaces) != 1 || c.Namespaces[0] != "sandbox-plain" || c.ArgoCDNamespace != "argocd") {
			t.Errorf("limited-cl = %+v", c)
		}
	}
	got.Clusters = nil
	a.do("GET", "/v1/clusters", token(t, "eve", "team-b", "member"), nil, nil).decode(t, &got)
	if len(got.Clusters) != 1 || got.Clusters[0].Name != "prod" {
		t.Errorf("team-b sees %+v", got.Clusters)
	}
}
