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
)

// pendingThenSet answers a field's Git state pending on the first
// detection and set afterwards, as when the repository fetch outlived the
// first detection's budget.
type pendingThenSet struct{ calls atomic.Int32 }

func (d *pendingThenSet) Detect(context.Context, service.Cluster, []service.ResourceRef, string) service.Ownership {
	state := service.GitValue{State: service.GitPending}
	if d.calls.Add(1) > 1 {
		state = service.GitValue{State: service.GitSet, Value: json.RawMessage(`1`),
			Source: &service.GitSource{Revision: "c1", Path: "deploy.yaml", Line: 7, Via: "manifest"}}
	}
	return service.Ownership{ArgoCD: &service.ArgoCDWarning{Level: service.LevelSelfHeal, Resources: []service.OwnershipResource{{
		Kind: "Deployment", Name: "api", Level: service.LevelSelfHeal,
		Fields: []service.FieldPreview{{Field: "/spec/replicas", Planned: json.RawMessage(`3`), Git: &state}}}}}}
}

func (d *pendingThenSet) Recheck(ctx context.Context, c service.Cluster, t []service.ResourceRef, _ *service.ArgoCDWarning, lang string) service.Ownership {
	return d.Detect(ctx, c, t, lang)
}

// TestPendingGitFilledIn checks that a plan whose Git fields were pending
// is completed in the background while it is pending, and that an approval
// in the meantime is never overwritten.
func TestPendingGitFilledIn(t *testing.T) {
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
	serve := func(pauses ...time.Duration) *testAPI {
		srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Verifier: verifier,
			Plans: &service.Plans{Store: db, Clusters: db, Now: time.Now, Detector: &pendingThenSet{},
				MutatingTools: map[string]bool{"apply_manifest": true}, PendingPauses: pauses},
			Metrics: NewMetrics(prometheus.NewRegistry())}))
		t.Cleanup(srv.Close)
		doc, router := mustSpec(t)
		return &testAPI{t: t, srv: srv, router: router, doc: doc}
	}
	f := newFixture(t)
	read := func(a *testAPI, id string) string {
		return string(a.do("GET", "/v1/plans/"+id, f.member, nil, nil).body)
	}

	a := serve(10 * time.Millisecond)
	created := a.createPlan(f.agent, planBody("shared"))
	if body := read(a, created.ID); !strings.Contains(body, `"state":"pending"`) {
		t.Fatalf("created: %s", body)
	}
	deadline := time.Now().Add(30 * time.Second) // only against hangs
	for !strings.Contains(read(a, created.ID), `"state":"set"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the pending field was not filled in: %s", read(a, created.ID))
		}
		time.Sleep(20 * time.Millisecond)
	}
	var filled service.Plan
	a.do("GET", "/v1/plans/"+created.ID, f.member, nil, nil).decode(t, &filled)
	if filled.Status != service.PlanPending || !filled.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("filled plan: status %s, updated_at %v (created %v)", filled.Status, filled.UpdatedAt, created.UpdatedAt)
	}

	// Approved before the fill: the approval's detection stands.
	b := serve(300 * time.Millisecond)
	p := b.createPlan(f.agent, planBody("shared"))
	var approved service.Plan
	b.do("POST", "/v1/plans/"+p.ID+"/approve", f.member, nil, nil).decode(t, &approved)
	time.Sleep(600 * time.Millisecond)
	var after service.Plan
	b.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &after)
	if !after.UpdatedAt.Equal(approved.UpdatedAt) || after.Status != service.PlanApproved {
		t.Errorf("the fill overwrote the approved plan: %+v", after)
	}
}
