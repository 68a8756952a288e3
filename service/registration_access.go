package service

import (
	"context"
	"time"
)

// lockedGrant is grant under the cluster's lock.
func (s *Registrations) lockedGrant(ctx context.Context, a Account, externalID string, c Cluster) (Cluster, bool, error) {
	unlock, err := s.EKS.LockCluster(ctx, c.TeamID, c.ID)
	if err != nil {
		return c, false, err
	}
	defer unlock()
	return s.grant(ctx, a, externalID, c)
}

// grant gives access at c.AccessLevel and confirms it through the cluster,
// recording active when it worked. granted reports that the access policy
// was associated (so a failure may have left Kukie's access behind); the
// returned cluster carries EntryCreated whatever happened.
func (s *Registrations) grant(ctx context.Context, a Account, externalID string, c Cluster) (Cluster, bool, error) {
	created, err := s.AWS.GrantAccess(ctx, a, externalID, c)
	c.EntryCreated = c.EntryCreated || created
	if err != nil {
		return c, false, err
	}
	if err := s.Checker.CheckAccess(ctx, c); err != nil {
		if code := ErrorCode(err); code == EUPSTREAM || code == EFORBIDDEN {
			// Access entries are eventually consistent: the cluster refusing
			// the token right after the association is propagation, not a
			// verdict (the give-up window bounds it).
			err = WrapError(EUNAVAILABLE, "The cluster does not accept Kukie's credentials yet.", err)
		}
		return c, true, err
	}
	done, err := s.setAccess(ctx, c, AccessActive, "", c.EntryCreated)
	if err != nil {
		return c, true, err
	}
	return done, true, nil
}

func (s *Registrations) setAccess(ctx context.Context, c Cluster, state AccessState, reason string, created bool) (Cluster, error) {
	return s.EKS.SetClusterAccess(ctx, c.TeamID, c.ID, ClusterAccess{Level: c.AccessLevel, State: state, Reason: reason,
		EntryCreated: created, Endpoint: c.Endpoint, CAData: c.CAData}, s.now())
}

// retryable says whether a failed access change should be tried again:
// the AWS adapter's judgement when it has one (by operation, error code and
// time since the last change of the account or the cluster — propagation
// is measured from whichever changed last), else AWS unavailable, or a
// propagation-type failure within RegistrationPropagationWindow.
func (s *Registrations) retryable(err error, a Account, c Cluster, now time.Time) bool {
	changed := a.UpdatedAt
	if c.UpdatedAt.After(changed) {
		changed = c.UpdatedAt
	}
	since := now.Sub(changed)
	if s.Retryable != nil && s.Retryable(err, since, RegistrationPropagationWindow) {
		return true
	}
	if ErrorCode(err) != EUNAVAILABLE {
		return false
	}
	return since < RegistrationPropagationWindow || ErrorReason(err) == ReasonAWSUnavailable
}

// accountOf returns the cluster's account and its team's ExternalId, the
// two things every access change acts with.
func (s *Registrations) accountOf(ctx context.Context, c Cluster) (Account, string, error) {
	a, err := s.Accounts.GetAccount(ctx, c.TeamID, c.AccountID)
	if err != nil {
		return a, "", err
	}
	if s.AWS == nil {
		return a, "", ErrAWSUnavailable()
	}
	team, err := s.Teams.EnsureTeam(ctx, c.TeamID, NewExternalID(), s.now())
	return a, team.ExternalID, err
}

// finalWrite is the context of a job's last write: the job's own may have
// run out, and the state it records must still be stored.
func finalWrite(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// FinishAccess is the job's step: one more attempt to grant and confirm
// access of a pending cluster, under the cluster's lock. It returns an
// error when the job should try again; a permanent failure is recorded on
// the cluster (degraded, with the reason) and is not an error.
func (s *Registrations) FinishAccess(ctx context.Context, teamID, clusterID string, lastAttempt bool) error {
	unlock, err := s.EKS.LockCluster(ctx, teamID, clusterID)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := s.Clusters.GetCluster(ctx, teamID, clusterID)
	if err != nil {
		if ErrorCode(err) == ENOTFOUND {
			return nil // removed meanwhile
		}
		return err
	}
	if c.Kind != ClusterEKS || c.AccessState == AccessDeleting || c.AccessState == AccessRevocationFailed {
		return nil // being removed, or left to the account's switch (ClusterAdmin still to be removed)
	}
	a, externalID, err := s.accountOf(ctx, c)
	if err != nil {
		return err
	}
	target := c
	target.AccessLevel = a.AccessLevel // the level to apply; c's stays until it is
	done, _, err := s.grant(ctx, a, externalID, target)
	if err == nil {
		return nil
	}
	wctx, cancel := finalWrite(ctx)
	defer cancel()
	kept := done
	kept.AccessLevel = c.AccessLevel
	if s.retryable(err, a, c, s.now()) && !lastAttempt {
		// Remember an entry this attempt created, then try again.
		_, _ = s.setAccess(wctx, kept, AccessPending, "AWS is still propagating the change; Kukie retries.", kept.EntryCreated)
		return err
	}
	_, serr := s.setAccess(wctx, kept, AccessDegraded, ErrorMessage(err), kept.EntryCreated)
	return serr
}

// eksCluster returns one of the team's EKS clusters: static clusters are
// configured by the operator, not through the API.
func (s *Registrations) eksCluster(ctx context.Context, p Principal, id string) (Cluster, error) {
	c, err := s.Clusters.GetCluster(ctx, p.TeamID, id)
	if err != nil {
		return c, err
	}
	if c.Kind != ClusterEKS {
		return c, ReasonError(ECONFLICT, ReasonConflict, "This cluster is configured by the operator (static); only EKS clusters are registered through the API.")
	}
	if s.AWS == nil || s.Jobs == nil {
		return c, ErrAWSUnavailable()
	}
	return c, nil
}

// Reconcile runs the cluster's access work again after the customer fixed
// what its access_reason said: a removal that failed is run again; a
// cluster a level switch left revocation_failed, upgrade_failed or
// namespace_not_allowed gets its account's switch again (which reads the
// stack and applies its level, scope included); any other state gets the
// access job (grant and confirm at the account's level).
func (s *Registrations) Reconcile(ctx context.Context, p Principal, clusterID string) (Cluster, error) {
	c, err := s.eksCluster(ctx, p, clusterID)
	if err != nil {
		return c, err
	}
	switch c.AccessState {
	case AccessDeleting:
		return c, s.Jobs.EnqueueRemoval(ctx, c.TeamID, c.ID)
	case AccessRevocationFailed, AccessUpgradeFailed, AccessNamespaceNotAllowed:
		if s.Switches == nil {
			return c, ErrAWSUnavailable()
		}
		return c, s.Switches.Request(ctx, c.TeamID, c.AccountID)
	}
	return c, s.Jobs.EnqueueAccess(ctx, c.TeamID, c.ID)
}

// Remove starts removing a cluster: it is marked deleting (and no longer
// read), and a job removes Kukie's access, then the registration.
func (s *Registrations) Remove(ctx context.Context, p Principal, clusterID string) (Cluster, error) {
	c, err := s.eksCluster(ctx, p, clusterID)
	if err != nil {
		return c, err
	}
	if c, err = s.setAccess(ctx, c, AccessDeleting, "", c.EntryCreated); err != nil {
		return c, err
	}
	return c, s.Jobs.EnqueueRemoval(ctx, c.TeamID, c.ID)
}

// FinishRemoval is the removal job's step: revoke Kukie's access (the
// entry only if Kukie created it), then delete the registration. It
// returns an error when the job should try again; on the last attempt the
// cluster stays deleting (never read again) with the reason, and reconcile
// runs the removal again.
func (s *Registrations) FinishRemoval(ctx context.Context, teamID, clusterID string, lastAttempt bool) error {
	unlock, err := s.EKS.LockCluster(ctx, teamID, clusterID)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := s.Clusters.GetCluster(ctx, teamID, clusterID)
	if ErrorCode(err) == ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	if c.AccessState != AccessDeleting {
		return nil // not (or no longer) being removed
	}
	a, externalID, err := s.accountOf(ctx, c)
	if err != nil {
		return err
	}
	if err := s.AWS.RevokeAccess(ctx, a, externalID, c); err != nil {
		if !lastAttempt {
			return err
		}
		wctx, cancel := finalWrite(ctx)
		defer cancel()
		_, serr := s.setAccess(wctx, c, AccessDeleting, "Removing Kukie's access failed: "+ErrorMessage(err)+
			" Fix it, then reconcile the cluster to run the removal again.", c.EntryCreated)
		return serr
	}
	wctx, cancel := finalWrite(ctx)
	defer cancel()
	if err := s.EKS.DeleteCluster(wctx, teamID, clusterID); err != nil {
		return err
	}
	if a.State == AccountDeleting {
		// The account goes with its last cluster.
		if _, err := s.Accounts.DeleteAccount(wctx, teamID, a.ID); err != nil {
			return err
		}
	}
	return nil
}
