package service

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// listReader answers every cluster with n apps named after it.
type listReader struct{ n int }

func (r listReader) ListApplications(_ context.Context, c Cluster) (AppRead, error) {
	apps := benchmarkApps(r.n, 3)
	for i := range apps {
		apps[i].Name = c.ID + "-" + apps[i].Name
	}
	return AppRead{Apps: apps}, nil
}

// Above the high-water mark after a GC, the guard evicts the least
// recently used snapshots down to the low one, once per GC cycle; below
// it, nothing.
func TestMemoryGuardEvictsOldestOnce(t *testing.T) {
	cache, err := NewSnapshotCache(listReader{n: 50}, 100, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		cache.Get(t.Context(), Cluster{TeamID: "t", ID: fmt.Sprintf("c%d", i)}, false)
	}
	per := cache.entries.Values()[0].approxBytes()
	live, cycles := uint64(0), uint64(1)
	g := &MemoryGuard{Cache: cache, Limit: 100 * per, Read: func() (uint64, uint64) { return live, cycles }}
	live = uint64(65 * per)
	if n := g.Check(); n != 0 || cache.Entries() != 20 {
		t.Fatalf("below 70%%: evicted %d", n)
	}
	live = uint64(65*per) + uint64(10*per) // 75%: down to 60% is 15 snapshots' worth
	n := g.Check()
	if n < 10 || n > 16 || cache.Entries() != 20-n || cache.Evictions(EvictMemory) != uint64(n) {
		t.Errorf("evicted %d (entries %d, counted %d), want about 15", n, cache.Entries(), cache.Evictions(EvictMemory))
	}
	if _, ok := cache.Peek(Cluster{TeamID: "t", ID: "c0"}); ok {
		t.Error("the least recently used snapshot stayed")
	}
	if _, ok := cache.Peek(Cluster{TeamID: "t", ID: "c19"}); !ok {
		t.Error("the most recent snapshot went")
	}
	if again := g.Check(); again != 0 {
		t.Errorf("evicted %d more before the next GC measured the heap", again)
	}
	cycles++
	live = uint64(50 * per)
	if again := g.Check(); again != 0 {
		t.Errorf("evicted %d below the mark", again)
	}
}

// A snapshot that is not hot keeps only its packed apps; the cache keeps
// at most DefaultHotSnapshots decoded.
func TestHotSnapshotsBound(t *testing.T) {
	cache, err := NewSnapshotCache(listReader{n: 5}, 200, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range DefaultHotSnapshots + 10 {
		cache.Get(t.Context(), Cluster{TeamID: "t", ID: fmt.Sprintf("c%d", i)}, false)
	}
	decoded := 0
	for _, s := range cache.entries.Values() {
		s.pack() // as the background packing does
		if s.decoded.Load() != nil {
			decoded++
		}
	}
	if decoded != DefaultHotSnapshots {
		t.Errorf("%d snapshots decoded, want %d", decoded, DefaultHotSnapshots)
	}
	first, _ := cache.Peek(Cluster{TeamID: "t", ID: "c0"})
	if first.decoded.Load() != nil {
		t.Fatal("the first snapshot is still decoded")
	}
	if a, ok := first.App("app-3"); !ok || a.Name != "c0-app-3" || first.decoded.Load() == nil {
		t.Errorf("a cold snapshot's app: %+v %v", a, ok)
	}
}
