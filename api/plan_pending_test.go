package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// pendingThenSet answers a field's Git state pending on the first
// detection and set afterwards, as when the repository fetch outlived the
// first detection's budget. Detections after the first (the background
// fill's) wait for release when it is set; Recheck (approval) never waits.
type pendingThenSet struct {
	calls   atomic.Int32
	release chan struct{}
}

func (d *pendingThenSet) warning(state service.GitValue) service.Ownership {
	return service.Ownership{ArgoCD: &service.ArgoCDWarning{Level: service.LevelSelfHeal, Resources: []service.OwnershipResource{{
		Kind: "Deployment", Name: "api", Level: service.LevelSelfHeal,
		Fields: []service.FieldPreview{{Field: "/spec/replicas", Planned: json.RawMessage(`3`), Git: &state}}}}}}
}

var gitSetAt = service.GitValue{State: service.GitSet, Value: json.RawMessage(`1`),
	Source: &service.GitSource{Revision: "c1", Path: "deploy.yaml", Line: 7, Via: "manifest"}}

func (d *pendingThenSet) Detect(context.Context, service.Cluster, []service.ResourceRef, string) service.Ownership {
	if d.calls.Add(1) == 1 {
		return d.warning(service.GitValue{State: service.GitPending})
	}
	if d.release != nil {
		<-d.release
	}
	return d.warning(gitSetAt)
}

func (d *pendingThenSet) Recheck(context.Context, service.Cluster, []service.ResourceRef, *service.ArgoCDWarning, string) service.Ownership {
	return d.warning(gitSetAt)
}

// countingPlans counts UpdatePlan calls (approvals and background fills).
type countingPlans struct {
	service.PlanStore
	updates atomic.Int32
}

func (c *countingPlans) UpdatePlan(ctx context.Context, viewer service.Principal, id string,
	update func(*service.Plan) (service.PlanChange, error)) (service.Plan, error) {
	defer c.updates.Add(1)
	return c.PlanStore.UpdatePlan(ctx, viewer, id, update)
}

// TestPendingGitFilledIn checks that a plan whose Git fields were pending
// is completed in the background while it is pending, and that an approval
// in the meantime is never overwritten.
// pendingServer is the test database (its clusters stored) and a server
// of plans on it with detector d, the store plans (nil: the database),
// fills paused a millisecond, and done as the server's stop.
func pendingServer(t *testing.T) (*store.DB, func(d service.OwnershipDetector, plans service.PlanStore, done <-chan struct{}) *testAPI) {
	t.Helper()
	db, _ := pgtest.MustOpenDB(t)
	for _, c := range testClusters {
		c.Kind, c.AccessLevel, c.ArgoCDNamespace = service.ClusterStatic, service.AccessFull, service.DefaultArgoCDNamespace
		if _, err := db.UpsertCluster(context.Background(), c, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	verifier, err := jwtauth.NewHS256(testSecret, testIssuer, testAudience, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db, func(d service.OwnershipDetector, plans service.PlanStore, done <-chan struct{}) *testAPI {
		if plans == nil {
			plans = db
		}
		srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Verifier: verifier,
			Plans: &service.Plans{Store: plans, Clusters: db, Now: time.Now, Detector: d, Done: done,
				MutatingTools: map[string]bool{"apply_manifest": true}, PendingPauses: []time.Duration{time.Millisecond}},
			Metrics: NewMetrics(prometheus.NewRegistry())}))
		t.Cleanup(srv.Close)
		doc, router := mustSpec(t)
		return &testAPI{t: t, srv: srv, router: router, doc: doc}
	}
}

func TestPendingGitFilledIn(t *testing.T) {
	db, start := pendingServer(t)
	serve := func(d *pendingThenSet, plans service.PlanStore) *testAPI { return start(d, plans, nil) }
	f := newFixture(t)
	read := func(a *testAPI, id string) string {
		return string(a.do("GET", "/v1/plans/"+id, f.member, nil, nil).body)
	}
	// wait polls cond; the deadline only catches hangs.
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	a := serve(&pendingThenSet{}, nil)
	created := a.createPlan(f.agent, planBody("shared"))
	if body := read(a, created.ID); !strings.Contains(body, `"state":"pending"`) && !strings.Contains(body, `"state":"set"`) {
		t.Fatalf("created: %s", body)
	}
	wait("the pending field filled in", func() bool { return strings.Contains(read(a, created.ID), `"state":"set"`) })
	var filled service.Plan
	a.do("GET", "/v1/plans/"+created.ID, f.member, nil, nil).decode(t, &filled)
	if filled.Status != service.PlanPending || !filled.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("filled plan: status %s, updated_at %v (created %v)", filled.Status, filled.UpdatedAt, created.UpdatedAt)
	}

	// Approved while the fill's detection runs: the approval stands.
	d := &pendingThenSet{release: make(chan struct{})}
	plans := &countingPlans{PlanStore: db}
	b := serve(d, plans)
	p := b.createPlan(f.agent, planBody("shared"))
	var approved service.Plan
	b.do("POST", "/v1/plans/"+p.ID+"/approve", f.member, nil, nil).decode(t, &approved)
	close(d.release)
	wait("the fill's attempt after the approval", func() bool { return plans.updates.Load() >= 2 })
	var after service.Plan
	b.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &after)
	if !after.UpdatedAt.Equal(approved.UpdatedAt) || after.Status != service.PlanApproved {
		t.Errorf("the fill overwrote the approved plan: %+v", after)
	}
}

// blockingFill answers pending at creation; the background fill's
// detection waits for its context to end and reports that it did.
type blockingFill struct {
	calls atomic.Int32
	ended chan struct{}
}

func (d *blockingFill) Detect(ctx context.Context, _ service.Cluster, _ []service.ResourceRef, _ string) service.Ownership {
	if d.calls.Add(1) > 1 {
		<-ctx.Done()
		close(d.ended)
	}
	return (&pendingThenSet{}).warning(service.GitValue{State: service.GitPending})
}

func (d *blockingFill) Recheck(context.Context, service.Cluster, []service.ResourceRef, *service.ArgoCDWarning, string) service.Ownership {
	return service.Ownership{}
}

// TestPendingFillEndsWithTheServer checks that the server's stop (Done)
// ends a background fill's detection.
func TestPendingFillEndsWithTheServer(t *testing.T) {
	done := make(chan struct{})
	d := &blockingFill{ended: make(chan struct{})}
	_, start := pendingServer(t)
	a := start(d, nil, done)
	f := newFixture(t)
	a.createPlan(f.agent, planBody("shared"))
	deadline := time.Now().Add(time.Minute) // catches hangs only
	for d.calls.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the background fill never detected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(done)
	select {
	case <-d.ended:
	case <-time.After(time.Minute):
		t.Fatal("the fill's detection did not end when the server stopped")
	}
}
