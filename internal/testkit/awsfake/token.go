package awsfake

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TokenPrefix starts every EKS token: "k8s-aws-v1." + base64url (no padding)
// of a presigned STS GetCallerIdentity URL.
const TokenPrefix = "k8s-aws-v1."

// TokenLifetime is how long after its X-Amz-Date a token is accepted,
// whatever its X-Amz-Expires says (as the EKS authenticator does).
const TokenLifetime = 15 * time.Minute

// Errors VerifyToken wraps, for errors.Is.
var (
	// ErrTokenMalformed: not k8s-aws-v1., bad base64, not the STS host, a
	// query key outside the allowed set, a repeated key, wrong Action or
	// Version, X-Amz-Expires missing, or x-k8s-aws-id not signed.
	ErrTokenMalformed = errors.New("malformed EKS token")
	// ErrTokenExpired: X-Amz-Date is more than TokenLifetime ago.
	ErrTokenExpired = errors.New("EKS token expired")
	// ErrTokenCredentials: the access key is unknown, the session token does
	// not match it, or the credentials have expired.
	ErrTokenCredentials = errors.New("EKS token credentials invalid")
	// ErrTokenSignature: the signature does not verify (tampered URL,
	// another cluster's name, another secret).
	ErrTokenSignature = errors.New("EKS token signature does not match")
)

// tokenQueryKeys are the only query keys an EKS token's URL may carry.
var tokenQueryKeys = []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
	"X-Amz-Expires", "X-Amz-Security-Token", "X-Amz-Signature", "X-Amz-SignedHeaders"}

// Caller is an authenticated identity.
type Caller struct {
	// Account is the caller's AWS account.
	Account string
	// PrincipalARN is the assumed role's ARN (with its path), or the base
	// identity's user ARN.
	PrincipalARN string
	// ARN is what GetCallerIdentity answers: the assumed-role session ARN, or
	// the user ARN.
	ARN string
	// AccessKeyID is the key the request was signed with.
	AccessKeyID string
}

func (c *credential) caller() Caller {
	return Caller{Account: c.account, PrincipalARN: c.principalARN, ARN: c.callerARN(), AccessKeyID: c.accessKeyID}
}

// VerifyToken checks an EKS token as the EKS authenticator does for the
// cluster named clusterName: the cluster name is the value of the signed
// x-k8s-aws-id header, which the token does not carry, so the verifier must
// know which cluster it guards. The URL must be https://<host>/ with a host
// of TokenHosts for the region of its credential scope, carry only the
// allowed query keys with x-k8s-aws-id among the signed headers and
// X-Amz-Expires present, be dated within TokenLifetime of the fake's clock,
// and re-verify with the secret STS issued for its key. The signature is
// checked here, so the URL need not (and does not) name this fake's host.
func (a *AWS) VerifyToken(token, clusterName string) (Caller, error) {
	enc, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return Caller{}, fmt.Errorf("%w: no %q prefix", ErrTokenMalformed, TokenPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return Caller{}, fmt.Errorf("%w: %v", ErrTokenMalformed, err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return Caller{}, fmt.Errorf("%w: %v", ErrTokenMalformed, err)
	}
	q := u.Query()
	sc, _ := parseScope(q.Get("X-Amz-Credential"))
	if u.Scheme != "https" || u.Path != "/" || !slices.Contains(TokenHosts(sc.region), u.Host) {
		return Caller{}, fmt.Errorf("%w: URL %s://%s%s is not a standard STS endpoint for region %q",
			ErrTokenMalformed, u.Scheme, u.Host, u.Path, sc.region)
	}
	for k, v := range q {
		if !slices.Contains(tokenQueryKeys, k) {
			return Caller{}, fmt.Errorf("%w: query key %q not allowed", ErrTokenMalformed, k)
		}
		if len(v) != 1 {
			return Caller{}, fmt.Errorf("%w: query key %q repeated", ErrTokenMalformed, k)
		}
	}
	if q.Get("Action") != OpGetCallerIdentity || q.Get("Version") != stsVersion {
		return Caller{}, fmt.Errorf("%w: not GetCallerIdentity %s", ErrTokenMalformed, stsVersion)
	}
	if !slices.Contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), "x-k8s-aws-id") {
		return Caller{}, fmt.Errorf("%w: x-k8s-aws-id is not signed", ErrTokenMalformed)
	}
	if n, err := strconv.Atoi(q.Get("X-Amz-Expires")); err != nil || n <= 0 {
		return Caller{}, fmt.Errorf("%w: X-Amz-Expires missing or invalid", ErrTokenMalformed)
	}
	c, _, fail := a.verifyPresigned(u, http.Header{"X-K8s-Aws-Id": {clusterName}}, "sts")
	if fail != nil {
		return Caller{}, fail.tokenError()
	}
	return c.caller(), nil
}

func (f *authFailure) tokenError() error {
	switch f.kind {
	case authUnknown, authExpired:
		return fmt.Errorf("%w: %s", ErrTokenCredentials, f.msg)
	case authMissing:
		return fmt.Errorf("%w: %s", ErrTokenMalformed, f.msg)
	case authTooOld:
		return fmt.Errorf("%w: %s", ErrTokenExpired, f.msg)
	}
	return fmt.Errorf("%w: %s", ErrTokenSignature, f.msg)
}

// verifyPresigned authenticates a URL presigned for service: it presigns
// the same URL (without X-Amz-Signature) and signed header values again with
// the remembered secret and the URL's X-Amz-Date, and compares signatures.
// The URL is accepted for TokenLifetime after its date.
func (a *AWS) verifyPresigned(u *url.URL, header http.Header, service string) (*credential, string, *authFailure) {
	q := u.Query()
	sc, ok := parseScope(q.Get("X-Amz-Credential"))
	if !ok || q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" || q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-SignedHeaders") == "" {
		return nil, "", &authFailure{authMissing, "Presigned URL requires X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature and X-Amz-SignedHeaders"}
	}
	signedAt, err := time.Parse(timeFormat, q.Get("X-Amz-Date"))
	if err != nil || signedAt.Format("20060102") != sc.date {
		return nil, sc.region, &authFailure{authSignature, "X-Amz-Date is missing or does not match the credential scope"}
	}
	if age := a.clock().Sub(signedAt); age > TokenLifetime {
		return nil, sc.region, &authFailure{authTooOld, fmt.Sprintf("Request has expired: signed %s ago", age.Round(time.Second))}
	}
	c, fail := a.lookup(sc.accessKeyID, q.Get("X-Amz-Security-Token"))
	if fail != nil {
		return nil, sc.region, fail
	}
	if sc.service != service {
		return nil, sc.region, &authFailure{authSignature, fmt.Sprintf("Credential should be scoped to correct service: '%s'.", service)}
	}

	signature := q.Get("X-Amz-Signature")
	unsigned := url.Values{}
	for k, v := range q {
		if k != "X-Amz-Signature" {
			unsigned[k] = v
		}
	}
	re, err := http.NewRequest(http.MethodGet, "http://"+u.Host+"/", nil)
	if err != nil {
		return nil, sc.region, &authFailure{authSignature, msgBadSig}
	}
	re.URL = &url.URL{Scheme: u.Scheme, Host: u.Host, Opaque: "//" + u.Host + u.EscapedPath(), RawQuery: unsigned.Encode()}
	for _, h := range strings.Split(q.Get("X-Amz-SignedHeaders"), ";") {
		if h != "host" {
			re.Header[http.CanonicalHeaderKey(h)] = header.Values(h)
		}
	}
	signedURL, _, err := v4.NewSigner().PresignHTTP(context.Background(), c.awsCredentials(), re, emptySHA256,
		sc.service, sc.region, signedAt)
	if err != nil {
		return nil, sc.region, &authFailure{authSignature, msgBadSig}
	}
	ours, err := url.Parse(signedURL)
	if err != nil {
		return nil, sc.region, &authFailure{authSignature, msgBadSig}
	}
	oq := ours.Query()
	if oq.Get("X-Amz-SignedHeaders") != q.Get("X-Amz-SignedHeaders") ||
		!hmac.Equal([]byte(oq.Get("X-Amz-Signature")), []byte(signature)) {
		return nil, sc.region, &authFailure{authSignature, msgBadSig}
	}
	return c, sc.region, nil
}

// TokenHosts are the STS hosts an EKS authenticator accepts in a token
// signed for region, as aws-iam-authenticator's verifier does
// (pkg/token/token.go, verifySTSHostnameFormat): the hosts the SDK's STS
// endpoint resolver gives for the region with FIPS and dual-stack each on
// and off, and the global host sts.amazonaws.com, which STS serves only to
// requests signed for us-east-1 (the STS call the authenticator makes with
// the token would fail for any other scope).
func TokenHosts(region string) []string {
	if region == "" {
		return nil
	}
	var hosts []string
	if region == "us-east-1" {
		hosts = append(hosts, "sts.amazonaws.com")
	}
	resolver := sts.NewDefaultEndpointResolverV2()
	for _, fips := range []bool{false, true} {
		for _, dualStack := range []bool{false, true} {
			e, err := resolver.ResolveEndpoint(context.Background(), sts.EndpointParameters{
				Region: aws.String(region), UseFIPS: aws.Bool(fips), UseDualStack: aws.Bool(dualStack)})
			if err == nil && !slices.Contains(hosts, e.URI.Host) {
				hosts = append(hosts, e.URI.Host)
			}
		}
	}
	return hosts
}

// emptySHA256 is the hex SHA-256 of an empty payload.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Token signs an EKS token for cluster with creds as `aws eks get-token`
// does — STS GetCallerIdentity presigned by the SDK for the standard
// regional STS host of the fake's region, x-k8s-aws-id signed,
// X-Amz-Expires=60 — for tests that need a token without the product's own
// signer.
func (a *AWS) Token(ctx context.Context, creds aws.CredentialsProvider, cluster string) (string, error) {
	return a.TokenFor(ctx, creds, cluster, "")
}

// TokenFor is Token presigned for endpoint (a URL) instead of the standard
// host when endpoint is not empty, for tests of tokens a cluster must
// refuse (naming a VPC endpoint or this fake, say).
func (a *AWS) TokenFor(ctx context.Context, creds aws.CredentialsProvider, cluster, endpoint string) (string, error) {
	client := sts.New(sts.Options{Region: a.region, Credentials: creds})
	if endpoint != "" {
		client = sts.New(sts.Options{Region: a.region, Credentials: creds, BaseEndpoint: aws.String(endpoint)})
	}
	addHeaders := func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("awsfakeEKSToken",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					req.Header.Set("x-k8s-aws-id", cluster)
					q := req.URL.Query()
					q.Set("X-Amz-Expires", "60")
					req.URL.RawQuery = q.Encode()
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
	out, err := sts.NewPresignClient(client).PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{},
		func(o *sts.PresignOptions) {
			o.ClientOptions = append(o.ClientOptions, func(o *sts.Options) { o.APIOptions = append(o.APIOptions, addHeaders) })
		})
	if err != nil {
		return "", err
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(out.URL)), nil
}
