package service

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// RegisterCluster is a request to register an EKS cluster of a connected
// account.
type RegisterCluster struct {
	AccountID  string   `json:"account_id"`
	Region     string   `json:"region"`
	Name       string   `json:"name"`
	Namespaces []string `json:"namespaces"`
}

// AccessChecker confirms that Kukie's own connection to a cluster works (a
// SelfSubjectReview through the EKS token).
type AccessChecker interface {
	CheckAccess(ctx context.Context, c Cluster) error
}

// OrphanedCluster is an EKS cluster left pending or deleting with no job
// to finish it: the process that wrote the state died before enqueueing
// the job, or during a registration's own attempt.
type OrphanedCluster struct {
	TeamID, ClusterID string
	State             AccessState
}

// AccessJobs runs access changes in the background (retries with backoff
// while AWS propagates a change).
type AccessJobs interface {
	// EnqueueAccess schedules Registrations.FinishAccess for the cluster.
	EnqueueAccess(ctx context.Context, teamID, clusterID string) error
	// EnqueueRemoval schedules Registrations.FinishRemoval for the cluster.
	EnqueueRemoval(ctx context.Context, teamID, clusterID string) error
}

// Registrations is the EKS cluster registration use case: access entries
// and policies by the account's level, confirmed through the cluster.
type Registrations struct {
	Clusters ClusterStore
	EKS      EKSClusterStore
	Accounts AccountStore
	Teams    TeamStore
	AWS      AWSAccess // nil: AWS is not configured (aws_unavailable)
	Checker  AccessChecker
	Jobs     AccessJobs
	Now      func() time.Time
	// Attempt bounds the in-request attempt (default 10 s); a change AWS
	// is still propagating then finishes in a job.
	Attempt time.Duration
	// Switches runs an account's level switch again (the reconcile of a
	// cluster a switch left revocation_failed, upgrade_failed or
	// namespace_not_allowed); nil when AWS is not configured.
	Switches SwitchTrigger
	// Retryable, when set, is the AWS adapter's judgement of a failure
	// (by operation, error code and the time since the role or stack
	// changed, within the window given); failures it does not recognise
	// fall back to the rule below.
	Retryable func(err error, sinceChange, window time.Duration) bool
}

// RegistrationPropagationWindow is how long after the last change of an
// account or a cluster a registration takes IAM and EKS refusals for
// propagation and retries them: the one window of registrations
// (KUKIE_SWITCH_RETRY_BUDGET governs level switches only).
const RegistrationPropagationWindow = 5 * time.Minute

var eksName = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$`)

func (s *Registrations) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// Register registers an EKS cluster: DescribeCluster (ACTIVE, an
// authentication mode with access entries), the namespaces checked against
// the account's AllowedNamespaces before any access call, then one attempt
// to grant and confirm access. A change AWS is still propagating leaves
// the cluster pending (and a job finishes it); a permanent failure removes
// the registration and answers why.
func (s *Registrations) Register(ctx context.Context, p Principal, in RegisterCluster) (Cluster, error) {
	var v ValidationErrors
	checkText(&v, "account_id", in.AccountID, true, maxIDLength)
	if !ValidRegion(in.Region) {
		v.Add("region", "must be an AWS region such as us-east-1")
	}
	if !eksName.MatchString(in.Name) {
		v.Add("name", "must be an EKS cluster name (letters, digits, - and _, at most 100)")
	}
	if len(in.Namespaces) == 0 {
		v.Add("namespaces", "must name at least one namespace (a later switch to limited needs them)")
	}
	for i, ns := range in.Namespaces {
		if !validDNSLabel(ns) {
			v.Add(fmt.Sprintf("namespaces[%d]", i), "must be a Kubernetes namespace name")
		}
	}
	if err := v.Err(); err != nil {
		return Cluster{}, err
	}
	account, err := s.Accounts.GetAccount(ctx, p.TeamID, in.AccountID)
	if err != nil {
		return Cluster{}, err
	}
	if account.State == AccountDeleting || account.State == AccountDisconnected {
		return Cluster{}, ReasonError(ECONFLICT, ReasonConflict, "The AWS account is "+string(account.State)+".")
	}
	if s.AWS == nil {
		return Cluster{}, ErrAWSUnavailable()
	}
	now := s.now()
	team, err := s.Teams.EnsureTeam(ctx, p.TeamID, NewExternalID(), now)
	if err != nil {
		return Cluster{}, err
	}
	eks, err := s.AWS.DescribeCluster(ctx, account, team.ExternalID, in.Region, in.Name)
	if err != nil {
		return Cluster{}, err
	}
	if eks.Status != "ACTIVE" {
		return Cluster{}, ReasonError(EVALIDATION, ReasonClusterNotActive, "The EKS cluster is "+eks.Status+", not ACTIVE; register it when it is.")
	}
	if eks.AuthenticationMode != "API" && eks.AuthenticationMode != "API_AND_CONFIG_MAP" {
		return Cluster{}, ReasonError(EVALIDATION, ReasonAuthenticationModeUnsupported,
			"The cluster's authentication mode is "+eks.AuthenticationMode+"; access entries need API or API_AND_CONFIG_MAP "+
				"(aws eks update-cluster-config --name <cluster> --access-config authenticationMode=API_AND_CONFIG_MAP).")
	}
	namespaces := slices.Compact(slices.Sorted(slices.Values(in.Namespaces)))
	if account.AccessLevel != AccessFull {
		if err := checkAllowed(namespaces, account.AllowedNamespaces); err != nil {
			return Cluster{}, err
		}
	}
	id, err := newResourceID()
	if err != nil {
		return Cluster{}, err
	}
	c := Cluster{ID: id, TeamID: p.TeamID, Name: in.Name, Kind: ClusterEKS, AccessLevel: account.AccessLevel,
		Namespaces: namespaces, ArgoCDNamespace: DefaultArgoCDNamespace, AccessState: AccessPending,
		AccountID: account.ID, Region: in.Region, EKSName: in.Name, Endpoint: eks.Endpoint, CAData: eks.CAData}
	if c, err = s.EKS.CreateCluster(ctx, c, now); err != nil {
		return Cluster{}, err
	}
	attempt := s.Attempt
	if attempt == 0 {
		attempt = 10 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, attempt)
	defer cancel()
	bg := context.WithoutCancel(ctx)
	done, granted, err := s.lockedGrant(actx, account, team.ExternalID, c)
	switch {
	case err == nil:
		return done, nil
	case s.retryable(err, account, done, now):
		reason := "AWS is still propagating the change; Kukie retries."
		if s.Jobs == nil {
			reason = "AWS is still propagating the change; run reconcile to finish it."
		} else if jerr := s.Jobs.EnqueueAccess(bg, c.TeamID, c.ID); jerr != nil {
			return Cluster{}, jerr
		}
		return s.setAccess(bg, done, AccessPending, reason, done.EntryCreated)
	}
	// Permanent: nothing half-registered stays behind. When Kukie's entry or
	// policy is already in the cluster, the removal job takes it away (and
	// the registration after it); a customer's own entry is left alone.
	if done.EntryCreated || granted {
		if _, serr := s.setAccess(bg, done, AccessDeleting, "", done.EntryCreated); serr == nil && s.Jobs != nil {
			_ = s.Jobs.EnqueueRemoval(bg, c.TeamID, c.ID)
		}
		return Cluster{}, err
	}
	_ = s.EKS.DeleteCluster(bg, c.TeamID, c.ID)
	return Cluster{}, err
}

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

// checkAllowed reports the namespaces no AllowedNamespaces pattern covers
// (wildcards as IAM's StringLike: * and ?): the Edit association would be
// refused for them.
func checkAllowed(namespaces, allowed []string) error {
	var v ValidationErrors
	for i, ns := range namespaces {
		if systemNamespace(ns) {
			v.Add(fmt.Sprintf("namespaces[%d]", i), "%s is a system namespace; limited access never covers kube-* namespaces", ns)
			continue
		}
		if !namespaceAllowed(ns, allowed) {
			v.Add(fmt.Sprintf("namespaces[%d]", i), "%s is not in the stack's AllowedNamespaces (%v); add it to the stack or register without it", ns, allowed)
		}
	}
	if len(v) == 0 {
		return nil
	}
	return &Error{Code: EVALIDATION, Reason: "namespaces_not_allowed", Fields: v,
		Message: "Some namespaces are outside the stack's AllowedNamespaces; Kukie's role cannot be given access to them."}
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

// systemNamespace reports a kube-* namespace: the template never lets the
// LIMITED role into system namespaces.
func systemNamespace(ns string) bool { return strings.HasPrefix(ns, "kube-") }

// namespaceAllowed reports whether limited access may cover ns: not a
// system namespace, and matched by one of the stack's AllowedNamespaces.
func namespaceAllowed(ns string, allowed []string) bool {
	return !systemNamespace(ns) && slices.ContainsFunc(allowed, func(pattern string) bool { return stringLike(pattern, ns) })
}

// stringLike matches s against an IAM StringLike pattern: * is any run of
// characters, ? any one; everything else is literal.
func stringLike(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi, mark = star+1, mark+1
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
