// Package jwtauth verifies the bearer JWTs of the public API and turns them into
// service.Principal values. It uses lestrrat-go/jwx: a maintained JOSE
// implementation with a JWKS cache, so signature checks, claim validation
// and key refresh are not written by hand here.
package jwtauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/kukie/gitops-server/service"
)

// ClockSkew is how far exp and nbf may be off from the server's clock.
const ClockSkew = 60 * time.Second

// MinHS256SecretBytes is the shortest HS256 secret accepted (RFC 7518 §3.2:
// a key at least as long as the hash output).
const MinHS256SecretBytes = 32

// Verifier checks tokens for one configuration (HS256 secret or JWKS URL).
type Verifier struct {
	keyOption jwt.ParseOption
	validate  []jwt.ParseOption
	now       func() time.Time
}

var _ service.TokenVerifier = (*Verifier)(nil)

func newVerifier(key jwt.ParseOption, issuer, audience string, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	opts := []jwt.ParseOption{
		jwt.WithValidate(true),
		jwt.WithAcceptableSkew(ClockSkew),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithRequiredClaim(jwt.SubjectKey),
		jwt.WithClock(jwt.ClockFunc(now)),
	}
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	return &Verifier{keyOption: key, validate: opts, now: now}
}

// NewHS256 returns a verifier for tokens signed with HS256 and secret. Issuer
// and audience are checked when not empty.
func NewHS256(secret []byte, issuer, audience string, now func() time.Time) (*Verifier, error) {
	if len(secret) < MinHS256SecretBytes {
		return nil, fmt.Errorf("HS256 secret must be at least %d bytes", MinHS256SecretBytes)
	}
	return newVerifier(jwt.WithKey(jwa.HS256(), secret), issuer, audience, now), nil
}

// NewJWKS returns a verifier for RS256 and ES256 tokens whose keys come from
// the JWKS at url. Keys are cached and refreshed in the background, and
// fetched again (at most every 30 s) when a token names an unknown key id.
// It does not wait for the first fetch: until keys arrive, Verify answers
// EUNAVAILABLE. The background refresh stops when ctx ends.
func NewJWKS(ctx context.Context, url, issuer, audience string, now func() time.Time) (*Verifier, error) {
	cache, err := jwk.NewCache(ctx, httprc.NewClient())
	if err != nil {
		return nil, fmt.Errorf("start JWKS cache: %w", err)
	}
	if err := cache.Register(ctx, url, jwk.WithWaitReady(false),
		jwk.WithMinInterval(5*time.Minute), jwk.WithMaxInterval(time.Hour)); err != nil {
		return nil, fmt.Errorf("register JWKS URL: %w", err)
	}
	kp := &jwksKeys{cache: cache, url: url, now: now}
	if kp.now == nil {
		kp.now = time.Now
	}
	return newVerifier(jwt.WithKeyProvider(kp), issuer, audience, now), nil
}

// Verify checks the token's signature and claims and returns its principal.
func (v *Verifier) Verify(ctx context.Context, token string) (service.Principal, error) {
	opts := append([]jwt.ParseOption{v.keyOption, jwt.WithContext(ctx)}, v.validate...)
	tok, err := jwt.ParseString(token, opts...)
	if err != nil {
		var unavailable *keysUnavailableError
		if errors.As(err, &unavailable) {
			return service.Principal{}, service.WrapError(service.EUNAVAILABLE,
				"The keys to verify tokens are not available yet.", err)
		}
		return service.Principal{}, unauthenticated(err)
	}
	var p service.Principal
	p.UserID, _ = tok.Subject()
	var team any
	if err := tok.Get("team", &team); err != nil {
		return p, unauthenticated(errors.New(`missing "team" claim`))
	}
	teamID, ok := team.(string)
	if !ok || strings.TrimSpace(teamID) == "" || strings.TrimSpace(p.UserID) == "" {
		return p, unauthenticated(errors.New(`"team" and "sub" must be non-empty strings`))
	}
	if len(teamID) > 256 || len(p.UserID) > 256 || strings.ContainsRune(teamID+p.UserID, 0) {
		return p, unauthenticated(errors.New(`"team" or "sub" is too long or holds NUL`))
	}
	p.TeamID = teamID
	var roles any
	if tok.Has("roles") {
		if err := tok.Get("roles", &roles); err != nil {
			return p, unauthenticated(err)
		}
		list, ok := roles.([]any)
		if !ok {
			return p, unauthenticated(errors.New(`"roles" must be an array of strings`))
		}
		for _, r := range list {
			s, ok := r.(string)
			if !ok {
				return p, unauthenticated(errors.New(`"roles" must be an array of strings`))
			}
			switch role := service.Role(s); role {
			case service.RoleMember, service.RoleAdmin, service.RoleAgent:
				p.Roles = append(p.Roles, role)
			}
		}
	}
	return p, nil
}

func unauthenticated(err error) error {
	return service.WrapError(service.EUNAUTHENTICATED, "The bearer token is missing, invalid or expired.", err)
}

// keysUnavailableError means the JWKS has not been fetched successfully yet.
type keysUnavailableError struct{ err error }

func (e *keysUnavailableError) Error() string { return "JWKS unavailable: " + e.err.Error() }
func (e *keysUnavailableError) Unwrap() error { return e.err }

// jwksKeys offers jwx the JWKS keys that fit a token: its header must say
// RS256 or ES256, and the key must match its kid, its algorithm and its type.
// The token's header never widens what the key allows.
type jwksKeys struct {
	cache *jwk.Cache
	url   string
	now   func() time.Time

	mu          sync.Mutex
	lastRefresh time.Time
}

func (k *jwksKeys) FetchKeys(ctx context.Context, sink jws.KeySink, sig *jws.Signature, _ *jws.Message) error {
	h := sig.ProtectedHeaders()
	alg, ok := h.Algorithm()
	if !ok || (alg != jwa.RS256() && alg != jwa.ES256()) {
		return fmt.Errorf("algorithm %q is not accepted (RS256 or ES256 only)", alg.String())
	}
	kid, _ := h.KeyID()
	set, err := k.cache.Lookup(ctx, k.url)
	if err != nil {
		return &keysUnavailableError{err: err}
	}
	if _, found := set.LookupKeyID(kid); kid != "" && !found && k.mayRefresh() {
		if fresh, err := k.cache.Refresh(ctx, k.url); err == nil {
			set = fresh
		}
	}
	for i := 0; i < set.Len(); i++ {
		key, _ := set.Key(i)
		if keyID, _ := key.KeyID(); kid != "" && keyID != kid {
			continue
		}
		if keyAlg, ok := key.Algorithm(); ok && keyAlg.String() != alg.String() {
			continue
		}
		if use, ok := key.KeyUsage(); ok && use != "sig" {
			continue
		}
		if (alg == jwa.RS256()) != (key.KeyType() == jwa.RSA()) {
			continue
		}
		sink.Key(alg, key)
	}
	return nil
}

// mayRefresh rate-limits refreshes triggered by unknown key ids, so tokens
// with random kids cannot make the server hammer the identity provider.
func (k *jwksKeys) mayRefresh() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := k.now(); now.Sub(k.lastRefresh) >= 30*time.Second {
		k.lastRefresh = now
		return true
	}
	return false
}
