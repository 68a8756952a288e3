package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/service"
)

// EnsureTeam returns the team, creating it with externalID on first use.
func (db *DB) EnsureTeam(ctx context.Context, id, externalID string, now time.Time) (service.Team, error) {
	var t service.Team
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var err error
		t, err = ensureTeam(ctx, tx, id, externalID, now)
		return err
	})
	return t, mapError(err)
}

// ensureTeam inserts the team unless it exists and returns the stored row.
func ensureTeam(ctx context.Context, tx pgx.Tx, id, externalID string, now time.Time) (service.Team, error) {
	if _, err := tx.Exec(ctx,
		`INSERT INTO teams (id, external_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		id, externalID, now); err != nil {
		return service.Team{}, err
	}
	rows, _ := tx.Query(ctx, `SELECT id, external_id, created_at FROM teams WHERE id = $1`, id)
	return pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[service.Team])
}
