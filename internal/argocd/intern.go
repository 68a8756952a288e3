package argocd

import (
	"sync"
	"time"
	"unique"
)

// Strings keeps the process-wide copies of the strings Applications repeat
// across clusters (kinds, groups, versions, statuses, namespaces, projects,
// repository URLs, revisions) canonical between cluster reads, so a
// thousand clusters of a hundred apps hold one copy of each.
//
// The copies are made by unique.Make, whose table keeps a value only while
// a unique.Handle to it is reachable; an Application holds plain strings,
// not handles, so without Strings the next read would make fresh copies as
// soon as the GC ran. Strings holds the handles of every value read within
// the last one to two periods (two generations), so values still in use
// stay canonical and values no read meets any more (old revisions) are let
// go. It is safe for concurrent use.
type Strings struct {
	now     func() time.Time
	period  time.Duration
	mu      sync.Mutex
	started time.Time // of the current generation
	current map[unique.Handle[string]]struct{}
	prev    map[unique.Handle[string]]struct{}
}

// NewStrings returns a table holding values for at least period after a
// read last met them (now is the clock).
func NewStrings(now func() time.Time, period time.Duration) *Strings {
	return &Strings{now: now, period: period, started: now(), current: map[unique.Handle[string]]struct{}{}}
}

// hold keeps handles reachable for at least one period.
func (s *Strings) hold(handles []unique.Handle[string]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); now.Sub(s.started) >= s.period {
		s.prev, s.current, s.started = s.current, make(map[unique.Handle[string]]struct{}, len(s.current)), now
	}
	for _, h := range handles {
		s.current[h] = struct{}{}
	}
}

// Len is the number of values held.
func (s *Strings) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.current)
	for h := range s.prev {
		if _, ok := s.current[h]; !ok {
			n++
		}
	}
	return n
}

// interner shares the strings of one cluster read. Values that repeat
// across clusters go through unique.Make (and Strings, which keeps them
// canonical after the read); values that repeat only within a read (object
// names, paths, messages) are shared through the read's own map, which
// costs nothing once the read is done. The map also keeps a repeated value
// from being allocated again: looking a []byte up does not allocate.
type interner struct {
	table   *Strings // nil: canonical during the read only
	seen    map[string]string
	pending []unique.Handle[string] // made since the last flush
	specs   map[string][]byte
	times   map[string]*time.Time
	// health holds one *string per health status, so resource rows share
	// the pointer as well as the text.
	health map[string]*string
}

func newInterner(table *Strings) *interner {
	return &interner{table: table, seen: map[string]string{}, specs: map[string][]byte{},
		times: map[string]*time.Time{}, health: map[string]*string{}}
}

// shared returns b as the process-wide canonical string.
func (in *interner) shared(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := in.seen[string(b)]; ok {
		return s
	}
	h := unique.Make(string(b))
	if in.table != nil {
		in.pending = append(in.pending, h)
	}
	s := h.Value()
	in.seen[s] = s
	return s
}

// flush hands the handles made since the last flush to the table.
func (in *interner) flush() {
	if len(in.pending) > 0 && in.table != nil {
		in.table.hold(in.pending)
	}
	clear(in.pending)
	in.pending = in.pending[:0]
}

// local returns b as a string shared within this read only: for values
// that rarely repeat elsewhere, where a process-wide entry would cost more
// than it saves.
func (in *interner) local(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := in.seen[string(b)]; ok {
		return s
	}
	s := string(b)
	in.seen[s] = s
	return s
}

// spec returns a copy of b, shared with any equal source spec of this
// read (an app's status.sync.comparedTo usually equals its spec.source).
// Specs are never modified, so sharing the bytes is safe.
func (in *interner) spec(b []byte) []byte {
	if s, ok := in.specs[string(b)]; ok {
		return s
	}
	s := append([]byte(nil), b...)
	in.specs[string(s)] = s
	return s
}

// time parses an RFC 3339 time (nil when it is not one), sharing the
// value with equal times of this read: apps reconciled or synced in the
// same second, an operation's end and the deploy it recorded.
func (in *interner) time(b []byte) *time.Time {
	if t, ok := in.times[string(b)]; ok {
		return t
	}
	var out *time.Time
	if t, err := time.Parse(time.RFC3339, string(b)); err == nil {
		out = &t
	}
	in.times[string(b)] = out
	return out
}

// healthOf returns a shared pointer to the health status b.
func (in *interner) healthOf(b []byte) *string {
	if p, ok := in.health[string(b)]; ok {
		return p
	}
	s := in.shared(b)
	p := &s
	in.health[s] = p
	return p
}
