package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"

	"github.com/kukie/gitops-server/internal/jobs"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// call is one run of a job as the runner saw it.
type call struct {
	Kind        string
	TeamID      string
	ClusterID   string
	LastAttempt bool
}

// fakeRunner records every run and answers with step (nil: success).
type fakeRunner struct {
	step func(ctx context.Context, c call, n int) error // n counts the runs of this kind and cluster, from 1

	mu    sync.Mutex
	calls []call
}

func (r *fakeRunner) record(ctx context.Context, c call) error {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	n := 0
	for _, x := range r.calls {
		if x.Kind == c.Kind && x.TeamID == c.TeamID && x.ClusterID == c.ClusterID {
			n++
		}
	}
	r.mu.Unlock()
	if r.step == nil {
		return nil
	}
	return r.step(ctx, c, n)
}

func (r *fakeRunner) FinishAccess(ctx context.Context, teamID, clusterID string, lastAttempt bool) error {
	return r.record(ctx, call{jobs.KindAccess, teamID, clusterID, lastAttempt})
}

func (r *fakeRunner) FinishRemoval(ctx context.Context, teamID, clusterID string, lastAttempt bool) error {
	return r.record(ctx, call{jobs.KindRemoval, teamID, clusterID, lastAttempt})
}

func (r *fakeRunner) Calls() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// mustPool gives a fresh database with every migration (River's too) and a
// pool on it, closed when the test ends.
func mustPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	_, dbURL := pgtest.MustOpenDB(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// fastOptions retries within milliseconds so no test waits for minutes.
func fastOptions() jobs.Options {
	return jobs.Options{
		Logger:       slog.New(slog.DiscardHandler),
		Backoff:      jobs.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond},
		PollInterval: 100 * time.Millisecond,
	}
}

// mustQueue builds a queue (not started); it is stopped when the test ends.
func mustQueue(t *testing.T, pool *pgxpool.Pool, run jobs.Runner, opts jobs.Options) *jobs.Queue {
	t.Helper()
	q, err := jobs.New(pool, run, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return q
}

func mustStart(t *testing.T, q *jobs.Queue) {
	t.Helper()
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// job is a river_job row as the tests look at it.
type job struct {
	Kind      string
	ClusterID string
	State     string
	Attempt   int
	Errors    int
}

func mustJobs(t *testing.T, pool *pgxpool.Pool) []job {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT kind, coalesce(args->>'cluster_id', ''), state::text, attempt,
		coalesce(array_length(errors, 1), 0) FROM river_job ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []job
	for rows.Next() {
		var j job
		if err := rows.Scan(&j.Kind, &j.ClusterID, &j.State, &j.Attempt, &j.Errors); err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls until done says so. The deadline only catches hangs.
func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	testclock.WaitFor(t, what, done)
}

// settled says whether every job has finished (completed, discarded or
// cancelled).
func settled(t *testing.T, pool *pgxpool.Pool) func() bool {
	return func() bool {
		for _, j := range mustJobs(t, pool) {
			if j.State != "completed" && j.State != "discarded" && j.State != "cancelled" {
				return false
			}
		}
		return true
	}
}

func TestEnqueueTwiceRunsOnce(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	run := &fakeRunner{}
	q := mustQueue(t, pool, run, fastOptions())

	// Repeated reconciles before any worker picks the job up.
	for _, enqueue := range []func() error{
		func() error { return q.EnqueueAccess(ctx, "team-a", "c1") },
		func() error { return q.EnqueueAccess(ctx, "team-a", "c1") },
		func() error { return q.EnqueueAccess(ctx, "team-a", "c2") },  // another cluster
		func() error { return q.EnqueueAccess(ctx, "team-b", "c1") },  // another team
		func() error { return q.EnqueueRemoval(ctx, "team-a", "c1") }, // another kind
		func() error { return q.EnqueueRemoval(ctx, "team-a", "c1") },
	} {
		if err := enqueue(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(mustJobs(t, pool)); n != 4 {
		t.Fatalf("%d jobs stored, want 4 (duplicates skipped): %+v", n, mustJobs(t, pool))
	}
	mustStart(t, q)
	waitFor(t, "the jobs to finish", settled(t, pool))

	got := run.Calls()
	slices.SortFunc(got, func(a, b call) int {
		return strings.Compare(a.Kind+a.TeamID+a.ClusterID, b.Kind+b.TeamID+b.ClusterID)
	})
	want := []call{
		{jobs.KindAccess, "team-a", "c1", false},
		{jobs.KindAccess, "team-a", "c2", false},
		{jobs.KindAccess, "team-b", "c1", false},
		{jobs.KindRemoval, "team-a", "c1", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

func TestEnqueueAfterFinishRunsAgain(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	run := &fakeRunner{}
	q := mustQueue(t, pool, run, fastOptions())
	mustStart(t, q)

	// A finished job does not block a reconcile.
	for range 2 {
		if err := q.EnqueueAccess(ctx, "team-a", "c1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the job to finish", settled(t, pool))
	}
	if n := len(run.Calls()); n != 2 {
		t.Errorf("%d runs, want 2: %+v", n, run.Calls())
	}
}

func TestFailingRunnerIsRetriedUntilItSucceeds(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	run := &fakeRunner{step: func(_ context.Context, _ call, n int) error {
		if n <= 2 {
			return fmt.Errorf("AWS is still propagating (run %d)", n)
		}
		return nil
	}}
	q := mustQueue(t, pool, run, fastOptions())
	mustStart(t, q)
	if err := q.EnqueueAccess(ctx, "team-a", "c1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to finish", settled(t, pool))

	want := slices.Repeat([]call{{jobs.KindAccess, "team-a", "c1", false}}, 3)
	if diff := cmp.Diff(want, run.Calls()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]job{{jobs.KindAccess, "c1", "completed", 3, 2}}, mustJobs(t, pool)); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
}

func TestLastAttemptIsFlagged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failLast  bool // the runner fails even when told it is the last attempt
		wantState string
	}{
		// The service's contract: on the last attempt it records the
		// permanent state and returns nil.
		{"RecordsAndReturnsNil", false, "completed"},
		{"FailsAnyway", true, "discarded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pool := mustPool(t)
			run := &fakeRunner{step: func(_ context.Context, c call, _ int) error {
				if c.LastAttempt && !tc.failLast {
					return nil
				}
				return errors.New("access denied, still")
			}}
			opts := fastOptions()
			opts.MaxAttempts = 3
			q := mustQueue(t, pool, run, opts)
			mustStart(t, q)
			if err := q.EnqueueRemoval(ctx, "team-a", "c1"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the job to finish", settled(t, pool))

			want := []call{
				{jobs.KindRemoval, "team-a", "c1", false},
				{jobs.KindRemoval, "team-a", "c1", false},
				{jobs.KindRemoval, "team-a", "c1", true},
			}
			if diff := cmp.Diff(want, run.Calls()); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			errs := 2
			if tc.failLast {
				errs = 3
			}
			if diff := cmp.Diff([]job{{jobs.KindRemoval, "c1", tc.wantState, 3, errs}}, mustJobs(t, pool)); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemovalRunsFinishRemoval(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	run := &fakeRunner{}
	q := mustQueue(t, pool, run, fastOptions())
	mustStart(t, q)
	if err := q.EnqueueRemoval(ctx, "team-a", "c9"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to finish", settled(t, pool))
	if diff := cmp.Diff([]call{{jobs.KindRemoval, "team-a", "c9", false}}, run.Calls()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

func TestJobTimeoutCancelsTheRun(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	firstErr := make(chan error, 1)
	run := &fakeRunner{step: func(ctx context.Context, _ call, n int) error {
		if n == 1 {
			<-ctx.Done() // hangs until the job timeout
			firstErr <- ctx.Err()
			return ctx.Err()
		}
		return nil
	}}
	opts := fastOptions()
	opts.JobTimeout = 200 * time.Millisecond
	q := mustQueue(t, pool, run, opts)
	mustStart(t, q)
	if err := q.EnqueueAccess(ctx, "team-a", "c1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to finish", settled(t, pool))
	if err := <-firstErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the hanging run ended with %v, want the job timeout", err)
	}
	if diff := cmp.Diff([]job{{jobs.KindAccess, "c1", "completed", 2, 1}}, mustJobs(t, pool)); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
}

// blockingRunner's access runs block until released or cancelled.
func blockingRunner(started chan<- struct{}, release <-chan struct{}, ended chan<- error) *fakeRunner {
	return &fakeRunner{step: func(ctx context.Context, _ call, n int) error {
		if n > 1 {
			return nil
		}
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		ended <- ctx.Err()
		return ctx.Err()
	}}
}

func TestStopWaitsForRunningJob(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	started, release, ended := make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
	q := mustQueue(t, pool, blockingRunner(started, release, ended), fastOptions())
	mustStart(t, q)
	if err := q.EnqueueAccess(ctx, "team-a", "c1"); err != nil {
		t.Fatal(err)
	}
	<-started

	stopped := make(chan error, 1)
	go func() {
		stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		stopped <- q.Stop(stopCtx)
	}()
	// Give a Stop that does not wait the chance to return early.
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a job was running", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := <-ended; err != nil {
		t.Errorf("the running job's context ended (%v): a graceful stop must let it finish", err)
	}
	if diff := cmp.Diff([]job{{jobs.KindAccess, "c1", "completed", 1, 0}}, mustJobs(t, pool)); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
}

func TestStopDeadlineCancelsRunningJob(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	q := mustQueue(t, pool, blockingRunner(started, nil, ended), fastOptions())
	mustStart(t, q)
	if err := q.EnqueueAccess(ctx, "team-a", "c1"); err != nil {
		t.Fatal(err)
	}
	<-started

	expired, cancel := context.WithCancel(ctx)
	cancel()
	if err := q.Stop(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop with a done context: %v, want context.Canceled", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the running job's context: %v, want cancelled", err)
	}
	if left := mustJobs(t, pool); len(left) != 1 || left[0].State != "available" {
		t.Fatalf("the interrupted job: %+v, want one available again", left)
	}

	// Another process (a new queue) finishes it.
	run := &fakeRunner{}
	next := mustQueue(t, pool, run, fastOptions())
	mustStart(t, next)
	waitFor(t, "the job to finish", settled(t, pool))
	if diff := cmp.Diff([]call{{jobs.KindAccess, "team-a", "c1", false}}, run.Calls()); diff != "" {
		t.Errorf("runs after the restart (-want +got):\n%s", diff)
	}
}

func TestBackoffDelay(t *testing.T) {
	defaults := jobs.Backoff{}
	for _, tc := range []struct {
		name     string
		b        jobs.Backoff
		failures int
		want     time.Duration
	}{
		{"DefaultFirst", defaults, 1, 2 * time.Second},
		{"DefaultSecond", defaults, 2, 4 * time.Second},
		{"DefaultSeventh", defaults, 7, 128 * time.Second},
		{"DefaultCapped", defaults, 8, 3 * time.Minute},
		{"DefaultManyFailures", defaults, 1000, 3 * time.Minute},
		{"Milliseconds", jobs.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}, 3, 4 * time.Millisecond},
		{"MillisecondsCapped", jobs.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}, 5, 10 * time.Millisecond},
		{"HugeCeilingNoOverflow", jobs.Backoff{Base: time.Nanosecond, Max: 1<<63 - 1}, 200, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Delay(tc.failures); got != tc.want {
				t.Errorf("Delay(%d) = %v, want %v", tc.failures, got, tc.want)
			}
		})
	}
}

func TestBackoffNextRetry(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	b := jobs.Backoff{Base: time.Second, Max: time.Minute, Now: func() time.Time { return now }}
	// Two recorded errors: this is the third failure.
	row := &rivertype.JobRow{Attempt: 3, Errors: make([]rivertype.AttemptError, 2)}
	if got, want := b.NextRetry(row), now.Add(4*time.Second); !got.Equal(want) {
		t.Errorf("NextRetry = %v, want %v", got, want)
	}
}

// TestSweepResumesOrphanedClusters: EKS clusters left pending or deleting
// with no job — the process died between writing the state and enqueueing
// the job — get their access or removal job when the queue starts. A
// cluster that has a job, an active one, and one changed just now (its
// request may still be running) are left alone.
func TestSweepResumesOrphanedClusters(t *testing.T) {
	db, dbURL := pgtest.MustOpenDB(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ctx := context.Background()
	long := time.Now().Add(-time.Hour)
	if _, err := pool.Exec(ctx, `INSERT INTO teams (id, external_id, created_at) VALUES ('t1', 'ext-t1', $1)`, long); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO aws_accounts (team_id, id, aws_account_id, partition, role_arn, stack_arn, access_level, state,
			template_version, created_at, updated_at)
		VALUES ('t1', 'a1', '210000000001', 'aws', 'arn:aws:iam::210000000001:role/k', 'arn:stack', 'limited', 'active', '5', $1, $1)`,
		long); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, state string
		at        time.Time
	}{
		{"orphan-pending", "pending", long}, {"orphan-deleting", "deleting", long}, {"has-job", "pending", long},
		{"active", "active", long}, {"just-now", "pending", time.Now()},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO clusters (team_id, id, name, kind, access_level, account_id, region, eks_name,
			access_state, created_at, updated_at) VALUES ('t1', $1, $1, 'eks', 'limited', 'a1', 'ap-northeast-2', $1, $2, $3, $3)`,
			c.id, c.state, c.at); err != nil {
			t.Fatal(err)
		}
	}
	// has-job's access job exists, here as one that already finished.
	if _, err := pool.Exec(ctx, `INSERT INTO river_job (kind, args, queue, state, max_attempts, finalized_at)
		VALUES ($1, '{"team_id":"t1","cluster_id":"has-job"}', $2, 'completed', 12, now())`, jobs.KindAccess, jobs.QueueName); err != nil {
		t.Fatal(err)
	}

	run := &fakeRunner{}
	opts := fastOptions()
	opts.Sweep = db
	mustStart(t, mustQueue(t, pool, run, opts))
	waitFor(t, "the orphans' jobs", func() bool { return len(run.Calls()) >= 2 })
	waitFor(t, "every job finished", settled(t, pool))
	got := run.Calls()
	slices.SortFunc(got, func(a, b call) int { return strings.Compare(a.ClusterID, b.ClusterID) })
	want := []call{{jobs.KindRemoval, "t1", "orphan-deleting", false}, {jobs.KindAccess, "t1", "orphan-pending", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobs run (-want +got):\n%s", diff)
	}
}
