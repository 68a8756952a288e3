package gitrepo

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// objectOverhead is what the bookkeeping of one object (its entry in the
// store and in the offset index) is charged against the fetch bound on top
// of its bytes, so a pack of millions of empty objects is bounded too.
const objectOverhead = 256

// fetchBudget is what one fetch may inflate, across all its packs (the
// fetch by id and every deepening step): each object's bytes plus
// objectOverhead, at most max. What it reserves it also holds in shared,
// the budget of all concurrent fetches of the Fetcher, until release.
// inflated counts the bytes actually inflated, for the Fetcher's counter.
type fetchBudget struct {
	max      int64
	used     int64
	inflated *int64Counter
	shared   *sharedBudget
	ctx      context.Context
	wait     time.Duration // the most the fetch waits for its first bytes of shared
	held     int64         // taken from shared: used, rounded up to sharedChunk
}

// sharedChunk is how much of the shared budget a fetch takes at a time,
// so it does not take the semaphore for every object.
const sharedChunk = 4 << 20

// reserve takes n bytes from the budget before they are inflated; it
// refuses when the fetch would pass its bound (repo_too_large), and
// answers repo_fetch_busy when other fetches hold the shared budget.
func (b *fetchBudget) reserve(n int64) error {
	if n < 0 || b.used+n > b.max {
		return tooLarge(fmt.Sprintf("The objects of the fetch inflate to more than %d bytes.", b.max))
	}
	if need := b.used + n - b.held; need > 0 && b.shared != nil {
		chunk := max(need, min(sharedChunk, b.max-b.held))
		if err := b.shared.acquire(b.ctx, b.wait, chunk, b.held > 0); err != nil {
			return err
		}
		b.held += chunk
	}
	b.used += n
	return nil
}

// release gives what the fetch holds back to the shared budget, once its
// objects are dropped (or kept only as a Tree's files, which the tree
// cache counts).
func (b *fetchBudget) release() {
	if b.shared != nil && b.held > 0 {
		b.shared.mu.Lock()
		b.shared.held -= b.held
		b.shared.mu.Unlock()
		b.shared.sem.Release(b.held)
	}
	b.held = 0
}

// sharedBudget is what all concurrent fetches of one Fetcher hold
// together, so the replica never holds more for fetches whatever their
// number.
type sharedBudget struct {
	size int64
	sem  *semaphore.Weighted
	// peak is the most ever held, for tests and benchmarks.
	mu   sync.Mutex
	held int64
	peak int64
}

func newSharedBudget(size int64) *sharedBudget {
	return &sharedBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// acquire takes n bytes. A fetch that holds nothing yet waits for them,
// within ctx and at most wait (half its FetchTimeout, leaving it the rest
// to fetch); one that already holds some does not wait, so no fetch waits
// while holding what another waits for (two half-done fetches would
// otherwise each wait for the other until their deadlines). Either failure
// is busy, never the repository's fault.
func (s *sharedBudget) acquire(ctx context.Context, wait time.Duration, n int64, holding bool) error {
	if holding || ctx == nil || wait <= 0 {
		if !s.sem.TryAcquire(n) {
			return fetchBusy()
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if err := s.sem.Acquire(ctx, n); err != nil {
			return fetchBusy()
		}
	}
	s.mu.Lock()
	s.held += n
	s.peak = max(s.peak, s.held)
	s.mu.Unlock()
	return nil
}

// int64Counter counts bytes across fetches; a nil one counts nothing.
type int64Counter struct{ n atomic.Int64 }

func (c *int64Counter) add(n int64) {
	if c != nil {
		c.n.Add(n)
	}
}

func (c *int64Counter) load() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}
