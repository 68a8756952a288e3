package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/service"
)

var (
	_ service.ClusterStore    = (*DB)(nil)
	_ service.EKSClusterStore = (*DB)(nil)
)

// clusterColumns reads a cluster row; static clusters have NULL in the EKS
// columns, read as "".
const clusterColumns = `id, team_id, name, kind, access_level, namespaces, argocd_namespace, gitops_repo,
	access_state, access_reason, coalesce(account_id, ''), coalesce(region, ''), coalesce(eks_name, ''),
	endpoint, ca_data, entry_created, created_at, updated_at`

func scanCluster(row pgx.CollectableRow) (service.Cluster, error) {
	var c service.Cluster
	err := row.Scan(&c.ID, &c.TeamID, &c.Name, &c.Kind, &c.AccessLevel, &c.Namespaces, &c.ArgoCDNamespace,
		&c.GitOpsRepo, &c.AccessState, &c.AccessReason, &c.AccountID, &c.Region, &c.EKSName,
		&c.Endpoint, &c.CAData, &c.EntryCreated, &c.CreatedAt, &c.UpdatedAt)
	if c.Namespaces == nil {
		c.Namespaces = []string{}
	}
	return c, err
}

// sortedNamespaces returns the namespaces distinct and sorted (the order EKS
// access scopes use), never nil.
func sortedNamespaces(namespaces []string) []string {
	return emptyIfNil(slices.Compact(slices.Sorted(slices.Values(namespaces))))
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

// UpsertCluster creates or updates a static cluster, creating its team on
// first use; it is always active. An id taken by a registered EKS cluster is
// a conflict: the static configuration does not take it over.
func (db *DB) UpsertCluster(ctx context.Context, c service.Cluster, now time.Time) (service.Cluster, error) {
	namespaces := sortedNamespaces(c.Namespaces)
	var out service.Cluster
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := ensureTeam(ctx, tx, c.TeamID, service.NewExternalID(), now); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `INSERT INTO clusters (team_id, id, name, kind, access_level, namespaces,
			argocd_namespace, endpoint, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
			ON CONFLICT (team_id, id) DO UPDATE SET name = excluded.name, kind = excluded.kind,
			access_level = excluded.access_level, namespaces = excluded.namespaces,
			argocd_namespace = excluded.argocd_namespace, endpoint = excluded.endpoint,
			access_state = 'active', access_reason = '', updated_at = excluded.updated_at
			WHERE clusters.kind <> 'eks'
			RETURNING `+clusterColumns,
			c.TeamID, c.ID, c.Name, c.Kind, c.AccessLevel, namespaces, c.ArgoCDNamespace, c.Endpoint, now)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, scanCluster)
		if errors.Is(err, pgx.ErrNoRows) {
			return service.Errorf(service.ECONFLICT, "The cluster id %q is taken by a registered EKS cluster.", c.ID)
		}
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

// CreateCluster inserts an EKS registration with the id the service chose.
// The account must be the team's (else account_not_found); the same
// (account, region, EKS name) in the team is cluster_exists. An empty Argo
// CD namespace is the default one.
func (db *DB) CreateCluster(ctx context.Context, c service.Cluster, now time.Time) (service.Cluster, error) {
	if c.Kind != service.ClusterEKS {
		return service.Cluster{}, service.Errorf(service.EINTERNAL, "CreateCluster stores EKS clusters, not kind %q.", c.Kind)
	}
	argoCDNamespace := c.ArgoCDNamespace
	if argoCDNamespace == "" {
		argoCDNamespace = service.DefaultArgoCDNamespace
	}
	var out service.Cluster
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// Hold the account (FOR SHARE) so it can neither go nor start being
		// disconnected between the check and the insert: a disconnection
		// waits for this registration and then removes its cluster too.
		var state service.AccountState
		err := tx.QueryRow(ctx, `SELECT state FROM aws_accounts WHERE team_id = $1 AND id = $2 FOR SHARE`,
			c.TeamID, c.AccountID).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return service.ErrAccountNotFound()
		} else if err != nil {
			return err
		}
		if state == service.AccountDeleting || state == service.AccountDisconnected {
			return service.ReasonError(service.ECONFLICT, service.ReasonConflict, "The AWS account is "+string(state)+".")
		}
		rows, _ := tx.Query(ctx, `INSERT INTO clusters (team_id, id, name, kind, access_level, namespaces,
				argocd_namespace, account_id, region, eks_name, endpoint, ca_data, access_state, access_reason,
				entry_created, created_at, updated_at)
			VALUES ($1, $2, $3, 'eks', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
			RETURNING `+clusterColumns,
			c.TeamID, c.ID, c.Name, c.AccessLevel, sortedNamespaces(c.Namespaces), argoCDNamespace,
			c.AccountID, c.Region, c.EKSName, c.Endpoint, c.CAData, c.AccessState, c.AccessReason,
			c.EntryCreated, now)
		out, err = pgx.CollectExactlyOneRow(rows, scanCluster)
		return err
	})
	return out, mapError(err)
}

// SetClusterAccess records an access change's outcome on one of the team's
// EKS clusters (a static cluster is cluster_not_found here). State and
// reason are written as given; EntryCreated only ever turns on (a stale
// writer must not make removal forget an entry Kukie created); an empty
// Level or Endpoint and a nil CAData keep what is stored. A cluster being
// removed stays so: only deleting may follow deleting (ECONFLICT otherwise;
// a removal that failed stays deleting, with the reason).
func (db *DB) SetClusterAccess(ctx context.Context, teamID, id string, a service.ClusterAccess,
	now time.Time) (service.Cluster, error) {
	rows, _ := db.pool.Query(ctx, `UPDATE clusters SET
			access_level = coalesce(nullif($3::text, ''), access_level), access_state = $4, access_reason = $5,
			entry_created = entry_created OR $6, endpoint = coalesce(nullif($7::text, ''), endpoint),
			ca_data = coalesce($8::bytea, ca_data), updated_at = $9
		WHERE team_id = $1 AND id = $2 AND kind = 'eks'
		  AND (access_state <> 'deleting' OR $4 = 'deleting')
		RETURNING `+clusterColumns,
		teamID, id, a.Level, a.State, a.Reason, a.EntryCreated, a.Endpoint, a.CAData, now)
	c, err := pgx.CollectExactlyOneRow(rows, scanCluster)
	if errors.Is(err, pgx.ErrNoRows) {
		// Not updated: no such EKS cluster of the team, or one being removed.
		if cur, gerr := db.GetCluster(ctx, teamID, id); gerr == nil && cur.Kind == service.ClusterEKS &&
			cur.AccessState == service.AccessDeleting {
			return c, service.ReasonError(service.ECONFLICT, service.ReasonConflict, "The cluster is being removed.")
		}
		return c, service.ErrClusterNotFound()
	}
	return c, mapError(err)
}

// LockCluster holds an exclusive lock on one cluster's access changes
// (a session advisory lock on a dedicated connection) until unlock is
// called, so an access job and a removal job never run at once. Locks
// hold at most half the pool's connections — a lock is held across AWS
// calls and their retries, and the work under it queries through the pool
// too: were every connection a lock's, that work (and every request)
// would wait for a connection no one gives back. A lock beyond that waits
// for one to be released, or for ctx to end.
func (db *DB) LockCluster(ctx context.Context, teamID, id string) (unlock func(), err error) {
	select {
	case db.lockSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, mapError(ctx.Err())
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		<-db.lockSlots
		return nil, mapError(err)
	}
	// PostgreSQL text holds no NUL; a collision of two keys would only
	// serialise two clusters' jobs.
	key := "kukie-cluster-access/" + teamID + "/" + id
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, key); err != nil {
		conn.Release()
		<-db.lockSlots
		return nil, mapError(err)
	}
	return func() {
		defer func() { <-db.lockSlots }()
		// A fresh context: the caller's may be done; the lock must go.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key); err != nil {
			// Closing the session releases the lock for sure.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}

// DeleteCluster removes one of the team's clusters; another team's is
// cluster_not_found.
func (db *DB) DeleteCluster(ctx context.Context, teamID, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM clusters WHERE team_id = $1 AND id = $2`, teamID, id)
	if err != nil {
		return mapError(err)
	}
	if tag.RowsAffected() == 0 {
		return service.ErrClusterNotFound()
	}
	return nil
}

// OrphanedClusters returns up to 100 EKS clusters pending or deleting
// since before for which River holds no job of the given kinds in any
// state (see service.OrphanedCluster), oldest first. A cluster whose job
// River has since deleted (completed after a day, discarded after a week)
// counts again, so its work is tried once more.
func (db *DB) OrphanedClusters(ctx context.Context, before time.Time, jobKinds []string) ([]service.OrphanedCluster, error) {
	rows, _ := db.pool.Query(ctx, `SELECT c.team_id, c.id, c.access_state FROM clusters c
		WHERE c.kind = 'eks' AND c.access_state IN ('pending', 'deleting') AND c.updated_at < $1
		  AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.kind = ANY($2::text[])
		      AND j.args->>'team_id' = c.team_id AND j.args->>'cluster_id' = c.id)
		ORDER BY c.updated_at LIMIT 100`, before, jobKinds)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (service.OrphanedCluster, error) {
		var o service.OrphanedCluster
		err := row.Scan(&o.TeamID, &o.ClusterID, &o.State)
		return o, err
	})
	return out, mapError(err)
}
