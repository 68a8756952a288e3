package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// BenchmarkPlanListHTTP measures GET /v1/plans (a page of 50) through the
// whole stack: HTTP, JWT check, Postgres, JSON.
func BenchmarkPlanListHTTP(b *testing.B) {
	a := newBenchAPI(b)
	agent := benchToken(b, "agent")
	member := benchToken(b, "member")
	for i := range 200 {
		body := planBody("shared")
		body["command"] = fmt.Sprintf("kubectl scale --replicas=%d", i)
		if res := a.post(b, "/v1/plans", agent, body); res != http.StatusCreated {
			b.Fatalf("seed: %d", res)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if status := a.get(b, "/v1/plans", member); status != 200 {
			b.Fatalf("list: %d", status)
		}
	}
}

// bigReader returns n synthetic apps, for benchmarks of the cached list.
type bigReader struct{ n int }

func (r bigReader) ListApplications(_ context.Context, c service.Cluster) (service.AppRead, error) {
	apps := make([]service.Application, r.n)
	for i := range apps {
		apps[i] = service.Application{ID: fmt.Sprintf("app-%04d", i), Name: fmt.Sprintf("app-%04d", i), Namespace: "argocd",
			Sources:    []service.AppSource{{RepoURL: "https://github.com/example-org/app.git", Path: "deploy", TargetRevision: "main"}},
			SyncStatus: "Synced", HealthStatus: "Healthy", AutoSync: true, SelfHeal: i%2 == 0, Problems: []service.AppProblem{}}
	}
	return service.AppRead{Apps: apps}, nil
}

// BenchmarkAppListCachedHTTP measures a cache hit of a 500-app list through
// the whole stack (HTTP, JWT, the cluster row from Postgres, the response).
func BenchmarkAppListCachedHTTP(b *testing.B) {
	srv, _ := mustServeWith(b, bigReader{n: 500})
	a := &benchAPI{srv: srv}
	member := benchToken(b, "member")
	if status := a.get(b, "/v1/clusters/prod-eks/argocd/applications", member); status != 200 {
		b.Fatalf("list: %d", status)
	}
	b.ResetTimer()
	for b.Loop() {
		if status := a.get(b, "/v1/clusters/prod-eks/argocd/applications", member); status != 200 {
			b.Fatalf("list: %d", status)
		}
	}
}
