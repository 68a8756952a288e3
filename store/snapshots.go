package store

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/service"
)

// snapshotChannel is the NOTIFY channel of written snapshot rows.
const snapshotChannel = "kukie_snapshots"

// maxNotifyPayload keeps NOTIFY payloads under PostgreSQL's 8,000-byte cap
// (a longer payload fails the statement); a longer key is sent as an empty
// payload, which wakes every waiter.
const maxNotifyPayload = 7900

// Snapshots is the shared snapshot table (cluster_snapshots) with its
// notifications: the service.SharedSnapshots adapter. Listen must run for
// waits to end early; without it they end by polling.
type Snapshots struct {
	db  *DB
	log *slog.Logger

	mu      sync.Mutex
	waiters map[string][]chan struct{}
}

var _ service.SharedSnapshots = (*Snapshots)(nil)

// NewSnapshots returns the shared snapshot table of db.
func NewSnapshots(db *DB, log *slog.Logger) *Snapshots {
	return &Snapshots{db: db, log: log, waiters: map[string][]chan struct{}{}}
}

// snapshotColumns are a row as service.SharedSnapshot holds it. The age is
// taken by the database's clock; a row never written has fetched_at
// -infinity, aged 10^9 s (PostgreSQL 15 has no infinite interval).
const snapshotColumns = `schema_version, NULLIF(fetched_at, '-infinity'),
	CASE WHEN fetched_at = '-infinity' THEN 1e9 ELSE extract(epoch FROM now() - fetched_at) END,
	content_hash, encoding, failure_code IS NOT NULL, coalesce(failure_reason, ''), lease_until > now()`

func scanSnapshot(row pgx.Row) (service.SharedSnapshot, error) {
	var s service.SharedSnapshot
	var fetched *time.Time
	var age float64
	if err := row.Scan(&s.SchemaVersion, &fetched, &age, &s.ContentHash, &s.Encoding, &s.Failed, &s.FailureReason, &s.LeaseLive); err != nil {
		return s, err
	}
	if fetched != nil {
		s.FetchedAt = *fetched
	}
	s.Age = time.Duration(age * float64(time.Second))
	return s, nil
}

// Load returns the cluster's row.
func (s *Snapshots) Load(ctx context.Context, cl service.Cluster) (service.SharedSnapshot, bool, error) {
	row, err := scanSnapshot(s.db.pool.QueryRow(ctx, `SELECT `+snapshotColumns+`
		FROM cluster_snapshots WHERE team_id = $1 AND cluster_id = $2`, cl.TeamID, cl.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		return service.SharedSnapshot{}, false, nil
	}
	if err != nil {
		return row, false, mapError(err)
	}
	return row, true, nil
}

// Acquire takes the read lease with one autocommit compare-and-set: the
// row is inserted, or taken over when no live lease exists and it is of
// another schema version, never written, or older than its age allows.
// Nothing stays locked while the cluster is read.
func (s *Snapshots) Acquire(ctx context.Context, cl service.Cluster, owner string, lease time.Duration, ages service.SnapshotAges) (service.Lease, error) {
	out := service.Lease{Owner: owner}
	err := s.db.pool.QueryRow(ctx, `
		INSERT INTO cluster_snapshots AS s (team_id, cluster_id, schema_version, lease_owner, lease_until)
		VALUES ($1, $2, $3, $4, now() + $5::bigint * interval '1 millisecond')
		ON CONFLICT (team_id, cluster_id) DO UPDATE
		SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
		WHERE s.lease_until < now()
		  AND (s.schema_version <> $3 OR s.encoding IS NULL
		       OR s.fetched_at < now() - CASE
		            WHEN s.failure_reason = $8::text THEN $7::bigint
		            WHEN s.failure_code IS NOT NULL THEN $6::bigint
		            ELSE $9::bigint END * interval '1 millisecond')
		RETURNING now(), s.content_hash`,
		cl.TeamID, cl.ID, service.SnapshotSchemaVersion, owner, lease.Milliseconds(),
		ages.Failure.Milliseconds(), ages.NotInstalled.Milliseconds(), service.ReasonArgoCDNotInstalled,
		ages.OK.Milliseconds()).Scan(&out.At, &out.PrevHash)
	if err == nil {
		out.Won = true
		return out, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return out, mapError(err)
	}
	out.Row, out.Found, err = s.Load(ctx, cl)
	return out, err
}

// Store writes a read made under lease and notifies the key, in one
// statement: nothing is written or notified when another replica has
// taken the lease meanwhile. The encoding is kept when the content hash
// did not change (w.Encoding nil).
func (s *Snapshots) Store(ctx context.Context, cl service.Cluster, lease service.Lease, w service.SharedWrite) (bool, error) {
	var failureCode, failureReason *string
	if w.FailureCode != "" {
		failureCode, failureReason = &w.FailureCode, &w.FailureReason
	}
	payload, err := json.Marshal(notification{Team: cl.TeamID, Cluster: cl.ID, At: lease.At})
	if err != nil {
		return false, err
	}
	if len(payload) > maxNotifyPayload {
		payload = nil
	}
	var written bool
	err = s.db.pool.QueryRow(ctx, `
		WITH u AS (
			UPDATE cluster_snapshots
			SET schema_version = $3, fetched_at = $4, content_hash = $5, encoding = coalesce($6, encoding),
			    summary = $7, failure_code = $8, failure_reason = $9,
			    lease_owner = NULL, lease_until = '-infinity'
			WHERE team_id = $1 AND cluster_id = $2 AND lease_owner = $10
			RETURNING 1)
		SELECT count(pg_notify($11, $12)) > 0 FROM u`,
		cl.TeamID, cl.ID, service.SnapshotSchemaVersion, lease.At, w.ContentHash, w.Encoding,
		w.Summary, failureCode, failureReason, lease.Owner, snapshotChannel, string(payload)).Scan(&written)
	return written, mapError(err)
}

// notification is a NOTIFY payload: the written key and its fetched_at.
type notification struct {
	Team    string    `json:"t"`
	Cluster string    `json:"c"`
	At      time.Time `json:"f"`
}

// Cards returns the team's rows without their encodings.
func (s *Snapshots) Cards(ctx context.Context, teamID string) ([]service.SharedCard, error) {
	rows, err := s.db.pool.Query(ctx, `
		SELECT cluster_id, schema_version, NULLIF(fetched_at, '-infinity'),
		       CASE WHEN fetched_at = '-infinity' THEN 1e9 ELSE extract(epoch FROM now() - fetched_at) END,
		       summary, failure_code IS NOT NULL, coalesce(failure_reason, '')
		FROM cluster_snapshots WHERE team_id = $1`, teamID)
	if err != nil {
		return nil, mapError(err)
	}
	cards, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (service.SharedCard, error) {
		var c service.SharedCard
		var fetched *time.Time
		var age float64
		if err := row.Scan(&c.ClusterID, &c.SchemaVersion, &fetched, &age, &c.Summary, &c.Failed, &c.FailureReason); err != nil {
			return c, err
		}
		if fetched != nil {
			c.FetchedAt, c.Written = *fetched, true
		}
		c.Age = time.Duration(age * float64(time.Second))
		return c, nil
	})
	return cards, mapError(err)
}

// Wait returns when the cluster's row is written, after d, or when ctx ends.
func (s *Snapshots) Wait(ctx context.Context, cl service.Cluster, d time.Duration) {
	key := cl.Key()
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiters[key] = append(s.waiters[key], ch)
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return // woken and removed by wake
	case <-t.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.waiters[key]
	for i, w := range list {
		if w == ch {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.waiters, key)
	} else {
		s.waiters[key] = list
	}
}

// wake ends the waits on key, or on every key when all is set.
func (s *Snapshots) wake(key string, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, list := range s.waiters {
		if all || k == key {
			for _, ch := range list {
				close(ch)
			}
			delete(s.waiters, k)
		}
	}
}

// Listen keeps one dedicated connection (outside the pool, so a busy pool
// never delays a notification and LISTEN state never leaks into pooled
// connections) listening to the snapshot channel until ctx ends. When the
// connection fails it wakes every waiter (they look at the table
// themselves) and reconnects with backoff. onWrite, when not nil, is told
// of every row another replica (or this one) wrote.
func (s *Snapshots) Listen(ctx context.Context, onWrite func(teamID, clusterID string, fetchedAt time.Time)) {
	backoff := time.Second
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, onWrite)
		s.wake("", true)
		if ctx.Err() != nil {
			return
		}
		if s.log != nil {
			s.log.WarnContext(ctx, "snapshot notifications lost; waiting replicas poll the table until they return", "err", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func (s *Snapshots) listenOnce(ctx context.Context, onWrite func(teamID, clusterID string, fetchedAt time.Time)) error {
	conn, err := pgx.ConnectConfig(ctx, s.db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+snapshotChannel); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var msg notification
		if json.Unmarshal([]byte(n.Payload), &msg) != nil || msg.Team == "" {
			s.wake("", true)
			continue
		}
		s.wake(service.Cluster{TeamID: msg.Team, ID: msg.Cluster}.Key(), false)
		if onWrite != nil {
			onWrite(msg.Team, msg.Cluster, msg.At)
		}
	}
}
