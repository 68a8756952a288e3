package service

import (
	"context"
	"log/slog"
	"time"
)

// SwitchStep is one AWS call of a level switch, in call order.
type SwitchStep struct {
	// Action is "list", "associate" or "disassociate".
	Action string
	// Policy is the access policy's ARN ("" for a listing).
	Policy string
	// Scope is the namespaces of a namespace-scoped association; nil for a
	// cluster scope and for the other actions.
	Scope []string
	// Outcome is "started" (reported before the call), then "ok", "gone"
	// (a disassociation of a policy that was not there: success) or
	// "failed".
	Outcome AccessChangeOutcome
	// Err is the failure of a failed step: a *Error keeping the AWS error.
	Err error
}

// SwitchResult is where a cluster's access stands after a switch.
type SwitchResult struct {
	// Level is the applied level: full only once ClusterAdmin is in place;
	// a downgrade counts as limited as soon as it is asked for.
	Level AccessLevel
	// State and Reason (a message safe to show) are what to record when the
	// call's error, if any, is not retried.
	State  AccessState
	Reason string
	Steps  []SwitchStep
}

// LevelApplier makes Kukie's access to an EKS cluster match a level, failing
// closed (implemented by eksaccess).
type LevelApplier interface {
	// ApplyLevel brings cluster c to target: full (ClusterAdmin first, then
	// Edit removed) or limited (Edit in namespaces, then ClusterAdmin
	// removed — kept only while an Edit failure will be retried, see
	// ApplyOptions).
	ApplyLevel(ctx context.Context, a Account, externalID string, c Cluster, target AccessLevel,
		namespaces []string, o ApplyOptions) (SwitchResult, error)
}

// ApplyOptions are what a level switch's caller adds to ApplyLevel.
type ApplyOptions struct {
	// Observe, when not nil, is told of each call before it is made
	// (Outcome started) and after.
	Observe func(SwitchStep)
	// KeepAdmin, when not nil, reports whether a failed Edit association
	// will be tried again (AccessDenied while the stack's IAM change
	// propagates, within KUKIE_SWITCH_RETRY_BUDGET): a downgrade then keeps
	// ClusterAdmin for now, so the cluster is never left without a policy;
	// on the attempt that gives up, ClusterAdmin goes (fail closed).
	KeepAdmin func(error) bool
}

// AccessChangeOutcome says how one step of a level switch ended.
type AccessChangeOutcome string

// Outcomes of a switch step: started (recorded before the AWS call); ok;
// gone (what was to be removed was already gone: success); failed.
const (
	AccessChangeStarted AccessChangeOutcome = "started"
	AccessChangeOK      AccessChangeOutcome = "ok"
	AccessChangeGone    AccessChangeOutcome = "gone"
	AccessChangeFailed  AccessChangeOutcome = "failed"
)

// AccessChange is one recorded step of switching an account's clusters
// between full and limited, written before and after its AWS call so the
// account's history shows each cluster's outcome.
type AccessChange struct {
	ID        int64  `json:"id"`
	TeamID    string `json:"-"`
	AccountID string `json:"-"`
	// ClusterID is "" for a step of the account as a whole.
	ClusterID string `json:"cluster_id"`
	// Generation is the account's desired generation the step works toward.
	Generation int64               `json:"generation"`
	FromLevel  AccessLevel         `json:"from_level"`
	ToLevel    AccessLevel         `json:"to_level"`
	Step       string              `json:"step"`
	Outcome    AccessChangeOutcome `json:"outcome"`
	Error      string              `json:"error"`
	Attempt    int                 `json:"attempt"`
	CreatedAt  time.Time           `json:"created_at"`
}

// StackNotification is a verified SNS message bound to an account: what
// identifies the stack event, never the body nor any URL or token in it.
type StackNotification struct {
	// MessageID is SNS's MessageId: retries of one message reuse it.
	MessageID string
	TeamID    string
	AccountID string
	TopicARN  string
	// Type is SNS's Type: Notification, SubscriptionConfirmation or
	// UnsubscribeConfirmation.
	Type string
	// StackID and ResourceStatus come from the CloudFormation message (""
	// when it has none).
	StackID        string
	ResourceStatus string
	// EventTime is when the event happened (the message's Timestamp).
	EventTime time.Time
}

// PendingSubscriptionTTL is how long a SubscriptionConfirmation from a
// topic no account lists yet is kept for the account that will (SNS's
// confirmation tokens last 3 days).
const PendingSubscriptionTTL = 3 * 24 * time.Hour

// DefaultPendingSubscriptionsMax bounds the pending subscriptions of all
// topics together (Webhook.PendingMax): each is a few kilobytes and
// waits for an onboarding that takes minutes, so 10,000 are far more than
// genuine customers ever leave, and a flood of forged ones from many
// addresses must post that many to push a genuine one out.
const DefaultPendingSubscriptionsMax = 10000

// PendingSubscription is a SubscriptionConfirmation from a topic not yet
// allowed, confirmed once an account registers the topic. SubscribeURL and
// Token confirm the subscription: never log them.
type PendingSubscription struct {
	TopicARN     string
	MessageID    string
	SubscribeURL string
	Token        string
	ReceivedAt   time.Time
	// ExpiresAt is ReceivedAt plus PendingSubscriptionTTL, set by the store.
	ExpiresAt time.Time
	// Envelope is the whole signed message of a deferred confirmation, not
	// verified yet: its confirmation verifies it first (as of ReceivedAt).
	// nil for one verified on receipt (an allowed topic's, or a pending one
	// an earlier version kept).
	Envelope *SNSMessage
}

// AccountSwitchState is an account's switch bookkeeping, which Account
// does not carry: the generations, the level an admin chose and the newest
// stack event.
type AccountSwitchState struct {
	DesiredGeneration int64
	AppliedGeneration int64
	// ChosenLevel is "" until an admin chooses a level explicitly; a v5
	// FULL stack widens access only when it is AccessFull.
	ChosenLevel AccessLevel
	ChosenAt    time.Time // zero when ChosenLevel is ""
	// LastStackEventAt is the newest notified stack event (zero if none).
	LastStackEventAt time.Time
}

// SwitchStore persists what level switches need. Methods are scoped to a
// team; another team's account is ErrAccountNotFound.
type SwitchStore interface {
	// RecordNotification stores n and bumps the account's desired
	// generation in one transaction. A MessageID already stored is a
	// duplicate: nothing changes and the current desired generation is
	// returned.
	RecordNotification(ctx context.Context, n StackNotification, now time.Time) (desiredGeneration int64, duplicate bool, err error)
	// AllowedTopic finds the account that lists topicARN among its
	// NotificationARNs and is the AWS account (and partition) the topic
	// belongs to.
	AllowedTopic(ctx context.Context, topicARN string) (teamID, accountID string, found bool, err error)
	// MarkApplied records that generation was applied; the applied
	// generation never moves backwards.
	MarkApplied(ctx context.Context, teamID, accountID string, generation int64, now time.Time) error
	// SetChosenLevel records the level an admin chose and bumps the desired
	// generation.
	SetChosenLevel(ctx context.Context, teamID, accountID string, level AccessLevel, now time.Time) (Account, error)
	// SetAccountFacts records what the stack says: level, namespaces,
	// template version, topics, and active or confirmation_required. A
	// deleting or disconnected account keeps its state.
	SetAccountFacts(ctx context.Context, teamID, accountID string, facts StackFacts, now time.Time) (Account, error)
	// RecordAccessChange appends a step to the account's history (ID is
	// assigned; CreatedAt must be set).
	RecordAccessChange(ctx context.Context, c AccessChange) (AccessChange, error)
	// ListAccessChanges returns up to limit steps, newest first, older than
	// the step with id *before when before is not nil.
	ListAccessChanges(ctx context.Context, teamID, accountID string, limit int, before *int64) ([]AccessChange, error)
	// SavePendingSubscription keeps p until it expires, as the topic's
	// only pending subscription (replacing an older one; saving the same
	// MessageID again does nothing), and then keeps only the newest max
	// of all topics.
	SavePendingSubscription(ctx context.Context, p PendingSubscription, max int) error
	// TakePendingSubscriptions returns and deletes the topic's unexpired
	// pending subscriptions (each is taken once) and deletes expired ones.
	TakePendingSubscriptions(ctx context.Context, topicARN string, now time.Time) ([]PendingSubscription, error)
	// AccountGenerations returns the account's desired and applied
	// generations.
	AccountGenerations(ctx context.Context, teamID, accountID string) (desired, applied int64, err error)
	// SwitchState returns the account's switch bookkeeping.
	SwitchState(ctx context.Context, teamID, accountID string) (AccountSwitchState, error)
	// AccountsToReconcile lists accounts of every team that are not being
	// deleted: all of them, or (lagging) only those whose applied
	// generation is behind the desired one.
	AccountsToReconcile(ctx context.Context, lagging bool) ([]AccountKey, error)
}

// SwitchTrigger starts reconcile jobs atomically with what asks for them:
// each method commits its change and inserts the account's reconcile job
// (one per account while it is not finished) in one transaction, so a
// change is never recorded without the job that applies it. Implemented by
// the job queue over the store.
type SwitchTrigger interface {
	// Notify records a verified stack notification and bumps the account's
	// desired generation (SwitchStore.RecordNotification) with the job.
	Notify(ctx context.Context, n StackNotification, now time.Time) (desired int64, duplicate bool, err error)
	// Choose records the level an admin chose (SwitchStore.SetChosenLevel)
	// with the job.
	Choose(ctx context.Context, teamID, accountID string, level AccessLevel, now time.Time) (Account, error)
	// Request bumps the account's desired generation with the job: a
	// reconcile with nothing new notified (the periodic check).
	Request(ctx context.Context, teamID, accountID string) error
	// Enqueue inserts the account's job without a new generation (catching
	// up an account whose applied generation lags).
	Enqueue(ctx context.Context, teamID, accountID string) error
	// ConfirmPending takes the topic's pending subscriptions and inserts a
	// confirmation job for each, atomically; it returns how many.
	ConfirmPending(ctx context.Context, topicARN string, now time.Time) (int, error)
	// Confirm inserts the confirmation job of a verified
	// SubscriptionConfirmation of an allowed topic.
	Confirm(ctx context.Context, p PendingSubscription) error
}

// AccountKey names an account across teams (for the periodic jobs).
type AccountKey struct {
	TeamID, AccountID string
}

// SwitchMetrics counts switch outcomes; nil counts nothing.
type SwitchMetrics interface {
	// Switch counts one cluster's switch by outcome: ok, retry, degraded,
	// upgrade_failed, namespace_not_allowed, revocation_failed.
	Switch(outcome string)
	// AccountDisconnected counts an account that stopped receiving stack
	// notifications (unsubscribed, or its stack deleted), by why.
	AccountDisconnected(why string)
}

// Switches keeps each account's EKS clusters at the level its stack (and
// its admins) allow: the reconcile job's work, the admin's level choice
// and the account's switch history.
type Switches struct {
	Store    SwitchStore
	Accounts AccountStore
	Clusters ClusterStore
	EKS      EKSClusterStore
	Teams    TeamStore
	// AWS reads the stack; Levels applies a level to a cluster. Both nil
	// when AWS is not configured.
	AWS     AWSAccess
	Levels  LevelApplier
	Trigger SwitchTrigger
	Metrics SwitchMetrics
	Logger  *slog.Logger
	Now     func() time.Time
	// Retryable judges a failed AWS call sinceEvent after the account's
	// newest stack event: throttling and 5xx always, AccessDeniedException
	// within RetryBudget (the stack's new IAM policy propagating).
	Retryable func(err error, sinceEvent, budget time.Duration) bool
	// RetryBudget is KUKIE_SWITCH_RETRY_BUDGET (default 5 min).
	RetryBudget time.Duration
}

// DefaultSwitchRetryBudget is how long after a stack event an
// AccessDeniedException is still taken for IAM propagation.
const DefaultSwitchRetryBudget = 5 * time.Minute

// maxReconcileRounds bounds how often one job run starts over because
// another notification arrived meanwhile; the next run continues.
const maxReconcileRounds = 5

func (s *Switches) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

func (s *Switches) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
