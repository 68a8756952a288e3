package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// appsReader counts reads and answers a settable number of apps; while
// gate is set each read waits on it.
type appsReader struct {
	reads atomic.Int64
	mu    sync.Mutex
	apps  int
	gate  chan struct{}
	err   error
}

func (r *appsReader) ListApplications(ctx context.Context, c service.Cluster) (service.AppRead, error) {
	r.reads.Add(1)
	r.mu.Lock()
	gate, n, err := r.gate, r.apps, r.err
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return service.AppRead{}, ctx.Err()
		}
	}
	if err != nil {
		return service.AppRead{}, err
	}
	read := service.AppRead{Settings: service.ArgoCDSettings{InstanceLabelKey: "team/app", Read: true}}
	for i := range n {
		name := string(rune('a' + i))
		read.Apps = append(read.Apps, service.Application{ID: name, Name: name, Namespace: "argocd",
			Sources: []service.AppSource{{RepoURL: "https://git.example/r.git", Path: name}}, SyncStatus: "Synced",
			HealthStatus: "Healthy", Problems: []service.AppProblem{}, Level: service.LevelSelfHeal,
			Resources:  []service.AppResource{{Kind: "Deployment", Namespace: "web", Name: name, Version: "v1"}},
			Conditions: []service.AppCondition{{Type: "SyncError", Message: "x"}},
			History:    []service.AppHistoryEntry{{ID: 1, Revision: "abc", Revisions: []string{}}}})
	}
	return read, nil
}

func (r *appsReader) set(f func(r *appsReader)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// cacheEvents counts the cache's shared_error events.
type cacheEvents struct{ sharedErrors, sharedWaits atomic.Int64 }

func (e *cacheEvents) CacheEvent(event string) {
	switch event {
	case "shared_error":
		e.sharedErrors.Add(1)
	case "shared_wait":
		e.sharedWaits.Add(1)
	}
}

// replica is one server's snapshot cache on the shared table.
type replica struct {
	cache  *service.SnapshotCache
	shared *store.Snapshots
	events *cacheEvents
}

// newReplica starts a replica's cache and listener on its own pool of the
// database at url, as a server process would.
func newReplica(t *testing.T, url string, r service.ApplicationReader) replica {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	events := &cacheEvents{}
	cache, err := service.NewSnapshotCache(r, 64, time.Now, events)
	if err != nil {
		t.Fatal(err)
	}
	// Every test here must run on the table: a failing statement would only
	// show as a replica reading alone.
	t.Cleanup(func() {
		if n := events.sharedErrors.Load(); n != 0 {
			t.Errorf("the shared table failed %d times", n)
		}
	})
	shared := store.NewSnapshots(db, nil)
	cache.Shared, cache.Poll = shared, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); shared.Listen(ctx, cache.Invalidate) }()
	t.Cleanup(func() { cancel(); <-done })
	return replica{cache: cache, shared: shared, events: events}
}

func sharedSetup(t *testing.T) (*store.DB, string, service.Cluster) {
	t.Helper()
	db, url := pgtest.MustOpenDB(t)
	mustTeams(t, db, "t1")
	cl := staticCluster("t1", "c1")
	if _, err := db.UpsertCluster(context.Background(), cl, clusterTime); err != nil {
		t.Fatal(err)
	}
	return db, url, cl
}

// TestSharedSnapshotsReadOncePerWindow: two replicas asking at once read
// the cluster once; the waiting one gets the reader's snapshot (same
// content, same fetched_at); a refresh on one is seen by the other.
func TestSharedSnapshotsReadOncePerWindow(t *testing.T) {
	_, url, cl := sharedSetup(t)
	r := &appsReader{apps: 3, gate: make(chan struct{})}
	a, b := newReplica(t, url, r), newReplica(t, url, r)
	ctx := context.Background()

	snaps := make([]*service.Snapshot, 6)
	var wg sync.WaitGroup
	for i := range snaps {
		rep := a
		if i%2 == 1 {
			rep = b
		}
		wg.Go(func() { snaps[i] = rep.cache.Get(ctx, cl, false) })
	}
	// One replica reads (its callers share the read); the other waits for
	// its write.
	testclock.WaitFor(t, "one replica reading and the other waiting", func() bool {
		return r.reads.Load() >= 1 && a.events.sharedWaits.Load()+b.events.sharedWaits.Load() >= 1
	})
	close(r.gate)
	wg.Wait()
	if n := r.reads.Load(); n != 1 {
		t.Fatalf("%d reads by two replicas at once, want 1", n)
	}
	for i, s := range snaps {
		if s.Err != nil || len(s.Apps()) != 3 || s.ContentHash != snaps[0].ContentHash || !s.FetchedAt.Equal(snaps[0].FetchedAt) {
			t.Fatalf("snapshot %d: err %v, %d apps, hash %s at %v; want replica 0's %s at %v", i, s.Err, len(s.Apps()),
				s.ContentHash, s.FetchedAt, snaps[0].ContentHash, snaps[0].FetchedAt)
		}
	}
	// What crossed replicas is the whole snapshot, not the list alone.
	app, ok := snaps[1].App("a")
	if !ok || len(app.Resources) != 1 || len(app.Conditions) != 1 || len(app.History) != 1 || app.Level != service.LevelSelfHeal ||
		snaps[1].Settings.InstanceLabelKey != "team/app" || len(snaps[1].Listing("", "Deployment", "web", "a")) != 1 {
		t.Fatalf("the other replica's app %+v (settings %+v) lost fields", app, snaps[1].Settings)
	}

	// Within the TTL neither replica reads again, with or without a
	// cache hit of its own.
	for _, rep := range []replica{a, b} {
		rep.cache.Get(ctx, cl, false)
	}
	if n := r.reads.Load(); n != 1 {
		t.Fatalf("%d reads within the TTL", n)
	}

	// A refresh past the floor on A reads anew; B then serves A's newer read,
	// refresh or not, without reading.
	r.set(func(r *appsReader) { r.apps, r.gate = 5, nil })
	a.cache.RefreshFloor = 0
	fromA := a.cache.Get(ctx, cl, true)
	if r.reads.Load() != 2 || len(fromA.Apps()) != 5 {
		t.Fatalf("refresh on A: %d reads, %d apps", r.reads.Load(), len(fromA.Apps()))
	}
	if s := b.cache.Get(ctx, cl, true); len(s.Apps()) != 5 || !s.FetchedAt.Equal(fromA.FetchedAt) {
		t.Fatalf("refresh on B after A's: %d apps at %v, want A's 5 at %v", len(s.Apps()), s.FetchedAt, fromA.FetchedAt)
	}
	if r.reads.Load() != 2 {
		t.Fatalf("B read again (%d reads) instead of taking A's refresh", r.reads.Load())
	}
	// A plain request on B: its older local copy was dropped on A's
	// notification (or is replaced through the refresh above).
	if s := b.cache.Get(ctx, cl, false); len(s.Apps()) != 5 {
		t.Fatalf("B served %d apps after A's refresh", len(s.Apps()))
	}
}

// TestSharedSnapshotsNotificationDropsOlderLocalCopy: a write by one
// replica makes the other drop its older local snapshot, so its next plain
// request serves the newer row without waiting for its own TTL.
func TestSharedSnapshotsNotificationDropsOlderLocalCopy(t *testing.T) {
	_, url, cl := sharedSetup(t)
	r := &appsReader{apps: 1}
	a, b := newReplica(t, url, r), newReplica(t, url, r)
	ctx := context.Background()
	b.cache.Get(ctx, cl, false) // B reads: 1 app
	r.set(func(r *appsReader) { r.apps = 2 })
	a.cache.RefreshFloor = 0
	a.cache.Get(ctx, cl, true) // A refreshes: 2 apps, notifies
	testclock.WaitFor(t, "B to drop its older copy on the notification", func() bool { _, ok := b.cache.Peek(cl); return !ok })
	if s := b.cache.Get(ctx, cl, false); len(s.Apps()) != 2 || r.reads.Load() != 2 {
		t.Fatalf("B: %d apps, %d reads; want A's 2 apps and no third read", len(s.Apps()), r.reads.Load())
	}
}

// earlyNotice delivers a write's notification to its own replica before
// Store returns (the listener can be that quick), and records whether the
// replica still held the snapshot just written.
type earlyNotice struct {
	*store.Snapshots
	cache   *service.SnapshotCache
	missing atomic.Int64
}

func (e *earlyNotice) Store(ctx context.Context, cl service.Cluster, lease service.Lease, w service.SharedWrite) (bool, error) {
	ok, err := e.Snapshots.Store(ctx, cl, lease, w)
	e.cache.Invalidate(cl.TeamID, cl.ID, lease.At)
	if s, held := e.cache.Peek(cl); !held || !s.FetchedAt.Equal(lease.At) {
		e.missing.Add(1)
	}
	return ok, err
}

// TestSharedSnapshotsOwnNotificationKeepsTheRead: a replica's own write
// never drops the snapshot it just read, however soon its notification
// comes back: the snapshot is kept before the row is written.
func TestSharedSnapshotsOwnNotificationKeepsTheRead(t *testing.T) {
	_, url, cl := sharedSetup(t)
	r := &appsReader{apps: 1}
	a := newReplica(t, url, r)
	notice := &earlyNotice{Snapshots: a.shared, cache: a.cache}
	a.cache.Shared, a.cache.RefreshFloor = notice, 0
	ctx := context.Background()
	for range 3 {
		a.cache.Get(ctx, cl, true)
	}
	if n := notice.missing.Load(); n != 0 || r.reads.Load() != 3 {
		t.Fatalf("%d of %d reads were dropped by their own notification", n, r.reads.Load())
	}
}

// TestSharedSnapshotsDeadLeaseAndOtherVersions: a lease whose replica died
// delays the others only until it expires; a row of another schema
// version is read again; an unchanged read keeps the stored encoding.
func TestSharedSnapshotsDeadLeaseAndOtherVersions(t *testing.T) {
	_, url, cl := sharedSetup(t)
	r := &appsReader{apps: 2}
	a := newReplica(t, url, r)
	ctx := context.Background()
	pgtest.MustExec(t, url, `INSERT INTO cluster_snapshots (team_id, cluster_id, schema_version, lease_owner, lease_until)
		VALUES ('t1', 'c1', 1, 'dead-replica', now() + interval '300 milliseconds')`)
	if s := a.cache.Get(ctx, cl, false); s.Err != nil || len(s.Apps()) != 2 || r.reads.Load() != 1 {
		t.Fatalf("after a dead lease: err %v, %d apps, %d reads", s.Err, len(s.Apps()), r.reads.Load())
	}

	// An unchanged read leaves the encoding as stored: mark it, read again.
	pgtest.MustExec(t, url, `UPDATE cluster_snapshots SET encoding = '\x00'::bytea || encoding`)
	b := newReplica(t, url, r)
	b.cache.RefreshFloor = 0
	b.cache.Get(ctx, cl, true)
	if r.reads.Load() != 2 {
		t.Fatalf("%d reads, want 2", r.reads.Load())
	}
	var marked bool
	if pgtest.MustQueryRow(t, url, `SELECT get_byte(encoding, 0) = 0 FROM cluster_snapshots`, &marked); !marked {
		t.Fatal("the encoding was rewritten for unchanged content")
	}

	// A row of another encoding version is never decoded: read again.
	pgtest.MustExec(t, url, `UPDATE cluster_snapshots SET schema_version = 0`)
	c := newReplica(t, url, r)
	if s := c.cache.Get(ctx, cl, false); s.Err != nil || len(s.Apps()) != 2 || r.reads.Load() != 3 {
		t.Fatalf("after another version's row: err %v, %d apps, %d reads; want a third read", s.Err, len(s.Apps()), r.reads.Load())
	}
	var version int
	if pgtest.MustQueryRow(t, url, `SELECT schema_version FROM cluster_snapshots`, &version); version != service.SnapshotSchemaVersion {
		t.Fatalf("row version %d, want %d", version, service.SnapshotSchemaVersion)
	}
}

// TestSharedSnapshotsFailuresAndCards: a failed read is shared with its
// reason for the failure TTL; the sidebar's cards come from the rows
// without decoding them; removing the cluster removes its row.
func TestSharedSnapshotsFailuresAndCards(t *testing.T) {
	db, url, cl := sharedSetup(t)
	r := &appsReader{err: service.ReasonError(service.EFORBIDDEN, "argocd_forbidden", "Kukie's role may not read Argo CD Applications.")}
	a, b := newReplica(t, url, r), newReplica(t, url, r)
	ctx := context.Background()
	if s := a.cache.Get(ctx, cl, false); service.ErrorReason(s.Err) != "argocd_forbidden" {
		t.Fatalf("A: %v", s.Err)
	}
	s := b.cache.Get(ctx, cl, false)
	if service.ErrorReason(s.Err) != "argocd_forbidden" || service.ErrorMessage(s.Err) != "Kukie's role may not read Argo CD Applications." || r.reads.Load() != 1 {
		t.Fatalf("B: %v after %d reads; want A's failure, one read", s.Err, r.reads.Load())
	}
	cards, err := a.shared.Cards(ctx, "t1")
	if err != nil || len(cards) != 1 || !cards[0].Failed || cards[0].FailureReason != "argocd_forbidden" || cards[0].Summary != nil {
		t.Fatalf("cards %+v, %v", cards, err)
	}

	r.set(func(r *appsReader) { r.err, r.apps = nil, 4 })
	a.cache.FailureTTL, a.cache.RefreshFloor = 0, 0
	a.cache.Get(ctx, cl, true)
	cards, err = b.shared.Cards(ctx, "t1")
	if err != nil || len(cards) != 1 || cards[0].Failed || cards[0].Summary == nil || cards[0].Summary.Total != 4 ||
		cards[0].Summary.Synced != 4 || !cards[0].Written || cards[0].Age < 0 || cards[0].Age > time.Minute {
		t.Fatalf("cards after a good read %+v, %v", cards, err)
	}
	if other, err := b.shared.Cards(ctx, "t2"); err != nil || len(other) != 0 {
		t.Fatalf("another team's cards: %+v, %v", other, err)
	}

	if err := db.DeleteCluster(ctx, "t1", "c1"); err != nil {
		t.Fatal(err)
	}
	if cards, err := a.shared.Cards(ctx, "t1"); err != nil || len(cards) != 0 {
		t.Fatalf("a removed cluster's row stayed: %+v, %v", cards, err)
	}
}
