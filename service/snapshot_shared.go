package service

import (
	"bytes"
	"context"
	"time"
)

// SharedSnapshots is the snapshot table every replica shares (PostgreSQL):
// one row per (team, cluster), written by whichever replica holds the
// row's read lease. Ages are measured by the table's own clock, never by a
// replica's.
type SharedSnapshots interface {
	// Load returns the cluster's row; found is false when there is none.
	Load(ctx context.Context, cl Cluster) (row SharedSnapshot, found bool, err error)
	// Acquire takes the cluster's read lease for owner, held for lease,
	// when no live lease exists and the row is absent, of another schema
	// version, or older than ages allow. When it is not won, the lease
	// carries the row as it stands.
	Acquire(ctx context.Context, cl Cluster, owner string, lease time.Duration, ages SnapshotAges) (Lease, error)
	// Store writes a read made under lease when its owner still holds it,
	// releases the lease and tells the other replicas. It reports whether
	// the row was written (false: the lease was lost to another replica).
	Store(ctx context.Context, cl Cluster, lease Lease, w SharedWrite) (bool, error)
	// Wait returns when the cluster's row is written (a notification) or
	// after d, whichever is first.
	Wait(ctx context.Context, cl Cluster, d time.Duration)
	// Cards returns the rows of a team's clusters without their
	// encodings: what the sidebar shows.
	Cards(ctx context.Context, teamID string) ([]SharedCard, error)
}

// SnapshotAges are the ages past which a row is read again: a good read,
// a failed read, and a read that found no Argo CD.
type SnapshotAges struct {
	OK, Failure, NotInstalled time.Duration
}

// SharedSnapshot is one row of the shared table.
type SharedSnapshot struct {
	SchemaVersion int
	FetchedAt     time.Time     // when the read started, by the table's clock
	Age           time.Duration // now minus FetchedAt, by the table's clock
	ContentHash   string
	Encoding      []byte // EncodeSnapshot's; nil for a row never written
	FailureReason string // the failed read's reason ("" when good or unclassified)
	Failed        bool
	LeaseLive     bool // a replica holds the lease (is reading) now
}

// Lease is the outcome of Acquire.
type Lease struct {
	Won   bool
	Owner string
	// At is the table's clock when the lease was taken: the fetched_at of
	// the read made under it.
	At time.Time
	// PrevHash is the row's content hash when the lease was taken: a read
	// with the same hash leaves the encoding as it is.
	PrevHash string
	// Row and Found are the row as it stands when the lease was not won.
	Row   SharedSnapshot
	Found bool
}

// SharedWrite is a read to store under a lease.
type SharedWrite struct {
	// Encoding is nil when ContentHash equals the lease's PrevHash: the
	// stored encoding stays.
	Encoding    []byte
	ContentHash string
	Summary     *AppSummary // nil for a failed read
	// FailureCode and FailureReason classify a failed read.
	FailureCode, FailureReason string
}

// SharedCard is a row as the sidebar reads it.
type SharedCard struct {
	ClusterID     string
	SchemaVersion int
	FetchedAt     time.Time
	Age           time.Duration
	Summary       *AppSummary // nil for a failed read or a row never written
	FailureReason string
	Failed        bool
	Written       bool // false while the row's first read runs
}

func (c *SnapshotCache) ages(refresh bool) SnapshotAges {
	return SnapshotAges{OK: c.maxAge(nil, refresh), Failure: c.maxAge(errFailedRead, refresh),
		NotInstalled: c.NotInstalledTTL}
}

// errFailedRead stands for any failed read in maxAge.
var errFailedRead = &Error{Code: EUPSTREAM}

// leaseFor is how long a lease is held: one read, and its write. A replica
// that died holding one delays others by at most this much.
func (c *SnapshotCache) leaseFor() time.Duration { return c.ReadTimeout + 5*time.Second }

// usable reports whether a shared row can serve this request as it is.
func (c *SnapshotCache) usable(row SharedSnapshot, refresh bool) bool {
	if row.SchemaVersion != SnapshotSchemaVersion || row.Encoding == nil {
		return false
	}
	var err error
	switch {
	case Reason(row.FailureReason) == ReasonArgoCDNotInstalled:
		err = ReasonError(ENOTFOUND, ReasonArgoCDNotInstalled, "")
	case row.Failed:
		err = errFailedRead
	}
	return row.Age < c.maxAge(err, refresh)
}

// adopt turns a shared row into a local snapshot, aged by the row's age.
func (c *SnapshotCache) adopt(row SharedSnapshot) (*Snapshot, error) {
	read, failure, err := decodeSnapshotRecord(row.Encoding)
	if err != nil {
		return nil, err
	}
	if c.Intern != nil {
		c.Intern(read.Apps)
	}
	s := newSnapshot(read, failure, row.FetchedAt)
	s.localAt = c.now().Add(-row.Age)
	c.keepHot(s)
	return s, nil
}

// newer reports whether the local snapshot is at least as new as the row:
// then the local one serves (it may be the very read the row holds).
func newer(local *Snapshot, row SharedSnapshot) bool {
	return local != nil && !local.FetchedAt.Before(row.FetchedAt)
}

// loadShared serves a miss (or a refresh) through the shared table: the
// row when it is young enough, else the read of whichever replica wins the
// row's lease — this one, or another it waits for. When the table fails,
// the replica reads alone: the cluster's answer matters more than the
// bound.
func (c *SnapshotCache) loadShared(ctx context.Context, cl Cluster, refresh bool) *Snapshot {
	key := cl.Key()
	local, _ := c.entries.Peek(key)
	localFresh := local != nil && c.Age(local) < c.maxAge(local.Err, refresh)
	if localFresh && !refresh {
		c.event("hit")
		return local
	}
	// A refresh past the floor tries the lease first: Acquire returns the
	// row when another replica's is fresh enough, so a Load would be a
	// round trip more.
	var row SharedSnapshot
	var found bool
	if !refresh || localFresh {
		var err error
		if row, found, err = c.Shared.Load(ctx, cl); err != nil {
			return c.alone(ctx, cl, refresh, "load", err)
		}
	}
	waited := false
	for {
		if found && c.usable(row, refresh) {
			if newer(local, row) {
				c.event("hit")
				return local
			}
			s, err := c.adopt(row)
			if err != nil {
				return c.alone(ctx, cl, refresh, "decode", err)
			}
			c.event("shared_hit")
			return s
		}
		if local != nil && c.Age(local) < c.maxAge(local.Err, refresh) && (!found || newer(local, row)) {
			// A refresh whose local snapshot is under the floor and no
			// older than the row.
			c.event("hit")
			return local
		}
		if ctx.Err() != nil {
			return c.timedOut(ctx)
		}
		if !found || !row.LeaseLive {
			lease, err := c.Shared.Acquire(ctx, cl, c.Owner, c.leaseFor(), c.ages(refresh))
			if err != nil {
				return c.alone(ctx, cl, refresh, "acquire", err)
			}
			if lease.Won {
				return c.readUnderLease(ctx, cl, refresh, lease)
			}
			if row, found = lease.Row, lease.Found; found && c.usable(row, refresh) {
				continue // another replica wrote it just now
			}
		}
		// Another replica is reading: wait for its write (each turn of
		// this loop that does not return waits, so it never spins).
		if !waited {
			c.event("shared_wait")
			waited = true
		}
		c.Shared.Wait(ctx, cl, c.Poll)
		var err error
		if row, found, err = c.Shared.Load(ctx, cl); err != nil {
			return c.alone(ctx, cl, refresh, "load", err)
		}
	}
}

// msgReadTimeout is what callers are told when no replica's read of the
// cluster finished within the budget.
const msgReadTimeout = "The cluster's applications could not be read in time."

// readUnderLease reads the cluster holding the lease (nothing held in the
// database meanwhile), stores the read and releases the lease.
func (c *SnapshotCache) readUnderLease(ctx context.Context, cl Cluster, refresh bool, lease Lease) *Snapshot {
	s := c.read(ctx, cl, refresh, lease.At)
	// Kept here before the row is written, so the row's own notification
	// finds this snapshot (not older) and leaves it in place.
	c.store(cl.Key(), s)
	buf := encodeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledEncoding {
			encodeBuffers.Put(buf) // after the write: the statement has sent the bytes
		}
	}()
	hash, err := encodeSnapshotTo(buf, s)
	if err != nil {
		c.logShared(ctx, cl, "encode", err)
		return s
	}
	w := SharedWrite{ContentHash: hash, FailureCode: ErrorCode(s.Err), FailureReason: string(ErrorReason(s.Err))}
	if hash != lease.PrevHash {
		w.Encoding = buf.Bytes()
	}
	if s.Err == nil {
		summary := s.Summary
		w.Summary = &summary
	}
	// The write must happen even when the read used up the flight's budget.
	storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := c.Shared.Store(storeCtx, cl, lease, w); err != nil {
		c.logShared(ctx, cl, "store", err)
	}
	return s
}

// timedOut is the answer when no replica's read finished within the
// flight's budget.
func (c *SnapshotCache) timedOut(ctx context.Context) *Snapshot {
	return &Snapshot{FetchedAt: c.now(), localAt: c.now(),
		Err: &Error{Code: EUPSTREAM, Reason: ReasonClusterUnreachable, Message: msgReadTimeout, Err: ctx.Err()}}
}

// alone reads the cluster without the shared table, which failed.
func (c *SnapshotCache) alone(ctx context.Context, cl Cluster, refresh bool, step string, err error) *Snapshot {
	if ctx.Err() != nil {
		return c.timedOut(ctx) // the table did not fail: the budget ran out
	}
	c.logShared(ctx, cl, step, err)
	return c.read(ctx, cl, refresh, time.Time{})
}

func (c *SnapshotCache) logShared(ctx context.Context, cl Cluster, step string, err error) {
	c.event("shared_error")
	if c.Log != nil {
		c.Log.WarnContext(ctx, "shared snapshot table failed; reading the cluster alone", "step", step,
			"team", cl.TeamID, "cluster", cl.ID, "err", err)
	}
}

// Invalidate drops the local snapshot of a cluster when it is older than a
// row another replica wrote at fetchedAt, so the next request here takes
// the newer row instead of serving older data until its TTL.
func (c *SnapshotCache) Invalidate(teamID, clusterID string, fetchedAt time.Time) {
	key := Cluster{TeamID: teamID, ID: clusterID}.Key()
	c.replacing.Lock()
	defer c.replacing.Unlock()
	if s, ok := c.entries.Peek(key); ok && s.FetchedAt.Before(fetchedAt) {
		c.entries.Remove(key) // never a snapshot stored since the look: that one is not older
	}
}

// Warm returns the cluster's snapshot when serving it needs no cluster
// read: the local one within its window, else the shared row when it is
// (a database read, adopted locally). Detection looks at other clusters
// (hubs) this way before it spends its few cold reads.
func (c *SnapshotCache) Warm(ctx context.Context, cl Cluster) (*Snapshot, bool) {
	if s, ok := c.fresh(cl.Key(), false); ok {
		c.event("hit")
		return s, true
	}
	if c.Shared == nil {
		return nil, false
	}
	row, found, err := c.Shared.Load(ctx, cl)
	if err != nil || !found || !c.usable(row, false) {
		return nil, false
	}
	s, err := c.adopt(row)
	if err != nil {
		return nil, false
	}
	c.store(cl.Key(), s)
	c.event("shared_hit")
	return s, true
}
