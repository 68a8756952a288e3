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
	if err := checkRegisterInput(in); err != nil {
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
	eks, err := s.checkEKS(ctx, account, team.ExternalID, in)
	if err != nil {
		return Cluster{}, err
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
	return s.firstAttempt(ctx, account, team.ExternalID, c, now)
}

// checkRegisterInput checks the request itself, before anything is read.
func checkRegisterInput(in RegisterCluster) error {
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
	return v.Err()
}

// checkEKS reads the cluster (DescribeCluster) and checks that it can be
// registered: ACTIVE, with an authentication mode that has access entries.
func (s *Registrations) checkEKS(ctx context.Context, account Account, externalID string, in RegisterCluster) (EKSCluster, error) {
	eks, err := s.AWS.DescribeCluster(ctx, account, externalID, in.Region, in.Name)
	if err != nil {
		return eks, err
	}
	if eks.Status != "ACTIVE" {
		return eks, ReasonError(EVALIDATION, ReasonClusterNotActive, "The EKS cluster is "+eks.Status+", not ACTIVE; register it when it is.")
	}
	if eks.AuthenticationMode != "API" && eks.AuthenticationMode != "API_AND_CONFIG_MAP" {
		return eks, ReasonError(EVALIDATION, ReasonAuthenticationModeUnsupported,
			"The cluster's authentication mode is "+eks.AuthenticationMode+"; access entries need API or API_AND_CONFIG_MAP "+
				"(aws eks update-cluster-config --name <cluster> --access-config authenticationMode=API_AND_CONFIG_MAP).")
	}
	return eks, nil
}

// firstAttempt is the registration's own attempt to grant and confirm
// access to the created cluster c, bounded by Attempt: a change AWS is still
// propagating leaves it pending, a permanent failure undoes the registration.
func (s *Registrations) firstAttempt(ctx context.Context, account Account, externalID string, c Cluster, now time.Time) (Cluster, error) {
	attempt := s.Attempt
	if attempt == 0 {
		attempt = 10 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, attempt)
	defer cancel()
	bg := context.WithoutCancel(ctx)
	done, granted, err := s.lockedGrant(actx, account, externalID, c)
	switch {
	case err == nil:
		return done, nil
	case s.retryable(err, account, done, now):
		return s.leavePending(bg, c, done)
	}
	s.undoRegistration(bg, c, done, granted)
	return Cluster{}, err
}

// leavePending records the cluster pending while AWS propagates the change
// and hands the rest to the access job (done is the cluster as the attempt
// left it).
func (s *Registrations) leavePending(bg context.Context, c, done Cluster) (Cluster, error) {
	reason := "AWS is still propagating the change; Kukie retries."
	if s.Jobs == nil {
		reason = "AWS is still propagating the change; run reconcile to finish it."
	} else if jerr := s.Jobs.EnqueueAccess(bg, c.TeamID, c.ID); jerr != nil {
		return Cluster{}, jerr
	}
	return s.setAccess(bg, done, AccessPending, reason, done.EntryCreated)
}

// undoRegistration is the clean-up after a permanent failure: nothing
// half-registered stays behind. When Kukie's entry or policy is already in
// the cluster, the removal job takes it away (and the registration after
// it); a customer's own entry is left alone.
func (s *Registrations) undoRegistration(bg context.Context, c, done Cluster, granted bool) {
	if done.EntryCreated || granted {
		if _, serr := s.setAccess(bg, done, AccessDeleting, "", done.EntryCreated); serr == nil && s.Jobs != nil {
			_ = s.Jobs.EnqueueRemoval(bg, c.TeamID, c.ID)
		}
		return
	}
	_ = s.EKS.DeleteCluster(bg, c.TeamID, c.ID)
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
