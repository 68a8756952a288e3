package service

import (
	"context"
	"slices"
)

// Role is a capability a token grants. Unknown roles in a token are ignored.
type Role string

// Roles a token may carry in its "roles" claim.
const (
	RoleMember Role = "member"
	RoleAdmin  Role = "admin"
	RoleAgent  Role = "agent"
)

// Principal is the verified caller: the user (the token's sub), the team it
// acts in, and its roles. An agent token carries the user it acts for in
// UserID and RoleAgent in Roles.
type Principal struct {
	UserID string
	TeamID string
	Roles  []Role
}

// Has reports whether the principal carries role r.
func (p Principal) Has(r Role) bool { return slices.Contains(p.Roles, r) }

// IsAgent reports whether the caller is the agent acting for a user.
func (p Principal) IsAgent() bool { return p.Has(RoleAgent) }

// TokenVerifier turns a bearer token into a Principal. It returns an
// EUNAUTHENTICATED *Error for any token that must be refused, and
// EUNAVAILABLE when the keys to check it cannot be obtained.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (Principal, error)
}

type principalKey struct{}

// NewContextWithPrincipal returns a copy of ctx carrying p.
func NewContextWithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the principal stored in ctx, if any.
func PrincipalFromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
