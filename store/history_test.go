package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// sqlRecorder is a pgx query tracer that keeps the SQL a store sends.
type sqlRecorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, data.SQL)
	return ctx
}

func (r *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// sent reports whether a statement containing fragment was sent.
func (r *sqlRecorder) sent(fragment string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sql {
		if strings.Contains(s, fragment) {
			return true
		}
	}
	return false
}

// mustOpenStore opens another store on the database at dbURL with opts,
// recording the SQL it sends. It is closed when the test ends.
func mustOpenStore(tb testing.TB, dbURL string, opts ...store.Option) (*store.DB, *sqlRecorder) {
	tb.Helper()
	cfg, err := store.ParseConfig(dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	rec := &sqlRecorder{}
	cfg.ConnConfig.Tracer = rec
	db, err := store.OpenConfig(context.Background(), cfg, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	return db, rec
}

// planSpec is a plan to store directly, with its creation time and what
// detection resolved.
type planSpec struct {
	n                   int // the plan's id is planID(n)
	team, cluster, user string
	private             bool
	at                  time.Time
	resources           []service.ResourceRef
	resolved            []service.ResolvedTarget
}

func planID(n int) string { return fmt.Sprintf("00000000-0000-7000-8000-%012d", n) }

func mustCreatePlan(tb testing.TB, db *store.DB, s planSpec) {
	tb.Helper()
	visibility := service.VisibilityShared
	if s.private {
		visibility = service.VisibilityPrivate
	}
	p := service.Plan{ID: planID(s.n), TeamID: s.team, ClusterID: s.cluster, ConversationID: "conv-1",
		Visibility: visibility, Tool: "apply_manifest", Command: "kubectl apply -f -", Resources: s.resources,
		Payload: json.RawMessage(`{}`), Status: service.PlanPending, CreatedBy: s.user, CreatedAt: s.at, UpdatedAt: s.at}
	if _, _, err := db.CreatePlan(context.Background(), service.NewPlan{Plan: p, Resolved: s.resolved}, s.at); err != nil {
		tb.Fatalf("create plan %d: %v", s.n, err)
	}
}

// pageSeen is what a client sees of one page of history.
type pageSeen struct {
	IDs  []string
	More bool
	Last service.PlanCursor
}

// readHistory pages through q with the cursor of each page's last row.
func readHistory(tb testing.TB, db *store.DB, viewer service.Principal, q service.AppHistoryQuery) ([]pageSeen, []service.Plan) {
	tb.Helper()
	var pages []pageSeen
	var all []service.Plan
	for range 20 {
		plans, more, err := db.AppHistory(context.Background(), viewer, q)
		if err != nil {
			tb.Fatalf("history: %v", err)
		}
		page := pageSeen{More: more}
		for _, p := range plans {
			page.IDs = append(page.IDs, p.ID)
		}
		if len(plans) > 0 {
			last := plans[len(plans)-1]
			page.Last = service.PlanCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		pages, all = append(pages, page), append(all, plans...)
		if !more {
			return pages, all
		}
		q.After = &page.Last
	}
	tb.Fatal("history did not end after 20 pages")
	return nil, nil
}

// TestAppHistoryPaths runs the walk (dense apps) and the id-driven query
// (rare apps) over the same plans: both must return exactly the expected
// plans, page by page with the same cursors.
func TestAppHistoryPaths(t *testing.T) {
	db, dbURL := pgtest.MustOpenDB(t)
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	at := func(minute int) time.Time { return base.Add(time.Duration(minute) * time.Minute) }
	deploy := service.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}
	settings := service.ResourceRef{Kind: "ConfigMap", Namespace: "web", Name: "settings"}
	byApp := func(ns, name string) []service.ResolvedTarget { // settings, detected in app ns/name
		return []service.ResolvedTarget{{Kind: "ConfigMap", Namespace: "web", Name: "settings",
			AppNamespace: ns, AppName: name, Checked: true}}
	}
	specs := []planSpec{
		// Found by the detected app only (the ConfigMap is not among the app's resources).
		{n: 1, team: "t1", cluster: "c1", user: "u1", at: at(1), resources: []service.ResourceRef{settings}, resolved: byApp("argocd", "web")},
		// Found by identity only: "svc" is brought to the core Service kind.
		{n: 2, team: "t1", cluster: "c1", user: "u2", at: at(2),
			resources: []service.ResourceRef{{Kind: "svc", Namespace: "web", Name: "api"}}},
		// Another user's private plan, found by the app: only u2 sees it.
		{n: 3, team: "t1", cluster: "c1", user: "u2", private: true, at: at(3), resources: []service.ResourceRef{settings}, resolved: byApp("argocd", "web")},
		// u1's private plan, found by identity.
		{n: 4, team: "t1", cluster: "c1", user: "u1", private: true, at: at(4), resources: []service.ResourceRef{deploy}},
		// Same time as plan 4 (the id breaks the tie), found by the identity detection resolved.
		{n: 5, team: "t1", cluster: "c1", user: "u3", at: at(4),
			resources: []service.ResourceRef{{Kind: "deploy", Namespace: "web", Name: "api"}},
			resolved:  []service.ResolvedTarget{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api", Checked: true}}},
		// Another cluster and another team, matching by app and identity.
		{n: 6, team: "t1", cluster: "c2", user: "u1", at: at(5), resources: []service.ResourceRef{settings, deploy}, resolved: byApp("argocd", "web")},
		{n: 7, team: "t2", cluster: "c1", user: "u1", at: at(6), resources: []service.ResourceRef{settings, deploy}, resolved: byApp("argocd", "web")},
		// Another app of the same name in another namespace, and another object.
		{n: 8, team: "t1", cluster: "c1", user: "u1", at: at(7), resources: []service.ResourceRef{settings}, resolved: byApp("argocd-2", "web")},
		{n: 9, team: "t1", cluster: "c1", user: "u1", at: at(8),
			resources: []service.ResourceRef{{Group: "apps", Kind: "Deployment", Namespace: "other", Name: "api"}}},
		// Both by app and by identity: listed once.
		{n: 10, team: "t1", cluster: "c1", user: "u2", at: at(9), resources: []service.ResourceRef{settings, deploy}, resolved: byApp("argocd", "web")},
	}
	for _, s := range specs {
		mustCreatePlan(t, db, s)
	}
	times := map[string]time.Time{}
	for _, s := range specs {
		times[planID(s.n)] = s.at
	}
	// Pages of two, newest first, with the cursor of each page's last row.
	expect := func(ns ...int) []pageSeen {
		var pages []pageSeen
		for i := 0; i < len(ns); i += 2 {
			page := pageSeen{More: i+2 < len(ns)}
			for _, n := range ns[i:min(i+2, len(ns))] {
				page.IDs = append(page.IDs, planID(n))
			}
			last := page.IDs[len(page.IDs)-1]
			page.Last = service.PlanCursor{CreatedAt: times[last], ID: last}
			pages = append(pages, page)
		}
		return pages
	}
	q := service.AppHistoryQuery{ClusterID: "c1", AppNamespace: "argocd", AppName: "web", Limit: 2,
		Resources: []service.ResolvedTarget{
			{Group: "apps", Kind: "deployment", Namespace: "web", Name: "api"},
			{Kind: "service", Namespace: "web", Name: "api"},
		}}
	viewers := []struct {
		name   string
		viewer service.Principal
		want   []pageSeen
	}{
		{"Viewer", service.Principal{TeamID: "t1", UserID: "u1"}, expect(10, 5, 4, 2, 1)},
		{"CreatorOfPrivatePlan", service.Principal{TeamID: "t1", UserID: "u2"}, expect(10, 5, 3, 2, 1)},
		{"OtherTeam", service.Principal{TeamID: "t2", UserID: "u9"}, expect(7)},
	}
	paths := []struct {
		name      string
		threshold int
		query     string // a fragment only this path's page query has
	}{
		{"Walk", 1, "EXISTS (SELECT 1 FROM plan_resources r"},
		{"ByID", store.DefaultDenseHistory, "p.id IN ("},
	}
	got := map[string][]service.Plan{}
	for _, path := range paths {
		pathDB, rec := mustOpenStore(t, dbURL, store.WithDenseHistory(path.threshold))
		for _, v := range viewers {
			t.Run(path.name+"/"+v.name, func(t *testing.T) {
				pages, plans := readHistory(t, pathDB, v.viewer, q)
				if diff := cmp.Diff(v.want, pages); diff != "" {
					t.Errorf("pages (-want +got):\n%s", diff)
				}
				got[path.name+"/"+v.name] = plans
			})
		}
		if !rec.sent(path.query) {
			t.Errorf("%s: the store never sent its page query (%q): the other path answered", path.name, path.query)
		}
	}
	for _, v := range viewers {
		if diff := cmp.Diff(got["Walk/"+v.name], got["ByID/"+v.name]); diff != "" {
			t.Errorf("%s: the two paths return different plans (-walk +by id):\n%s", v.name, diff)
		}
	}
}

// TestUpdatePlanRewritesHistoryJoin: a re-detection's checked targets
// replace the stored join columns in the update's transaction, unchecked
// ones keep theirs, and a failed update writes nothing.
func TestUpdatePlanRewritesHistoryJoin(t *testing.T) {
	db, dbURL := pgtest.MustOpenDB(t)
	ctx := context.Background()
	viewer := service.Principal{TeamID: "t1", UserID: "u1"}
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	// Created while detection could not read the Deployment; the ConfigMap
	// was found in app "old".
	mustCreatePlan(t, db, planSpec{n: 1, team: "t1", cluster: "c1", user: "u1", at: at,
		resources: []service.ResourceRef{
			{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"},
			{Kind: "ConfigMap", Namespace: "web", Name: "settings"},
		},
		resolved: []service.ResolvedTarget{
			{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"},
			{Kind: "ConfigMap", Namespace: "web", Name: "settings", AppNamespace: "argocd", AppName: "old", Checked: true},
		}})
	history := func(app string) []string {
		t.Helper()
		plans, _, err := db.AppHistory(ctx, viewer, service.AppHistoryQuery{ClusterID: "c1",
			AppNamespace: "argocd", AppName: app, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range plans {
			ids = append(ids, p.ID)
		}
		return ids
	}
	if got := history("web"); len(got) != 0 {
		t.Fatalf("before re-detection, app web's history = %v, want none", got)
	}

	// A failed update writes no join columns either.
	errRefused := errors.New("refused")
	_, err := db.UpdatePlan(ctx, viewer, planID(1), func(*service.Plan) (service.PlanChange, error) {
		return service.PlanChange{Resolved: []service.ResolvedTarget{{Group: "apps", Kind: "Deployment",
			Namespace: "web", Name: "api", AppNamespace: "argocd", AppName: "web", Checked: true}}}, errRefused
	})
	if !errors.Is(err, errRefused) {
		t.Fatalf("update error = %v, want the update's own", err)
	}
	if got := history("web"); len(got) != 0 {
		t.Fatalf("after a failed update, app web's history = %v, want none", got)
	}

	// Approval's re-detection reads the Deployment (in app web, its kind as
	// the cluster spells it) and cannot read the ConfigMap.
	_, err = db.UpdatePlan(ctx, viewer, planID(1), func(p *service.Plan) (service.PlanChange, error) {
		p.Status = service.PlanApproved
		return service.PlanChange{Resolved: []service.ResolvedTarget{
			{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api", AppNamespace: "argocd", AppName: "web", Checked: true},
			{Kind: "ConfigMap", Namespace: "web", Name: "settings"},
		}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{planID(1)}, history("web")); diff != "" {
		t.Errorf("app web's history after re-detection (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{planID(1)}, history("old")); diff != "" {
		t.Errorf("app old's history (the unchecked ConfigMap keeps its app) (-want +got):\n%s", diff)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT match_group, match_kind, match_namespace,
		coalesce(app_namespace, '-'), coalesce(app_name, '-') FROM plan_resources WHERE plan_id = $1 ORDER BY position`, planID(1))
	type joinRow struct{ Group, Kind, Namespace, AppNamespace, AppName string }
	stored, err := pgx.CollectRows(rows, pgx.RowToStructByPos[joinRow])
	if err != nil {
		t.Fatal(err)
	}
	want := []joinRow{{"apps", "deployment", "web", "argocd", "web"}, {"", "configmap", "web", "argocd", "old"}}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("join columns (-want +got):\n%s", diff)
	}
}
