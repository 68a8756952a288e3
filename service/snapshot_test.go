package service

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// countingReader counts reads; while gate is non-nil each read waits on it.
type countingReader struct {
	reads atomic.Int64
	gate  chan struct{}
	err   error
}

func (r *countingReader) ListApplications(ctx context.Context, c Cluster) (AppRead, error) {
	r.reads.Add(1)
	if r.gate != nil {
		<-r.gate
	}
	if r.err != nil {
		return AppRead{}, r.err
	}
	return AppRead{Apps: []Application{{ID: c.ID + "-app", Name: c.TeamID, SyncStatus: "Synced", HealthStatus: "Healthy", Problems: []AppProblem{}}}}, nil
}

func newTestCache(t *testing.T, r ApplicationReader, max int) (*SnapshotCache, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	c, err := NewSnapshotCache(r, max, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, clock
}

var cl = Cluster{TeamID: "t1", ID: "c1"}

// cacheStep advances the clock, gets the snapshot (refreshing or not) and
// expects this many reads in all.
type cacheStep struct {
	advance time.Duration
	refresh bool
	reads   int64
}

// runCacheSteps runs steps against c, whose reads r counts; every snapshot
// must fail with reason (none when "").
func runCacheSteps(t *testing.T, c *SnapshotCache, clock *testclock.Clock, r *countingReader, reason Reason, steps []cacheStep) {
	t.Helper()
	for i, s := range steps {
		clock.Advance(s.advance)
		if snap := c.Get(context.Background(), cl, s.refresh); ErrorReason(snap.Err) != reason || (reason == "" && snap.Err != nil) {
			t.Fatalf("step %d: err %v, want reason %q", i, snap.Err, reason)
		}
		if got := r.reads.Load(); got != s.reads {
			t.Fatalf("step %d: %d reads, want %d", i, got, s.reads)
		}
	}
}

func TestCacheTTLAndRefreshFloor(t *testing.T) {
	r := &countingReader{}
	c, clock := newTestCache(t, r, 8)
	runCacheSteps(t, c, clock, r, "", []cacheStep{
		{0, false, 1},               // cold: read
		{5 * time.Second, false, 1}, // 5 s old: within the TTL
		{0, true, 2},                // refresh of a 5 s old snapshot: read
		{1 * time.Second, true, 2},  // refresh, 1 s old: under the 2 s floor
		{1 * time.Second, true, 3},  // refresh, 2 s old: read
		{9 * time.Second, false, 3}, // 9 s old: fresh
		{1 * time.Second, false, 4}, // 10 s old: expired
	})
}

func TestCacheRemembersFailureBriefly(t *testing.T) {
	r := &countingReader{err: ReasonError(EUPSTREAM, "cluster_unreachable", "down")}
	c, clock := newTestCache(t, r, 8)
	for range 5 {
		if snap := c.Get(context.Background(), cl, true); ErrorReason(snap.Err) != "cluster_unreachable" {
			t.Fatalf("err = %v", snap.Err)
		}
	}
	if r.reads.Load() != 1 {
		t.Fatalf("%d reads of a dead cluster within 2 s, want 1", r.reads.Load())
	}
	clock.Advance(2 * time.Second)
	c.Get(context.Background(), cl, false)
	if r.reads.Load() != 2 {
		t.Fatalf("%d reads after the failure expired, want 2", r.reads.Load())
	}
}

func TestCacheCollapsesConcurrentMisses(t *testing.T) {
	r := &countingReader{gate: make(chan struct{})}
	c, _ := newTestCache(t, r, 8)
	var wg sync.WaitGroup
	snaps := make([]*Snapshot, 50)
	for i := range snaps {
		wg.Go(func() { snaps[i] = c.Get(context.Background(), cl, i%2 == 0) })
	}
	for r.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others queue on the same read
	close(r.gate)
	wg.Wait()
	if r.reads.Load() != 1 {
		t.Fatalf("50 concurrent callers caused %d reads, want 1", r.reads.Load())
	}
	for _, s := range snaps {
		if s != snaps[0] {
			t.Fatal("callers got different snapshots from one read")
		}
	}
}

// TestCacheLateCallerReusesFinishedRead: a caller that saw the cache empty
// (or stale) just before another read stored its snapshot, and starts its
// flight after that read ended, reuses the stored snapshot.
func TestCacheLateCallerReusesFinishedRead(t *testing.T) {
	r := &countingReader{}
	c, clock := newTestCache(t, r, 8)
	first := c.Get(context.Background(), cl, false)
	clock.Advance(time.Second)
	// What Get does after its own cache check found nothing usable.
	if late := c.load(context.Background(), cl, false); late != first || r.reads.Load() != 1 {
		t.Fatalf("a late caller read again (%d reads)", r.reads.Load())
	}
	if late := c.load(context.Background(), cl, true); late != first || r.reads.Load() != 1 {
		t.Fatalf("a late refresh inside the floor read again (%d reads)", r.reads.Load())
	}
}

// TestCacheOneReadPerWindow: with the clock standing still, any number of
// concurrent callers, refreshing or not, cause exactly one read, and every
// window after an advance of the clock past the TTL exactly one more.
func TestCacheOneReadPerWindow(t *testing.T) {
	r := &countingReader{gate: make(chan struct{})}
	c, clock := newTestCache(t, r, 8)
	for window := int64(1); window <= 3; window++ {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for j := range 20 {
					if s := c.Get(context.Background(), cl, (i+j)%3 == 0); s.Err != nil {
						t.Errorf("window %d: %v", window, s.Err)
					}
				}
			})
		}
		// Release reads one by one until every caller is done; each release
		// lets through at most one read.
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
	release:
		for {
			select {
			case r.gate <- struct{}{}:
			case <-done:
				break release
			}
		}
		if got := r.reads.Load(); got != window {
			t.Fatalf("window %d: %d reads in all, want %d", window, got, window)
		}
		clock.Advance(10 * time.Second)
	}
}

// TestCacheStampsReadStart: a snapshot's age counts from when its read
// started, so a slow read does not extend how long its data is served.
func TestCacheStampsReadStart(t *testing.T) {
	clock := testclock.New(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	start := clock.Now()
	slow := readerFunc(func(context.Context, Cluster) (AppRead, error) {
		clock.Advance(3 * time.Second) // the read takes 3 s
		return AppRead{}, nil
	})
	c, err := NewSnapshotCache(slow, 8, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Get(context.Background(), cl, false); !s.FetchedAt.Equal(start) {
		t.Fatalf("FetchedAt = %s, want the read's start %s", s.FetchedAt, start)
	}
}

type readerFunc func(context.Context, Cluster) (AppRead, error)

func (f readerFunc) ListApplications(ctx context.Context, c Cluster) (AppRead, error) {
	return f(ctx, c)
}

func TestCacheCancelledCallerDoesNotFailOthers(t *testing.T) {
	r := &countingReader{gate: make(chan struct{})}
	c, _ := newTestCache(t, r, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Snapshot)
	go func() { done <- c.Get(ctx, cl, false) }()
	for r.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	other := make(chan *Snapshot)
	go func() { other <- c.Get(context.Background(), cl, false) }()
	cancel()
	if s := <-done; !errors.Is(s.Err, context.Canceled) {
		t.Errorf("cancelled caller got %v", s.Err)
	}
	close(r.gate)
	if s := <-other; s.Err != nil || len(s.Apps()) != 1 {
		t.Errorf("the other caller got %+v", s)
	}
}

func TestCacheKeysByTeamAndBound(t *testing.T) {
	r := &countingReader{}
	c, _ := newTestCache(t, r, 2)
	a := c.Get(context.Background(), Cluster{TeamID: "t1", ID: "shared"}, false)
	b := c.Get(context.Background(), Cluster{TeamID: "t2", ID: "shared"}, false)
	if r.reads.Load() != 2 || a == b || a.Apps()[0].Name != "t1" || b.Apps()[0].Name != "t2" {
		t.Fatalf("two teams on one cluster id shared a snapshot (reads %d)", r.reads.Load())
	}
	c.Get(context.Background(), Cluster{TeamID: "t3", ID: "x"}, false) // evicts t1's
	c.Get(context.Background(), Cluster{TeamID: "t1", ID: "shared"}, false)
	if r.reads.Load() != 4 {
		t.Errorf("%d reads, want 4 (the bound of 2 evicted the oldest)", r.reads.Load())
	}
}

// peakReader tracks the most reads running at once.
type peakReader struct {
	mu               sync.Mutex
	now, peak, total int
	delay            time.Duration
}

func (r *peakReader) ListApplications(ctx context.Context, c Cluster) (AppRead, error) {
	r.mu.Lock()
	r.now++
	r.total++
	r.peak = max(r.peak, r.now)
	r.mu.Unlock()
	time.Sleep(r.delay)
	r.mu.Lock()
	r.now--
	r.mu.Unlock()
	return AppRead{}, nil
}

type fixedClusters []Cluster

func (f fixedClusters) ListClusters(context.Context, string) ([]Cluster, error) { return f, nil }
func (f fixedClusters) GetCluster(context.Context, string, string) (Cluster, error) {
	return Cluster{}, ErrClusterNotFound()
}
func (f fixedClusters) UpsertCluster(context.Context, Cluster, time.Time) (Cluster, error) {
	return Cluster{}, nil
}
func (f fixedClusters) SetGitOpsRepo(context.Context, string, string, string, time.Time) (Cluster, error) {
	return Cluster{}, nil
}

// TestSidebarAnswersAtOnce: the sidebar never waits for a cluster — never
// read clusters are pending — and reads them in the background at most
// Parallel at once, once each; later sidebars show them fresh.
func TestSidebarAnswersAtOnce(t *testing.T) {
	r := &peakReader{delay: 20 * time.Millisecond}
	cache, err := NewSnapshotCache(r, 128, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	var clusters fixedClusters
	for i := range 40 {
		clusters = append(clusters, Cluster{TeamID: "t", ID: string(rune('a' + i)), AccessLevel: AccessFull})
	}
	s := &ArgoCD{Clusters: clusters, Cache: cache, Parallel: 4}
	sb, err := s.Sidebar(context.Background(), Principal{TeamID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.Clusters) != 40 || len(sb.Unavailable) != 0 {
		t.Fatalf("%d cards, %d unavailable; want 40 pending cards", len(sb.Clusters), len(sb.Unavailable))
	}
	for _, c := range sb.Clusters {
		if c.State != CardPending || c.Summary != nil || c.FetchedAt != nil {
			t.Fatalf("first sidebar card %+v, want pending with no summary", c)
		}
	}
	// That one call starts the reads of all 40, Parallel at a time.
	testclock.WaitFor(t, "the background reads of the 40 clusters", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.total == 40 && r.now == 0
	})
	testclock.WaitFor(t, "every card fresh", func() bool {
		sb, err = s.Sidebar(context.Background(), Principal{TeamID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		fresh := 0
		for _, c := range sb.Clusters {
			if c.State == CardFresh && c.Summary != nil && c.FetchedAt != nil {
				fresh++
			}
		}
		return fresh == 40
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peak > 4 || r.total != 40 {
		t.Errorf("%d background reads at once (want at most 4), %d in all (want 40: one each)", r.peak, r.total)
	}
}

// TestSidebarCardStates: a card older than the TTL is stale and read again
// in the background; a failed read is listed as unavailable with its reason.
func TestSidebarCardStates(t *testing.T) {
	r := &countingReader{}
	cache, clock := newTestCache(t, r, 8)
	ok := Cluster{TeamID: "t1", ID: "c1", AccessLevel: AccessFull}
	s := &ArgoCD{Clusters: fixedClusters{ok}, Cache: cache}
	cache.Get(context.Background(), ok, false)
	sb, err := s.Sidebar(context.Background(), Principal{TeamID: "t1"})
	if err != nil || len(sb.Clusters) != 1 || sb.Clusters[0].State != CardFresh || sb.Clusters[0].Summary.Total != 1 {
		t.Fatalf("sidebar %+v, %v; want one fresh card of one app", sb, err)
	}
	clock.Advance(11 * time.Second)
	sb, _ = s.Sidebar(context.Background(), Principal{TeamID: "t1"})
	if sb.Clusters[0].State != CardStale || sb.Clusters[0].Summary == nil {
		t.Fatalf("card %+v, want stale with its old summary", sb.Clusters[0])
	}
	testclock.WaitFor(t, "the background read of the stale card", func() bool {
		_, busy := s.reading.Load(ok.Key())
		return r.reads.Load() == 2 && !busy
	})
	r.err = ReasonError(EFORBIDDEN, "argocd_forbidden", "no")
	clock.Advance(11 * time.Second)
	cache.Get(context.Background(), ok, false)
	sb, _ = s.Sidebar(context.Background(), Principal{TeamID: "t1"})
	if len(sb.Clusters) != 0 || len(sb.Unavailable) != 1 || sb.Unavailable[0].Reason != "argocd_forbidden" {
		t.Fatalf("sidebar %+v, want the cluster unavailable: argocd_forbidden", sb)
	}
}

// TestCacheReportsRefusedCredentials: a cluster that refuses Kukie's token
// is reported once per read, so its access state can say so.
func TestCacheReportsRefusedCredentials(t *testing.T) {
	r := &countingReader{err: ReasonError(EUPSTREAM, "cluster_unauthorized", "refused")}
	c, clock := newTestCache(t, r, 8)
	var refused atomic.Int64
	c.Refused = func(_ context.Context, got Cluster, err error) {
		if got.ID != cl.ID || ErrorReason(err) != "cluster_unauthorized" {
			t.Errorf("refused(%+v, %v)", got, err)
		}
		refused.Add(1)
	}
	c.Get(context.Background(), cl, false)
	c.Get(context.Background(), cl, false) // the remembered failure: no read, no report
	clock.Advance(2 * time.Second)
	c.Get(context.Background(), cl, false)
	if refused.Load() != 2 {
		t.Errorf("%d reports for 2 refused reads", refused.Load())
	}
	r.err = ReasonError(EUPSTREAM, "cluster_unreachable", "down")
	clock.Advance(2 * time.Second)
	c.Get(context.Background(), cl, false)
	if refused.Load() != 2 {
		t.Error("an unreachable cluster was reported as refusing credentials")
	}
}
