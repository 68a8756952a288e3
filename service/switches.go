package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

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

// ChooseLevel records the level an admin chose for the account and starts
// the reconcile job that applies it. The stack stays the ceiling: choosing
// full on a LIMITED stack applies limited; choosing limited on a FULL stack
// applies limited; choosing full is what widens a v4 account's FULL stack.
func (s *Switches) ChooseLevel(ctx context.Context, p Principal, accountID string, level AccessLevel) (Account, error) {
	if level != AccessFull && level != AccessLimited {
		var v ValidationErrors
		v.Add("access_level", "must be full or limited")
		return Account{}, v.Err()
	}
	a, err := s.account(ctx, p, accountID)
	if err != nil {
		return a, err
	}
	if a.State == AccountDeleting {
		return a, ReasonError(ECONFLICT, ReasonConflict, "The AWS account is being disconnected.")
	}
	if s.AWS == nil || s.Trigger == nil {
		return a, ErrAWSUnavailable()
	}
	return s.Trigger.Choose(ctx, p.TeamID, accountID, level, s.now())
}

// AccessChangePage is a page of an account's switch history, newest
// first; NextBefore, when not 0, asks for the next page.
type AccessChangePage struct {
	Items      []AccessChange `json:"items"`
	NextBefore int64          `json:"next_before,omitempty"`
}

// History returns the account's switch steps, newest first: up to limit
// (checkLimit: 1–200, default 50) older than the step with id before (0: the newest).
func (s *Switches) History(ctx context.Context, p Principal, accountID string, limit int, before int64) (AccessChangePage, error) {
	if _, err := s.account(ctx, p, accountID); err != nil {
		return AccessChangePage{}, err
	}
	if err := checkLimit(&limit); err != nil {
		return AccessChangePage{}, err
	}
	var cursor *int64
	if before > 0 {
		cursor = &before
	}
	items, err := s.Store.ListAccessChanges(ctx, p.TeamID, accountID, limit, cursor)
	if err != nil {
		return AccessChangePage{}, err
	}
	page := AccessChangePage{Items: items}
	if len(items) == limit {
		page.NextBefore = items[len(items)-1].ID
	}
	return page, nil
}

func (s *Switches) account(ctx context.Context, p Principal, id string) (Account, error) {
	if id == "" || len(id) > maxIDLength {
		return Account{}, ErrAccountNotFound()
	}
	return s.Accounts.GetAccount(ctx, p.TeamID, id)
}

// Reconcile is the reconcile job's work for one account: read the stack,
// decide the level, bring every registered cluster to it, record the
// applied generation — and start over while notifications arrived
// meanwhile. An error means "run the job again" (throttling, 5xx,
// propagation, a cut context); a permanent failure is recorded on the
// cluster (or the account's history) and is not an error. attempt is the
// job's attempt, recorded with each step; on the last attempt nothing is
// left to retry.
func (s *Switches) Reconcile(ctx context.Context, teamID, accountID string, attempt int, lastAttempt bool) error {
	for range maxReconcileRounds {
		st, err := s.Store.SwitchState(ctx, teamID, accountID)
		if ErrorCode(err) == ENOTFOUND {
			return nil // removed meanwhile
		} else if err != nil {
			return err
		}
		if err := s.round(ctx, teamID, accountID, st, attempt, lastAttempt); err != nil {
			return err
		}
		if err := s.Store.MarkApplied(ctx, teamID, accountID, st.DesiredGeneration, s.now()); err != nil {
			if ErrorCode(err) == ENOTFOUND {
				return nil
			}
			return err
		}
		desired, applied, err := s.Store.AccountGenerations(ctx, teamID, accountID)
		if err != nil || applied >= desired {
			if ErrorCode(err) == ENOTFOUND {
				return nil
			}
			return err
		}
	}
	return Errorf(EUNAVAILABLE, "The account's stack keeps changing; the reconcile continues in its next run.")
}

// round applies the stack as it is now to every cluster of the account.
func (s *Switches) round(ctx context.Context, teamID, accountID string, st AccountSwitchState, attempt int, lastAttempt bool) error {
	a, err := s.Accounts.GetAccount(ctx, teamID, accountID)
	if ErrorCode(err) == ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if a.State == AccountDeleting {
		return nil // the removal jobs take the access away
	}
	if s.AWS == nil || s.Levels == nil {
		return ErrAWSUnavailable()
	}
	team, err := s.Teams.EnsureTeam(ctx, teamID, NewExternalID(), s.now())
	if err != nil {
		return err
	}
	since := s.sinceEvent(a, st)
	facts, err := s.AWS.DescribeStack(ctx, a.RoleARN, team.ExternalID, a.StackARN)
	if err != nil {
		if ctx.Err() != nil || (!lastAttempt && s.retryable(err, since)) {
			return err
		}
		// The stack cannot be read for good (deleted, or the role may no
		// longer read it): nothing can be decided; the account's history
		// says why and the periodic reconcile tries again.
		s.record(ctx, AccessChange{TeamID: teamID, AccountID: accountID, Generation: st.DesiredGeneration,
			FromLevel: a.AccessLevel, ToLevel: a.AccessLevel, Step: "describe_stack", Outcome: AccessChangeFailed,
			Error: ErrorMessage(err), Attempt: attempt})
		s.log().Warn("level switch: the stack cannot be read", "team", teamID, "account", accountID, "error", err)
		return nil
	}
	facts = EffectiveFacts(a, st, facts)
	if a, err = s.Store.SetAccountFacts(ctx, teamID, accountID, facts, s.now()); err != nil {
		return err
	}
	s.ConfirmTopics(ctx, a)
	clusters, err := s.Clusters.ListClusters(ctx, teamID)
	if err != nil {
		return err
	}
	var retry error
	for _, c := range clusters {
		if c.Kind != ClusterEKS || c.AccountID != accountID {
			continue
		}
		if err := s.applyCluster(ctx, a, team.ExternalID, c.ID, st.DesiredGeneration, since, attempt, lastAttempt); err != nil {
			retry = cmpErr(retry, err)
		}
	}
	return retry
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// sinceEvent is how long ago the account's newest stack event (or, without
// one, its last change) happened: AccessDeniedException counts as IAM
// propagation within the retry budget of it.
func (s *Switches) sinceEvent(a Account, st AccountSwitchState) time.Duration {
	at := st.LastStackEventAt
	if at.IsZero() || a.UpdatedAt.After(at) {
		at = a.UpdatedAt
	}
	if st.ChosenAt.After(at) {
		at = st.ChosenAt
	}
	return s.now().Sub(at)
}

func (s *Switches) retryable(err error, since time.Duration) bool {
	budget := s.RetryBudget
	if budget <= 0 {
		budget = DefaultSwitchRetryBudget
	}
	if s.Retryable != nil {
		return s.Retryable(err, since, budget)
	}
	return ErrorCode(err) == EUNAVAILABLE
}

// EffectiveFacts is what the stack's facts mean for the account: the stack
// is the ceiling and an admin's choice may only narrow it, and a stack that
// now says FULL widens an account that was limited by its v4 template (or
// awaits confirmation) only when an admin chose full — the account is
// confirmation_required and stays limited until then.
func EffectiveFacts(a Account, st AccountSwitchState, facts StackFacts) StackFacts {
	if facts.AccessLevel != AccessFull {
		return facts
	}
	switch {
	case st.ChosenLevel == AccessLimited:
		facts.AccessLevel = AccessLimited
	case st.ChosenLevel == AccessFull:
	case a.TemplateVersion == "4" || (a.State == AccountConfirmationRequired && a.AccessLevel != AccessFull):
		facts.AccessLevel = AccessLimited
		facts.ConfirmationRequired = true
		facts.Reason = "The stack now grants FULL access, but this account was limited under an earlier Kukie template; " +
			"Kukie keeps it limited until an admin confirms full access (PUT /v1/aws/accounts/" + a.ID + "/access-level)."
	}
	return facts
}

// ConfirmTopics starts the confirmation of subscriptions that arrived for
// the account's topics before the account listed them. Failures are logged:
// the subscriptions stay pending and the next reconcile tries again.
func (s *Switches) ConfirmTopics(ctx context.Context, a Account) {
	if s.Trigger == nil || a.State == AccountDeleting {
		return
	}
	for _, topic := range a.NotificationARNs {
		own, err := s.ownTopic(ctx, a, topic)
		if err != nil {
			s.log().Warn("pending SNS subscriptions not confirmed yet", "team", a.TeamID, "account", a.ID, "error", err)
			continue
		}
		if !own {
			continue // the webhook refuses this topic's messages: never subscribe to it
		}
		n, err := s.Trigger.ConfirmPending(ctx, topic, s.now())
		if err != nil {
			s.log().Warn("pending SNS subscriptions not confirmed yet", "team", a.TeamID, "account", a.ID, "error", err)
			continue
		}
		if n > 0 {
			s.log().Info("confirming SNS subscriptions received before the account listed the topic",
				"team", a.TeamID, "account", a.ID, "subscriptions", n)
		}
	}
}

// ownTopic reports whether topic is in the account's own AWS account and
// partition and listed by it: the only topics whose messages the webhook
// takes. The rule has one home, SwitchStore.AllowedTopic.
func (s *Switches) ownTopic(ctx context.Context, a Account, topic string) (bool, error) {
	teamID, accountID, found, err := s.Store.AllowedTopic(ctx, topic)
	return found && teamID == a.TeamID && accountID == a.ID, err
}

// Resubscribed is told that a subscription of topic was confirmed: an
// account disconnected by an unsubscription receives its stack's
// notifications again. It becomes confirmation_required (so a FULL stack
// cannot widen it on the way back) and its reconcile runs, which settles
// the state from the stack.
func (s *Switches) Resubscribed(ctx context.Context, topic string) error {
	teamID, accountID, found, err := s.Store.AllowedTopic(ctx, topic)
	if err != nil || !found {
		return err
	}
	a, err := s.Accounts.GetAccount(ctx, teamID, accountID)
	if err != nil {
		return err
	}
	if a.State != AccountDisconnected || a.StateReason != ReasonUnsubscribed {
		return nil
	}
	if _, err := s.Accounts.SetAccountState(ctx, teamID, accountID, AccountConfirmationRequired, reasonResubscribed, s.now()); err != nil {
		return err
	}
	s.log().Info("AWS account receives stack notifications again", "team", teamID, "account", accountID)
	if s.Trigger == nil {
		return nil
	}
	return s.Trigger.Request(ctx, teamID, accountID)
}

// applyCluster brings one cluster to the account's level under the
// cluster's lock and records the outcome.
func (s *Switches) applyCluster(ctx context.Context, a Account, externalID, clusterID string, generation int64,
	since time.Duration, attempt int, lastAttempt bool) error {
	unlock, err := s.EKS.LockCluster(ctx, a.TeamID, clusterID)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := s.Clusters.GetCluster(ctx, a.TeamID, clusterID)
	if ErrorCode(err) == ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if c.Kind != ClusterEKS || c.AccessState == AccessDeleting {
		return nil
	}
	target := a.AccessLevel
	var scope, dropped []string
	if target == AccessLimited {
		scope, dropped = editScope(c.Namespaces, a.AllowedNamespaces)
	}
	from := c.AccessLevel
	observe := func(step SwitchStep) {
		if step.Action == "list" && step.Outcome != AccessChangeFailed {
			return // a listing changes nothing: only its failure is history
		}
		s.record(ctx, AccessChange{TeamID: a.TeamID, AccountID: a.ID, ClusterID: c.ID, Generation: generation,
			FromLevel: from, ToLevel: target, Step: stepName(step), Outcome: step.Outcome,
			Error: errText(step.Err), Attempt: attempt})
	}
	res, err := s.Levels.ApplyLevel(ctx, a, externalID, c, target, scope, observe)
	wctx, cancel := finalWrite(ctx)
	defer cancel()
	if c.AccessState == AccessPending && (err == nil || ErrorReason(err) == "access_entry_missing") {
		// Registration is still granting access: its job confirms it at the
		// account's (new) level; what this switch removed stays removed.
		_, serr := s.setAccess(wctx, c, res.Level, AccessPending, c.AccessReason)
		return serr
	}
	if err != nil && (ctx.Err() != nil || (!lastAttempt && s.retryable(err, since))) {
		// Keep the cluster usable as it is while AWS catches up; the level
		// recorded is the one applied so far (a downgrade is limited at once).
		state := c.AccessState
		if state == AccessActive || state == "" {
			state = AccessActive
		}
		reason := "Switching to " + string(target) + " access: AWS is still propagating the change; Kukie retries."
		if _, serr := s.setAccess(wctx, c, res.Level, state, reason); serr != nil {
			return errors.Join(err, serr)
		}
		s.count("retry")
		return err
	}
	reason := res.Reason
	if res.State == AccessNamespaceNotAllowed && len(dropped) > 0 {
		reason = "None of the cluster's registered namespaces (" + strings.Join(dropped, ", ") +
			") is within the stack's AllowedNamespaces, so Kukie has no access to it: add them to AllowedNamespaces in the stack, or register namespaces it allows."
	} else if res.State == AccessActive && len(dropped) > 0 {
		reason = "Limited access no longer covers " + strings.Join(dropped, ", ") +
			": the stack's AllowedNamespaces do not include them."
	}
	if res.State == AccessRevocationFailed {
		reason = "Kukie could not remove its cluster-admin access policy (" + res.Reason + "). The customer must remove it: " +
			"aws eks disassociate-access-policy --cluster-name " + c.EKSName + " --principal-arn " + a.RoleARN +
			" --policy-arn <AmazonEKSClusterAdminPolicy ARN>, or delete Kukie's access entry on the cluster."
		s.log().Error("ALERT: level switch could not revoke cluster-admin access; the customer revoked it",
			"team", a.TeamID, "account", a.ID, "cluster", c.ID, "error", err)
	}
	if _, serr := s.setAccess(wctx, c, res.Level, res.State, reason); serr != nil {
		return serr
	}
	outcome := string(res.State)
	if res.State == AccessActive {
		outcome = "ok"
	}
	s.count(outcome)
	if err != nil {
		s.log().Warn("level switch failed for good", "team", a.TeamID, "account", a.ID, "cluster", c.ID,
			"state", res.State, "error", err)
	}
	return nil
}

func (s *Switches) count(outcome string) {
	if s.Metrics != nil {
		s.Metrics.Switch(outcome)
	}
}

func (s *Switches) setAccess(ctx context.Context, c Cluster, level AccessLevel, state AccessState, reason string) (Cluster, error) {
	return s.EKS.SetClusterAccess(ctx, c.TeamID, c.ID, ClusterAccess{Level: level, State: state, Reason: reason,
		EntryCreated: c.EntryCreated, Endpoint: c.Endpoint, CAData: c.CAData}, s.now())
}

// record appends a step to the account's history; a failure to record is
// logged, not fatal: the AWS call's outcome still decides the state.
func (s *Switches) record(ctx context.Context, c AccessChange) {
	c.CreatedAt = s.now()
	wctx, cancel := finalWrite(ctx)
	defer cancel()
	if _, err := s.Store.RecordAccessChange(wctx, c); err != nil {
		s.log().Warn("access change not recorded", "team", c.TeamID, "account", c.AccountID, "cluster", c.ClusterID,
			"step", c.Step, "outcome", c.Outcome, "error", err)
	}
}

// stepName names a step for the history: the action and the policy's name
// ("associate AmazonEKSEditPolicy").
func stepName(step SwitchStep) string {
	if step.Policy == "" {
		return step.Action
	}
	name := step.Policy[strings.LastIndex(step.Policy, "/")+1:]
	if len(step.Scope) > 0 {
		return fmt.Sprintf("%s %s (%s)", step.Action, name, strings.Join(step.Scope, ","))
	}
	return step.Action + " " + name
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ErrorMessage(err)
}

// editScope is the Edit association's scope: the registered namespaces the
// stack's AllowedNamespaces cover (kube-* never), and the ones dropped.
func editScope(registered, allowed []string) (scope, dropped []string) {
	scope, dropped = []string{}, []string{}
	for _, ns := range registered {
		if namespaceAllowed(ns, allowed) {
			scope = append(scope, ns)
		} else {
			dropped = append(dropped, ns)
		}
	}
	return scope, dropped
}

// ReconcileAll asks for a reconcile of every account (the periodic check
// that repairs a lost notification); it returns how many it asked for.
func (s *Switches) ReconcileAll(ctx context.Context, accounts []AccountKey) (int, error) {
	if s.Trigger == nil {
		return 0, ErrAWSUnavailable()
	}
	n := 0
	var errs []error
	for _, k := range accounts {
		if err := s.Trigger.Request(ctx, k.TeamID, k.AccountID); err != nil {
			if ErrorCode(err) != ENOTFOUND {
				errs = append(errs, err)
			}
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
