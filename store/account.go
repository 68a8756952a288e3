package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/service"
)

var _ service.AccountStore = (*DB)(nil)

const accountColumns = `id, team_id, aws_account_id, partition, role_arn, stack_arn, access_level, state,
	state_reason, template_version, allowed_namespaces, notification_arns, coalesce(chosen_level, ''),
	desired_generation, applied_generation, created_at, updated_at`

func scanAccount(row pgx.CollectableRow) (service.Account, error) {
	var a service.Account
	err := row.Scan(&a.ID, &a.TeamID, &a.AWSAccountID, &a.Partition, &a.RoleARN, &a.StackARN, &a.AccessLevel,
		&a.State, &a.StateReason, &a.TemplateVersion, &a.AllowedNamespaces, &a.NotificationARNs,
		&a.ChosenLevel, &a.DesiredGeneration, &a.AppliedGeneration, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// emptyIfNil keeps NULL out of the NOT NULL array columns.
func emptyIfNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CreateAccount inserts a with the id the service chose. The same
// (partition, aws_account_id) in any team is aws_account_in_use.
func (db *DB) CreateAccount(ctx context.Context, a service.Account, now time.Time) (service.Account, error) {
	rows, _ := db.pool.Query(ctx, `INSERT INTO aws_accounts (team_id, id, aws_account_id, partition, role_arn,
			stack_arn, access_level, state, state_reason, template_version, allowed_namespaces, notification_arns,
			created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)
		RETURNING `+accountColumns,
		a.TeamID, a.ID, a.AWSAccountID, a.Partition, a.RoleARN, a.StackARN, a.AccessLevel, a.State, a.StateReason,
		a.TemplateVersion, emptyIfNil(a.AllowedNamespaces), emptyIfNil(a.NotificationARNs), now)
	out, err := pgx.CollectExactlyOneRow(rows, scanAccount)
	return out, mapError(err)
}

// ListAccounts returns the team's accounts, oldest first.
func (db *DB) ListAccounts(ctx context.Context, teamID string) ([]service.Account, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+accountColumns+` FROM aws_accounts WHERE team_id = $1
		ORDER BY created_at, id`, teamID)
	as, err := pgx.CollectRows(rows, scanAccount)
	return as, mapError(err)
}

// GetAccount returns one of the team's accounts; another team's is
// account_not_found.
func (db *DB) GetAccount(ctx context.Context, teamID, id string) (service.Account, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+accountColumns+` FROM aws_accounts WHERE team_id = $1 AND id = $2`,
		teamID, id)
	return oneAccount(rows)
}

// SetAccountState records where the account stands and why.
func (db *DB) SetAccountState(ctx context.Context, teamID, id string, state service.AccountState, reason string,
	now time.Time) (service.Account, error) {
	rows, _ := db.pool.Query(ctx, `UPDATE aws_accounts SET state = $3, state_reason = $4, updated_at = $5
		WHERE team_id = $1 AND id = $2 RETURNING `+accountColumns, teamID, id, state, reason, now)
	return oneAccount(rows)
}

// oneAccount reads the single account rows hold: none is account_not_found.
func oneAccount(rows pgx.Rows) (service.Account, error) {
	a, err := pgx.CollectExactlyOneRow(rows, scanAccount)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, service.ErrAccountNotFound()
	}
	return a, mapError(err)
}

// DeleteAccount removes an account that no cluster uses any more: the
// account stays (false) while one of its clusters is still registered.
func (db *DB) DeleteAccount(ctx context.Context, teamID, id string) (bool, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM aws_accounts a WHERE a.team_id = $1 AND a.id = $2
		AND NOT EXISTS (SELECT 1 FROM clusters c WHERE c.team_id = a.team_id AND c.account_id = a.id)`, teamID, id)
	if err != nil {
		return false, mapError(err)
	}
	return tag.RowsAffected() == 1, nil
}
