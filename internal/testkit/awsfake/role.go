package awsfake

import (
	"path"
	"slices"
	"strings"
	"time"
)

// TrustMode is how a role's trust policy conditions sts:ExternalId.
type TrustMode int

// Trust modes, with IAM's semantics for a request without an ExternalId: a
// StringLike condition on an absent key does not match, so TrustWildcard
// refuses AssumeRole without one and accepts any non-empty value.
const (
	// TrustPinned is the shipped template: StringEquals sts:ExternalId = Trust.ExternalID.
	TrustPinned TrustMode = iota
	// TrustNone has no condition: any ExternalId, or none, is accepted.
	TrustNone
	// TrustWildcard is StringLike sts:ExternalId "*": any value is accepted, absence is not.
	TrustWildcard
)

// Trust is a role's trust policy.
type Trust struct {
	Mode TrustMode
	// ExternalID is the pinned value (TrustPinned only).
	ExternalID string
	// Account is the trusted principal's account; empty means the service's
	// own account (the fake's Account).
	Account string
}

// Level is the customer template's AccessLevel branch, which decides the EKS
// actions the role may call.
type Level string

// Levels of the template. A role with an empty Level has no EKS permissions.
const (
	// LevelFull allows AssociateAccessPolicy only with AmazonEKSClusterAdminPolicy at cluster scope.
	LevelFull Level = "FULL"
	// LevelLimited allows AssociateAccessPolicy only with AmazonEKSEditPolicy at namespace
	// scope, every namespace matching an AllowedNamespaces pattern (ForAllValues:StringLike).
	LevelLimited Level = "LIMITED"
)

// Role is an IAM role in a customer account.
type Role struct {
	// ARN is arn:aws:iam::<account>:role/<path/>name; paths are allowed.
	ARN   string
	Trust Trust
	Level Level
	// AllowedNamespaces are the StringLike patterns of eks:namespaces (LevelLimited).
	AllowedNamespaces []string
	// StackARN, when set, is the only stack the role may describe (the shipped
	// template's statement); empty allows every stack in the role's account.
	StackARN string
	// Deny lists IAM actions ("eks:CreateAccessEntry") the role lacks although
	// its level grants them.
	Deny []string
	// MaxSessionDuration caps DurationSeconds (default 1 h, as IAM's default).
	MaxSessionDuration time.Duration

	id string // the role's unique id (AROA…), set by AddRole
}

// EKS actions every level branch of the template grants, besides
// AssociateAccessPolicy which carries conditions. DisassociateAccessPolicy is
// granted unconditionally so that a LIMITED role can remove ClusterAdmin (a
// downgrade) and a FULL role can remove Edit (an upgrade).
var levelActions = []string{
	"eks:DescribeCluster", "eks:CreateAccessEntry", "eks:DescribeAccessEntry", "eks:DeleteAccessEntry",
	"eks:ListAssociatedAccessPolicies", "eks:DisassociateAccessPolicy",
}

// AddRole adds or replaces a role.
func (a *AWS) AddRole(r Role) {
	if _, ok := parseRoleARN(r.ARN); !ok {
		panic("awsfake: AddRole: not a role ARN: " + r.ARN)
	}
	r.AllowedNamespaces = slices.Clone(r.AllowedNamespaces)
	r.Deny = slices.Clone(r.Deny)
	if r.MaxSessionDuration == 0 {
		r.MaxSessionDuration = time.Hour
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r.id = "AROA" + randomID(17)
	if old, ok := a.roles[r.ARN]; ok {
		r.id = old.id
	}
	a.roles[r.ARN] = &r
}

// RemoveRole deletes a role (as deleting the customer's stack would). Its
// sessions keep authenticating until they expire, but are allowed nothing.
func (a *AWS) RemoveRole(arn string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.roles, arn)
}

// roleARN is a parsed IAM role ARN.
type roleARN struct {
	partition, account, path, name string
}

// parseRoleARN parses arn:<partition>:iam::<12 digits>:role/<path/>name.
func parseRoleARN(arn string) (roleARN, bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] != "iam" || parts[3] != "" ||
		!isAccountID(parts[4]) || !strings.HasPrefix(parts[5], "role/") {
		return roleARN{}, false
	}
	rest := strings.TrimPrefix(parts[5], "role/")
	dir, name := path.Split(rest)
	if name == "" {
		return roleARN{}, false
	}
	return roleARN{partition: parts[1], account: parts[4], path: "/" + dir, name: name}, true
}

func isAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// trustAllows applies a trust policy to an AssumeRole request from a
// principal in callerAccount with an ExternalId (present says whether the
// request carried one).
func trustAllows(t Trust, serviceAccount, callerAccount, externalID string, present bool) bool {
	trusted := t.Account
	if trusted == "" {
		trusted = serviceAccount
	}
	if callerAccount != trusted {
		return false
	}
	switch t.Mode {
	case TrustPinned:
		return present && externalID == t.ExternalID
	case TrustNone:
		return true
	case TrustWildcard:
		return present
	}
	return false
}

// accessRequest is what AssociateAccessPolicy's condition keys see.
type accessRequest struct {
	policyARN  string
	scopeType  string
	namespaces []string
}

// allows says whether role r may call an EKS action on a cluster in its own
// account; req is set for AssociateAccessPolicy.
func (r *Role) allows(action string, req *accessRequest) bool {
	if slices.Contains(r.Deny, action) {
		return false
	}
	if r.Level != LevelFull && r.Level != LevelLimited {
		return false
	}
	if slices.Contains(levelActions, action) {
		return true
	}
	if action != "eks:AssociateAccessPolicy" || req == nil {
		return false
	}
	partition := "aws"
	if p, ok := parseRoleARN(r.ARN); ok {
		partition = p.partition
	}
	switch r.Level {
	case LevelFull:
		return req.policyARN == PolicyARN(partition, PolicyClusterAdmin) && req.scopeType == "cluster"
	case LevelLimited:
		if req.policyARN != PolicyARN(partition, PolicyEdit) || req.scopeType != "namespace" {
			return false
		}
		// ForAllValues:StringLike: every requested value matches some pattern.
		for _, ns := range req.namespaces {
			if !slices.ContainsFunc(r.AllowedNamespaces, func(p string) bool { return StringLike(p, ns) }) {
				return false
			}
		}
		return true
	}
	return false
}

// StringLike reports whether s matches an IAM StringLike pattern: '*' any
// run of characters, '?' any single character, everything else literal.
func StringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if StringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && StringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && StringLike(pattern[1:], s[1:])
}
