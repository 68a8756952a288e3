package service

import (
	"context"
	"errors"
	"strings"
	"time"
)

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
	observe := s.observer(ctx, a, c, generation, target, attempt)
	keepAdmin := func(err error) bool { return ctx.Err() == nil && !lastAttempt && s.retryable(err, since) }
	res, err := s.Levels.ApplyLevel(ctx, a, externalID, c, target, scope, ApplyOptions{Observe: observe, KeepAdmin: keepAdmin})
	wctx, cancel := finalWrite(ctx)
	defer cancel()
	if c.AccessState == AccessPending && (err == nil || ErrorReason(err) == "access_entry_missing") {
		// Registration is still granting access: its job confirms it at the
		// account's (new) level; what this switch removed stays removed.
		_, serr := s.setAccess(wctx, c, res.Level, AccessPending, c.AccessReason)
		return serr
	}
	if err != nil && (ctx.Err() != nil || (!lastAttempt && s.retryable(err, since))) {
		return s.keepForRetry(wctx, c, res.Level, target, err)
	}
	return s.settle(wctx, a, c, res, dropped, err)
}

// observer records the steps of cluster c's switch to target in the
// account's history.
func (s *Switches) observer(ctx context.Context, a Account, c Cluster, generation int64, target AccessLevel,
	attempt int) func(SwitchStep) {
	from := c.AccessLevel
	return func(step SwitchStep) {
		if step.Action == "list" && step.Outcome != AccessChangeFailed {
			return // a listing changes nothing: only its failure is history
		}
		s.record(ctx, AccessChange{TeamID: a.TeamID, AccountID: a.ID, ClusterID: c.ID, Generation: generation,
			FromLevel: from, ToLevel: target, Step: stepName(step), Outcome: step.Outcome,
			Error: errText(step.Err), Attempt: attempt})
	}
}

// keepForRetry records the cluster while a switch's failed call (err) is
// retried: it stays usable as it is while AWS catches up, at the level
// applied so far (a downgrade whose Edit is still refused keeps
// ClusterAdmin, so it stays full until Edit is in place). It returns err.
func (s *Switches) keepForRetry(wctx context.Context, c Cluster, level, target AccessLevel, err error) error {
	state := c.AccessState
	if state == AccessActive || state == "" {
		state = AccessActive
	}
	reason := "Switching to " + string(target) + " access: AWS is still propagating the change; Kukie retries."
	if _, serr := s.setAccess(wctx, c, level, state, reason); serr != nil {
		return errors.Join(err, serr)
	}
	s.count("retry")
	return err
}

// settle records where the switch left the cluster for good: res's state,
// the reason it shows, and the outcome counted; err, when not nil, is the
// failure not retried.
func (s *Switches) settle(wctx context.Context, a Account, c Cluster, res SwitchResult, dropped []string, err error) error {
	reason := switchReason(a, c, res, dropped)
	if res.State == AccessRevocationFailed {
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

// switchReason is the access reason a settled switch shows: the applier's,
// or what the namespaces dropped from the Edit scope (dropped) mean, or the
// customer's way out of a revocation that failed.
func switchReason(a Account, c Cluster, res SwitchResult, dropped []string) string {
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
	}
	return reason
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
