package jwtauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/service"
)

var secret = []byte("0123456789abcdef0123456789abcdef-test")

func valid() authtest.Claims {
	return authtest.Claims{Sub: "user-1", Team: "team-a", Roles: []string{"member", "agent", "superuser"},
		Issuer: "https://id.example", Audience: "kukie"}
}

func TestHS256(t *testing.T) {
	v, err := jwtauth.NewHS256(secret, "https://id.example", "kukie", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("Valid", func(t *testing.T) {
		p, err := v.Verify(ctx, authtest.MustHS256(t, secret, valid()))
		if err != nil {
			t.Fatal(err)
		}
		want := service.Principal{UserID: "user-1", TeamID: "team-a", Roles: []service.Role{"member", "agent"}}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("principal (-want +got):\n%s", diff)
		}
	})
	t.Run("ExpiredWithinSkewAccepted", func(t *testing.T) {
		c := valid()
		c.Exp = time.Now().Add(-30 * time.Second)
		if _, err := v.Verify(ctx, authtest.MustHS256(t, secret, c)); err != nil {
			t.Fatalf("a token expired 30 s ago is inside the 60 s skew: %v", err)
		}
	})

	refused := map[string]string{}
	add := func(name string, mutate func(*authtest.Claims)) {
		c := valid()
		mutate(&c)
		refused[name] = authtest.MustHS256(t, secret, c)
	}
	add("Expired", func(c *authtest.Claims) { c.Exp = time.Now().Add(-2 * time.Minute) })
	add("NoExp", func(c *authtest.Claims) { c.NoExp = true })
	add("NotYetValid", func(c *authtest.Claims) { c.Nbf = time.Now().Add(5 * time.Minute) })
	add("WrongIssuer", func(c *authtest.Claims) { c.Issuer = "https://evil.example" })
	add("WrongAudience", func(c *authtest.Claims) { c.Audience = "other" })
	add("NoTeam", func(c *authtest.Claims) { c.Team = "" })
	add("NoSub", func(c *authtest.Claims) { c.Sub = "" })
	add("TeamNotString", func(c *authtest.Claims) { c.Team = ""; c.Extra = map[string]any{"team": 42} })
	add("RolesNotArray", func(c *authtest.Claims) { c.Roles = nil; c.Extra = map[string]any{"roles": "admin"} })
	refused["WrongSignature"] = authtest.MustHS256(t, []byte("another-secret-another-secret-xx!"), valid())
	refused["AlgNone"] = authtest.Unsigned(t, valid())
	refused["RS256InHS256Mode"] = authtest.MustNewIssuer(t).RS256(t, valid())
	refused["Garbage"] = "not.a.jwt"

	for name, token := range refused {
		t.Run("Err"+name, func(t *testing.T) {
			_, err := v.Verify(ctx, token)
			if got := service.ErrorCode(err); got != service.EUNAUTHENTICATED {
				t.Fatalf("code = %q (%v), want %q", got, err, service.EUNAUTHENTICATED)
			}
		})
	}
}

func TestNewHS256ShortSecret(t *testing.T) {
	if _, err := jwtauth.NewHS256([]byte("short"), "", "", nil); err == nil {
		t.Fatal("a 5-byte secret was accepted")
	}
}

// mustJWKSVerifier returns a verifier for iss whose keys have arrived (the
// first fetch happens in the background).
func mustJWKSVerifier(t *testing.T, iss *authtest.Issuer) *jwtauth.Verifier {
	t.Helper()
	v, err := jwtauth.NewJWKS(t.Context(), iss.JWKSURL(), "https://id.example", "kukie", nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := v.Verify(t.Context(), iss.RS256(t, valid()))
		if err == nil {
			return v
		}
		if service.ErrorCode(err) != service.EUNAVAILABLE || time.Now().After(deadline) {
			t.Fatalf("RS256 token refused: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestJWKS(t *testing.T) {
	iss := authtest.MustNewIssuer(t)
	v := mustJWKSVerifier(t, iss)
	ctx := t.Context()

	t.Run("ES256", func(t *testing.T) {
		p, err := v.Verify(ctx, iss.ES256(t, valid()))
		if err != nil {
			t.Fatal(err)
		}
		if p.UserID != "user-1" || p.TeamID != "team-a" {
			t.Errorf("principal = %+v", p)
		}
	})
	refused := map[string]string{
		"AlgNone":        authtest.Unsigned(t, valid()),
		"HS256":          authtest.MustHS256(t, secret, valid()),
		"OtherIssuerKey": authtest.MustNewIssuer(t).RS256(t, valid()),
	}
	for name, mutate := range map[string]func(*authtest.Claims){
		"WrongAudience": func(c *authtest.Claims) { c.Audience = "other" },
		"WrongIssuer":   func(c *authtest.Claims) { c.Issuer = "https://evil.example" },
		"NoExp":         func(c *authtest.Claims) { c.NoExp = true },
		"Expired":       func(c *authtest.Claims) { c.Exp = time.Now().Add(-2 * time.Minute) },
		"NotYetValid":   func(c *authtest.Claims) { c.Nbf = time.Now().Add(5 * time.Minute) },
	} {
		c := valid()
		mutate(&c)
		refused[name] = iss.ES256(t, c)
	}
	for name, token := range refused {
		t.Run("Err"+name, func(t *testing.T) {
			_, err := v.Verify(ctx, token)
			if got := service.ErrorCode(err); got != service.EUNAUTHENTICATED {
				t.Fatalf("code = %q (%v), want %q", got, err, service.EUNAUTHENTICATED)
			}
		})
	}
}

// TestJWKSKeyRotation: a token signed with a key the identity provider just
// added is accepted after one refresh, and tokens with unknown key ids
// cannot make the server fetch the JWKS more than once per 30 s.
func TestJWKSKeyRotation(t *testing.T) {
	iss := authtest.MustNewIssuer(t)
	v := mustJWKSVerifier(t, iss)
	iss.Rotate(t)
	before := iss.Fetches()
	if _, err := v.Verify(t.Context(), iss.RS256(t, valid())); err != nil {
		t.Fatalf("token signed with the rotated-in key: %v", err)
	}
	if got := iss.Fetches() - before; got != 1 {
		t.Errorf("rotation caused %d JWKS fetches, want 1", got)
	}
	stranger := authtest.MustNewIssuer(t) // its key ids are unknown to v
	before = iss.Fetches()
	for range 5 {
		if _, err := v.Verify(t.Context(), stranger.RS256(t, valid())); service.ErrorCode(err) != service.EUNAUTHENTICATED {
			t.Fatalf("token from an unknown key: %v", err)
		}
	}
	if got := iss.Fetches() - before; got != 0 {
		t.Errorf("5 tokens with unknown kids inside the 30 s window caused %d JWKS fetches, want 0", got)
	}
}

func TestJWKSUnavailable(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer down.Close()
	v, err := jwtauth.NewJWKS(t.Context(), down.URL, "https://id.example", "kukie", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(t.Context(), authtest.MustNewIssuer(t).RS256(t, valid()))
	if got := service.ErrorCode(err); got != service.EUNAVAILABLE {
		t.Fatalf("code = %q (%v), want %q while the JWKS cannot be fetched", got, err, service.EUNAVAILABLE)
	}
}
