package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// A team holds at most ⌈N/2⌉ slots at all times, whether or not another
// team waits (review2 B2: with the cap only while another team waited, a
// team could take every slot before the others arrived).
func TestMayTakeRenderSlot(t *testing.T) {
	tests := []struct {
		name                   string
		slots, inUse, teamHeld int
		want                   bool
	}{
		{"FreeSlot", 4, 0, 0, true},
		{"UnderCap", 4, 2, 1, true},
		{"AtCapWithFreeSlots", 4, 2, 2, false},
		{"NoFreeSlot", 4, 4, 0, false},
		{"OddSlotsCapRoundsUp", 5, 3, 2, true},
		{"OddSlotsAtCap", 5, 3, 3, false},
		{"OneSlotTeamMayTakeIt", 1, 0, 0, true},
		{"OneSlotTaken", 1, 1, 1, false},
		{"TwoSlotsCapIsOne", 2, 1, 1, false},
		{"TwoSlotsOtherTeamHoldsOne", 2, 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MayTakeRenderSlot(tt.slots, tt.inUse, tt.teamHeld); got != tt.want {
				t.Fatalf("MayTakeRenderSlot(%d, %d, %d) = %v", tt.slots, tt.inUse, tt.teamHeld, got)
			}
		})
	}
}

// manualTimers are queue timeouts the test fires by hand; queued receives
// one value per waiter as it starts waiting (its waiter is in the queue by
// then).
type manualTimers struct {
	mu     sync.Mutex
	fire   []chan time.Time
	queued chan int
}

func newManualTimers() *manualTimers { return &manualTimers{queued: make(chan int, 1024)} }

func (m *manualTimers) timer(time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	m.mu.Lock()
	m.fire = append(m.fire, ch)
	n := len(m.fire) - 1
	m.mu.Unlock()
	m.queued <- n
	return ch, func() bool { return true }
}

// waitQueued returns the index of the next waiter to start waiting.
func (m *manualTimers) waitQueued(tb testing.TB) int {
	tb.Helper()
	select {
	case n := <-m.queued:
		return n
	case <-time.After(time.Minute): // only catches a hang
		tb.Fatal("no render started waiting within a minute")
		return -1
	}
}

func (m *manualTimers) expire(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fire[n] <- time.Time{}
}

// queueMetrics records what the queue reports.
type queueMetrics struct {
	mu       sync.Mutex
	inFlight []int
	waits    []time.Duration
	rejected []string
}

func (m *queueMetrics) RendersInFlight(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight = append(m.inFlight, n)
}

func (m *queueMetrics) RenderAdmitted(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waits = append(m.waits, d)
}

func (m *queueMetrics) RenderRejected(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rejected = append(m.rejected, reason)
}

// acquisition is one Acquire running in its own goroutine.
type acquisition struct {
	team    string
	done    chan struct{}
	release func()
	err     error
}

func acquireAsync(ctx context.Context, q *RenderQueue, team string) *acquisition {
	a := &acquisition{team: team, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.release, a.err = q.Acquire(ctx, team)
	}()
	return a
}

func (a *acquisition) wait(tb testing.TB) {
	tb.Helper()
	select {
	case <-a.done:
	case <-time.After(time.Minute): // only catches a hang
		tb.Fatalf("%s's render was not admitted or refused within a minute", a.team)
	}
}

func mustAcquire(tb testing.TB, q *RenderQueue, team string) func() {
	tb.Helper()
	release, err := q.Acquire(context.Background(), team)
	if err != nil {
		tb.Fatalf("Acquire(%s): %v", team, err)
	}
	return release
}

// state is the queue's slots by team and its waiters' teams in order.
func (q *RenderQueue) state() (map[string]int, []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	held := map[string]int{}
	for team, n := range q.held {
		held[team] = n
	}
	var waiting []string
	for _, w := range q.waiters {
		waiting = append(waiting, w.team)
	}
	return held, waiting
}

func assertState(tb testing.TB, q *RenderQueue, wantHeld map[string]int, wantWaiting ...string) {
	tb.Helper()
	held, waiting := q.state()
	if fmt.Sprint(held) != fmt.Sprint(wantHeld) || !slices.Equal(waiting, wantWaiting) {
		tb.Fatalf("held %v, waiting %v; want held %v, waiting %v", held, waiting, wantHeld, wantWaiting)
	}
}

// Team A with many renders cannot starve team B: B starts beside A's cap
// at once and, once at its own cap, is served in turn with A's waiters
// (first come, first served, skipping a team at its cap).
func TestRenderQueueTeamCannotStarveAnother(t *testing.T) {
	timers := newManualTimers()
	q := NewRenderQueue(4, time.Minute, RenderQueueOptions{Timer: timers.timer})
	ctx := context.Background()
	// Alone, A takes its cap, 2 of 4, and waits for more.
	releasesA := []func(){mustAcquire(t, q, "A"), mustAcquire(t, q, "A")}
	var waitA []*acquisition
	for range 2 {
		waitA = append(waitA, acquireAsync(ctx, q, "A"))
		timers.waitQueued(t)
	}
	assertState(t, q, map[string]int{"A": 2}, "A", "A")
	// B arrives later and starts at once, ahead of A's earlier waiters.
	releasesB := []func(){mustAcquire(t, q, "B"), mustAcquire(t, q, "B")}
	b3 := acquireAsync(ctx, q, "B")
	timers.waitQueued(t)
	assertState(t, q, map[string]int{"A": 2, "B": 2}, "A", "A", "B")

	releasesB[0]() // A's waiters are at A's cap: B's waiter, though later
	b3.wait(t)
	assertState(t, q, map[string]int{"A": 2, "B": 2}, "A", "A")
	releasesA[0]() // A's first waiter
	waitA[0].wait(t)
	assertState(t, q, map[string]int{"A": 2, "B": 2}, "A")
	releasesB[1]() // A is at its cap: the slot stays free for others
	assertState(t, q, map[string]int{"A": 2, "B": 1}, "A")
	releasesA[1]()
	waitA[1].wait(t)
	assertState(t, q, map[string]int{"A": 2, "B": 1})
	for _, a := range []*acquisition{b3, waitA[0], waitA[1]} {
		if a.err != nil {
			t.Fatalf("%s: %v", a.team, a.err)
		}
		a.release()
	}
	assertState(t, q, map[string]int{})
}

func TestRenderQueueTimeout(t *testing.T) {
	timers := newManualTimers()
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	metrics := &queueMetrics{}
	q := NewRenderQueue(1, 10*time.Second, RenderQueueOptions{Timer: timers.timer, Now: clock.Now, Metrics: metrics})
	releaseA := mustAcquire(t, q, "A")
	b := acquireAsync(context.Background(), q, "B")
	n := timers.waitQueued(t)
	clock.Advance(10 * time.Second)
	timers.expire(n)
	b.wait(t)
	var se *Error
	if !errors.As(b.err, &se) || se.Code != EUNAVAILABLE || se.Reason != ReasonRenderBusy || se.RetryAfter != 10*time.Second {
		t.Fatalf("timed-out Acquire = %v; want unavailable/render_busy with RetryAfter 10s", b.err)
	}
	assertState(t, q, map[string]int{"A": 1})
	// The next waiter is admitted when A ends, and its wait is observed.
	c := acquireAsync(context.Background(), q, "C")
	timers.waitQueued(t)
	clock.Advance(3 * time.Second)
	releaseA()
	c.wait(t)
	c.release()
	c.release() // a second call is a no-op
	assertState(t, q, map[string]int{})
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	if !slices.Equal(metrics.rejected, []string{RenderRejectedTimeout}) ||
		!slices.Equal(metrics.waits, []time.Duration{0, 3 * time.Second}) ||
		!slices.Equal(metrics.inFlight, []int{1, 0, 1, 0}) {
		t.Fatalf("metrics: rejected %v, waits %v, in flight %v", metrics.rejected, metrics.waits, metrics.inFlight)
	}
}

func TestRenderQueueCanceledWhileQueued(t *testing.T) {
	timers := newManualTimers()
	metrics := &queueMetrics{}
	q := NewRenderQueue(2, time.Minute, RenderQueueOptions{Timer: timers.timer, Metrics: metrics})
	releases := []func(){mustAcquire(t, q, "A"), mustAcquire(t, q, "B")}
	ctx, cancel := context.WithCancel(context.Background())
	b := acquireAsync(ctx, q, "B")
	timers.waitQueued(t)
	a := acquireAsync(context.Background(), q, "A")
	timers.waitQueued(t)
	assertState(t, q, map[string]int{"A": 1, "B": 1}, "B", "A")
	cancel()
	b.wait(t)
	if !errors.Is(b.err, context.Canceled) {
		t.Fatalf("canceled Acquire = %v", b.err)
	}
	// B's waiter left and took nothing with it; A's waits for A's slot.
	assertState(t, q, map[string]int{"A": 1, "B": 1}, "A")
	releases[0]()
	a.wait(t)
	a.release()
	releases[1]()
	assertState(t, q, map[string]int{})
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	if !slices.Equal(metrics.rejected, []string{RenderRejectedCanceled}) {
		t.Fatalf("rejected %v", metrics.rejected)
	}
}

// A waiter admitted at the moment it gives up hands its slot on: either
// way nothing leaks.
func TestRenderQueueAdmittedWhileGivingUp(t *testing.T) {
	for i := range 200 {
		timers := newManualTimers()
		q := NewRenderQueue(1, time.Minute, RenderQueueOptions{Timer: timers.timer})
		releaseA := mustAcquire(t, q, "A")
		b := acquireAsync(context.Background(), q, "B")
		n := timers.waitQueued(t)
		timers.expire(n)
		releaseA()
		b.wait(t)
		if b.err == nil {
			b.release()
		} else if ErrorReason(b.err) != ReasonRenderBusy {
			t.Fatalf("round %d: %v", i, b.err)
		}
		assertState(t, q, map[string]int{})
	}
}

// Many teams at once (run with -race): never more than N in flight nor
// more than ⌈N/2⌉ of one team, and every slot comes back.
func TestRenderQueueConcurrent(t *testing.T) {
	const slots = 3
	q := NewRenderQueue(slots, time.Minute, RenderQueueOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	running, most := 0, 0
	byTeam, mostByTeam := map[string]int{}, 0
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			team := []string{"A", "A", "A", "B", "C"}[i%5]
			release, err := q.Acquire(context.Background(), team)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			running++
			most = max(most, running)
			byTeam[team]++
			mostByTeam = max(mostByTeam, byTeam[team])
			mu.Unlock()
			for range rand.IntN(1000) {
				_ = fmt.Sprint(i) // a little work
			}
			mu.Lock()
			running--
			byTeam[team]--
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if most > slots || mostByTeam > RenderSlotsPerTeam(slots) {
		t.Errorf("%d renders ran at once (%d of one team), above %d (%d)", most, mostByTeam, slots, RenderSlotsPerTeam(slots))
	}
	assertState(t, q, map[string]int{})
}

func TestRenderQueueNilAdmits(t *testing.T) {
	var q *RenderQueue
	release, err := q.Acquire(context.Background(), "A")
	if err != nil || q.RetryAfter() != 0 {
		t.Fatal(err)
	}
	release()
}
