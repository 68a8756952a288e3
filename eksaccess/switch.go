package eksaccess

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/kukie/gitops-server/service"
)

// ReasonAccessEntryMissing: Kukie's access entry on the cluster, or the
// cluster, is gone (ENOTFOUND), so no policy can be associated with it.
const ReasonAccessEntryMissing = "access_entry_missing"

// Actions of a SwitchStep.
const (
	StepList         = "list"
	StepAssociate    = "associate"
	StepDisassociate = "disassociate"
)

// Outcomes of a step.
const (
	OutcomeOK     = service.AccessChangeOK
	OutcomeGone   = service.AccessChangeGone
	OutcomeFailed = service.AccessChangeFailed
)

// adminRemovalTimeout bounds the ClusterAdmin removal of a downgrade, which
// runs even when the caller's context has ended: leaving admin in place
// that the customer revoked is worse than one late call.
const adminRemovalTimeout = 15 * time.Second

var _ service.LevelApplier = (*AWS)(nil)

// ApplyLevel makes Kukie's access to cluster c match target, idempotently
// and failing closed. c.AccessLevel is the level applied so far.
//
// Full: ClusterAdmin at cluster scope is associated first (unless the
// listed associations already hold it), then Edit is disassociated (if
// listed). A failure before ClusterAdmin is in place keeps the cluster
// limited with Edit untouched: upgrade_failed (degraded when c was already
// full).
//
// Limited: namespaces is the Edit scope (registered ∩ AllowedNamespaces).
// Edit is (re)associated when it is absent or its scope differs (this also
// narrows it), then ClusterAdmin is disassociated. An Edit failure that
// o.KeepAdmin says will be retried keeps ClusterAdmin and returns (the
// cluster stays full for now); otherwise ClusterAdmin goes whatever the
// listing said or the Edit step did, in a short context of its own that
// ctx's end does not cut. An Edit failure leaves the cluster degraded (a
// wider Edit scope than namespaces is then removed rather than kept); a
// ClusterAdmin that cannot be removed makes it revocation_failed. An empty
// namespaces means no Edit association: namespace_not_allowed.
//
// When the listing fails the writes are made blind (associate is an
// upsert; a missing policy is gone). Nothing is retried here: the returned
// error is the failure that decided the state, for Retryable and the job.
func (a *AWS) ApplyLevel(ctx context.Context, acct service.Account, externalID string, c service.Cluster,
	target service.AccessLevel, namespaces []string, o service.ApplyOptions) (service.SwitchResult, error) {
	if target != service.AccessFull && target != service.AccessLimited {
		return service.SwitchResult{}, service.Errorf(service.EINVALID, "Access level %q is neither full nor limited.", target)
	}
	s := &switcher{cluster: c.EKSName, principal: acct.RoleARN, observe: o.Observe, keepAdmin: o.KeepAdmin,
		admin: PolicyARN(acct.Partition, policyClusterAdmin), edit: PolicyARN(acct.Partition, policyEdit)}
	client, err := a.eksClient(ctx, acct.RoleARN, externalID, c.Region)
	if err != nil {
		if target == service.AccessFull {
			return s.result(service.AccessLimited, upgradeFailure(c), err), err
		}
		return s.result(service.AccessLimited, service.AccessRevocationFailed, err), err
	}
	s.client = client
	if target == service.AccessFull {
		return s.full(ctx, c)
	}
	return s.limited(ctx, namespaces)
}

// upgradeFailure is the state of a cluster whose ClusterAdmin could not be
// put in place: a failed upgrade, or a full cluster that lost its admin.
func upgradeFailure(c service.Cluster) service.AccessState {
	if c.AccessLevel == service.AccessFull {
		return service.AccessDegraded
	}
	return service.AccessUpgradeFailed
}

// switcher makes the calls of one ApplyLevel and records them.
type switcher struct {
	client             *eks.Client
	cluster, principal string
	admin, edit        string
	observe            func(service.SwitchStep)
	keepAdmin          func(error) bool
	steps              []service.SwitchStep
}

// begin reports a call about to be made.
func (s *switcher) begin(step service.SwitchStep) {
	if s.observe != nil {
		step.Outcome = service.AccessChangeStarted
		s.observe(step)
	}
}

// done records a finished call and reports it.
func (s *switcher) done(step service.SwitchStep) {
	s.steps = append(s.steps, step)
	if s.observe != nil {
		s.observe(step)
	}
}

func (s *switcher) full(ctx context.Context, c service.Cluster) (service.SwitchResult, error) {
	current, listed := s.list(ctx)
	if scope, ok := current[s.admin]; !listed || !ok || scope.Type != ekstypes.AccessScopeTypeCluster {
		if err := s.associate(ctx, s.admin, nil); err != nil {
			return s.result(service.AccessLimited, upgradeFailure(c), err), err
		}
	}
	if _, ok := current[s.edit]; !listed || ok {
		// A leftover Edit grants nothing beyond ClusterAdmin: the cluster
		// is fully usable, the error only asks for another attempt.
		if err := s.disassociate(ctx, s.edit); err != nil {
			return s.result(service.AccessFull, service.AccessActive, err), err
		}
	}
	return s.result(service.AccessFull, service.AccessActive, nil), nil
}

func (s *switcher) limited(ctx context.Context, namespaces []string) (service.SwitchResult, error) {
	ns := slices.Clone(namespaces)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	ns = slices.DeleteFunc(ns, func(n string) bool { return n == "" })

	current, listed := s.list(ctx)
	existing, hasEdit := current[s.edit]
	var editErr error
	switch {
	case len(ns) == 0:
		if !listed || hasEdit {
			editErr = s.disassociate(ctx, s.edit)
		}
	case !listed || !hasEdit || !sameScope(existing, ns):
		editErr = s.associate(ctx, s.edit, ns)
		if editErr != nil && s.keepAdmin != nil && s.keepAdmin(editErr) {
			// Edit is refused while the stack's change propagates and will
			// be tried again: ClusterAdmin stays until Edit is in place, so
			// the cluster is never without a policy (the product's order).
			return s.result(service.AccessFull, service.AccessActive, editErr), editErr
		}
		if editErr != nil && listed && hasEdit && !within(existing, ns) {
			// The scope the stack allowed before is wider than what it
			// allows now: no Edit beats Edit the customer revoked.
			rctx, cancel := removalContext(ctx)
			_ = s.disassociate(rctx, s.edit)
			cancel()
		}
	}

	rctx, cancel := removalContext(ctx)
	defer cancel()
	if err := s.disassociate(rctx, s.admin); err != nil {
		return s.result(service.AccessLimited, service.AccessRevocationFailed, err), err
	}
	switch {
	case editErr != nil && len(ns) == 0:
		return s.result(service.AccessLimited, service.AccessNamespaceNotAllowed, editErr), editErr
	case editErr != nil:
		return s.result(service.AccessLimited, service.AccessDegraded, editErr), editErr
	case len(ns) == 0:
		r := s.result(service.AccessLimited, service.AccessNamespaceNotAllowed, nil)
		r.Reason = "None of the cluster's registered namespaces is within the stack's AllowedNamespaces, so Kukie has no access to it: " +
			"add them to AllowedNamespaces in the stack, or register namespaces it allows."
		return r, nil
	}
	return s.result(service.AccessLimited, service.AccessActive, nil), nil
}

// removalContext is a short context detached from ctx's end: a job's
// timeout or cancellation during the Edit step must not cut a removal.
func removalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), adminRemovalTimeout)
}

// result is the outcome so far; err's message is the reason.
func (s *switcher) result(level service.AccessLevel, state service.AccessState, err error) service.SwitchResult {
	r := service.SwitchResult{Level: level, State: state, Steps: slices.Clone(s.steps)}
	if err != nil {
		r.Reason = service.ErrorMessage(err)
	}
	return r
}

// list returns the entry's associations by policy ARN; listed is false
// when the listing failed (the step records why).
func (s *switcher) list(ctx context.Context) (current map[string]ekstypes.AccessScope, listed bool) {
	current = map[string]ekstypes.AccessScope{}
	s.begin(service.SwitchStep{Action: StepList})
	pages := eks.NewListAssociatedAccessPoliciesPaginator(s.client, &eks.ListAssociatedAccessPoliciesInput{
		ClusterName: aws.String(s.cluster), PrincipalArn: aws.String(s.principal)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			s.done(service.SwitchStep{Action: StepList, Outcome: OutcomeFailed, Err: switchError(err)})
			return nil, false
		}
		for _, p := range page.AssociatedAccessPolicies {
			var scope ekstypes.AccessScope
			if p.AccessScope != nil {
				scope = *p.AccessScope
			}
			current[aws.ToString(p.PolicyArn)] = scope
		}
	}
	s.done(service.SwitchStep{Action: StepList, Outcome: OutcomeOK})
	return current, true
}

// associate associates policy at cluster scope (namespaces nil) or in
// namespaces.
func (s *switcher) associate(ctx context.Context, policy string, namespaces []string) error {
	scope := &ekstypes.AccessScope{Type: ekstypes.AccessScopeTypeCluster}
	if namespaces != nil {
		scope = &ekstypes.AccessScope{Type: ekstypes.AccessScopeTypeNamespace, Namespaces: slices.Clone(namespaces)}
	}
	step := service.SwitchStep{Action: StepAssociate, Policy: policy, Scope: slices.Clone(namespaces), Outcome: OutcomeOK}
	s.begin(step)
	_, err := s.client.AssociateAccessPolicy(ctx, &eks.AssociateAccessPolicyInput{
		ClusterName: aws.String(s.cluster), PrincipalArn: aws.String(s.principal),
		PolicyArn: aws.String(policy), AccessScope: scope})
	if err != nil {
		step.Outcome, step.Err = OutcomeFailed, switchError(err)
	}
	s.done(step)
	return step.Err
}

// disassociate removes policy; one that is not there (or an entry or
// cluster that is gone) is removed already.
func (s *switcher) disassociate(ctx context.Context, policy string) error {
	step := service.SwitchStep{Action: StepDisassociate, Policy: policy, Outcome: OutcomeOK}
	s.begin(step)
	_, err := s.client.DisassociateAccessPolicy(ctx, &eks.DisassociateAccessPolicyInput{
		ClusterName: aws.String(s.cluster), PrincipalArn: aws.String(s.principal), PolicyArn: aws.String(policy)})
	switch {
	case notFound(err):
		step.Outcome = OutcomeGone
	case err != nil:
		step.Outcome, step.Err = OutcomeFailed, switchError(err)
	}
	s.done(step)
	return step.Err
}

// sameScope reports whether an association is namespace-scoped to exactly
// namespaces (distinct, sorted).
func sameScope(scope ekstypes.AccessScope, namespaces []string) bool {
	if scope.Type != ekstypes.AccessScopeTypeNamespace {
		return false
	}
	have := slices.Clone(scope.Namespaces)
	slices.Sort(have)
	return slices.Equal(slices.Compact(have), namespaces)
}

// within reports whether an association grants nothing beyond namespaces:
// namespace-scoped, each of its patterns among them.
func within(scope ekstypes.AccessScope, namespaces []string) bool {
	if scope.Type != ekstypes.AccessScopeTypeNamespace {
		return false
	}
	for _, n := range scope.Namespaces {
		if !slices.Contains(namespaces, n) {
			return false
		}
	}
	return true
}

// switchError maps a failed switch call: a missing entry or cluster is
// access_entry_missing, the rest as every EKS call.
func switchError(err error) error {
	var se *service.Error
	switch {
	case errors.As(err, &se):
		return err
	case notFound(err):
		return &service.Error{Code: service.ENOTFOUND, Reason: ReasonAccessEntryMissing, Err: err,
			Message: "Kukie's access entry on the cluster is gone (removed by hand, or the cluster was deleted): " +
				"remove the cluster from Kukie and register it again."}
	}
	return eksError(err)
}
