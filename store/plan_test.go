package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/testkit/pgnumeric"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// clock returns a deterministic now that advances one second per call.
func clock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// newPlans returns the plan use case over db with clusters c0…c9,
// cluster-0…cluster-9 and bench registered for team t1.
func newPlans(tb testing.TB, db *store.DB, now func() time.Time) *service.Plans {
	tb.Helper()
	ids := []string{"bench"}
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("c%d", i), fmt.Sprintf("cluster-%d", i))
	}
	for _, id := range ids {
		c := service.Cluster{TeamID: "t1", ID: id, Name: id, Kind: service.ClusterStatic,
			AccessLevel: service.AccessFull, Namespaces: []string{}, ArgoCDNamespace: "argocd"}
		if _, err := db.UpsertCluster(context.Background(), c, time.Now()); err != nil {
			tb.Fatal(err)
		}
	}
	return &service.Plans{Store: db, Clusters: db, Now: now}
}

func input(cluster string, resources ...service.ResourceRef) service.PlanInput {
	return service.PlanInput{ClusterID: cluster, ConversationID: "conv-1", Visibility: service.VisibilityShared,
		Tool: "apply_manifest", Command: "kubectl apply -f -", Resources: resources,
		Payload: json.RawMessage(`{"argocd": {"level": "self_heal"}, "n": 12345678901234567890}`)}
}

func TestPlanRoundTrip(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	plans := newPlans(t, db, clock())
	ctx := context.Background()
	agent := service.Principal{UserID: "u1", TeamID: "t1", Roles: []service.Role{service.RoleAgent}}

	created, replayed, err := plans.Create(ctx, agent, input("c1",
		service.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"},
		service.ResourceRef{Kind: "Namespace", Name: "web"}), "")
	if err != nil || replayed {
		t.Fatalf("create: %v (replayed=%v)", err, replayed)
	}
	got, err := plans.Get(ctx, agent, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	var gotPayload, wantPayload any
	_ = json.Unmarshal(got.Payload, &gotPayload)
	_ = json.Unmarshal(created.Payload, &wantPayload)
	if diff := cmp.Diff(wantPayload, gotPayload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	got.Payload, created.Payload = nil, nil
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("stored plan differs (-created +got):\n%s", diff)
	}
}

func TestListPagination(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	plans := newPlans(t, db, clock())
	ctx := context.Background()
	agent := service.Principal{UserID: "u1", TeamID: "t1", Roles: []service.Role{service.RoleAgent}}
	var ids []string
	for i := range 7 {
		p, _, err := plans.Create(ctx, agent, input(fmt.Sprintf("c%d", i%2),
			service.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: fmt.Sprintf("d%d", i)}), "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{p.ID}, ids...) // newest first
	}
	var seen []string
	cursor := ""
	for range 10 {
		page, err := plans.List(ctx, agent, service.PlanQuery{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Items {
			seen = append(seen, p.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff(ids, seen); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}

	page, err := plans.List(ctx, agent, service.PlanQuery{ClusterID: "c0", Kind: "DEPLOYMENT", Name: "d4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Resources[0].Name != "d4" {
		t.Errorf("filter by cluster, kind (any case) and name: got %d plans", len(page.Items))
	}
}

func TestConcurrentIdempotentCreate(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	plans := newPlans(t, db, time.Now)
	agent := service.Principal{UserID: "u1", TeamID: "t1", Roles: []service.Role{service.RoleAgent}}
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, _, err := plans.Create(context.Background(), agent, input("c1"), "key-1")
			ids[i], errs[i] = p.ID, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("concurrent creates with one key made two plans: %s and %s", ids[0], ids[i])
		}
	}
}

// TestPayloadNumberLimits checks the service's model of numeric limits
// against PostgreSQL: a number it accepts is stored, one it refuses is
// one PostgreSQL refuses too.
func TestPayloadNumberLimits(t *testing.T) {
	db, dbURL := pgtest.MustOpenDB(t)
	plans := newPlans(t, db, time.Now)
	agent := service.Principal{UserID: "u1", TeamID: "t1", Roles: []service.Role{service.RoleAgent}}
	for lit, fits := range pgnumeric.LimitCases() {
		in := input("c1")
		in.Payload = json.RawMessage(`{"n": ` + lit + `}`)
		_, _, err := plans.Create(context.Background(), agent, in, "")
		if fits && err != nil {
			t.Errorf("%s: refused (%v) though PostgreSQL should hold it", lit, err)
		}
		if !fits {
			if service.ErrorCode(err) != service.EVALIDATION {
				t.Errorf("%s: code %q, want a validation error", lit, service.ErrorCode(err))
			}
			// The database itself refuses it too, so the model is not too strict.
			if !strings.HasPrefix(lit, "1e9999") {
				dbErr := pgtest.MustExecErr(t, dbURL, `SELECT '{"n": `+lit+`}'::jsonb`)
				if dbErr == nil {
					t.Errorf("%s: PostgreSQL accepts it, but the service refuses it", lit)
				}
			}
		}
	}
}
