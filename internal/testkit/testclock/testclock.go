// Package testclock is a clock that tests move by hand, for code that
// takes an injected now func (caches, token renewal, rediscovery windows),
// so no test depends on the machine's speed.
package testclock

import (
	"sync"
	"testing"
	"time"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// WaitFor polls done until it says so, failing tb after a minute: the
// deadline only catches hangs, never paces a test. It is for conditions
// reached by real goroutines (background reads, notifications, jobs).
func WaitFor(tb testing.TB, what string, done func() bool) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			tb.Fatalf("still waiting for %s after a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
