package sns

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	mathrand "math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

// maxFuzzInput caps what a fuzz target of this package reads: SNS bodies
// are small, and larger inputs only slow the fuzzer down.
const maxFuzzInput = 64 << 10

// fixedSigningKey is an RSA key derived from a fixed seed, so that the
// signatures in the committed corpus (testdata/fuzz/FuzzVerifyMessage) stay
// valid from run to run. crypto/rsa ignores its random source since Go
// 1.26, hence the primes are searched here.
func fixedSigningKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	rng := mathrand.NewChaCha8([32]byte{'k', 'u', 'k', 'i', 'e', '-', 's', 'n', 's', '-', 'f', 'u', 'z', 'z'})
	prime := func() *big.Int {
		buf := make([]byte, 128)
		for {
			_, _ = rng.Read(buf)
			buf[0] |= 0xc0 // two top bits set: p*q has exactly 2048 bits
			buf[len(buf)-1] |= 1
			if p := new(big.Int).SetBytes(buf); p.ProbablyPrime(20) {
				return p
			}
		}
	}
	one, e := big.NewInt(1), big.NewInt(65537)
	for {
		p, q := prime(), prime()
		phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
		d := new(big.Int).ModInverse(e, phi)
		if d == nil || p.Cmp(q) == 0 {
			continue
		}
		key := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: new(big.Int).Mul(p, q), E: 65537}, D: d, Primes: []*big.Int{p, q}}
		key.Precompute()
		if err := key.Validate(); err != nil {
			tb.Fatalf("derived signing key: %v", err)
		}
		return key
	}
}

// noNetwork fails every request: the fuzz verifier must never reach out.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in fuzz tests")
}

// verifyFixture is a Verifier that knows one signing certificate (for
// fixedSigningKey, at testCertURL, valid around testNow) and fetches
// nothing, with the messages signed for it.
type verifyFixture struct {
	key      *rsa.PrivateKey
	verifier *Verifier
	// signed holds the signed fields of every message signed with key, by
	// signedKey.
	signed map[string]bool
	bodies [][]byte
}

func mustVerifyFixture(tb testing.TB) *verifyFixture {
	tb.Helper()
	fx := &verifyFixture{key: fixedSigningKey(tb), signed: map[string]bool{}}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore:    testNow.Add(-24 * time.Hour),
		NotAfter:     testNow.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &fx.key.PublicKey, fx.key)
	if err != nil {
		tb.Fatalf("signing certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := New(Options{Now: func() time.Time { return testNow }})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	v.client = &http.Client{Transport: noNetwork{}}
	v.cache.Add(testCertURL, cert)
	fx.verifier = v

	noSubject := notification(testNow)
	noSubject.Subject = ""
	failed := notification(testNow.Add(-2 * time.Minute))
	failed.MessageID = "0f4c1a4e-8d3b-4c55-9e0a-3a6c2b7d9e11"
	failed.Message = strings.NewReplacer("UPDATE_COMPLETE", "UPDATE_FAILED", "ResourceStatusReason=''",
		`ResourceStatusReason='Resource handler returned message: "Access denied" (HandlerErrorCode: AccessDenied)'`).Replace(stackMessage)
	nonASCII := notification(testNow)
	nonASCII.Message = "StackName='kukie-é'\nResourceProperties='{\"Tags\":[{\"Key\":\"owner\",\"Value\":\"zoë\"}]}'\n"
	for _, m := range []Message{notification(testNow), noSubject, failed, nonASCII,
		confirmation(TypeSubscriptionConfirmation, testNow), confirmation(TypeUnsubscribeConfirmation, testNow)} {
		for _, version := range []string{SignatureVersion1, SignatureVersion2} {
			fx.bodies = append(fx.bodies, mustJSON(tb, fx.sign(tb, m, version)))
		}
	}
	return fx
}

// sign signs m with the fixture's key, as SNS does, and records its signed
// fields.
func (fx *verifyFixture) sign(tb testing.TB, m Message, version string) Message {
	tb.Helper()
	m.SignatureVersion = version
	text, err := StringToSign(m)
	if err != nil {
		tb.Fatalf("StringToSign: %v", err)
	}
	var hash crypto.Hash
	var digest []byte
	if version == SignatureVersion1 {
		sum := sha1.Sum(text)
		hash, digest = crypto.SHA1, sum[:]
	} else {
		sum := sha256.Sum256(text)
		hash, digest = crypto.SHA256, sum[:]
	}
	sig, err := rsa.SignPKCS1v15(nil, fx.key, hash, digest)
	if err != nil {
		tb.Fatalf("sign: %v", err)
	}
	m.Signature = base64.StdEncoding.EncodeToString(sig)
	fx.signed[signedKey(tb, m)] = true
	return m
}

// signedKey identifies m by its signature version and the name/value pairs
// of its signed fields, without the ambiguity of the string to sign.
func signedKey(tb testing.TB, m Message) string {
	tb.Helper()
	fields, err := signedFields(m)
	if err != nil {
		tb.Fatalf("signedFields: %v", err)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		tb.Fatal(err)
	}
	return m.SignatureVersion + " " + string(b)
}

// shiftSubjectIntoMessageID removes a notification's Subject and appends
// it, with its name, to MessageId: the string to sign stays the same.
func shiftSubjectIntoMessageID(tb testing.TB, body []byte) []byte {
	tb.Helper()
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	m.MessageID += "\nSubject\n" + m.Subject
	m.Subject = ""
	return mustJSON(tb, m)
}

// FuzzVerifyMessage parses a delivery body and verifies it against a fixed
// signing certificate: whatever the mutation, verification never panics
// and fails with one of the package's error kinds, and a message that
// verifies carries exactly the signed fields of a message the test signed
// (any change to a signed field, its version or the certificate URL fails
// it). Nothing is fetched.
func FuzzVerifyMessage(f *testing.F) {
	fx := mustVerifyFixture(f)
	for _, b := range fx.bodies {
		f.Add(b)
	}
	f.Add(shiftSubjectIntoMessageID(f, fx.bodies[0]))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > maxFuzzInput {
			return
		}
		m, err := ParseMessage(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseMessage error %v is not ErrMalformed", err)
			}
			return
		}
		err = fx.verifier.Verify(context.Background(), m)
		switch {
		case err == nil:
		case errors.Is(err, ErrMalformed), errors.Is(err, ErrRejected):
			return
		case errors.Is(err, ErrTransient) && m.SigningCertURL != testCertURL:
			return // the fetch the fixture refuses
		default:
			t.Fatalf("Verify error %v is not one of the package's kinds", err)
		}
		if !fx.signed[signedKey(t, m)] {
			t.Fatalf("a message whose signed fields were changed verifies: %+v", m)
		}
		if m.SigningCertURL != testCertURL {
			t.Fatalf("verified with a certificate from %q", m.SigningCertURL)
		}
	})
}

// TestVerifyRejectsShiftedFields: SNS's string to sign joins "name\nvalue\n"
// pairs, so a newline inside a value after Message could move text from one
// signed field to another (here Subject into MessageId, which keys
// duplicate detection) and keep the signature valid. Only Message may
// hold a newline.
func TestVerifyRejectsShiftedFields(t *testing.T) {
	fx := mustVerifyFixture(t)
	m, err := ParseMessage(shiftSubjectIntoMessageID(t, fx.bodies[0]))
	if err == nil {
		err = fx.verifier.Verify(t.Context(), m)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("shifted Subject: err = %v, want ErrMalformed", err)
	}
	for _, body := range fx.bodies {
		m, err := ParseMessage(body)
		if err != nil {
			t.Fatalf("ParseMessage: %v", err)
		}
		if err := fx.verifier.Verify(t.Context(), m); err != nil {
			t.Errorf("Verify(%s) = %v, want nil", strings.SplitN(string(body), ",", 2)[0], err)
		}
	}
}
