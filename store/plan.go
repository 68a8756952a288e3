package store

import (
	"context"
	"encoding/json"
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

// visibleTo is the WHERE condition that scopes plans to the viewer: same
// team, and shared or created by the viewer. team and user are the
// placeholders that hold them ("$1" or "@team").
func visibleTo(team, user string) string {
	return `p.team_id = ` + team + ` AND (p.visibility = 'shared' OR p.created_by = ` + user + `)`
}

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
		target := service.ResolvedTarget{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace}
		if i < len(np.Resolved) {
			target = np.Resolved[i]
		}
		j := joinColumnsOf(target)
		changed := r.ChangedFields
		if changed == nil {
			changed = []string{}
		}
		changes, err := changesColumn(r.Changes)
		if err != nil {
			return err
		}
		rows[i] = []any{p.TeamID, p.ID, int16(i), p.ClusterID, r.Group, r.Kind, strings.ToLower(r.Kind), r.Namespace, r.Name,
			changed, changes, j.group, j.kind, j.namespace, j.appNamespace, j.appName}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"plan_resources"},
		[]string{"team_id", "plan_id", "position", "cluster_id", "api_group", "kind", "kind_lower", "namespace", "name",
			"changed_fields", "changes", "match_group", "match_kind", "match_namespace", "app_namespace", "app_name"},
		pgx.CopyFromRows(rows))
	return err
}

// changesColumn encodes a resource's planned values for the jsonb column.
func changesColumn(changes []service.FieldChange) (string, error) {
	if changes == nil {
		changes = []service.FieldChange{}
	}
	b, err := json.Marshal(changes)
	return string(b), err
}

// joinColumns are a resource's history join columns in plan_resources.
type joinColumns struct {
	group, kind, namespace string  // match_group, match_kind, match_namespace
	appNamespace, appName  *string // nil when no app manages the resource
}

// joinColumnsOf is how a resolved target is stored for history joins: the
// kind in the lower-case form status.resources uses (CanonicalKind, which
// also brings kinds the cluster did not resolve to it), and no app unless
// one manages the resource.
func joinColumnsOf(t service.ResolvedTarget) joinColumns {
	j := joinColumns{namespace: t.Namespace}
	j.group, j.kind = service.CanonicalKind(t.Group, t.Kind)
	if t.AppName != "" {
		j.appNamespace, j.appName = &t.AppNamespace, &t.AppName
	}
	return j
}

// updateJoinColumns rewrites the join columns of the resources a
// re-detection checked; the others keep what was stored before.
func updateJoinColumns(ctx context.Context, tx pgx.Tx, p service.Plan, resolved []service.ResolvedTarget) error {
	var positions []int16
	var groups, kinds, namespaces []string
	var appNamespaces, appNames []*string
	for i, t := range resolved {
		if !t.Checked {
			continue
		}
		j := joinColumnsOf(t)
		positions = append(positions, int16(i))
		groups, kinds, namespaces = append(groups, j.group), append(kinds, j.kind), append(namespaces, j.namespace)
		appNamespaces, appNames = append(appNamespaces, j.appNamespace), append(appNames, j.appName)
	}
	if len(positions) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE plan_resources r
		SET match_group = u.match_group, match_kind = u.match_kind, match_namespace = u.match_namespace,
		    app_namespace = u.app_namespace, app_name = u.app_name
		FROM unnest($3::smallint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
		  AS u(position, match_group, match_kind, match_namespace, app_namespace, app_name)
		WHERE r.team_id = $1 AND r.plan_id = $2 AND r.position = u.position`,
		p.TeamID, p.ID, positions, groups, kinds, namespaces, appNamespaces, appNames)
	return err
}

// querier is what reads need: a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// GetPlan returns one plan visible to viewer. Reads run outside a
// transaction: the resources a plan is loaded with never change after it
// is created (only their history join columns do).
func (db *DB) GetPlan(ctx context.Context, viewer service.Principal, id string) (service.Plan, error) {
	p, err := getPlan(ctx, db.pool, viewer, id, false)
	return p, mapError(err)
}

func getPlan(ctx context.Context, tx querier, viewer service.Principal, id string, forUpdate bool) (service.Plan, error) {
	q := `SELECT ` + planColumns + ` FROM plans p WHERE ` + visibleTo("$1", "$2") + ` AND p.id = $3`
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
	rows, _ := q.Query(ctx, `SELECT plan_id::text, api_group, kind, namespace, name, changed_fields, changes FROM plan_resources
		WHERE team_id = $1 AND plan_id = ANY($2::uuid[]) ORDER BY plan_id, position`, teamID, ids)
	var planID string
	var r service.ResourceRef
	var changes []byte
	_, err := pgx.ForEachRow(rows, []any{&planID, &r.Group, &r.Kind, &r.Namespace, &r.Name, &r.ChangedFields, &changes}, func() error {
		i := index[planID]
		row := r
		row.ChangedFields = nil
		if len(r.ChangedFields) > 0 {
			row.ChangedFields = slices.Clone(r.ChangedFields)
		}
		if err := json.Unmarshal(changes, &row.Changes); err != nil {
			return fmt.Errorf("plan %s: planned values: %w", planID, err)
		}
		if len(row.Changes) == 0 {
			row.Changes = nil
		}
		plans[i].Resources = append(plans[i].Resources, row)
		return nil
	})
	return err
}

// ListPlans returns a page of plans visible to viewer, newest first.
func (db *DB) ListPlans(ctx context.Context, viewer service.Principal, f service.PlanFilter) ([]service.Plan, bool, error) {
	args := []any{viewer.TeamID, viewer.UserID}
	where := []string{visibleTo("$1", "$2")}
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
// columns back, with the history join columns of the resources the change
// re-detected, in the same transaction.
func (db *DB) UpdatePlan(ctx context.Context, viewer service.Principal, id string,
	update func(*service.Plan) (service.PlanChange, error)) (service.Plan, error) {
	var p service.Plan
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var err error
		if p, err = getPlan(ctx, tx, viewer, id, true); err != nil {
			return err
		}
		change, err := update(&p)
		if err != nil {
			return err
		}
		if err := updateJoinColumns(ctx, tx, p, change.Resolved); err != nil {
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
