package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/service"
)

// planColumns is the column list every plan query selects, in scanPlan's order.
const planColumns = `p.id::text, p.team_id, p.cluster_id, p.conversation_id, p.visibility, p.tool, p.command,
	p.payload, p.status, p.created_by, p.created_at, p.updated_at, p.approved_by, p.approved_at,
	p.rejected_by, p.rejected_at, p.completed_by, p.completed_at, p.output, p.output_truncated, p.argocd_override`

// visibleTo is the WHERE clause that scopes plans to the viewer: same team,
// and shared or created by the viewer. $1 is the team, $2 the user.
const visibleTo = `p.team_id = $1 AND (p.visibility = 'shared' OR p.created_by = $2)`

func scanPlan(row pgx.CollectableRow) (service.Plan, error) {
	var p service.Plan
	var payload []byte
	err := row.Scan(&p.ID, &p.TeamID, &p.ClusterID, &p.ConversationID, &p.Visibility, &p.Tool, &p.Command,
		&payload, &p.Status, &p.CreatedBy, &p.CreatedAt, &p.UpdatedAt, &p.ApprovedBy, &p.ApprovedAt,
		&p.RejectedBy, &p.RejectedAt, &p.CompletedBy, &p.CompletedAt, &p.Output, &p.OutputTruncated, &p.ArgoCDOverride)
	p.Payload = payload
	return p, err
}

// CreatePlan inserts a plan with its resources, or returns the plan an
// earlier request with the same idempotency key created.
func (db *DB) CreatePlan(ctx context.Context, np service.NewPlan, now time.Time) (service.Plan, bool, error) {
	var out service.Plan
	var replayed bool
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		p := np.Plan
		if _, err := ensureTeam(ctx, tx, p.TeamID, service.NewExternalID(), now); err != nil {
			return err
		}
		var key *string
		if np.IdempotencyKey != "" {
			key = &np.IdempotencyKey
		}
		tag, err := tx.Exec(ctx, `INSERT INTO plans (team_id, id, cluster_id, conversation_id, visibility, tool,
			command, payload, status, created_by, created_at, updated_at, idempotency_key, request_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (team_id, created_by, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
			p.TeamID, p.ID, p.ClusterID, p.ConversationID, p.Visibility, p.Tool, p.Command, []byte(p.Payload),
			p.Status, p.CreatedBy, p.CreatedAt, p.UpdatedAt, key, np.Fingerprint)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			replayed = true
			out, err = replay(ctx, tx, np)
			return err
		}
		if err := insertResources(ctx, tx, np); err != nil {
			return err
		}
		out = p
		return nil
	})
	return out, replayed, mapError(err)
}

// ReplayPlan returns the plan an idempotency key already created, if any.
func (db *DB) ReplayPlan(ctx context.Context, np service.NewPlan) (service.Plan, bool, error) {
	var p service.Plan
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var err error
		p, err = replay(ctx, tx, np)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return service.Plan{}, false, nil
	}
	if err != nil {
		return service.Plan{}, false, mapError(err)
	}
	return p, true, nil
}

// replay loads the plan an idempotency key already created and checks that
// it came from the same request.
func replay(ctx context.Context, tx pgx.Tx, np service.NewPlan) (service.Plan, error) {
	var id, hash string
	err := tx.QueryRow(ctx, `SELECT id::text, request_hash FROM plans
		WHERE team_id = $1 AND created_by = $2 AND idempotency_key = $3`,
		np.Plan.TeamID, np.Plan.CreatedBy, np.IdempotencyKey).Scan(&id, &hash)
	if err != nil {
		return service.Plan{}, err
	}
	if hash != np.Fingerprint {
		return service.Plan{}, service.Errorf(service.ECONFLICT,
			"The Idempotency-Key was already used for a different request.")
	}
	viewer := service.Principal{TeamID: np.Plan.TeamID, UserID: np.Plan.CreatedBy}
	return getPlan(ctx, tx, viewer, id, false)
}

func insertResources(ctx context.Context, tx pgx.Tx, np service.NewPlan) error {
	p := np.Plan
	if len(p.Resources) == 0 {
		return nil
	}
	rows := make([][]any, len(p.Resources))
	for i, r := range p.Resources {
		// What the cluster resolved (detection), else the resource as given.
		match := service.ResolvedTarget{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace}
		var appNS, appName *string
		if i < len(np.Resolved) {
			res := np.Resolved[i]
			match = res
			if res.AppName != "" {
				appNS, appName = &res.AppNamespace, &res.AppName
			}
		}
		// Kinds the cluster did not resolve (no detection, or it was
		// skipped) are brought to the form status.resources uses.
		match.Group, match.Kind = service.CanonicalKind(match.Group, match.Kind)
		changed := r.ChangedFields
		if changed == nil {
			changed = []string{}
		}
		rows[i] = []any{p.TeamID, p.ID, int16(i), p.ClusterID, r.Group, r.Kind, strings.ToLower(r.Kind), r.Namespace, r.Name,
			changed, match.Group, strings.ToLower(match.Kind), match.Namespace, appNS, appName}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"plan_resources"},
		[]string{"team_id", "plan_id", "position", "cluster_id", "api_group", "kind", "kind_lower", "namespace", "name",
			"changed_fields", "match_group", "match_kind", "match_namespace", "app_namespace", "app_name"},
		pgx.CopyFromRows(rows))
	return err
}

// querier is what reads need: a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// GetPlan returns one plan visible to viewer. Reads run outside a
// transaction: a plan's resources never change after it is created.
func (db *DB) GetPlan(ctx context.Context, viewer service.Principal, id string) (service.Plan, error) {
	p, err := getPlan(ctx, db.pool, viewer, id, false)
	return p, mapError(err)
}

func getPlan(ctx context.Context, tx querier, viewer service.Principal, id string, forUpdate bool) (service.Plan, error) {
	q := `SELECT ` + planColumns + ` FROM plans p WHERE ` + visibleTo + ` AND p.id = $3`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, _ := tx.Query(ctx, q, viewer.TeamID, viewer.UserID, id)
	p, err := pgx.CollectExactlyOneRow(rows, scanPlan)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, service.Errorf(service.ENOTFOUND, "The plan does not exist.")
	}
	if err != nil {
		return p, err
	}
	plans := []service.Plan{p}
	if err := loadResources(ctx, tx, viewer.TeamID, plans); err != nil {
		return p, err
	}
	return plans[0], nil
}

// loadResources fills in the resources of plans with one query.
func loadResources(ctx context.Context, q querier, teamID string, plans []service.Plan) error {
	if len(plans) == 0 {
		return nil
	}
	ids := make([]string, len(plans))
	index := make(map[string]int, len(plans))
	for i := range plans {
		ids[i] = plans[i].ID
		index[plans[i].ID] = i
		plans[i].Resources = []service.ResourceRef{}
	}
	rows, _ := q.Query(ctx, `SELECT plan_id::text, api_group, kind, namespace, name, changed_fields FROM plan_resources
		WHERE team_id = $1 AND plan_id = ANY($2::uuid[]) ORDER BY plan_id, position`, teamID, ids)
	var planID string
	var r service.ResourceRef
	_, err := pgx.ForEachRow(rows, []any{&planID, &r.Group, &r.Kind, &r.Namespace, &r.Name, &r.ChangedFields}, func() error {
		i := index[planID]
		row := r
		row.ChangedFields = nil
		if len(r.ChangedFields) > 0 {
			row.ChangedFields = slices.Clone(r.ChangedFields)
		}
		plans[i].Resources = append(plans[i].Resources, row)
		return nil
	})
	return err
}

// ListPlans returns a page of plans visible to viewer, newest first.
func (db *DB) ListPlans(ctx context.Context, viewer service.Principal, f service.PlanFilter) ([]service.Plan, bool, error) {
	args := []any{viewer.TeamID, viewer.UserID}
	where := []string{visibleTo}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.ClusterID != "" {
		add("p.cluster_id = $%d", f.ClusterID)
	}
	if f.Status != "" {
		add("p.status = $%d", string(f.Status))
	}
	if f.ConversationID != "" {
		add("p.conversation_id = $%d", f.ConversationID)
	}
	if f.Kind != "" || f.Namespace != "" || f.Name != "" {
		sub := []string{"r.plan_id = p.id", "r.team_id = p.team_id"}
		for _, c := range []struct{ col, v string }{{"kind_lower", f.Kind}, {"namespace", f.Namespace}, {"name", f.Name}} {
			if c.v != "" {
				args = append(args, c.v)
				sub = append(sub, fmt.Sprintf("r.%s = $%d", c.col, len(args)))
			}
		}
		where = append(where, "EXISTS (SELECT 1 FROM plan_resources r WHERE "+strings.Join(sub, " AND ")+")")
	}
	if f.After != nil {
		args = append(args, f.After.CreatedAt, f.After.ID)
		where = append(where, fmt.Sprintf("(p.created_at, p.id) < ($%d, $%d::uuid)", len(args)-1, len(args)))
	}
	args = append(args, f.Limit+1)
	q := `SELECT ` + planColumns + ` FROM plans p WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY p.created_at DESC, p.id DESC LIMIT $%d`, len(args))

	rows, _ := db.pool.Query(ctx, q, args...)
	plans, err := pgx.CollectRows(rows, scanPlan)
	if err != nil {
		return nil, false, mapError(err)
	}
	more := len(plans) > f.Limit
	if more {
		plans = plans[:f.Limit]
	}
	if err := loadResources(ctx, db.pool, viewer.TeamID, plans); err != nil {
		return nil, false, mapError(err)
	}
	return plans, more, nil
}

// UpdatePlan locks a visible plan, applies update and writes the lifecycle
// columns back in the same transaction.
func (db *DB) UpdatePlan(ctx context.Context, viewer service.Principal, id string, update func(*service.Plan) error) (service.Plan, error) {
	var p service.Plan
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var err error
		if p, err = getPlan(ctx, tx, viewer, id, true); err != nil {
			return err
		}
		if err := update(&p); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE plans SET status = $3, updated_at = $4, approved_by = $5, approved_at = $6,
			rejected_by = $7, rejected_at = $8, completed_by = $9, completed_at = $10, output = $11,
			output_truncated = $12, payload = $13, argocd_override = $14 WHERE team_id = $1 AND id = $2`,
			p.TeamID, p.ID, p.Status, p.UpdatedAt, p.ApprovedBy, p.ApprovedAt, p.RejectedBy, p.RejectedAt,
			p.CompletedBy, p.CompletedAt, p.Output, p.OutputTruncated, []byte(p.Payload), p.ArgoCDOverride)
		return err
	})
	return p, mapError(err)
}

// AppHistory returns the plans of one app, newest first: the join runs in
// SQL on indexed columns, so a cluster's plans are never loaded to filter.
func (db *DB) AppHistory(ctx context.Context, viewer service.Principal, q service.AppHistoryQuery) ([]service.Plan, bool, error) {
	var plans []service.Plan
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		sql, args, err := historyQueryFor(ctx, tx, viewer, q)
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, sql, args...)
		plans, err = pgx.CollectRows(rows, scanPlan)
		return err
	})
	if err != nil {
		return nil, false, mapError(err)
	}
	more := len(plans) > q.Limit
	if more {
		plans = plans[:q.Limit]
	}
	if err := loadResources(ctx, db.pool, viewer.TeamID, plans); err != nil {
		return nil, false, mapError(err)
	}
	return plans, more, nil
}

// ExplainAppHistory returns PostgreSQL's EXPLAIN ANALYZE of the history
// query, for benchmarks and operators checking the plan on real data.
func (db *DB) ExplainAppHistory(ctx context.Context, viewer service.Principal, q service.AppHistoryQuery) (string, error) {
	var lines []string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		sql, args, err := historyQueryFor(ctx, tx, viewer, q)
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return strings.Join(lines, "\n"), err
}

// historyQueryFor picks the history query by how many plans touched the
// app (counted from the indexes, at most denseHistory+1), and turns off
// parallel workers: both forms stop early, and worker start-up alone cost
// ~35 ms when PostgreSQL chose them.
func historyQueryFor(ctx context.Context, tx pgx.Tx, viewer service.Principal, q service.AppHistoryQuery) (string, []any, error) {
	if _, err := tx.Exec(ctx, "SET LOCAL max_parallel_workers_per_gather = 0"); err != nil {
		return "", nil, err
	}
	_, args := appHistoryQuery(viewer, q, false)
	var hits int
	// The count shares the query's first nine arguments; $2 (the viewer) is
	// bound only so the list is the same.
	// UNION ALL streams, so the LIMIT stops the count early; a plan counted
	// twice only moves the threshold a little.
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM (`+
		strings.Replace(historyHits, "UNION", "UNION ALL", 1)+`) h LIMIT `+
		fmt.Sprint(denseHistory+1)+`) c WHERE $2::text IS NOT NULL`, args[:9]...).Scan(&hits); err != nil {
		return "", nil, err
	}
	sql, args := appHistoryQuery(viewer, q, hits > denseHistory)
	return sql, args, nil
}

// historyHits is the set of plan ids that touched the app, straight from
// the two plan_resources indexes: the detected app, and the app's
// resources by identity ($1 team, $3 cluster, $4/$5 app, $6–$9 resources).
const historyHits = `
	SELECT plan_id FROM plan_resources
	 WHERE team_id = $1 AND cluster_id = $3 AND app_name = $5 AND app_namespace = $4
	UNION
	SELECT r.plan_id FROM plan_resources r
	  JOIN unnest($9::text[], $7::text[], $8::text[], $6::text[]) AS u(name, kind, namespace, api_group)
	    ON r.name = u.name AND r.match_kind = u.kind AND r.match_namespace = u.namespace AND r.match_group = u.api_group
	 WHERE r.team_id = $1 AND r.cluster_id = $3`

// denseHistory is how many matching plans make walking the cluster's plans
// newest first (and stopping after a page) cheaper than fetching every
// matching plan and sorting: measured at 1M plans, the walk answers an app
// with 5,000 plans in ~1.5 ms and one with 10 plans in ~60 ms; driving from
// the ids answers them in ~30 ms and ~0.5 ms.
const denseHistory = 1000

func appHistoryQuery(viewer service.Principal, q service.AppHistoryQuery, dense bool) (string, []any) {
	groups := make([]string, len(q.Resources))
	kinds := make([]string, len(q.Resources))
	namespaces := make([]string, len(q.Resources))
	names := make([]string, len(q.Resources))
	for i, r := range q.Resources {
		groups[i], kinds[i] = service.CanonicalKind(r.Group, r.Kind)
		namespaces[i], names[i] = r.Namespace, r.Name
	}
	args := []any{viewer.TeamID, viewer.UserID, q.ClusterID, q.AppNamespace, q.AppName, groups, kinds, namespaces, names}
	after := ""
	if q.After != nil {
		args = append(args, q.After.CreatedAt, q.After.ID)
		after = " AND (p.created_at, p.id) < ($10, $11::uuid)"
	}
	args = append(args, q.Limit+1)
	match := `p.id IN (` + historyHits + `)`
	if dense {
		match = `EXISTS (SELECT 1 FROM plan_resources r WHERE r.team_id = p.team_id AND r.plan_id = p.id AND r.cluster_id = $3
			AND ((r.app_name = $5 AND r.app_namespace = $4)
			  OR (r.name, r.match_kind, r.match_namespace, r.match_group) IN
			     (SELECT * FROM unnest($9::text[], $7::text[], $8::text[], $6::text[]))))`
	}
	sql := `SELECT ` + planColumns + ` FROM plans p WHERE ` + visibleTo + ` AND p.cluster_id = $3` + after +
		` AND ` + match + ` ORDER BY p.created_at DESC, p.id DESC LIMIT $` + fmt.Sprint(len(args))
	return sql, args
}
