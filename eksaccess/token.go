package eksaccess

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// EKS token facts (what `aws eks get-token` and aws-iam-authenticator do).
const (
	// TokenPrefix starts every EKS bearer token.
	TokenPrefix = "k8s-aws-v1."
	// TokenLifetime is how long EKS accepts a token after its X-Amz-Date.
	TokenLifetime = 15 * time.Minute
	// tokenRenewAfter is when a token is replaced, a minute before EKS
	// would refuse it.
	tokenRenewAfter = 14 * time.Minute
	// clusterIDHeader names the cluster the token is for; it must be signed.
	clusterIDHeader = "x-k8s-aws-id"
	// presignExpires is the X-Amz-Expires the authenticator requires.
	presignExpires = 60
)

// presignToken returns an EKS token for clusterName: STS GetCallerIdentity
// presigned (locally, no network) with creds in region at signingTime, with
// the cluster header signed and X-Amz-Expires in the query.
//
// The URL names the host the SDK's own STS endpoint resolver gives for
// region with the process's FIPS and dual-stack settings, never a custom
// endpoint (AWS_ENDPOINT_URL_STS, cfg.BaseEndpoint, a configured resolver):
// that one is for the server's own STS calls, and the EKS authenticator
// accepts only the standard STS hosts, so a token naming a VPC endpoint
// would be refused by every cluster.
func presignToken(ctx context.Context, cfg aws.Config, creds aws.Credentials, region, clusterName string, signingTime time.Time) (string, error) {
	client := sts.NewFromConfig(cfg, func(o *sts.Options) {
		o.Region = region
		o.Credentials = staticProvider{creds}
		o.BaseEndpoint = nil
		//lint:ignore SA1019 cleared so a v1 resolver in cfg cannot rename the host
		o.EndpointResolver = nil
		o.EndpointResolverV2 = sts.NewDefaultEndpointResolverV2()
	})
	presigner := sts.NewPresignClient(client, func(o *sts.PresignOptions) {
		o.Presigner = fixedTimePresigner{signer: v4.NewSigner(), at: signingTime}
	})
	req, err := presigner.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{},
		sts.WithPresignClientFromClientOptions(sts.WithAPIOptions(tokenParams(clusterName))))
	if err != nil {
		return "", fmt.Errorf("presign GetCallerIdentity: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)), nil
}

// tokenParams adds, before signing, the cluster header (so it is signed)
// and X-Amz-Expires (which the SDK's presigner leaves out).
func tokenParams(clusterName string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("KukieEKSTokenParams",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				req, ok := in.Request.(*smithyhttp.Request)
				if !ok {
					return middleware.BuildOutput{}, middleware.Metadata{}, fmt.Errorf("unexpected request type %T", in.Request)
				}
				req.Header.Set(clusterIDHeader, clusterName)
				q := req.URL.Query()
				q.Set("X-Amz-Expires", strconv.Itoa(presignExpires))
				req.URL.RawQuery = q.Encode()
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
}

// fixedTimePresigner signs at a chosen time, so the token's X-Amz-Date
// follows the injected clock.
type fixedTimePresigner struct {
	signer *v4.Signer
	at     time.Time
}

func (p fixedTimePresigner) PresignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request,
	payloadHash, service, region string, _ time.Time, optFns ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return p.signer.PresignHTTP(ctx, creds, r, payloadHash, service, region, p.at, optFns...)
}

type staticProvider struct{ creds aws.Credentials }

func (p staticProvider) Retrieve(context.Context) (aws.Credentials, error) { return p.creds, nil }

// renewAt is when a token issued at issued with creds must be replaced: 14
// minutes on, or a minute before the credentials expire if that is sooner.
// Credentials from the cache report an expiry already moved forward by its
// window, so the minute is a margin on top.
func renewAt(issued time.Time, creds aws.Credentials) time.Time {
	t := issued.Add(tokenRenewAfter)
	if creds.CanExpire {
		if e := creds.Expires.Add(-time.Minute); e.Before(t) {
			t = e
		}
	}
	return t
}

// forcedRefreshInterval spaces out the credential refreshes that 401s
// force, so a cluster that keeps refusing Kukie cannot make it call
// AssumeRole per request.
const forcedRefreshInterval = time.Minute

// tokenSource keeps one cluster's current token and renews it when due.
type tokenSource struct {
	cfg         aws.Config
	region      string
	clusterName string
	creds       func() (aws.CredentialsProvider, error)
	now         func() time.Time

	mu           sync.Mutex
	token        string
	renewAt      time.Time
	lastForced   time.Time
	forcedBefore bool
}

// Token returns the current token, renewing it when due.
func (s *tokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.now().Before(s.renewAt) {
		return s.token, nil
	}
	return s.renewLocked(ctx, false)
}

// Renew replaces the token the cluster refused (stale), unless another
// request already did. A token presigned again in the same second with the
// same credentials would be the same token, so the credentials are
// refreshed too (at most once per forcedRefreshInterval).
func (s *tokenSource) Renew(ctx context.Context, stale string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.token != stale && s.now().Before(s.renewAt) {
		return s.token, nil
	}
	return s.renewLocked(ctx, true)
}

func (s *tokenSource) renewLocked(ctx context.Context, force bool) (string, error) {
	provider, err := s.creds()
	if err != nil {
		return "", err
	}
	now := s.now()
	if inv, ok := provider.(interface{ Invalidate() }); ok && force &&
		(!s.forcedBefore || now.Sub(s.lastForced) >= forcedRefreshInterval) {
		inv.Invalidate()
		s.lastForced, s.forcedBefore = now, true
	}
	creds, err := provider.Retrieve(ctx)
	if err != nil {
		return "", assumeError(err)
	}
	token, err := presignToken(ctx, s.cfg, creds, s.region, s.clusterName, now)
	if err != nil {
		return "", err
	}
	s.token, s.renewAt = token, renewAt(now, creds)
	return token, nil
}
