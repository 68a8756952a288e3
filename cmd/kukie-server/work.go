package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kukie/gitops-server/eksaccess"
	"github.com/kukie/gitops-server/internal/jobs"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// work is what runs in background jobs: EKS registration and removal,
// level switches and SNS confirmations, and the webhook that starts them.
type work struct {
	registrations *service.Registrations
	switches      *service.Switches
	webhook       *service.Webhook // nil without AWS
	queue         *jobs.Queue
}

// newWork builds the use cases and the River queue that runs their jobs,
// and starts the queue. Registration and removal finish in jobs (retries
// with backoff while AWS propagates a change); level switches run one
// reconcile job per account.
//
// The one cycle of the wiring is here, and only here: the queue runs the
// registrations' and switches' jobs, and they enqueue through the queue.
// The use cases are built whole but for their queue, the queue is built on
// them, and bindQueue closes the cycle before anything runs.
func newWork(ctx context.Context, cfg config, db *store.DB, a awsParts, obs observers, log *slog.Logger) (work, error) {
	w := work{
		registrations: &service.Registrations{Clusters: db, EKS: db, Accounts: db, Teams: db, AWS: a.access,
			Checker: a.checker, Now: time.Now, Retryable: a.retryable},
		switches: &service.Switches{Store: db, Accounts: db, Clusters: db, EKS: db, Teams: db, AWS: a.access,
			Levels: a.levels, Metrics: obs.switches, Logger: log, Now: time.Now, Retryable: eksaccess.RetryableWithin,
			RetryBudget: cfg.SwitchRetryBudget},
	}
	opts := jobs.Options{Logger: log.With("component", "river"), JobTimeout: cfg.JobTimeout, RescueAfter: cfg.JobRescueAfter,
		Sweep: db}
	if a.on() {
		opts.Switch = &jobs.SwitchOptions{Run: w.switches, Confirm: a.sns, Store: db, ReconcileInterval: cfg.ReconcileInterval}
	}
	queue, err := jobs.New(db.Pool(), w.registrations, opts)
	if err != nil {
		return work{}, err
	}
	w.queue = queue
	bindQueue(queue, w.registrations, w.switches, a.on())
	if a.on() {
		w.webhook = &service.Webhook{Store: db, Accounts: db, Verifier: a.sns, Trigger: queue, Metrics: obs.switches,
			Switches: obs.switches, Logger: log, Now: time.Now}
	}
	if err := queue.Start(ctx); err != nil {
		return work{}, fmt.Errorf("start the job queue: %w", err)
	}
	return w, nil
}

// bindQueue closes the wiring's one cycle: the use cases enqueue through
// the queue that runs their jobs. Level switches exist only with AWS.
func bindQueue(queue *jobs.Queue, r *service.Registrations, s *service.Switches, withAWS bool) {
	r.Jobs = queue
	if withAWS {
		r.Switches, s.Trigger = queue, queue
	}
}

// stop stops the queue with a fresh timeout (the serve context is already
// cancelled by then); running jobs are cancelled and run again later.
func (w work) stop(timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := w.queue.Stop(ctx); err != nil {
		log.Warn("job queue did not stop cleanly; running jobs were cancelled and will run again", "err", err)
	}
}
