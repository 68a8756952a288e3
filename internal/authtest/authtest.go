// Package authtest mints JWTs for tests and local development: HS256 tokens
// from a shared secret, and RS256/ES256 tokens from an Issuer that serves
// its public keys as a JWKS over HTTP, like a real identity provider.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Claims describe a token. Zero Exp means one hour from now; NoExp leaves
// exp out entirely. Extra claims are added as given.
type Claims struct {
	Sub, Team string
	Roles     []string
	Issuer    string
	Audience  string
	Exp, Nbf  time.Time
	NoExp     bool
	Extra     map[string]any
}

func (c Claims) build() (jwt.Token, error) {
	b := jwt.NewBuilder()
	if c.Sub != "" {
		b.Subject(c.Sub)
	}
	if c.Team != "" {
		b.Claim("team", c.Team)
	}
	if c.Roles != nil {
		b.Claim("roles", c.Roles)
	}
	if c.Issuer != "" {
		b.Issuer(c.Issuer)
	}
	if c.Audience != "" {
		b.Audience([]string{c.Audience})
	}
	if !c.NoExp {
		exp := c.Exp
		if exp.IsZero() {
			exp = time.Now().Add(time.Hour)
		}
		b.Expiration(exp)
	}
	if !c.Nbf.IsZero() {
		b.NotBefore(c.Nbf)
	}
	b.IssuedAt(time.Now())
	for k, v := range c.Extra {
		b.Claim(k, v)
	}
	return b.Build()
}

// HS256 returns a token signed with secret.
func HS256(secret []byte, c Claims) (string, error) {
	tok, err := c.build()
	if err != nil {
		return "", err
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256(), secret))
	return string(signed), err
}

// MustHS256 is HS256 for tests.
func MustHS256(tb testing.TB, secret []byte, c Claims) string {
	tb.Helper()
	s, err := HS256(secret, c)
	if err != nil {
		tb.Fatalf("authtest: sign: %v", err)
	}
	return s
}

// Unsigned returns an `alg: none` token carrying c's claims.
func Unsigned(tb testing.TB, c Claims) string {
	tb.Helper()
	tok, err := c.build()
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := json.Marshal(tok)
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
}

// Issuer is an identity provider for tests: RSA and EC P-256 keys whose
// public halves it serves at JWKSURL.
type Issuer struct {
	rsaKey  jwk.Key
	ecKey   jwk.Key
	server  *httptest.Server
	fetches atomic.Int64
}

// MustNewIssuer starts an Issuer; its JWKS server stops when the test ends.
func MustNewIssuer(tb testing.TB) *Issuer {
	tb.Helper()
	rsaRaw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	ecRaw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	iss := &Issuer{}
	if iss.rsaKey, err = privateJWK(rsaRaw, "rsa-1", jwa.RS256()); err != nil {
		tb.Fatal(err)
	}
	if iss.ecKey, err = privateJWK(ecRaw, "ec-1", jwa.ES256()); err != nil {
		tb.Fatal(err)
	}
	set := jwk.NewSet()
	for _, k := range []jwk.Key{iss.rsaKey, iss.ecKey} {
		pub, err := k.PublicKey()
		if err != nil {
			tb.Fatal(err)
		}
		if err := set.AddKey(pub); err != nil {
			tb.Fatal(err)
		}
	}
	body, err := json.Marshal(set)
	if err != nil {
		tb.Fatal(err)
	}
	iss.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(iss.server.Close)
	return iss
}

func privateJWK(raw any, kid string, alg jwa.SignatureAlgorithm) (jwk.Key, error) {
	k, err := jwk.Import(raw)
	if err != nil {
		return nil, err
	}
	if err := k.Set(jwk.KeyIDKey, kid); err != nil {
		return nil, err
	}
	if err := k.Set(jwk.AlgorithmKey, alg); err != nil {
		return nil, err
	}
	return k, nil
}

// JWKSURL is where the issuer serves its public keys.
func (i *Issuer) JWKSURL() string { return i.server.URL + "/jwks.json" }

// Fetches counts JWKS requests served so far.
func (i *Issuer) Fetches() int64 { return i.fetches.Load() }

// RS256 returns a token signed with the issuer's RSA key (kid rsa-1).
func (i *Issuer) RS256(tb testing.TB, c Claims) string { return i.sign(tb, c, jwa.RS256(), i.rsaKey) }

// ES256 returns a token signed with the issuer's EC key (kid ec-1).
func (i *Issuer) ES256(tb testing.TB, c Claims) string { return i.sign(tb, c, jwa.ES256(), i.ecKey) }

func (i *Issuer) sign(tb testing.TB, c Claims, alg jwa.SignatureAlgorithm, key jwk.Key) string {
	tb.Helper()
	tok, err := c.build()
	if err != nil {
		tb.Fatal(err)
	}
	kid, _ := key.KeyID()
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.KeyIDKey, kid)
	signed, err := jwt.Sign(tok, jwt.WithKey(alg, key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		tb.Fatalf("authtest: sign: %v", err)
	}
	return string(signed)
}
