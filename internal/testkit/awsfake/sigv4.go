package awsfake

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// credential is a key pair the fake issued, with the principal it stands for.
type credential struct {
	accessKeyID, secret, sessionToken string
	expires                           time.Time // zero for the base identity
	account                           string
	// principalARN is the role ARN (with its path) of a session, or the
	// base identity's user ARN.
	principalARN string
	sessionARN   string // arn:aws:sts::<account>:assumed-role/<name>/<session>
	userID       string
}

// callerARN is the ARN GetCallerIdentity reports.
func (c *credential) callerARN() string {
	if c.sessionARN != "" {
		return c.sessionARN
	}
	return c.principalARN
}

func (c *credential) awsCredentials() aws.Credentials {
	return aws.Credentials{AccessKeyID: c.accessKeyID, SecretAccessKey: c.secret, SessionToken: c.sessionToken}
}

// authFailure is why a request's signature was refused; the service handler
// turns kind into its own error code.
type authFailure struct {
	kind authKind
	msg  string
}

type authKind int

const (
	authMissing   authKind = iota // no or malformed Authorization
	authUnknown                   // unknown access key or wrong session token
	authExpired                   // credentials past their expiry
	authSignature                 // the signature does not match
	authTooOld                    // a presigned URL past its lifetime
)

func (f *authFailure) Error() string { return f.msg }

const (
	timeFormat  = "20060102T150405Z"
	msgBadToken = "The security token included in the request is invalid."
	msgBadSig   = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	msgExpired = "The security token included in the request is expired"
)

// scope is a parsed SigV4 credential: <key>/<date>/<region>/<service>/aws4_request.
type scope struct {
	accessKeyID, date, region, service string
}

func parseScope(s string) (scope, bool) {
	p := strings.Split(s, "/")
	if len(p) != 5 || p[4] != "aws4_request" || p[0] == "" || p[2] == "" {
		return scope{}, false
	}
	return scope{accessKeyID: p[0], date: p[1], region: p[2], service: p[3]}, true
}

// lookup finds the credential for an access key and checks the session
// token and expiry.
func (a *AWS) lookup(accessKeyID, sessionToken string) (*credential, *authFailure) {
	a.mu.Lock()
	c, ok := a.creds[accessKeyID]
	now := a.now()
	a.mu.Unlock()
	if !ok || c.sessionToken != sessionToken {
		return nil, &authFailure{authUnknown, msgBadToken}
	}
	if !c.expires.IsZero() && !now.Before(c.expires) {
		return nil, &authFailure{authExpired, msgExpired}
	}
	return c, nil
}

// verifyHeaderSigned authenticates a request signed in its Authorization
// header for service: it re-signs a copy carrying only the headers the client
// signed, with the secret remembered for the access key and the request's
// X-Amz-Date, and compares signatures. It returns the credential and the
// signing region.
func (a *AWS) verifyHeaderSigned(r *http.Request, body []byte, service string) (*credential, string, *authFailure) {
	auth := r.Header.Get("Authorization")
	const alg = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, alg) {
		return nil, "", &authFailure{authMissing, "Missing Authentication Token"}
	}
	fields := authFields(auth)
	sc, ok := parseScope(fields["Credential"])
	if !ok || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return nil, "", &authFailure{authMissing, "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters."}
	}
	c, fail := a.lookup(sc.accessKeyID, r.Header.Get("X-Amz-Security-Token"))
	if fail != nil {
		return nil, "", fail
	}
	if sc.service != service {
		return nil, "", &authFailure{authSignature, fmt.Sprintf("Credential should be scoped to correct service: '%s'.", service)}
	}
	signedAt, err := time.Parse(timeFormat, r.Header.Get("X-Amz-Date"))
	if err != nil || signedAt.Format("20060102") != sc.date {
		return nil, "", &authFailure{authSignature, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP"}
	}

	u := &url.URL{Scheme: "http", Host: r.Host, Opaque: "//" + r.Host + r.URL.EscapedPath(), RawQuery: r.URL.RawQuery}
	re, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return nil, "", &authFailure{authSignature, msgBadSig}
	}
	re.URL = u
	re.Host = r.Host
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			re.ContentLength = r.ContentLength
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), c.awsCredentials(), re, hex.EncodeToString(sum[:]),
		sc.service, sc.region, signedAt); err != nil {
		return nil, "", &authFailure{authSignature, msgBadSig}
	}
	ours := authFields(re.Header.Get("Authorization"))
	if ours["SignedHeaders"] != fields["SignedHeaders"] || !hmac.Equal([]byte(ours["Signature"]), []byte(fields["Signature"])) {
		return nil, "", &authFailure{authSignature, msgBadSig}
	}
	return c, sc.region, nil
}

// authFields splits "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…".
func authFields(auth string) map[string]string {
	fields := map[string]string{}
	_, rest, _ := strings.Cut(auth, " ")
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	return fields
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// randomID is n random characters of [A-Z2-7], like the tail of an access key id.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// randomSecret is 40 random characters, like a secret access key.
func randomSecret() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, 40)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
