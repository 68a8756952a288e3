package service

import (
	"context"
	"log/slog"
	"runtime/metrics"
	"time"
)

// Eviction reasons of the local snapshot cache
// (kukie_snapshot_cache_evictions_total{reason}).
const (
	EvictCapacity = "capacity" // KUKIE_CACHE_MAX_CLUSTERS reached
	EvictMemory   = "memory"   // the heap after a GC passed the guard's high-water mark
)

// approxBytes is about what the snapshot holds in memory: its packed apps,
// and while hot its decoded form (structs and list JSON, measured at about
// four times the list JSON).
func (s *Snapshot) approxBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(len(s.packed)) + 1024
	if d := s.decoded.Load(); d != nil {
		n += 4 * int64(len(d.list))
		if d.list == nil {
			n += 2048 * int64(len(d.apps))
		}
	}
	return n
}

// EvictForMemory removes the least recently used snapshots until about
// need bytes of them are gone, and returns how many it removed. Callers
// reading a removed snapshot keep it; the next read of its cluster takes
// the shared row or reads the cluster again.
func (c *SnapshotCache) EvictForMemory(need int64) int {
	n := 0
	for need > 0 {
		_, s, ok := c.entries.RemoveOldest()
		if !ok {
			break
		}
		need -= s.approxBytes() // retired by the removal: garbage once its readers are done
		n++
	}
	c.evictions[1].Add(uint64(n))
	return n
}

// Entries is how many snapshots the local cache holds.
func (c *SnapshotCache) Entries() int { return c.entries.Len() }

// Evictions is how many snapshots left the local cache for reason
// (EvictCapacity, EvictMemory).
func (c *SnapshotCache) Evictions(reason string) uint64 {
	if reason == EvictMemory {
		return c.evictions[1].Load()
	}
	return c.evictions[0].Load()
}

// MemoryGuard keeps the heap under a replica's memory limit: when the live
// heap after a GC passes High of Limit, it evicts the local snapshot cache
// (least recently used first) down to Low, once per GC cycle (the live
// heap is only measured again by the next collection).
type MemoryGuard struct {
	Cache *SnapshotCache
	Limit int64
	// High and Low are fractions of Limit (0.7 and 0.6 by default).
	High, Low float64
	Log       *slog.Logger
	// Read returns the live heap after the last GC and the GC cycles so
	// far (nil: the runtime's own metrics).
	Read func() (live, cycles uint64)

	lastCycle uint64
}

// Check runs one look at the heap and returns the snapshots it evicted.
func (g *MemoryGuard) Check() int {
	if g.Limit <= 0 {
		return 0
	}
	read := g.Read
	if read == nil {
		read = runtimeHeap
	}
	high, low := g.High, g.Low
	if high == 0 {
		high, low = 0.7, 0.6
	}
	live, cycles := read()
	if cycles == g.lastCycle || float64(live) <= high*float64(g.Limit) {
		return 0
	}
	g.lastCycle = cycles
	n := g.Cache.EvictForMemory(int64(live) - int64(low*float64(g.Limit)))
	if g.Log != nil && n > 0 {
		g.Log.Info("snapshot cache evicted for memory", "evicted", n, "live_heap_bytes", live, "limit_bytes", g.Limit,
			"entries", g.Cache.Entries())
	}
	return n
}

// Run checks every interval until ctx ends.
func (g *MemoryGuard) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.Check()
		}
	}
}

// runtimeHeap reads the live heap of the last GC and the GC cycle count.
func runtimeHeap() (live, cycles uint64) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		live = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		cycles = samples[1].Value.Uint64()
	}
	return live, cycles
}
