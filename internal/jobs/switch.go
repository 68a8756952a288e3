package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/service"
)

// Kinds of the level-switch jobs, as stored in river_job.
const (
	// KindSwitch reconciles one account's clusters to its stack's level.
	KindSwitch = "kukie_account_switch"
	// KindConfirm confirms one SNS subscription.
	KindConfirm = "kukie_sns_confirm"
	// KindCatchup enqueues the switch job of accounts whose applied
	// generation lags (a notification that landed while the account's job
	// was finishing).
	KindCatchup = "kukie_switch_catchup"
	// KindReconcileAll asks every account for a reconcile (the periodic
	// check that repairs a lost notification).
	KindReconcileAll = "kukie_reconcile_all"
)

// Defaults of the switch options.
const (
	DefaultReconcileInterval = time.Hour
	DefaultCatchupInterval   = time.Minute
)

// SwitchRunner is the switch jobs' work: service.Switches.
type SwitchRunner interface {
	Reconcile(ctx context.Context, teamID, accountID string, attempt int, lastAttempt bool) error
	ReconcileAll(ctx context.Context, accounts []service.AccountKey) (int, error)
	// Resubscribed is told of each confirmed subscription.
	Resubscribed(ctx context.Context, topicARN string) error
}

// Confirmer confirms an SNS subscription, verifying first one kept
// unverified: sns.Verifier.
type Confirmer interface {
	VerifyReceived(ctx context.Context, m sns.Message, receivedAt time.Time) error
	Confirm(ctx context.Context, m sns.Message) error
}

// TxStore is the store's part that the triggers commit together with the
// job they insert.
type TxStore interface {
	RecordNotificationTx(ctx context.Context, n service.StackNotification, now time.Time,
		inTx func(tx pgx.Tx) error) (int64, bool, error)
	SetChosenLevelTx(ctx context.Context, teamID, accountID string, level service.AccessLevel, now time.Time,
		inTx func(tx pgx.Tx) error) (service.Account, error)
	RequestReconcileTx(ctx context.Context, teamID, accountID string, inTx func(tx pgx.Tx) error) error
	TakePendingSubscriptionsTx(ctx context.Context, topicARN string, now time.Time,
		inTx func(tx pgx.Tx, taken []service.PendingSubscription) error) ([]service.PendingSubscription, error)
	AccountsToReconcile(ctx context.Context, lagging bool) ([]service.AccountKey, error)
	DeleteExpiredPendingSubscriptions(ctx context.Context, now time.Time) (int64, error)
}

var (
	_ SwitchRunner          = (*service.Switches)(nil)
	_ Confirmer             = (*sns.Verifier)(nil)
	_ service.SwitchTrigger = (*Queue)(nil)
)

// SwitchOptions turn on the level-switch jobs (all fields required).
type SwitchOptions struct {
	Run     SwitchRunner
	Confirm Confirmer
	Store   TxStore
	// ReconcileInterval is how often every account is reconciled
	// (KUKIE_RECONCILE_INTERVAL); CatchupInterval how often lagging
	// accounts get their job. Zero takes the defaults.
	ReconcileInterval time.Duration
	CatchupInterval   time.Duration
}

// addSwitchWorkers registers the switch jobs' workers and periodic jobs;
// the workers use q's client, set once New has built it.
func addSwitchWorkers(q *Queue, workers *river.Workers, cfg *river.Config, o *SwitchOptions, logger *slog.Logger) error {
	if o.Run == nil || o.Confirm == nil || o.Store == nil {
		return fmt.Errorf("job queue: switch jobs need Run, Confirm and Store")
	}
	river.AddWorker(workers, &switchWorker{run: o.Run})
	river.AddWorker(workers, &confirmWorker{confirm: o.Confirm, run: o.Run, logger: logger})
	river.AddWorker(workers, &catchupWorker{store: o.Store, queue: q})
	river.AddWorker(workers, &reconcileAllWorker{store: o.Store, run: o.Run})
	reconcile := o.ReconcileInterval
	if reconcile <= 0 {
		reconcile = DefaultReconcileInterval
	}
	catchup := o.CatchupInterval
	if catchup <= 0 {
		catchup = DefaultCatchupInterval
	}
	cfg.PeriodicJobs = append(cfg.PeriodicJobs,
		river.NewPeriodicJob(river.PeriodicInterval(catchup),
			func() (river.JobArgs, *river.InsertOpts) { return catchupArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindCatchup}),
		river.NewPeriodicJob(river.PeriodicInterval(reconcile),
			func() (river.JobArgs, *river.InsertOpts) { return reconcileAllArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindReconcileAll}))
	return nil
}

type switchArgs struct {
	TeamID    string `json:"team_id"`
	AccountID string `json:"account_id"`
}

func (switchArgs) Kind() string                 { return KindSwitch }
func (switchArgs) InsertOpts() river.InsertOpts { return insertOpts() }

// confirmArgs carry what confirms a subscription: the SubscribeURL and
// Token are never logged. Envelope is the whole message of a deferred
// subscription, verified (as of ReceivedAt) before anything is confirmed;
// nil for one verified on receipt.
type confirmArgs struct {
	MessageID    string       `json:"message_id"`
	TopicARN     string       `json:"topic_arn"`
	SubscribeURL string       `json:"subscribe_url"`
	Token        string       `json:"token"`
	Envelope     *sns.Message `json:"envelope,omitempty"`
	ReceivedAt   time.Time    `json:"received_at,omitzero"`
}

func (confirmArgs) Kind() string                 { return KindConfirm }
func (confirmArgs) InsertOpts() river.InsertOpts { return insertOpts() }

type catchupArgs struct{}

func (catchupArgs) Kind() string                 { return KindCatchup }
func (catchupArgs) InsertOpts() river.InsertOpts { return insertOpts() }

type reconcileAllArgs struct{}

func (reconcileAllArgs) Kind() string                 { return KindReconcileAll }
func (reconcileAllArgs) InsertOpts() river.InsertOpts { return insertOpts() }

type switchWorker struct {
	river.WorkerDefaults[switchArgs]
	run SwitchRunner
}

func (w *switchWorker) Work(ctx context.Context, job *river.Job[switchArgs]) error {
	return w.run.Reconcile(ctx, job.Args.TeamID, job.Args.AccountID, job.Attempt, lastAttempt(job.JobRow))
}

type confirmWorker struct {
	river.WorkerDefaults[confirmArgs]
	confirm Confirmer
	run     SwitchRunner
	logger  *slog.Logger
}

func (w *confirmWorker) Work(ctx context.Context, job *river.Job[confirmArgs]) error {
	m := sns.Message{Type: sns.TypeSubscriptionConfirmation, MessageID: job.Args.MessageID,
		TopicARN: job.Args.TopicARN, SubscribeURL: job.Args.SubscribeURL, Token: job.Args.Token}
	if e := job.Args.Envelope; e != nil {
		// Kept unverified while no account listed the topic: only an
		// authentic one is confirmed, and only for its own topic and URL.
		err := w.confirm.VerifyReceived(ctx, *e, job.Args.ReceivedAt)
		if err == nil && (e.Type != m.Type || e.MessageID != m.MessageID || e.TopicARN != m.TopicARN ||
			e.SubscribeURL != m.SubscribeURL || e.Token != m.Token) {
			err = errors.New("the deferred subscription's envelope is not its own")
		}
		if err != nil && !errors.Is(err, sns.ErrTransient) {
			w.logger.Warn("deferred SNS subscription not authentic: never confirmed", "topic", job.Args.TopicARN,
				"message_id", job.Args.MessageID, "reason", sns.ReasonOf(err))
			return river.JobCancel(err)
		}
		if err != nil {
			return err
		}
	}
	err := w.confirm.Confirm(ctx, m)
	switch {
	case err == nil:
		w.logger.Info("SNS subscription confirmed", "topic", job.Args.TopicARN, "message_id", job.Args.MessageID)
		// Confirmed for good: a failure here is the account's, not the
		// confirmation's (the next stack event or reconcile settles it).
		if rerr := w.run.Resubscribed(ctx, job.Args.TopicARN); rerr != nil {
			w.logger.Warn("account not marked resubscribed", "topic", job.Args.TopicARN, "error", rerr)
		}
		return nil
	case sns.ReasonOf(err) == sns.ReasonSubscribeURL || sns.ReasonOf(err) == sns.ReasonConfirmRefused:
		// Never fetched, or refused by SNS: trying again cannot help.
		w.logger.Warn("SNS subscription not confirmed", "topic", job.Args.TopicARN, "message_id", job.Args.MessageID,
			"reason", sns.ReasonOf(err))
		return river.JobCancel(err)
	}
	return err
}

type catchupWorker struct {
	river.WorkerDefaults[catchupArgs]
	store TxStore
	queue *Queue
}

func (w *catchupWorker) Work(ctx context.Context, _ *river.Job[catchupArgs]) error {
	// Pending subscriptions of topics no account listed in time go.
	if _, err := w.store.DeleteExpiredPendingSubscriptions(ctx, time.Now()); err != nil {
		return err
	}
	keys, err := w.store.AccountsToReconcile(ctx, true)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := w.queue.Enqueue(ctx, k.TeamID, k.AccountID); err != nil {
			return err
		}
	}
	return nil
}

type reconcileAllWorker struct {
	river.WorkerDefaults[reconcileAllArgs]
	store TxStore
	run   SwitchRunner
}

func (w *reconcileAllWorker) Work(ctx context.Context, _ *river.Job[reconcileAllArgs]) error {
	keys, err := w.store.AccountsToReconcile(ctx, false)
	if err != nil {
		return err
	}
	_, err = w.run.ReconcileAll(ctx, keys)
	return err
}

func (q *Queue) switchStore() (TxStore, error) {
	if q.switches == nil {
		return nil, service.ErrAWSUnavailable()
	}
	return q.switches.Store, nil
}

func (q *Queue) insertSwitchTx(ctx context.Context, tx pgx.Tx, teamID, accountID string) error {
	if _, err := q.client.InsertTx(ctx, tx, switchArgs{TeamID: teamID, AccountID: accountID}, nil); err != nil {
		return fmt.Errorf("enqueue %s job: %w", KindSwitch, err)
	}
	return nil
}

// Notify implements service.SwitchTrigger.
func (q *Queue) Notify(ctx context.Context, n service.StackNotification, now time.Time) (int64, bool, error) {
	st, err := q.switchStore()
	if err != nil {
		return 0, false, err
	}
	return st.RecordNotificationTx(ctx, n, now, func(tx pgx.Tx) error {
		return q.insertSwitchTx(ctx, tx, n.TeamID, n.AccountID)
	})
}

// Choose implements service.SwitchTrigger.
func (q *Queue) Choose(ctx context.Context, teamID, accountID string, level service.AccessLevel, now time.Time) (service.Account, error) {
	st, err := q.switchStore()
	if err != nil {
		return service.Account{}, err
	}
	return st.SetChosenLevelTx(ctx, teamID, accountID, level, now, func(tx pgx.Tx) error {
		return q.insertSwitchTx(ctx, tx, teamID, accountID)
	})
}

// Request implements service.SwitchTrigger.
func (q *Queue) Request(ctx context.Context, teamID, accountID string) error {
	st, err := q.switchStore()
	if err != nil {
		return err
	}
	return st.RequestReconcileTx(ctx, teamID, accountID, func(tx pgx.Tx) error {
		return q.insertSwitchTx(ctx, tx, teamID, accountID)
	})
}

// Enqueue implements service.SwitchTrigger.
func (q *Queue) Enqueue(ctx context.Context, teamID, accountID string) error {
	if q.switches == nil {
		return service.ErrAWSUnavailable()
	}
	return q.insert(ctx, switchArgs{TeamID: teamID, AccountID: accountID})
}

// ConfirmPending implements service.SwitchTrigger.
func (q *Queue) ConfirmPending(ctx context.Context, topicARN string, now time.Time) (int, error) {
	st, err := q.switchStore()
	if err != nil {
		return 0, err
	}
	taken, err := st.TakePendingSubscriptionsTx(ctx, topicARN, now, func(tx pgx.Tx, taken []service.PendingSubscription) error {
		for _, p := range taken {
			if _, err := q.client.InsertTx(ctx, tx, confirmArgsOf(p), nil); err != nil {
				return fmt.Errorf("enqueue %s job: %w", KindConfirm, err)
			}
		}
		return nil
	})
	return len(taken), err
}

// Confirm implements service.SwitchTrigger.
func (q *Queue) Confirm(ctx context.Context, p service.PendingSubscription) error {
	if q.switches == nil {
		return service.ErrAWSUnavailable()
	}
	if _, err := q.client.Insert(ctx, confirmArgsOf(p), nil); err != nil {
		return fmt.Errorf("enqueue %s job: %w", KindConfirm, err)
	}
	return nil
}

func confirmArgsOf(p service.PendingSubscription) confirmArgs {
	a := confirmArgs{MessageID: p.MessageID, TopicARN: p.TopicARN, SubscribeURL: p.SubscribeURL, Token: p.Token}
	if p.Envelope != nil {
		a.Envelope, a.ReceivedAt = p.Envelope, p.ReceivedAt
	}
	return a
}
