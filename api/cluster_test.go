package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/service"
)

func TestGitOpsRepoRefusesCredentials(t *testing.T) {
	a := newTestAPI(t)
	admin, member := token(t, "carol", "team-a", "admin"), token(t, "alice", "team-a", "member")
	const put = "/v1/clusters/prod-eks/gitops-repo"
	for name, repo := range map[string]string{
		"HTTPSTokenUser":    "https://ghp_xxxSECRETxxx@github.com/org/repo",
		"HTTPSUserPassword": "https://bob:ghp_xxxSECRETxxx@github.com/org/repo",
		"SCPTokenUser":      "ghp_xSECRETx@github.com:org/repo",
		"SSHTokenUser":      "ssh://glpat-SECRET@gitlab.com/org/repo",
	} {
		t.Run(name, func(t *testing.T) {
			res := a.do("PUT", put, admin, map[string]any{"repo_url": repo}, nil)
			p := res.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) == 0 || p.Errors[0].Field != "repo_url" {
				t.Errorf("errors = %+v, want repo_url named", p.Errors)
			}
			if strings.Contains(string(res.body), "SECRET") {
				t.Errorf("the problem repeats the credentials: %s", res.body)
			}
		})
	}

	var c service.Cluster
	res := a.do("PUT", put, admin, map[string]any{"repo_url": "git@github.com:org/repo.git"}, nil)
	if res.status != http.StatusOK {
		t.Fatalf("git@github.com:org/repo.git: %d %s", res.status, res.body)
	}
	res.decode(t, &c)
	if c.GitOpsRepo != "git@github.com:org/repo.git" {
		t.Errorf("stored %q", c.GitOpsRepo)
	}

	list := a.do("GET", "/v1/clusters", member, nil, nil)
	if list.status != http.StatusOK || strings.Contains(string(list.body), "SECRET") || strings.Contains(string(list.body), "ghp_") {
		t.Errorf("GET /v1/clusters: %d %s", list.status, list.body)
	}
	if !strings.Contains(string(list.body), `"gitops_repo":"git@github.com:org/repo.git"`) {
		t.Errorf("GET /v1/clusters does not show the connected repo: %s", list.body)
	}
}

// TestClusterGet: a cluster answers as the list holds it, only to its own
// team; another team's id (even one the caller's team also uses) never
// shows the other team's cluster.
func TestClusterGet(t *testing.T) {
	a := newTestAPI(t)
	tokA, tokB := token(t, "alice", "team-a", "member"), token(t, "eve", "team-b", "member")
	var list struct{ Clusters []service.Cluster }
	a.do("GET", "/v1/clusters", tokA, nil, nil).decode(t, &list)
	want := map[string]service.Cluster{}
	for _, c := range list.Clusters {
		want[c.ID] = c
	}
	for _, id := range []string{"prod-eks", "c"} {
		t.Run("OwnTeam_"+id, func(t *testing.T) {
			res := a.do("GET", "/v1/clusters/"+id, tokA, nil, nil)
			if res.status != http.StatusOK {
				t.Fatalf("%d %s", res.status, res.body)
			}
			var got service.Cluster
			res.decode(t, &got)
			if diff := cmp.Diff(want[id], got); diff != "" {
				t.Errorf("GET /v1/clusters/%s differs from the list's entry (-list +get):\n%s", id, diff)
			}
		})
	}
	t.Run("SameIDOtherTeam", func(t *testing.T) {
		var got service.Cluster
		a.do("GET", "/v1/clusters/prod-eks", tokB, nil, nil).decode(t, &got)
		if got.Name != "prod (team b)" {
			t.Errorf("team-b sees %+v", got)
		}
	})
	t.Run("ErrOtherTeamsCluster", func(t *testing.T) {
		a.do("GET", "/v1/clusters/c", tokB, nil, nil).wantProblem(t, http.StatusNotFound, "cluster_not_found")
	})
	t.Run("ErrUnknownID", func(t *testing.T) {
		a.do("GET", "/v1/clusters/nope", tokA, nil, nil).wantProblem(t, http.StatusNotFound, "cluster_not_found")
	})
}

// leakyApps is a cluster holding one Application whose sources embed
// credentials, read through argocd.ParseApplication as the real reader does,
// and one Deployment it manages.
type leakyApps struct{}

const leakyApp = `{"metadata":{"name":"leaky","namespace":"argocd"},"spec":{"project":"default",
	"sources":[{"repoURL":"https://ghp_SECRET1@github.com/org/repo.git","path":"deploy"},
		{"repoURL":"ghp_SECRET2@github.com:org/other.git","path":"more"}],
	"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}},
	"status":{"sync":{"status":"Synced"},"health":{"status":"Healthy"}}}`

func (leakyApps) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(leakyApp), &obj); err != nil {
		return service.AppRead{}, err
	}
	app, _ := argocd.ParseApplication(obj, service.DefaultArgoCDNamespace)
	return service.AppRead{Apps: []service.Application{app}}, nil
}

func (leakyApps) ReadObject(_ context.Context, _ service.Cluster, ref service.ResourceRef) (service.ObjectInfo, error) {
	return service.ObjectInfo{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "api",
		Namespaced: true, Found: true,
		Annotations: map[string]string{argocd.TrackingAnnotation: "leaky:apps/Deployment:web/api"}}, nil
}

func TestAppRepoURLsCarryNoCredentials(t *testing.T) {
	srv, _ := mustServeWith(t, leakyApps{})
	doc, router := mustSpec(t)
	a := &testAPI{t: t, srv: srv, router: router, doc: doc}
	member := token(t, "alice", "team-a", "member")

	list := a.do("GET", appsPath, member, nil, nil)
	detail := a.do("GET", appsPath+"/leaky", member, nil, nil)
	ownership := a.do("POST", "/v1/clusters/prod-eks/argocd/ownership", token(t, "alice", "team-a", "agent"),
		map[string]any{"resources": []ref{{"kind": "deployment", "namespace": "web", "name": "api"}}}, nil)
	for name, res := range map[string]response{"list": list, "detail": detail, "ownership": ownership} {
		if res.status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, res.status, res.body)
		}
		if strings.Contains(string(res.body), "SECRET") || strings.Contains(string(res.body), "ghp_") {
			t.Errorf("%s shows credentials: %s", name, res.body)
		}
	}

	var l appListResponse
	list.decode(t, &l)
	if len(l.Applications) != 1 || len(l.Applications[0].Sources) != 2 ||
		l.Applications[0].Sources[0].RepoURL != "https://github.com/org/repo.git" ||
		l.Applications[0].Sources[1].RepoURL != "git@github.com:org/other.git" {
		t.Errorf("applications = %+v", l.Applications)
	}
	if strings.Join(l.Summary.SourceRepos, " ") != "git@github.com:org/other.git https://github.com/org/repo.git" {
		t.Errorf("summary.source_repos = %v", l.Summary.SourceRepos)
	}
	if !strings.Contains(string(ownership.body), `"repo_url":"https://github.com/org/repo.git"`) {
		t.Errorf("ownership answer does not name the cleaned repo: %s", ownership.body)
	}
}

// reviewCounter counts the access reviews that reach the cluster.
type reviewCounter struct {
	*kube.Reader
	n atomic.Int64
}

func (r *reviewCounter) CanI(ctx context.Context, c service.Cluster, q service.AccessQuestion) (service.AccessAnswer, error) {
	r.n.Add(1)
	return r.Reader.CanI(ctx, c, q)
}

// TestCanI: the answer comes from the cluster's real RBAC through Kukie's
// own connection (the limited user edits only the sandbox namespaces),
// and repeated questions are answered from the cache.
func TestCanI(t *testing.T) {
	var counter *reviewCounter
	a := newArgoAPIWith(t, func(r *kube.Reader) service.ApplicationReader {
		counter = &reviewCounter{Reader: r}
		return counter
	})
	agent := token(t, "alice", "team-a", "agent")
	ask := func(cluster string, q map[string]any) service.AccessAnswer {
		t.Helper()
		var ans service.AccessAnswer
		a.do("POST", "/v1/clusters/"+cluster+"/access/can-i", agent, q, nil).decode(t, &ans)
		return ans
	}
	patch := map[string]any{"verb": "patch", "group": "apps", "resource": "deployments", "namespace": "sandbox-plain"}
	if ans := ask("limited-cl", patch); !ans.Allowed {
		t.Errorf("limited user patching deployments in sandbox-plain: %+v", ans)
	}
	inArgo := map[string]any{"verb": "list", "group": "argoproj.io", "resource": "applications", "namespace": "argocd"}
	if ans := ask("limited-cl", inArgo); ans.Allowed || ans.Reason == "" {
		t.Errorf("limited user listing Applications in argocd: %+v", ans)
	}
	if ans := ask("prod-eks", inArgo); !ans.Allowed {
		t.Errorf("admin listing Applications: %+v", ans)
	}
	before := counter.n.Load()
	for range 5 {
		if ans := ask("limited-cl", patch); !ans.Allowed {
			t.Fatalf("cached answer changed: %+v", ans)
		}
	}
	if counter.n.Load() != before {
		t.Errorf("%d reviews reached the cluster for cached questions", counter.n.Load()-before)
	}
	a.clock.Advance(10 * time.Second)
	ask("limited-cl", patch)
	if counter.n.Load() != before+1 {
		t.Errorf("after the TTL: %d reviews, want 1 more", counter.n.Load()-before)
	}
	a.do("POST", "/v1/clusters/limited-cl/access/can-i", agent, map[string]any{"verb": "frobnicate", "resource": "pods"}, nil).
		wantProblem(t, 422, "validation_failed")
	a.do("POST", "/v1/clusters/nope/access/can-i", agent, patch, nil).wantProblem(t, 404, "cluster_not_found")
	a.do("POST", "/v1/clusters/limited-cl/access/can-i", token(t, "eve", "team-b", "agent"), patch, nil).
		wantProblem(t, 404, "cluster_not_found")
}
