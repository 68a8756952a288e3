package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/kukie/gitops-server/service"
)

var _ service.SwitchStore = (*DB)(nil)

// RecordNotification stores n and bumps the account's desired generation
// in one transaction; see RecordNotificationTx.
func (db *DB) RecordNotification(ctx context.Context, n service.StackNotification, now time.Time) (int64, bool, error) {
	return db.RecordNotificationTx(ctx, n, now, nil)
}

// RecordNotificationTx is RecordNotification that also runs inTx (when not
// nil) in the same transaction before it commits, so that the reconcile job
// is inserted (River's InsertTx) exactly when the bump is: an error from
// inTx rolls back the message and the bump. A duplicate MessageID changes
// nothing, does not run inTx (the first delivery inserted the job) and
// returns the current desired generation. Notifications of one account are
// recorded one at a time (the account row is locked first), so a retry
// racing the first delivery waits for it and is then a duplicate.
func (db *DB) RecordNotificationTx(ctx context.Context, n service.StackNotification, now time.Time,
	inTx func(tx pgx.Tx) error) (desired int64, duplicate bool, err error) {
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT desired_generation FROM aws_accounts WHERE team_id = $1 AND id = $2
			FOR NO KEY UPDATE`, n.TeamID, n.AccountID).Scan(&desired)
		if errors.Is(err, pgx.ErrNoRows) {
			return service.ErrAccountNotFound()
		} else if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO sns_messages (message_id, team_id, account_id, topic_arn, type,
				stack_id, resource_status, event_time, received_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (message_id) DO NOTHING`,
			n.MessageID, n.TeamID, n.AccountID, n.TopicARN, n.Type, n.StackID, n.ResourceStatus, n.EventTime, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			duplicate = true
			return nil
		}
		if err := tx.QueryRow(ctx, `UPDATE aws_accounts SET desired_generation = desired_generation + 1,
				last_stack_event_at = greatest(last_stack_event_at, $3)
			WHERE team_id = $1 AND id = $2 RETURNING desired_generation`,
			n.TeamID, n.AccountID, n.EventTime).Scan(&desired); err != nil {
			return err
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	})
	if err != nil {
		return 0, false, mapError(err)
	}
	return desired, duplicate, nil
}

// AllowedTopic finds the account whose NotificationARNs list topicARN and
// whose AWS account and partition are the topic's (the ARN's second and
// fifth fields): a topic listed by an account it does not belong to is not
// allowed. Accounts in any state are found.
func (db *DB) AllowedTopic(ctx context.Context, topicARN string) (teamID, accountID string, found bool, err error) {
	// aws_account_id is compared as text: a cast of the ARN's field to
	// char(12) would cut a longer one down to a match.
	err = db.pool.QueryRow(ctx, `SELECT team_id, id FROM aws_accounts
		WHERE split_part($1, ':', 1) = 'arn' AND split_part($1, ':', 3) = 'sns'
		  AND partition = split_part($1, ':', 2) AND aws_account_id::text = split_part($1, ':', 5)
		  AND $1 = ANY (notification_arns)`, topicARN).Scan(&teamID, &accountID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	} else if err != nil {
		return "", "", false, mapError(err)
	}
	return teamID, accountID, true, nil
}

// MarkApplied raises the account's applied generation to generation; a
// lower one (a stale job) changes nothing, and one above the desired
// generation is refused by the table. Applying changes no fact of the
// account, so updated_at (and now) is left alone.
func (db *DB) MarkApplied(ctx context.Context, teamID, accountID string, generation int64, _ time.Time) error {
	tag, err := db.pool.Exec(ctx, `UPDATE aws_accounts SET applied_generation = greatest(applied_generation, $3)
		WHERE team_id = $1 AND id = $2`, teamID, accountID, generation)
	if err != nil {
		return mapError(err)
	}
	if tag.RowsAffected() == 0 {
		return service.ErrAccountNotFound()
	}
	return nil
}

// SetChosenLevel records the level an admin chose, at now, and bumps the
// desired generation so the reconcile job applies it.
func (db *DB) SetChosenLevel(ctx context.Context, teamID, accountID string, level service.AccessLevel,
	now time.Time) (service.Account, error) {
	return db.SetChosenLevelTx(ctx, teamID, accountID, level, now, nil)
}

// SetChosenLevelTx is SetChosenLevel that also runs inTx (inserting the
// reconcile job) in the same transaction.
func (db *DB) SetChosenLevelTx(ctx context.Context, teamID, accountID string, level service.AccessLevel,
	now time.Time, inTx func(tx pgx.Tx) error) (service.Account, error) {
	var out service.Account
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE aws_accounts SET chosen_level = $3, chosen_at = $4,
				desired_generation = desired_generation + 1
			WHERE team_id = $1 AND id = $2 RETURNING `+accountColumns, teamID, accountID, level, now)
		var err error
		if out, err = oneAccount(rows); err != nil {
			return err
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	})
	return out, mapError(err)
}

// SetAccountFacts records what the stack says: the level to apply, the
// allowed namespaces, the template version and the topics; the state
// becomes confirmation_required (with the facts' reason) or active. A
// deleting or disconnected account keeps its state: a stack read does not
// undo a removal or an unsubscription. updated_at moves only when something
// changed, as it measures IAM propagation since the account's last change.
func (db *DB) SetAccountFacts(ctx context.Context, teamID, accountID string, facts service.StackFacts,
	now time.Time) (service.Account, error) {
	var out service.Account
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+accountColumns+` FROM aws_accounts WHERE team_id = $1 AND id = $2
			FOR NO KEY UPDATE`, teamID, accountID)
		cur, err := oneAccount(rows)
		if err != nil {
			return err
		}
		next := cur
		next.AccessLevel, next.TemplateVersion = facts.AccessLevel, facts.TemplateVersion
		next.AllowedNamespaces = emptyIfNil(facts.AllowedNamespaces)
		next.NotificationARNs = emptyIfNil(facts.NotificationARNs)
		if cur.State == service.AccountActive || cur.State == service.AccountConfirmationRequired {
			next.State, next.StateReason = service.AccountActive, ""
			if facts.ConfirmationRequired {
				next.State, next.StateReason = service.AccountConfirmationRequired, facts.Reason
			}
		}
		if next.AccessLevel == cur.AccessLevel && next.TemplateVersion == cur.TemplateVersion &&
			next.State == cur.State && next.StateReason == cur.StateReason &&
			slices.Equal(next.AllowedNamespaces, cur.AllowedNamespaces) &&
			slices.Equal(next.NotificationARNs, cur.NotificationARNs) {
			out = cur
			return nil
		}
		rows, _ = tx.Query(ctx, `UPDATE aws_accounts SET access_level = $3, allowed_namespaces = $4,
				template_version = $5, notification_arns = $6, state = $7, state_reason = $8, updated_at = $9
			WHERE team_id = $1 AND id = $2 RETURNING `+accountColumns,
			teamID, accountID, next.AccessLevel, next.AllowedNamespaces, next.TemplateVersion, next.NotificationARNs,
			next.State, next.StateReason, now)
		out, err = oneAccount(rows)
		return err
	})
	return out, mapError(err)
}

const accessChangeColumns = `id, team_id, account_id, coalesce(cluster_id, ''), generation, from_level, to_level,
	step, outcome, error, attempt, created_at`

func scanAccessChange(row pgx.CollectableRow) (service.AccessChange, error) {
	var c service.AccessChange
	err := row.Scan(&c.ID, &c.TeamID, &c.AccountID, &c.ClusterID, &c.Generation, &c.FromLevel, &c.ToLevel,
		&c.Step, &c.Outcome, &c.Error, &c.Attempt, &c.CreatedAt)
	return c, err
}

// RecordAccessChange appends c to its account's history and returns it
// with its id. The account must be the team's (else account_not_found);
// CreatedAt is the caller's clock and must be set.
func (db *DB) RecordAccessChange(ctx context.Context, c service.AccessChange) (service.AccessChange, error) {
	if c.CreatedAt.IsZero() {
		return c, service.Errorf(service.EINTERNAL, "RecordAccessChange needs CreatedAt.")
	}
	rows, _ := db.pool.Query(ctx, `INSERT INTO access_changes (team_id, account_id, cluster_id, generation,
			from_level, to_level, step, outcome, error, attempt, created_at)
		SELECT team_id, id, nullif($3::text, ''), $4, $5, $6, $7, $8, $9, $10, $11
		FROM aws_accounts WHERE team_id = $1 AND id = $2
		RETURNING `+accessChangeColumns,
		c.TeamID, c.AccountID, c.ClusterID, c.Generation, c.FromLevel, c.ToLevel, c.Step, c.Outcome, c.Error,
		c.Attempt, c.CreatedAt)
	out, err := pgx.CollectExactlyOneRow(rows, scanAccessChange)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, service.ErrAccountNotFound()
	}
	return out, mapError(err)
}

// ListAccessChanges returns up to limit (> 0) of the account's steps,
// newest first (created_at, then id). With before, the page continues
// after that step; a before that is not one of the account's steps gives
// an empty page.
func (db *DB) ListAccessChanges(ctx context.Context, teamID, accountID string, limit int,
	before *int64) ([]service.AccessChange, error) {
	if limit <= 0 {
		return nil, service.Errorf(service.EINTERNAL, "ListAccessChanges needs a positive limit, not %d.", limit)
	}
	var out []service.AccessChange
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			if err := accountExists(ctx, tx, teamID, accountID); err != nil {
				return err
			}
			rows, _ := tx.Query(ctx, `SELECT `+accessChangeColumns+` FROM access_changes
				WHERE team_id = $1 AND account_id = $2
				  AND ($4::bigint IS NULL OR (created_at, id) < (SELECT created_at, id FROM access_changes
					WHERE team_id = $1 AND account_id = $2 AND id = $4))
				ORDER BY created_at DESC, id DESC LIMIT $3`, teamID, accountID, limit, before)
			var err error
			out, err = pgx.CollectRows(rows, scanAccessChange)
			return err
		})
	if err != nil {
		return nil, mapError(err)
	}
	return emptyIfNilChanges(out), nil
}

func emptyIfNilChanges(cs []service.AccessChange) []service.AccessChange {
	if cs == nil {
		return []service.AccessChange{}
	}
	return cs
}

// accountExists is account_not_found unless the team has the account.
func accountExists(ctx context.Context, tx pgx.Tx, teamID, accountID string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM aws_accounts WHERE team_id = $1 AND id = $2)`,
		teamID, accountID).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return service.ErrAccountNotFound()
	}
	return nil
}

// AccountGenerations returns the account's desired and applied generations.
func (db *DB) AccountGenerations(ctx context.Context, teamID, accountID string) (desired, applied int64, err error) {
	s, err := db.SwitchState(ctx, teamID, accountID)
	return s.DesiredGeneration, s.AppliedGeneration, err
}

// SwitchState returns the account's switch bookkeeping.
func (db *DB) SwitchState(ctx context.Context, teamID, accountID string) (service.AccountSwitchState, error) {
	var s service.AccountSwitchState
	var chosenAt, lastEvent *time.Time
	err := db.pool.QueryRow(ctx, `SELECT desired_generation, applied_generation, coalesce(chosen_level, ''),
			chosen_at, last_stack_event_at
		FROM aws_accounts WHERE team_id = $1 AND id = $2`, teamID, accountID).
		Scan(&s.DesiredGeneration, &s.AppliedGeneration, &s.ChosenLevel, &chosenAt, &lastEvent)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, service.ErrAccountNotFound()
	} else if err != nil {
		return s, mapError(err)
	}
	if chosenAt != nil {
		s.ChosenAt = *chosenAt
	}
	if lastEvent != nil {
		s.LastStackEventAt = *lastEvent
	}
	return s, nil
}

// AccountsToReconcile lists the accounts of every team that are not being
// deleted, oldest first: all, or (lagging) those whose applied generation
// is behind the desired one.
func (db *DB) AccountsToReconcile(ctx context.Context, lagging bool) ([]service.AccountKey, error) {
	rows, _ := db.pool.Query(ctx, `SELECT team_id, id FROM aws_accounts
		WHERE state <> 'deleting' AND (NOT $1 OR applied_generation < desired_generation)
		ORDER BY created_at, team_id, id`, lagging)
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (service.AccountKey, error) {
		var k service.AccountKey
		err := row.Scan(&k.TeamID, &k.AccountID)
		return k, err
	})
	return keys, mapError(err)
}

// RequestReconcileTx bumps the account's desired generation and runs inTx
// (inserting the reconcile job) in the same transaction.
func (db *DB) RequestReconcileTx(ctx context.Context, teamID, accountID string, inTx func(tx pgx.Tx) error) error {
	return mapError(pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE aws_accounts SET desired_generation = desired_generation + 1
			WHERE team_id = $1 AND id = $2 AND state <> 'deleting'`, teamID, accountID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return service.ErrAccountNotFound()
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	}))
}

// ClustersByAccessState counts the EKS clusters of every team by access
// state (for the metrics).
func (db *DB) ClustersByAccessState(ctx context.Context) (map[string]int, error) {
	return db.countBy(ctx, `SELECT access_state, count(*) FROM clusters WHERE kind = 'eks' GROUP BY access_state`)
}

// JobBacklog counts the jobs not yet finished (available, scheduled,
// retryable, running, pending) by "kind/state" (for the metrics).
func (db *DB) JobBacklog(ctx context.Context) (map[string]int, error) {
	return db.countBy(ctx, `SELECT kind || '/' || state::text, count(*) FROM river_job
		WHERE state NOT IN ('completed', 'cancelled', 'discarded') GROUP BY 1`)
}

func (db *DB) countBy(ctx context.Context, query string) (map[string]int, error) {
	rows, _ := db.pool.Query(ctx, query)
	out := map[string]int{}
	var key string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&key, &n}, func() error {
		out[key] = n
		return nil
	})
	return out, mapError(err)
}
