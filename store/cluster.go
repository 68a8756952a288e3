package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/service"
)

var _ service.ClusterStore = (*DB)(nil)

const clusterColumns = `id, team_id, name, kind, access_level, namespaces, argocd_namespace, gitops_repo, created_at, updated_at`

func scanCluster(row pgx.CollectableRow) (service.Cluster, error) {
	var c service.Cluster
	err := row.Scan(&c.ID, &c.TeamID, &c.Name, &c.Kind, &c.AccessLevel, &c.Namespaces, &c.ArgoCDNamespace,
		&c.GitOpsRepo, &c.CreatedAt, &c.UpdatedAt)
	if c.Namespaces == nil {
		c.Namespaces = []string{}
	}
	c.AccessState = service.AccessActive // static clusters; EKS access states arrive with their columns
	return c, err
}

// ListClusters returns the team's clusters ordered by name.
func (db *DB) ListClusters(ctx context.Context, teamID string) ([]service.Cluster, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE team_id = $1 ORDER BY name, id`, teamID)
	cs, err := pgx.CollectRows(rows, scanCluster)
	return cs, mapError(err)
}

// GetCluster returns one of the team's clusters.
func (db *DB) GetCluster(ctx context.Context, teamID, id string) (service.Cluster, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE team_id = $1 AND id = $2`, teamID, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanCluster)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, service.ErrClusterNotFound()
	}
	return c, mapError(err)
}

// UpsertCluster creates or updates a cluster, creating its team on first use.
func (db *DB) UpsertCluster(ctx context.Context, c service.Cluster, now time.Time) (service.Cluster, error) {
	// Namespaces are kept distinct and sorted (the order EKS access scopes use).
	namespaces := slices.Compact(slices.Sorted(slices.Values(c.Namespaces)))
	if namespaces == nil {
		namespaces = []string{}
	}
	var out service.Cluster
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := ensureTeam(ctx, tx, c.TeamID, service.NewExternalID(), now); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `INSERT INTO clusters (team_id, id, name, kind, access_level, namespaces,
			argocd_namespace, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
			ON CONFLICT (team_id, id) DO UPDATE SET name = excluded.name, kind = excluded.kind,
			access_level = excluded.access_level, namespaces = excluded.namespaces,
			argocd_namespace = excluded.argocd_namespace, updated_at = excluded.updated_at
			RETURNING `+clusterColumns,
			c.TeamID, c.ID, c.Name, c.Kind, c.AccessLevel, namespaces, c.ArgoCDNamespace, now)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, scanCluster)
		return err
	})
	return out, mapError(err)
}

// SetGitOpsRepo records the repository connected to Kukie for a cluster.
func (db *DB) SetGitOpsRepo(ctx context.Context, teamID, id, repoURL string, now time.Time) (service.Cluster, error) {
	rows, _ := db.pool.Query(ctx, `UPDATE clusters SET gitops_repo = $3, updated_at = $4
		WHERE team_id = $1 AND id = $2 RETURNING `+clusterColumns, teamID, id, repoURL, now)
	c, err := pgx.CollectExactlyOneRow(rows, scanCluster)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, service.ErrClusterNotFound()
	}
	return c, mapError(err)
}
