package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kukie/gitops-server/service"
)

var _ service.RepoAuthStore = (*DB)(nil)

const repoAuthColumns = `team_id, cluster_id, auth_type, username, token_sealed, private_key_sealed,
	known_hosts, fingerprint, key_id, updated_at`

func scanRepoAuth(row pgx.CollectableRow) (service.SealedRepoAuth, error) {
	var a service.SealedRepoAuth
	err := row.Scan(&a.TeamID, &a.ClusterID, &a.Type, &a.Username, &a.TokenSealed, &a.PrivateKeySealed,
		&a.KnownHosts, &a.Fingerprint, &a.KeyID, &a.UpdatedAt)
	return a, err
}

// PutRepoAuth stores or replaces the credentials of one of the team's
// clusters (cluster_not_found for another team's). The record must have
// been sealed for this team and cluster: sealed for another, its secrets
// would never open here, so it is refused.
func (db *DB) PutRepoAuth(ctx context.Context, teamID, clusterID string, a service.SealedRepoAuth,
	now time.Time) (service.SealedRepoAuth, error) {
	if a.TeamID != teamID || a.ClusterID != clusterID {
		return service.SealedRepoAuth{}, service.Errorf(service.EINTERNAL,
			"Repository credentials sealed for another cluster cannot be stored here.")
	}
	// Insert from the cluster row, so a cluster that is not the team's
	// inserts nothing rather than failing on the foreign key.
	rows, _ := db.pool.Query(ctx, `INSERT INTO cluster_repo_auth (`+repoAuthColumns+`)
		SELECT team_id, id, $3, $4, $5, $6, $7, $8, $9, $10 FROM clusters WHERE team_id = $1 AND id = $2
		ON CONFLICT (team_id, cluster_id) DO UPDATE SET auth_type = excluded.auth_type,
			username = excluded.username, token_sealed = excluded.token_sealed,
			private_key_sealed = excluded.private_key_sealed, known_hosts = excluded.known_hosts,
			fingerprint = excluded.fingerprint, key_id = excluded.key_id, updated_at = excluded.updated_at
		RETURNING `+repoAuthColumns,
		teamID, clusterID, a.Type, a.Username, a.TokenSealed, a.PrivateKeySealed, a.KnownHosts,
		a.Fingerprint, a.KeyID, now)
	out, err := pgx.CollectExactlyOneRow(rows, scanRepoAuth)
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pgErr) && pgErr.Code == "23503") {
		// No such cluster, or it was removed meanwhile.
		return out, service.ErrClusterNotFound()
	}
	return out, mapError(err)
}

// GetRepoAuth returns the stored credentials of one of the team's clusters;
// a cluster without any (or another team's) is repo_auth_not_found.
func (db *DB) GetRepoAuth(ctx context.Context, teamID, clusterID string) (service.SealedRepoAuth, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+repoAuthColumns+` FROM cluster_repo_auth
		WHERE team_id = $1 AND cluster_id = $2`, teamID, clusterID)
	a, err := pgx.CollectExactlyOneRow(rows, scanRepoAuth)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, service.ErrRepoAuthNotFound()
	}
	return a, mapError(err)
}

// DeleteRepoAuth removes the credentials of one of the team's clusters;
// removing none is not an error (the cluster is then anonymous either way).
func (db *DB) DeleteRepoAuth(ctx context.Context, teamID, clusterID string) error {
	_, err := db.pool.Exec(ctx, `DELETE FROM cluster_repo_auth WHERE team_id = $1 AND cluster_id = $2`,
		teamID, clusterID)
	return mapError(err)
}

// ListSealedSecrets returns every team's credentials that hold a sealed
// secret, ordered by team and cluster.
func (db *DB) ListSealedSecrets(ctx context.Context) ([]service.SealedRepoAuth, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+repoAuthColumns+` FROM cluster_repo_auth
		WHERE key_id <> '' ORDER BY team_id, cluster_id`)
	as, err := pgx.CollectRows(rows, scanRepoAuth)
	return as, mapError(err)
}

// ReplaceSealed writes next's sealed secrets and key id into old's row if
// the row still holds old's sealed values; otherwise (an admin changed or
// removed the credentials meanwhile) it writes nothing and reports false.
// updated_at stays: re-sealing changes no credential.
func (db *DB) ReplaceSealed(ctx context.Context, old, next service.SealedRepoAuth) (bool, error) {
	if old.TeamID != next.TeamID || old.ClusterID != next.ClusterID {
		return false, service.Errorf(service.EINTERNAL, "Re-sealed credentials must stay on their cluster.")
	}
	tag, err := db.pool.Exec(ctx, `UPDATE cluster_repo_auth
		SET token_sealed = $5, private_key_sealed = $6, key_id = $7
		WHERE team_id = $1 AND cluster_id = $2 AND token_sealed = $3 AND private_key_sealed = $4`,
		old.TeamID, old.ClusterID, old.TokenSealed, old.PrivateKeySealed,
		next.TokenSealed, next.PrivateKeySealed, next.KeyID)
	if err != nil {
		return false, mapError(err)
	}
	return tag.RowsAffected() == 1, nil
}
