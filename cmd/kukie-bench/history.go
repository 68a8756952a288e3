package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/migrations"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// History benchmark shape: 1,000,000 plans over 200 clusters. Cluster
// cl-000 holds 20,000 plans, 5,000 of which touch app "target" (half found
// by detection, half only by resource identity); the other clusters share
// the rest.
const (
	historyPlans    = 1_000_000
	historyClusters = 200
	targetPlans     = 20_000
	targetMatches   = 5_000
)

// historyBench seeds the plans with COPY and times the Kukie history query
// beside loading the cluster's plans and filtering them in Go.
func historyBench(runs int) error {
	ctx := context.Background()
	dbURL, drop, err := createDatabase()
	if err != nil {
		return err
	}
	defer drop()
	cfg, err := store.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	recorder := &statementRecorder{}
	cfg.ConnConfig.Tracer = recorder
	db, err := store.OpenConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	sqlDB := db.SQLDB()
	if err := migrations.Up(ctx, sqlDB); err != nil {
		return err
	}
	sqlDB.Close()
	step(fmt.Sprintf("seeding %d plans over %d clusters with COPY", historyPlans, historyClusters))
	start := time.Now()
	if err := seedHistory(ctx, dbURL); err != nil {
		return err
	}
	step(fmt.Sprintf("seeded in %s", time.Since(start).Round(time.Second)))

	viewer := service.Principal{TeamID: "bench", UserID: "u0"}
	appResources := []service.ResolvedTarget{
		{Group: "apps", Kind: "Deployment", Namespace: "target", Name: "web"},
		{Kind: "Service", Namespace: "target", Name: "web"},
	}
	q := service.AppHistoryQuery{ClusterID: "cl-000", AppNamespace: "argocd", AppName: "target",
		Resources: appResources, Limit: 50}
	var sqlTimes, goTimes []time.Duration
	var deep service.AppHistoryQuery
	for i := range runs {
		t0 := time.Now()
		plans, _, err := db.AppHistory(ctx, viewer, q)
		if err != nil {
			return err
		}
		sqlTimes = append(sqlTimes, time.Since(t0))
		if i == 0 {
			if len(plans) != 50 {
				return fmt.Errorf("history returned %d plans, want 50", len(plans))
			}
			last := plans[len(plans)-1]
			deep = q
			deep.After = &service.PlanCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
	}
	rare := service.AppHistoryQuery{ClusterID: "cl-000", AppNamespace: "argocd", AppName: "rare", Limit: 50}
	var rareTimes []time.Duration
	for range min(runs, 50) {
		t0 := time.Now()
		if _, _, err := db.AppHistory(ctx, viewer, rare); err != nil {
			return err
		}
		rareTimes = append(rareTimes, time.Since(t0))
	}
	for range min(runs, 20) {
		t0 := time.Now()
		n, err := loadAndFilter(ctx, db, viewer, q)
		if err != nil {
			return err
		}
		if want := visibleTargets(); n != want {
			return fmt.Errorf("the Go filter found %d plans, want the %d visible to u0", n, want)
		}
		goTimes = append(goTimes, time.Since(t0))
	}
	explainDense, err := explainHistory(ctx, dbURL, recorder, func() error {
		_, _, err := db.AppHistory(ctx, viewer, deep)
		return err
	})
	if err != nil {
		return err
	}
	explainRare, err := explainHistory(ctx, dbURL, recorder, func() error {
		_, _, err := db.AppHistory(ctx, viewer, rare)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("\n| Kukie history (1,000,000 plans, 200 clusters; app with %d plans) | p50 | p99 |\n|---|---|---|\n", targetMatches)
	fmt.Printf("| SQL join, first page of 50 (%d runs) | %s | %s |\n", len(sqlTimes), pct(sqlTimes, 50), pct(sqlTimes, 99))
	fmt.Printf("| SQL join for a rare app (10 plans among the cluster's %d; %d runs) | %s | %s |\n", targetPlans, len(rareTimes), pct(rareTimes, 50), pct(rareTimes, 99))
	fmt.Printf("| Load the cluster's %d plans and filter in Go (%d runs) | %s | %s |\n", targetPlans, len(goTimes), pct(goTimes, 50), pct(goTimes, 99))
	fmt.Printf("\nEXPLAIN ANALYZE, app with %d plans, second page (the count, then the walk):\n\n```\n%s\n```\n", targetMatches, explainDense)
	fmt.Printf("\nEXPLAIN ANALYZE, rare app, first page (the count, then the plans by id):\n\n```\n%s\n```\n", explainRare)
	return nil
}

// statementRecorder is a pgx query tracer that keeps what the store sends
// while recording, so the bench can EXPLAIN exactly those statements.
type statementRecorder struct {
	mu         sync.Mutex
	recording  bool
	statements []recordedStatement
}

type recordedStatement struct {
	sql  string
	args []any
}

// TraceQueryStart implements pgx.QueryTracer.
func (r *statementRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recording {
		r.statements = append(r.statements, recordedStatement{sql: data.SQL, args: data.Args})
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (r *statementRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// record returns the statements sent while request ran.
func (r *statementRecorder) record(request func() error) ([]recordedStatement, error) {
	r.mu.Lock()
	r.recording, r.statements = true, nil
	r.mu.Unlock()
	err := request()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording = false
	return r.statements, err
}

// explainHistory runs request and returns PostgreSQL's EXPLAIN (ANALYZE,
// BUFFERS) of each query it sent inside its transaction, replayed in one
// transaction with the same settings (SET LOCAL) applied first.
func explainHistory(ctx context.Context, dbURL string, recorder *statementRecorder, request func() error) (string, error) {
	statements, err := recorder.record(request)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var plans []string
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		inTx := false
		for _, s := range statements {
			switch {
			case strings.EqualFold(s.sql, "begin"):
				inTx = true
			case strings.EqualFold(s.sql, "commit"):
				inTx = false
			case !inTx:
			case strings.HasPrefix(s.sql, "SET "):
				if _, err := tx.Exec(ctx, s.sql, s.args...); err != nil {
					return err
				}
			default:
				rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+s.sql, s.args...)
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return err
				}
				plans = append(plans, strings.Join(lines, "\n"))
			}
		}
		return nil
	})
	if err == nil && len(plans) == 0 {
		err = fmt.Errorf("the history request sent no query inside a transaction to explain")
	}
	return strings.Join(plans, "\n\n"), err
}

// visibleTargets counts the target app's plans user u0 may see: shared
// ones, and private ones of u0 (every 10th plan is private, creators rotate
// over u0..u6).
func visibleTargets() int {
	n := 0
	for i := 0; i < targetPlans; i += 4 {
		if i%10 != 0 || i%7 == 0 {
			n++
		}
	}
	return n
}

// loadAndFilter is the approach the history endpoint avoids: every plan of
// the cluster with its resources, filtered in Go. It returns the matches.
func loadAndFilter(ctx context.Context, db *store.DB, viewer service.Principal, q service.AppHistoryQuery) (int, error) {
	n := 0
	cursor := ""
	plans := &service.Plans{Store: db, Now: time.Now}
	for {
		page, err := plans.List(ctx, viewer, service.PlanQuery{ClusterID: q.ClusterID, Limit: service.MaxPlanPageSize, Cursor: cursor})
		if err != nil {
			return 0, err
		}
		for _, p := range page.Items {
			for _, r := range p.Resources {
				if r.Namespace == "target" && r.Name == "web" && (r.Kind == "Deployment" || r.Kind == "Service") {
					n++
					break
				}
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return n, nil
		}
	}
}

func seedHistory(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	now := time.Now().UTC()
	if _, err := conn.Exec(ctx, `INSERT INTO teams (id, external_id, created_at) VALUES ('bench', 'bench-external-id-0000000000000000', now())`); err != nil {
		return err
	}
	var clusters strings.Builder
	for i := range historyClusters {
		fmt.Fprintf(&clusters, "('bench', 'cl-%03d', 'cl-%03d', 'static', 'full', now(), now()),", i, i)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO clusters (team_id, id, name, kind, access_level, created_at, updated_at) VALUES `+
		strings.TrimSuffix(clusters.String(), ",")); err != nil {
		return err
	}
	ids := make([]uuid.UUID, historyPlans)
	cluster := func(i int) string {
		if i < targetPlans {
			return "cl-000"
		}
		return fmt.Sprintf("cl-%03d", 1+i%(historyClusters-1))
	}
	i := 0
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"plans"}, []string{"team_id", "id", "cluster_id", "conversation_id",
		"visibility", "tool", "command", "payload", "status", "created_by", "created_at", "updated_at", "request_hash"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == historyPlans {
				return nil, nil
			}
			ids[i] = uuid.New()
			visibility := "shared"
			if i%10 == 0 {
				visibility = "private"
			}
			row := []any{"bench", ids[i], cluster(i), "conv", visibility, "apply_manifest", "kubectl apply -f -",
				[]byte(`{}`), "executed", fmt.Sprintf("u%d", i%7), now.Add(-time.Duration(i) * time.Second),
				now, "h"}
			i++
			return row, nil
		}))
	if err != nil {
		return err
	}
	i = 0
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"plan_resources"}, []string{"team_id", "plan_id", "position", "cluster_id",
		"api_group", "kind", "kind_lower", "namespace", "name", "match_group", "match_kind", "match_namespace",
		"app_namespace", "app_name"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == historyPlans {
				return nil, nil
			}
			group, kind, ns, name := "apps", "Deployment", fmt.Sprintf("ns-%d", i%500), fmt.Sprintf("app-%d", i%997)
			var appNS, appName any = "argocd", fmt.Sprintf("app-%d", i%997)
			if i < targetPlans && i%2000 == 1 { // 10 of cl-000's plans touch a rare app
				appName = "rare"
			}
			if i < targetPlans && i%4 == 0 { // 5,000 of cl-000's plans touch the target app
				ns, name = "target", "web"
				if i%8 == 0 {
					appName = "target" // found by detection
				} else {
					appNS, appName, kind, group = nil, nil, "Service", "" // detection skipped: identity only
				}
			}
			row := []any{"bench", ids[i], int16(0), cluster(i), group, kind, strings.ToLower(kind), ns, name,
				group, strings.ToLower(kind), ns, appNS, appName}
			i++
			return row, nil
		}))
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "ANALYZE")
	return err
}
