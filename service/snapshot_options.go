package service

import (
	"context"
	"log/slog"
	"time"
)

// SnapshotOption sets what a SnapshotCache is built with beside its reader.
type SnapshotOption func(*SnapshotCache)

// WithSharedSnapshots makes the cache share its reads with every replica
// through s; intern makes the strings of apps decoded from another
// replica's row canonical; log is told when the table fails.
func WithSharedSnapshots(s SharedSnapshots, intern func([]Application), log *slog.Logger) SnapshotOption {
	return func(c *SnapshotCache) { c.Shared, c.Intern, c.Log = s, intern, log }
}

// WithReadTimeout bounds one shared read (default SnapshotReadTimeout).
func WithReadTimeout(d time.Duration) SnapshotOption {
	return func(c *SnapshotCache) { c.ReadTimeout = d }
}

// WithRefused tells refused when a cluster refused Kukie's credentials
// (DegradeOnRefusal is the server's).
func WithRefused(refused func(ctx context.Context, c Cluster, err error)) SnapshotOption {
	return func(c *SnapshotCache) { c.Refused = refused }
}

// RefusalStore records a cluster's access state (EKSClusterStore's method).
type RefusalStore interface {
	SetClusterAccess(ctx context.Context, teamID, id string, a ClusterAccess, now time.Time) (Cluster, error)
}

// DegradeOnRefusal is the decision when a cluster refuses Kukie's
// credentials on a read: its access state becomes degraded with the
// sentence operators act on, so the cluster list says why reads fail
// instead of every read reporting a connection problem.
func DegradeOnRefusal(store RefusalStore, log *slog.Logger, now func() time.Time) func(context.Context, Cluster, error) {
	return func(ctx context.Context, c Cluster, err error) {
		_, serr := store.SetClusterAccess(ctx, c.TeamID, c.ID, ClusterAccess{State: AccessDegraded,
			Reason: "The cluster refused Kukie's credentials; check its access entry, then reconcile.", EntryCreated: c.EntryCreated},
			now().UTC())
		log.WarnContext(ctx, "cluster refused Kukie's credentials", "team", c.TeamID, "cluster", c.ID, "err", err, "store_err", serr)
	}
}
