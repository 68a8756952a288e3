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
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
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
	server  *httptest.Server
	fetches atomic.Int64

	mu     sync.Mutex
	rsaKey jwk.Key
	ecKey  jwk.Key
	jwks   []byte // the public keys served, old ones kept after a rotation
	served jwk.Set
}

// MustNewIssuer starts an Issuer with fresh keys (random key ids); its JWKS
// server stops when the test ends.
func MustNewIssuer(tb testing.TB) *Issuer {
	tb.Helper()
	iss := &Issuer{served: jwk.NewSet()}
	iss.Rotate(tb)
	ecRaw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	iss.ecKey = iss.mustServe(tb, ecRaw, "ec-"+randomID(), jwa.ES256())
	iss.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		iss.mu.Lock()
		body := iss.jwks
		iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(iss.server.Close)
	return iss
}

// Rotate makes a new RSA signing key (new kid) and adds its public half to
// the JWKS, keeping the old ones, as identity providers do.
func (i *Issuer) Rotate(tb testing.TB) {
	tb.Helper()
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	key := i.mustServe(tb, raw, "rsa-"+randomID(), jwa.RS256())
	i.mu.Lock()
	i.rsaKey = key
	i.mu.Unlock()
}

// mustServe wraps raw as a JWK and adds its public key to the JWKS.
func (i *Issuer) mustServe(tb testing.TB, raw any, kid string, alg jwa.SignatureAlgorithm) jwk.Key {
	tb.Helper()
	key, err := privateJWK(raw, kid, alg)
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := key.PublicKey()
	if err != nil {
		tb.Fatal(err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.served.AddKey(pub); err != nil {
		tb.Fatal(err)
	}
	if i.jwks, err = json.Marshal(i.served); err != nil {
		tb.Fatal(err)
	}
	return key
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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

// RS256 returns a token signed with the issuer's current RSA key.
func (i *Issuer) RS256(tb testing.TB, c Claims) string {
	i.mu.Lock()
	key := i.rsaKey
	i.mu.Unlock()
	return i.sign(tb, c, jwa.RS256(), key)
}

// ES256 returns a token signed with the issuer's EC key.
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
