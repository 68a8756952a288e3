package service

import (
	"context"
	"sync"
	"time"
)

// Reasons a render left the queue without a slot
// (RenderQueueMetrics.RenderRejected).
const (
	RenderRejectedTimeout  = "queue_timeout"
	RenderRejectedCanceled = "canceled"
)

// DefaultRenderQueueTimeout is how long a render waits for a slot.
const DefaultRenderQueueTimeout = 10 * time.Second

// RenderQueueMetrics observes the render queue.
type RenderQueueMetrics interface {
	// RendersInFlight is the number of slots held, after each change.
	RendersInFlight(n int)
	// RenderAdmitted observes how long an admitted render waited.
	RenderAdmitted(wait time.Duration)
	// RenderRejected counts a render that left the queue without a slot.
	RenderRejected(reason string)
}

// RenderQueue bounds the renders of a replica fairly across teams: at most
// Slots run at once, and a team holds at most ⌈Slots/2⌉ of them at all
// times, so ⌊Slots/2⌋ are always left to the other teams (with one slot, a
// team may take it). Running renders are never pre-empted, which is why the
// cap cannot wait for another team to queue: a team arriving after one team
// took every slot would wait for renders that run longer than its timeout.
// Waiters are served first come, first served, skipping a waiter whose team
// is at its cap; a waiter gives up after the timeout with render_busy.
type RenderQueue struct {
	slots   int
	timeout time.Duration
	now     func() time.Time
	timer   func(time.Duration) (<-chan time.Time, func() bool)
	metrics RenderQueueMetrics

	mu      sync.Mutex
	inUse   int
	held    map[string]int
	waiters []*renderWaiter
}

type renderWaiter struct {
	team     string
	admitted chan struct{} // closed on admission, under mu
	done     bool          // admitted, under mu
}

// RenderQueueOptions are a RenderQueue's clock and metrics (tests inject
// them; zero values mean the real clock and no metrics).
type RenderQueueOptions struct {
	Now func() time.Time
	// Timer starts one waiter's timeout: the channel fires when it passes,
	// stop releases it early.
	Timer   func(time.Duration) (fired <-chan time.Time, stop func() bool)
	Metrics RenderQueueMetrics
}

// NewRenderQueue returns a queue of slots (at least 1) and the timeout a
// waiter gives up after.
func NewRenderQueue(slots int, timeout time.Duration, o RenderQueueOptions) *RenderQueue {
	slots = max(slots, 1)
	q := &RenderQueue{slots: slots, timeout: timeout, now: o.Now, timer: o.Timer,
		metrics: o.Metrics, held: map[string]int{}}
	if q.now == nil {
		q.now = time.Now
	}
	if q.timer == nil {
		q.timer = func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}
	}
	return q
}

// RetryAfter is what a render_busy answer suggests waiting: one queue
// timeout, the time the refused render already waited without the queue
// moving (nil queue: zero).
func (q *RenderQueue) RetryAfter() time.Duration {
	if q == nil {
		return 0
	}
	return q.timeout
}

// Acquire waits for a slot for team. It returns the release to call when
// the render ends, or a render_busy *Error after the timeout, or ctx's
// error when ctx ends first; a waiter that leaves takes nothing with it. A
// nil queue admits at once.
func (q *RenderQueue) Acquire(ctx context.Context, team string) (release func(), err error) {
	if q == nil {
		return func() {}, nil
	}
	start := q.now()
	q.mu.Lock()
	if q.allowed(team) {
		q.take(team)
		q.mu.Unlock()
		q.admitted(start)
		return q.releaser(team), nil
	}
	w := &renderWaiter{team: team, admitted: make(chan struct{})}
	q.waiters = append(q.waiters, w)
	q.mu.Unlock()

	fired, stop := q.timer(q.timeout)
	defer stop()
	var reason string
	select {
	case <-w.admitted:
		q.admitted(start)
		return q.releaser(team), nil
	case <-fired:
		reason, err = RenderRejectedTimeout, ErrRenderBusy(q.timeout)
	case <-ctx.Done():
		reason, err = RenderRejectedCanceled, ctx.Err()
	}
	q.mu.Lock()
	if w.done {
		// Admitted while giving up: hand the slot on.
		q.mu.Unlock()
		q.releaser(team)()
	} else {
		q.remove(w)
		q.mu.Unlock()
	}
	if q.metrics != nil {
		q.metrics.RenderRejected(reason)
	}
	return nil, err
}

// ErrRenderBusy is the answer of a render that found no slot within timeout.
func ErrRenderBusy(timeout time.Duration) *Error {
	return &Error{Code: EUNAVAILABLE, Reason: ReasonRenderBusy, RetryAfter: timeout,
		Message: "Renders are busy on this server; try again in a few seconds."}
}

// MayTakeRenderSlot is the admission rule: a team may take a slot when one
// is free and it holds fewer than its cap, ⌈slots/2⌉, whoever else waits.
func MayTakeRenderSlot(slots, inUse, teamHeld int) bool {
	return inUse < slots && teamHeld < RenderSlotsPerTeam(slots)
}

// RenderSlotsPerTeam is the most slots one team holds: ⌈slots/2⌉ (1 of 1,
// 1 of 2, 2 of 3, 2 of 4).
func RenderSlotsPerTeam(slots int) int {
	return (slots + 1) / 2
}

// allowed applies MayTakeRenderSlot to team now; under mu.
func (q *RenderQueue) allowed(team string) bool {
	return MayTakeRenderSlot(q.slots, q.inUse, q.held[team])
}

// take gives team a slot; under mu.
func (q *RenderQueue) take(team string) {
	q.inUse++
	q.held[team]++
	if q.metrics != nil {
		q.metrics.RendersInFlight(q.inUse)
	}
}

// dispatch admits waiters in order while slots are free, skipping those
// whose team is at its cap; under mu. Only a release frees a slot or lowers
// a team below its cap, so only a release dispatches.
func (q *RenderQueue) dispatch() {
	for i := 0; i < len(q.waiters) && q.inUse < q.slots; {
		w := q.waiters[i]
		if !q.allowed(w.team) {
			i++
			continue
		}
		q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
		q.take(w.team)
		w.done = true
		close(w.admitted) // the next waiter is at i now
	}
}

func (q *RenderQueue) remove(w *renderWaiter) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
}

// releaser returns the slot once, however often it is called.
func (q *RenderQueue) releaser(team string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.inUse--
			if q.held[team]--; q.held[team] == 0 {
				delete(q.held, team)
			}
			if q.metrics != nil {
				q.metrics.RendersInFlight(q.inUse)
			}
			q.dispatch()
		})
	}
}

func (q *RenderQueue) admitted(start time.Time) {
	if q.metrics != nil {
		q.metrics.RenderAdmitted(max(q.now().Sub(start), 0))
	}
}
