package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

// seed creates n shared plans over 10 clusters, each touching 3 resources.
func seed(b *testing.B, plans *service.Plans, agent service.Principal, n int) {
	b.Helper()
	for i := range n {
		in := input(fmt.Sprintf("cluster-%d", i%10),
			service.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: fmt.Sprintf("d%d", i)},
			service.ResourceRef{Kind: "Service", Namespace: "ns", Name: fmt.Sprintf("s%d", i)},
			service.ResourceRef{Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("c%d", i)})
		if _, _, err := plans.Create(context.Background(), agent, in, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreatePlan(b *testing.B) {
	db, _ := pgtest.MustOpenDB(b)
	plans := newPlans(b, db, time.Now)
	agent := service.Principal{UserID: "u1", TeamID: "t1", Roles: []service.Role{service.RoleAgent}}
	in := input("c1", service.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "api"})
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := plans.Create(context.Background(), agent, in, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListPlans(b *testing.B) {
	db, dbURL := pgtest.MustOpenDB(b)
	plans := newPlans(b, db, clock())
	agent := service.Principal{UserID: "u1", TeamID: "t1", Roles: []service.Role{service.RoleAgent}}
	seed(b, plans, agent, 5000)
	pgtest.MustExec(b, dbURL, "ANALYZE") // as autovacuum would after a bulk load
	queries := map[string]service.PlanQuery{
		"NewestPage50":     {},
		"ByCluster":        {ClusterID: "cluster-3"},
		"ByResource":       {Kind: "deployment", Namespace: "ns", Name: "d4321"},
		"DeepCursorPage20": {Limit: 20},
	}
	deep, err := plans.List(context.Background(), agent, service.PlanQuery{Limit: 200})
	if err != nil {
		b.Fatal(err)
	}
	for name, q := range queries {
		if name == "DeepCursorPage20" {
			q.Cursor = deep.NextCursor
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := plans.List(context.Background(), agent, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
