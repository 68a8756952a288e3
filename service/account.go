package service

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
)

// AccountState is where a connected AWS account stands.
type AccountState string

// Account states: active; confirmation_required (the stack's level could
// not be taken as it is — a v4 stack or an unknown AccessLevel — and is
// applied as limited until a person confirms); disconnected (the role can
// no longer be assumed); deleting (a job removes Kukie's access first).
const (
	AccountActive               AccountState = "active"
	AccountConfirmationRequired AccountState = "confirmation_required"
	AccountDisconnected         AccountState = "disconnected"
	AccountDeleting             AccountState = "deleting"
)

// Account is a customer's AWS account connected to a team through the IAM
// role the customer's stack created. One account belongs to one team.
type Account struct {
	ID                string       `json:"id"`
	TeamID            string       `json:"-"`
	AWSAccountID      string       `json:"aws_account_id"`
	Partition         string       `json:"partition"`
	RoleARN           string       `json:"role_arn"`
	StackARN          string       `json:"stack_arn"`
	AccessLevel       AccessLevel  `json:"access_level"`
	State             AccountState `json:"state"`
	StateReason       string       `json:"state_reason"`
	TemplateVersion   string       `json:"template_version"`
	AllowedNamespaces []string     `json:"allowed_namespaces"`
	// NotificationARNs are the stack's SNS topics: the only topics whose
	// notifications may switch this account's level.
	NotificationARNs []string `json:"-"`
	// ChosenLevel is the level an admin chose ("" when nobody did): it may
	// narrow what the stack allows, and confirms a v4 account's widening.
	ChosenLevel AccessLevel `json:"chosen_access_level,omitempty"`
	// DesiredGeneration counts the changes asked for (stack notifications,
	// choices, periodic checks); AppliedGeneration the ones the reconcile
	// job has applied. Equal means the clusters are where the stack says.
	DesiredGeneration int64     `json:"desired_generation"`
	AppliedGeneration int64     `json:"applied_generation"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"-"`
}

// StackFacts is what the customer's CloudFormation stack says about the
// access it grants.
type StackFacts struct {
	// AccessLevel is the level to apply: never wider than the stack says.
	// An AccessLevel the server does not know, or a v4 stack, is limited
	// with ConfirmationRequired set and the Reason why.
	AccessLevel          AccessLevel
	ConfirmationRequired bool
	Reason               string
	// TemplateVersion is the stack's KukieTemplateVersion output ("4" when
	// the output is absent).
	TemplateVersion   string
	AllowedNamespaces []string
	NotificationARNs  []string
}

// EKSCluster is what DescribeCluster says of a cluster.
type EKSCluster struct {
	ARN                string
	Status             string // ACTIVE, CREATING, ...
	AuthenticationMode string // API, API_AND_CONFIG_MAP, CONFIG_MAP
	Endpoint           string
	CAData             []byte // PEM
}

// AWSAccess is the AWS side of accounts and EKS access, implemented by
// eksaccess. Every call acts through the customer's role assumed with the
// team's ExternalId. Failures are *Error with these reasons:
// assume_role_denied, external_id_not_enforced, stack_not_found,
// access_entry_conflict, aws_unavailable (throttling, network, 5xx: retry).
type AWSAccess interface {
	// VerifyRole checks the ExternalId as AWS recommends: the role can be
	// assumed with the team's ExternalId, and not without one nor with a
	// wrong one (else external_id_not_enforced).
	VerifyRole(ctx context.Context, roleARN, externalID string) error
	// DescribeStack reads the customer's stack through the role.
	DescribeStack(ctx context.Context, roleARN, externalID, stackARN string) (StackFacts, error)
	// DescribeCluster reads an EKS cluster of the account.
	DescribeCluster(ctx context.Context, a Account, externalID, region, name string) (EKSCluster, error)
	// GrantAccess gives the role access to the cluster at c.AccessLevel: an
	// access entry (created unless one fit for it exists; created reports
	// which) and the level's access policy (ClusterAdmin for the cluster, or
	// Edit in c.Namespaces).
	GrantAccess(ctx context.Context, a Account, externalID string, c Cluster) (created bool, err error)
	// RevokeAccess removes Kukie's policies from the cluster and deletes the
	// access entry when Kukie created it.
	RevokeAccess(ctx context.Context, a Account, externalID string, c Cluster) error
}

// AccountStore persists accounts. Methods are scoped to a team; another
// team's account is ENOTFOUND with reason account_not_found.
type AccountStore interface {
	// CreateAccount inserts a; the same (partition, aws_account_id) in any
	// team is ECONFLICT with reason aws_account_in_use.
	CreateAccount(ctx context.Context, a Account, now time.Time) (Account, error)
	ListAccounts(ctx context.Context, teamID string) ([]Account, error)
	GetAccount(ctx context.Context, teamID, id string) (Account, error)
	SetAccountState(ctx context.Context, teamID, id string, state AccountState, reason string, now time.Time) (Account, error)
	// DeleteAccount removes the account unless a cluster still uses it
	// (deleted=false then).
	DeleteAccount(ctx context.Context, teamID, id string) (deleted bool, err error)
}

// ErrAccountNotFound is the error for an account id the team does not have.
func ErrAccountNotFound() error {
	return ReasonError(ENOTFOUND, ReasonAccountNotFound, "The AWS account is not connected to your team.")
}

// RoleARN is a parsed IAM role ARN: arn:<partition>:iam::<account>:role/<path/>name.
type RoleARN struct {
	Partition, AccountID, Name string
}

// StackARN is a parsed CloudFormation stack ARN:
// arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<id>.
type StackARN struct {
	Partition, Region, AccountID, Name string
}

var (
	awsAccountID = regexp.MustCompile(`^[0-9]{12}$`)
	awsPartition = regexp.MustCompile(`^aws(-[a-z]+)*$`)
	awsRegion    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	// IAM role names and path segments: [\w+=,.@-], names up to 64.
	iamName = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)
	iamPath = regexp.MustCompile(`^[\w+=,.@/-]*$`)
	// Stack names: a letter, then letters, digits and hyphens, up to 128.
	stackName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,127}$`)
)

// ParseRoleARN checks an IAM role ARN (paths allowed).
func ParseRoleARN(s string) (RoleARN, bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" || parts[3] != "" ||
		!awsPartition.MatchString(parts[1]) || !awsAccountID.MatchString(parts[4]) {
		return RoleARN{}, false
	}
	resource, ok := strings.CutPrefix(parts[5], "role/")
	if !ok || len(s) > 2048 {
		return RoleARN{}, false
	}
	i := strings.LastIndex(resource, "/")
	path, name := resource[:i+1], resource[i+1:]
	if !iamName.MatchString(name) || !iamPath.MatchString(path) || strings.Contains(path, "//") {
		return RoleARN{}, false
	}
	return RoleARN{Partition: parts[1], AccountID: parts[4], Name: name}, true
}

// ParseStackARN checks a CloudFormation stack ARN.
func ParseStackARN(s string) (StackARN, bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "cloudformation" || !awsPartition.MatchString(parts[1]) ||
		!awsRegion.MatchString(parts[3]) || !awsAccountID.MatchString(parts[4]) || len(s) > 2048 {
		return StackARN{}, false
	}
	segments := strings.Split(parts[5], "/")
	if len(segments) != 3 || segments[0] != "stack" || !stackName.MatchString(segments[1]) || segments[2] == "" {
		return StackARN{}, false
	}
	return StackARN{Partition: parts[1], Region: parts[3], AccountID: parts[4], Name: segments[1]}, true
}

// ValidRegion reports whether s looks like an AWS region (us-east-1).
func ValidRegion(s string) bool { return awsRegion.MatchString(s) }

// ErrAWSUnavailable is the answer when AWS cannot be used: not configured
// on this server, or throttling, network errors and 5xx from AWS.
func ErrAWSUnavailable() error {
	return ReasonError(EUNAVAILABLE, ReasonAWSUnavailable, "AWS cannot be reached from Kukie right now; try again later.")
}

// Accounts is the AWS account use case: connecting a customer's account
// through the role its stack created, and reading the team's accounts.
type Accounts struct {
	Store AccountStore
	Teams TeamStore
	// AWS is nil when the server has no AWS configuration: the routes then
	// answer aws_unavailable and static clusters keep working.
	AWS AWSAccess
	// ServiceAccountID returns the AWS account of the service's own
	// identity, which the customer's role trusts, or why it cannot be
	// known now (STS failing); nil when AWS is not configured.
	ServiceAccountID func(ctx context.Context) (string, error)
	// Registrations removes the account's clusters when it is disconnected.
	Registrations *Registrations
	// Switches records a level chosen at onboarding and confirms the SNS
	// subscriptions that arrived before the account listed their topic
	// (nil: neither).
	Switches *Switches
	Now      func() time.Time
}

// Connect verifies the role (the ExternalId enforced), reads the stack and
// stores the account. Nothing is stored when a check fails. level, when not
// "", is the level the admin chose at onboarding (see Switches.ChooseLevel).
func (s *Accounts) Connect(ctx context.Context, p Principal, roleARN, stackARN string, level AccessLevel) (Account, error) {
	var v ValidationErrors
	if level != "" && level != AccessFull && level != AccessLimited {
		v.Add("access_level", "must be full or limited when given")
	}
	role, roleOK := ParseRoleARN(roleARN)
	if !roleOK {
		v.Add("role_arn", "must be an IAM role ARN such as arn:aws:iam::123456789012:role/kukie-access")
	}
	stack, stackOK := ParseStackARN(stackARN)
	if !stackOK {
		v.Add("stack_arn", "must be a CloudFormation stack ARN such as arn:aws:cloudformation:us-east-1:123456789012:stack/kukie-access/<id>")
	}
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	if role.AccountID != stack.AccountID || role.Partition != stack.Partition {
		return Account{}, &Error{Code: EVALIDATION, Reason: "stack_account_mismatch",
			Message: "The stack and the role belong to different AWS accounts; use the role the stack created.",
			Fields:  []FieldError{{Field: "stack_arn", Message: "must be in the role's account (" + role.AccountID + ")"}}}
	}
	if s.AWS == nil {
		return Account{}, ErrAWSUnavailable()
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	team, err := s.Teams.EnsureTeam(ctx, p.TeamID, NewExternalID(), now)
	if err != nil {
		return Account{}, err
	}
	if err := s.AWS.VerifyRole(ctx, roleARN, team.ExternalID); err != nil {
		return Account{}, err
	}
	facts, err := s.AWS.DescribeStack(ctx, roleARN, team.ExternalID, stackARN)
	if err != nil {
		return Account{}, err
	}
	id, err := newResourceID()
	if err != nil {
		return Account{}, err
	}
	a := Account{ID: id, TeamID: p.TeamID, AWSAccountID: role.AccountID, Partition: role.Partition,
		RoleARN: roleARN, StackARN: stackARN, AccessLevel: facts.AccessLevel, State: AccountActive,
		TemplateVersion: facts.TemplateVersion, AllowedNamespaces: facts.AllowedNamespaces,
		NotificationARNs: facts.NotificationARNs, CreatedAt: now, UpdatedAt: now}
	if a.AllowedNamespaces == nil {
		a.AllowedNamespaces = []string{}
	}
	if facts.ConfirmationRequired {
		a.State, a.StateReason = AccountConfirmationRequired, facts.Reason
	}
	if a, err = s.Store.CreateAccount(ctx, a, now); err != nil {
		return a, err
	}
	if s.Switches == nil {
		return a, nil
	}
	if level != "" && s.Switches.Trigger != nil {
		// The choice starts a reconcile, which applies it (a v4 account's
		// FULL stack widens only with full chosen).
		if a, err = s.Switches.Trigger.Choose(ctx, p.TeamID, a.ID, level, now); err != nil {
			return a, err
		}
	}
	s.Switches.ConfirmTopics(ctx, a)
	return a, nil
}

// List returns the team's accounts.
func (s *Accounts) List(ctx context.Context, p Principal) ([]Account, error) {
	as, err := s.Store.ListAccounts(ctx, p.TeamID)
	if as == nil {
		as = []Account{}
	}
	return as, err
}

// Get returns one of the team's accounts.
func (s *Accounts) Get(ctx context.Context, p Principal, id string) (Account, error) {
	if id == "" || len(id) > maxIDLength {
		return Account{}, ErrAccountNotFound()
	}
	return s.Store.GetAccount(ctx, p.TeamID, id)
}

// newResourceID returns a fresh, URL-safe id for a server-made resource.
func newResourceID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", WrapError(EINTERNAL, "generate id", err)
	}
	return id.String(), nil
}

// Onboarding returns what a team needs to create the customer stack: its
// ExternalId, the template's parameters and the levels described by what
// the role can do.
func (s *Accounts) Onboarding(ctx context.Context, p Principal) (Onboarding, error) {
	team, err := s.Teams.EnsureTeam(ctx, p.TeamID, NewExternalID(), s.Now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return Onboarding{}, err
	}
	serviceAccount := ""
	if s.ServiceAccountID != nil {
		// A template without the account to trust would make a role no
		// one can assume: no answer beats that one.
		if serviceAccount, err = s.ServiceAccountID(ctx); err != nil || serviceAccount == "" {
			return Onboarding{}, &Error{Code: EUNAVAILABLE, Reason: ReasonAWSUnavailable, Err: err,
				Message: "Kukie cannot read its own AWS account from STS right now, which the template needs; try again later."}
		}
	}
	return NewOnboarding(team, serviceAccount), nil
}

// Remove disconnects an account: it is marked deleting, each of its
// clusters is removed by a job (Kukie's access first), and the account row
// goes with the last of them (at once when it has none).
func (s *Accounts) Remove(ctx context.Context, p Principal, id string) (Account, error) {
	a, err := s.Get(ctx, p, id)
	if err != nil {
		return a, err
	}
	if s.AWS == nil || s.Registrations == nil || s.Registrations.Jobs == nil {
		return a, ErrAWSUnavailable()
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	if a, err = s.Store.SetAccountState(ctx, p.TeamID, id, AccountDeleting, "", now); err != nil {
		return a, err
	}
	clusters, err := s.Registrations.Clusters.ListClusters(ctx, p.TeamID)
	if err != nil {
		return a, err
	}
	for _, c := range clusters {
		if c.AccountID != id {
			continue
		}
		if c.AccessState != AccessDeleting {
			if _, err := s.Registrations.setAccess(ctx, c, AccessDeleting, "", c.EntryCreated); err != nil {
				return a, err
			}
		}
		if err := s.Registrations.Jobs.EnqueueRemoval(ctx, c.TeamID, c.ID); err != nil {
			return a, err
		}
	}
	if _, err := s.Store.DeleteAccount(ctx, p.TeamID, id); err != nil {
		return a, err
	}
	return a, nil
}
