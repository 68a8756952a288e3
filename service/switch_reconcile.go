package service

import (
	"context"
	"errors"
	"time"
)

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
