// Package jobs runs the access changes that finish in the background —
// granting access to a registered EKS cluster while AWS propagates it, and
// removing it — as River jobs in PostgreSQL, retried with capped
// exponential backoff.
package jobs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/kukie/gitops-server/service"
)

// Job kinds and the queue they share, as stored in river_job.
const (
	KindAccess  = "kukie_cluster_access"
	KindRemoval = "kukie_cluster_removal"
	// KindSweep (periodic) enqueues the jobs of orphaned clusters.
	KindSweep = "kukie_cluster_sweep"
	QueueName = "cluster_access"
)

// Defaults of Options.
const (
	DefaultMaxAttempts  = 12
	DefaultJobTimeout   = time.Minute // KUKIE_JOB_TIMEOUT
	DefaultWorkers      = 10
	DefaultPollInterval = time.Second
	// DefaultRescueAfter is how long a job may stay running before it is
	// taken for dead (its process crashed) and retried
	// (KUKIE_JOB_RESCUE_AFTER).
	DefaultRescueAfter = 2 * time.Minute
	// DefaultSweepInterval is how often orphaned clusters are looked for
	// (and once when the queue starts).
	DefaultSweepInterval = time.Minute
)

// hardStopWait bounds how long Stop waits for cancelled jobs to return once
// its own context is done.
const hardStopWait = 5 * time.Second

// Runner is the work the jobs do: service.Registrations' steps. An error
// means "try again"; on the last attempt the step records the permanent
// state itself and returns nil.
type Runner interface {
	FinishAccess(ctx context.Context, teamID, clusterID string, lastAttempt bool) error
	FinishRemoval(ctx context.Context, teamID, clusterID string, lastAttempt bool) error
}

var (
	_ Runner             = (*service.Registrations)(nil)
	_ service.AccessJobs = (*Queue)(nil)
)

// Options tune the queue; zero values take the defaults.
type Options struct {
	// Logger receives River's own log lines (default slog.Default()).
	Logger *slog.Logger
	// Workers is how many jobs run at once in this process.
	Workers int
	// MaxAttempts is how many times a job runs before it is given up; the
	// last run is told so (lastAttempt).
	MaxAttempts int
	// JobTimeout bounds one run of a job.
	JobTimeout time.Duration
	// Backoff spaces the retries.
	Backoff Backoff
	// PollInterval is how often idle workers look for due jobs (retries
	// and jobs inserted by other processes are also announced by NOTIFY).
	PollInterval time.Duration
	// RescueAfter is how long a job may stay running before it is retried
	// as abandoned; it must exceed JobTimeout.
	RescueAfter time.Duration
	// Sweep, when set, finds orphaned clusters (pending or deleting for
	// longer than RescueAfter with no job: the process died between writing
	// the state and enqueueing the job) every SweepInterval and enqueues
	// their access or removal job.
	Sweep         SweepStore
	SweepInterval time.Duration
	// Switch, when set, adds the level-switch jobs (the account reconcile,
	// SNS subscription confirmation, catch-up and periodic reconcile) and
	// makes the queue a service.SwitchTrigger.
	Switch *SwitchOptions
}

// Queue enqueues and runs the cluster access jobs. It implements
// service.AccessJobs.
type Queue struct {
	client   *river.Client[pgx.Tx]
	switches *SwitchOptions
}

// New builds the queue on pool (River's tables come with
// migrations.Up). It runs nothing until Start.
func New(pool *pgxpool.Pool, run Runner, opts Options) (*Queue, error) {
	jobTimeout := cmp.Or(opts.JobTimeout, DefaultJobTimeout)
	rescueAfter := cmp.Or(opts.RescueAfter, max(DefaultRescueAfter, 2*jobTimeout))
	if rescueAfter <= jobTimeout {
		return nil, fmt.Errorf("job queue: the stuck-job rescue (%v) must come after the job timeout (%v)", rescueAfter, jobTimeout)
	}
	logger := cmp.Or(opts.Logger, slog.Default())
	q := &Queue{switches: opts.Switch}
	workers := river.NewWorkers()
	river.AddWorker(workers, &accessWorker{run: run})
	river.AddWorker(workers, &removalWorker{run: run})
	cfg := &river.Config{
		Logger:               logger,
		Queues:               map[string]river.QueueConfig{QueueName: {MaxWorkers: cmp.Or(opts.Workers, DefaultWorkers)}},
		Workers:              workers,
		MaxAttempts:          cmp.Or(opts.MaxAttempts, DefaultMaxAttempts),
		JobTimeout:           jobTimeout,
		RetryPolicy:          opts.Backoff,
		FetchPollInterval:    cmp.Or(opts.PollInterval, DefaultPollInterval),
		RescueStuckJobsAfter: rescueAfter,
	}
	if opts.Sweep != nil {
		river.AddWorker(workers, &sweepWorker{store: opts.Sweep, queue: q, after: rescueAfter, logger: logger})
		cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(
			river.PeriodicInterval(cmp.Or(opts.SweepInterval, DefaultSweepInterval)),
			func() (river.JobArgs, *river.InsertOpts) { return sweepArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindSweep, RunOnStart: true}))
	}
	if opts.Switch != nil {
		if err := addSwitchWorkers(q, workers, cfg, opts.Switch, logger); err != nil {
			return nil, err
		}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	q.client = client
	return q, nil
}

// Start starts working jobs in the background. The queue runs until Stop:
// ctx is not watched afterwards, so cancelling it (a shutdown signal) does
// not cut running jobs short.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for the running ones to finish. When
// ctx ends first, the running jobs are cancelled (they run again later,
// here or in another process) and ctx's error is returned.
func (q *Queue) Stop(ctx context.Context) error {
	err := q.client.Stop(ctx)
	if err == nil {
		return nil
	}
	hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopWait)
	defer cancel()
	_ = q.client.StopAndCancel(hardCtx)
	return fmt.Errorf("stop job queue: %w", err)
}

// EnqueueAccess schedules FinishAccess for the cluster. While such a job
// is waiting, running or retrying, enqueueing it again does nothing.
func (q *Queue) EnqueueAccess(ctx context.Context, teamID, clusterID string) error {
	return q.insert(ctx, accessArgs{TeamID: teamID, ClusterID: clusterID})
}

// EnqueueRemoval schedules FinishRemoval for the cluster, once, like
// EnqueueAccess.
func (q *Queue) EnqueueRemoval(ctx context.Context, teamID, clusterID string) error {
	return q.insert(ctx, removalArgs{TeamID: teamID, ClusterID: clusterID})
}

func (q *Queue) insert(ctx context.Context, args river.JobArgs) error {
	if _, err := q.client.Insert(ctx, args, nil); err != nil {
		return fmt.Errorf("enqueue %s job: %w", args.Kind(), err)
	}
	return nil
}

// insertOpts puts both kinds on the one queue, one job per (kind, team,
// cluster) while it is pending, waiting, running or retrying; a finished
// job does not block a new one (a reconcile after a failure).
func insertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
			rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled},
	}}
}

type accessArgs struct {
	TeamID    string `json:"team_id"`
	ClusterID string `json:"cluster_id"`
}

func (accessArgs) Kind() string                 { return KindAccess }
func (accessArgs) InsertOpts() river.InsertOpts { return insertOpts() }

type removalArgs struct {
	TeamID    string `json:"team_id"`
	ClusterID string `json:"cluster_id"`
}

func (removalArgs) Kind() string                 { return KindRemoval }
func (removalArgs) InsertOpts() river.InsertOpts { return insertOpts() }

type accessWorker struct {
	river.WorkerDefaults[accessArgs]
	run Runner
}

func (w *accessWorker) Work(ctx context.Context, job *river.Job[accessArgs]) error {
	return w.run.FinishAccess(ctx, job.Args.TeamID, job.Args.ClusterID, lastAttempt(job.JobRow))
}

type removalWorker struct {
	river.WorkerDefaults[removalArgs]
	run Runner
}

func (w *removalWorker) Work(ctx context.Context, job *river.Job[removalArgs]) error {
	return w.run.FinishRemoval(ctx, job.Args.TeamID, job.Args.ClusterID, lastAttempt(job.JobRow))
}

// SweepStore finds orphaned clusters: pending or deleting since before,
// with no job of jobKinds in River.
type SweepStore interface {
	OrphanedClusters(ctx context.Context, before time.Time, jobKinds []string) ([]service.OrphanedCluster, error)
}

type sweepArgs struct{}

func (sweepArgs) Kind() string                 { return KindSweep }
func (sweepArgs) InsertOpts() river.InsertOpts { return insertOpts() }

// sweepWorker enqueues the job each orphaned cluster is missing. Only
// clusters untouched for longer than after are taken: a registration's
// own attempt, or a request between its state write and its enqueue, is
// over by then.
type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	store  SweepStore
	queue  *Queue
	after  time.Duration
	logger *slog.Logger
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[sweepArgs]) error {
	orphans, err := w.store.OrphanedClusters(ctx, time.Now().Add(-w.after), []string{KindAccess, KindRemoval})
	if err != nil {
		return err
	}
	for _, o := range orphans {
		enqueue := w.queue.EnqueueAccess
		if o.State == service.AccessDeleting {
			enqueue = w.queue.EnqueueRemoval
		}
		if err := enqueue(ctx, o.TeamID, o.ClusterID); err != nil {
			return err
		}
		w.logger.WarnContext(ctx, "resumed a cluster left without its job", "team", o.TeamID, "cluster", o.ClusterID, "state", o.State)
	}
	return nil
}

// lastAttempt says whether a failure of this run discards the job.
func lastAttempt(job *rivertype.JobRow) bool { return job.Attempt >= job.MaxAttempts }
