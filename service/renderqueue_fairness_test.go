package service

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// admittedAtOnce reports whether a's Acquire returned without waiting
// (true) or started waiting (false): it does one or the other at once.
func admittedAtOnce(tb testing.TB, timers *manualTimers, a *acquisition) bool {
	tb.Helper()
	select {
	case <-a.done:
		if a.err != nil {
			tb.Fatalf("%s: %v", a.team, a.err)
		}
		return true
	case <-timers.queued:
		return false
	case <-time.After(time.Minute): // only catches a hang
		tb.Fatalf("%s's render neither started nor waited within a minute", a.team)
		return false
	}
}

// review2 B2: a team that took every slot while nobody waited kept them
// for its renders' whole run (never pre-empted, up to the render timeout),
// and another team arriving then was refused after the shorter queue
// timeout. A team now holds at most ⌈N/2⌉ at all times: however many
// renders team A asks for first, team B's next ⌊N/2⌋ start at once. With
// one slot a team may take it, and B waits for it.
func TestRenderQueueLoneTeamLeavesSlotsToOthers(t *testing.T) {
	for slots := 1; slots <= 5; slots++ {
		t.Run(fmt.Sprintf("Slots%d", slots), func(t *testing.T) {
			timers := newManualTimers()
			q := NewRenderQueue(slots, time.Minute, RenderQueueOptions{Timer: timers.timer})
			var all []*acquisition
			ask := func(team string, n int) (admitted int) {
				for range n {
					a := acquireAsync(context.Background(), q, team)
					all = append(all, a)
					if admittedAtOnce(t, timers, a) {
						admitted++
					}
				}
				return admitted
			}
			if got, want := ask("A", slots+2), (slots+1)/2; got != want {
				t.Fatalf("team A alone started %d of %d renders, want ⌈%d/2⌉ = %d", got, slots+2, slots, want)
			}
			if got, want := ask("B", slots/2), slots/2; got != want {
				t.Fatalf("team B started %d of %d renders at once beside A's, want all", got, want)
			}
			if slots == 1 && ask("B", 1) != 0 {
				t.Fatal("with one slot taken by A, B started a render")
			}
			// In order, each waiter is admitted by the releases before it.
			for _, a := range all {
				a.wait(t)
				if a.err != nil {
					t.Fatalf("%s: %v", a.team, a.err)
				}
				a.release()
			}
			assertState(t, q, map[string]int{})
		})
	}
}
