package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// ApplicationReader reads a cluster's Argo CD Applications. Failures carry
// a Reason: cluster_unreachable, argocd_not_installed or argocd_forbidden.
type ApplicationReader interface {
	ListApplications(ctx context.Context, c Cluster) (AppRead, error)
}

// AppRead is one read of a cluster's Applications.
type AppRead struct {
	Apps []Application
	// OnlyNamespace is set when the cluster-wide read was forbidden and only
	// this namespace (Argo CD's own) could be read: apps elsewhere are unseen.
	OnlyNamespace string
	// Settings are the argocd-cm settings read with the Applications (the
	// defaults, with a note, when the ConfigMap could not be read).
	Settings ArgoCDSettings
}

// Snapshot is one read of a cluster's Applications, immutable once built
// and shared by every caller of that team and cluster. It holds nothing
// user-specific and nothing Kukie's own writes change.
type Snapshot struct {
	// FetchedAt is when the read started: what the snapshot shows is at
	// least this fresh. With shared snapshots it is the database's clock
	// (replica clocks may disagree).
	FetchedAt time.Time
	// localAt is FetchedAt by this replica's clock: what its cache ages
	// the snapshot by.
	localAt time.Time
	Err     error // the classified failure, when the read failed
	Summary AppSummary
	// OnlyNamespace is set when only Argo CD's own namespace could be read.
	OnlyNamespace string
	// Settings are the read's argocd-cm settings; kept also when the
	// Applications could not be read, as the read found them.
	Settings ArgoCDSettings
	// ContentHash identifies the apps' content (for ETags).
	ContentHash string

	// hasApps is set when the read gave apps (no failure). packed is the
	// apps' one kept form (snapshot_packed.go), made after the snapshot is
	// first served; decoded is the decoded form while the snapshot is hot
	// or not yet packed (nil otherwise), built under mu; hot is the
	// cache's LRU of hot snapshots (nil: the decoded form stays).
	hasApps bool
	retired atomic.Bool // left the cache (replaced or evicted)
	packing bool        // a pack runs (under mu)
	packed  []byte
	decoded atomic.Pointer[decodedApps]
	mu      sync.Mutex
	hot     *hotSnapshots
	// destinations is the app list's destination.cluster_id mapping,
	// worked out once per snapshot (hub.go).
	destinations atomic.Pointer[destinationMemo]
}

// resourceIdentity is an object as status.resources names it: the group is
// "" for the core group, the namespace "" for cluster-scoped objects.
type resourceIdentity struct{ group, kind, namespace, name string }

// Listing returns the apps whose status.resources list the object (group
// "" for the core group, namespace "" for a cluster-scoped object), in the
// snapshot's order; nil when none does. It is a map lookup: the index is
// built once per snapshot, on the first call. Argo CD manages objects it
// writes no tracking metadata onto (CRDs, custom instance label keys) and
// lists them there all the same (upstream reposerver/repository/
// repository.go skips SetAppInstance for CRDs).
func (s *Snapshot) Listing(group, kind, namespace, name string) []Application {
	if !s.hasApps {
		return nil
	}
	d := s.apps()
	d.listedOnce.Do(func() { d.listed = indexListings(d.apps) })
	idx := d.listed[resourceIdentity{group, kind, namespace, name}]
	if len(idx) == 0 {
		return nil
	}
	apps := make([]Application, len(idx))
	for i, j := range idx {
		apps[i] = d.apps[j]
	}
	return apps
}

// indexListings builds the Listing index of apps.
func indexListings(apps []Application) map[resourceIdentity][]int {
	n := 0
	for _, a := range apps {
		n += len(a.Resources)
	}
	listed := make(map[resourceIdentity][]int, n)
	for i, a := range apps {
		for _, r := range a.Resources {
			k := resourceIdentity{r.Group, r.Kind, r.Namespace, r.Name}
			if idx := listed[k]; len(idx) > 0 && idx[len(idx)-1] == i {
				continue // listed twice by one app (e.g. two versions)
			}
			listed[k] = append(listed[k], i)
		}
	}
	return listed
}

// App returns the app with the given id.
func (s *Snapshot) App(id string) (Application, bool) {
	if !s.hasApps {
		return Application{}, false
	}
	d := s.apps()
	i, ok := d.byID[id]
	if !ok {
		return Application{}, false
	}
	return d.apps[i], true
}

func newSnapshot(read AppRead, err error, at time.Time) *Snapshot {
	s := &Snapshot{FetchedAt: at, localAt: at, Err: err, Settings: read.Settings}
	if err != nil {
		return s
	}
	apps := read.Apps
	if apps == nil {
		apps = []Application{}
	}
	s.OnlyNamespace = read.OnlyNamespace
	SortApplications(apps)
	s.Summary = Summarize(apps)
	b, merr := json.Marshal(apps)
	if merr != nil {
		s.Err = WrapError(EINTERNAL, "encode applications", merr)
		return s
	}
	s.hasApps = true
	s.decoded.Store(newDecoded(apps, b))
	sum := sha256.Sum256(b)
	s.ContentHash = hex.EncodeToString(sum[:12])
	return s
}

// CacheObserver is told about cache events: "hit", "miss", "refresh",
// and with shared snapshots "shared_hit" (another replica's read was
// used), "shared_wait" (waited for another replica's read) and
// "shared_error" (the shared table failed; this replica read alone).
type CacheObserver interface {
	CacheEvent(event string)
}

// SnapshotCache shares cluster reads: one read per (team, cluster) per TTL,
// concurrent misses collapsed into one read, failures remembered briefly so
// a dead cluster is not hammered, and a floor on explicit refreshes.
//
// Without Shared these bounds hold per server replica. With Shared (the
// table every replica sees) they hold for all replicas together: a miss
// first looks at the shared row, and only the replica that takes the row's
// lease reads the cluster; the others wait for its write. The local LRU
// stays in front, so a plain hit costs no database round trip.
type SnapshotCache struct {
	reader  ApplicationReader
	now     func() time.Time
	entries *lru.Cache[string, *Snapshot]
	hot     *hotSnapshots // the snapshots whose apps are kept decoded
	// evictions counts snapshots that left entries: [0] for capacity,
	// [1] for memory (MemoryGuard).
	evictions [2]atomic.Uint64
	flight    singleflight.Group
	observer  CacheObserver
	replacing sync.Mutex // makes store's and Invalidate's look-then-change one step

	TTL          time.Duration // a good snapshot serves this long (10 s)
	RefreshFloor time.Duration // a refresh reuses a snapshot younger than this (2 s)
	FailureTTL   time.Duration // a failure is remembered this long (2 s)
	// NotInstalledTTL is how long a read that found no Argo CD
	// (argocd_not_installed) is served, refresh or not (60 s): detection
	// needs the snapshot for every found object, also on such clusters,
	// and must not list them every RefreshFloor.
	NotInstalledTTL time.Duration
	ReadTimeout     time.Duration // bound on one shared read (15 s)
	// Refused, when set, is told when a cluster refused Kukie's credentials
	// (reason cluster_unauthorized), so the cluster's access state can say
	// so instead of every read reporting a connection problem.
	Refused func(ctx context.Context, c Cluster, err error)

	// Shared, when set, is the snapshot table all replicas share; Owner
	// names this replica in its leases (NewSnapshotCache makes one up).
	Shared SharedSnapshots
	Owner  string
	// Poll is how long a replica waiting for another's read sleeps between
	// looks at the shared row when no notification wakes it (500 ms).
	Poll time.Duration
	// Log, when set, is told when the shared table fails.
	Log *slog.Logger
	// Intern, when set, makes the strings of apps decoded from another
	// replica's row canonical, as the reader does for apps it reads.
	Intern func([]Application)
}

// The snapshot cache's timings (SnapshotCache fields, set by
// NewSnapshotCache): the product's 10-second window and the bounds around it.
const (
	SnapshotTTL             = 10 * time.Second
	SnapshotRefreshFloor    = 2 * time.Second
	SnapshotFailureTTL      = 2 * time.Second
	SnapshotNotInstalledTTL = 60 * time.Second
	SnapshotReadTimeout     = 15 * time.Second
	SnapshotPoll            = 500 * time.Millisecond
)

// NewSnapshotCache returns a cache of at most maxClusters snapshots.
func NewSnapshotCache(reader ApplicationReader, maxClusters int, now func() time.Time, observer CacheObserver,
	opts ...SnapshotOption) (*SnapshotCache, error) {
	hot, err := newHotSnapshots(DefaultHotSnapshots)
	if err != nil {
		return nil, err
	}
	// A snapshot that leaves the cache is retired: out of the hot ones,
	// never packed, garbage once its last reader is done.
	entries, err := lru.NewWithEvict(maxClusters, func(_ string, s *Snapshot) { hot.retire(s) })
	if err != nil {
		return nil, err
	}
	c := &SnapshotCache{reader: reader, now: now, entries: entries, hot: hot, observer: observer, Owner: newOwnerID(),
		TTL: SnapshotTTL, RefreshFloor: SnapshotRefreshFloor, FailureTTL: SnapshotFailureTTL,
		NotInstalledTTL: SnapshotNotInstalledTTL, ReadTimeout: SnapshotReadTimeout, Poll: SnapshotPoll}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// newOwnerID names a replica in leases: the host name (the pod's name on
// Kubernetes, for operators reading the table) and random bytes, so two
// processes on one host differ.
func newOwnerID() string {
	host, _ := os.Hostname()
	return host + "-" + rand.Text()[:10]
}

func (c *SnapshotCache) event(e string) {
	if c.observer != nil {
		c.observer.CacheEvent(e)
	}
}

// Get returns the cluster's snapshot, reading the cluster when the cached
// one is too old (or, with refresh, older than the refresh floor).
func (c *SnapshotCache) Get(ctx context.Context, cl Cluster, refresh bool) *Snapshot {
	key := cl.Key()
	// A refresh with shared snapshots always looks at the shared row: a
	// refresh another replica served must not be followed by older data
	// from this one.
	if !refresh || c.Shared == nil {
		if s, ok := c.fresh(key, refresh); ok {
			c.event("hit")
			return s
		}
	}
	if err := ctx.Err(); err != nil {
		return &Snapshot{FetchedAt: c.now(), Err: err} // nobody waits: start no read
	}
	return c.load(ctx, cl, refresh)
}

// Peek returns the locally cached snapshot of the cluster, however old,
// without reading anything.
func (c *SnapshotCache) Peek(cl Cluster) (*Snapshot, bool) {
	return c.entries.Peek(cl.Key())
}

// maxAge is how old a snapshot may be and still serve: by its failure
// (not installed, other failure, none) and whether this is a refresh.
func (c *SnapshotCache) maxAge(err error, refresh bool) time.Duration {
	if ErrorReason(err) == ReasonArgoCDNotInstalled {
		return c.NotInstalledTTL
	}
	maxAge := c.TTL
	if err != nil {
		maxAge = c.FailureTTL
	}
	if refresh && maxAge > c.RefreshFloor {
		maxAge = c.RefreshFloor
	}
	return maxAge
}

// Age returns how old a snapshot is by this replica's clock.
func (c *SnapshotCache) Age(s *Snapshot) time.Duration { return c.now().Sub(s.localAt) }

// fresh returns the cached snapshot of key when it is young enough.
func (c *SnapshotCache) fresh(key string, refresh bool) (*Snapshot, bool) {
	s, ok := c.entries.Get(key)
	if !ok {
		return nil, false
	}
	return s, c.Age(s) < c.maxAge(s.Err, refresh)
}

// load reads the cluster once for all concurrent callers. A caller may have
// seen the old entry just before another read stored a new one and get
// here after that read's flight ended: the flight checks the cache again,
// so such a caller reuses the new snapshot instead of reading again.
func (c *SnapshotCache) load(ctx context.Context, cl Cluster, refresh bool) *Snapshot {
	key := cl.Key()
	ch := c.flight.DoChan(key, func() (any, error) {
		if c.Shared == nil {
			if s, ok := c.fresh(key, refresh); ok {
				c.event("hit")
				return s, nil
			}
		}
		// The read outlives any one caller: a caller that gives up must not
		// fail the others waiting on the same read. With shared snapshots
		// it may first wait out another replica's lease.
		budget := c.ReadTimeout
		if c.Shared != nil {
			budget += c.leaseFor()
		}
		flightCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
		var s *Snapshot
		if c.Shared != nil {
			s = c.loadShared(flightCtx, cl, refresh)
		} else {
			s = c.read(flightCtx, cl, refresh, time.Time{})
		}
		c.store(key, s)
		return s, nil
	})
	select {
	case res := <-ch:
		return res.Val.(*Snapshot)
	case <-ctx.Done():
		return &Snapshot{FetchedAt: c.now(), Err: ctx.Err()}
	}
}

// store keeps s as the cluster's snapshot, counting a capacity eviction.
func (c *SnapshotCache) store(key string, s *Snapshot) {
	c.replacing.Lock()
	old, replaced := c.entries.Peek(key)
	evicted := c.entries.Add(key, s)
	c.replacing.Unlock()
	if evicted {
		c.evictions[0].Add(1)
	}
	if replaced && old != s {
		c.hot.retire(old)
	}
}

// read reads the cluster itself. sharedAt, when set, is the read's start
// by the database's clock (the lease's time), which the snapshot shows.
func (c *SnapshotCache) read(ctx context.Context, cl Cluster, refresh bool, sharedAt time.Time) *Snapshot {
	if refresh {
		c.event("refresh")
	} else {
		c.event("miss")
	}
	readCtx, cancel := context.WithTimeout(ctx, c.ReadTimeout)
	defer cancel()
	started := c.now() // the snapshot is at least as fresh as the read's start
	read, err := c.reader.ListApplications(readCtx, cl)
	if c.Refused != nil && ErrorReason(err) == ReasonClusterUnauthorized {
		c.Refused(readCtx, cl, err)
	}
	at := started
	if !sharedAt.IsZero() {
		at = sharedAt
	}
	s := newSnapshot(read, err, at)
	s.localAt = started
	c.keepHot(s)
	return s
}

// ContentETag returns a weak ETag for a snapshot's apps joined with extra
// (team data such as the connected repo).
func ContentETag(s *Snapshot, extra string) string {
	sum := sha256.Sum256([]byte(s.ContentHash + "\x00" + extra))
	return `W/"` + hex.EncodeToString(sum[:12]) + `"`
}
