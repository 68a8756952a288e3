package eksaccess

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// allowedTokenQuery is what aws-iam-authenticator accepts in a token's URL.
var allowedTokenQuery = []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
	"X-Amz-Expires", "X-Amz-Security-Token", "X-Amz-Signature", "X-Amz-SignedHeaders"}

var testCreds = aws.Credentials{AccessKeyID: "ASIATESTKEY", SecretAccessKey: "secret", SessionToken: "session-token",
	CanExpire: true, Expires: time.Date(2030, 1, 1, 13, 0, 0, 0, time.UTC)}

// decodeToken checks the token's envelope and returns its URL.
func decodeToken(t *testing.T, token string) *url.URL {
	t.Helper()
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		t.Fatalf("token %q lacks the prefix %q", token, TokenPrefix)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(rest) {
		t.Fatalf("token body is not unpadded base64url: %q", rest)
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		t.Fatalf("decode token: %v", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatalf("parse token URL: %v", err)
	}
	return u
}

func TestPresignToken(t *testing.T) {
	at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := aws.Config{Region: "eu-west-1"}
	token, err := presignToken(context.Background(), cfg, testCreds, "us-east-1", "demo", at)
	if err != nil {
		t.Fatal(err)
	}
	u := decodeToken(t, token)
	q := u.Query()
	if u.Scheme != "https" || u.Host != "sts.us-east-1.amazonaws.com" || u.Path != "/" {
		t.Errorf("URL = %s, want https://sts.us-east-1.amazonaws.com/ (the cluster's region)", u)
	}
	for key := range q {
		if !slices.Contains(allowedTokenQuery, key) {
			t.Errorf("query key %q is not accepted by the authenticator", key)
		}
	}
	want := map[string]string{"Action": "GetCallerIdentity", "Version": "2011-06-15", "X-Amz-Expires": "60",
		"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Date": "20300101T120000Z",
		"X-Amz-Security-Token": "session-token", "X-Amz-Credential": "ASIATESTKEY/20300101/us-east-1/sts/aws4_request"}
	for k, v := range want {
		if got := q.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	if !slices.Contains(signed, clusterIDHeader) || !slices.Contains(signed, "host") {
		t.Errorf("X-Amz-SignedHeaders = %v, want host and %s", signed, clusterIDHeader)
	}

	// The signature re-verifies: the same request signed independently
	// gives the same signature (what the authenticator's STS call checks).
	unsigned := url.Values{}
	for _, k := range []string{"Action", "Version", "X-Amz-Expires"} {
		unsigned.Set(k, q.Get(k))
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+u.Host+"/?"+unsigned.Encode(), nil)
	req.Header.Set(clusterIDHeader, "demo")
	empty := sha256.Sum256(nil)
	again, _, err := v4.NewSigner().PresignHTTP(context.Background(), testCreds, req, hex.EncodeToString(empty[:]),
		"sts", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	au, _ := url.Parse(again)
	if got, want := q.Get("X-Amz-Signature"), au.Query().Get("X-Amz-Signature"); got != want || got == "" {
		t.Errorf("signature %q does not re-verify (want %q)", got, want)
	}
}

// TestPresignTokenNamesStandardHost: the token names the host the EKS
// authenticator accepts for the region and the process's FIPS and
// dual-stack settings, whatever custom STS endpoint the server's own calls
// use (a VPC endpoint, say).
func TestPresignTokenNamesStandardHost(t *testing.T) {
	const vpcEndpoint = "https://vpce-0123456789abcdef0-abcdefgh.sts.eu-west-1.vpce.amazonaws.com"
	for _, tc := range []struct {
		name   string
		env    map[string]string
		region string
		want   string
	}{
		{"VPCEndpoint", map[string]string{"AWS_ENDPOINT_URL_STS": vpcEndpoint}, "eu-west-1", "sts.eu-west-1.amazonaws.com"},
		{"GlobalEndpointURL", map[string]string{"AWS_ENDPOINT_URL": vpcEndpoint}, "eu-west-1", "sts.eu-west-1.amazonaws.com"},
		{"OtherRegionThanConfig", map[string]string{"AWS_ENDPOINT_URL_STS": vpcEndpoint}, "ap-southeast-2", "sts.ap-southeast-2.amazonaws.com"},
		{"FIPS", map[string]string{"AWS_ENDPOINT_URL_STS": vpcEndpoint, "AWS_USE_FIPS_ENDPOINT": "true"}, "us-east-1", "sts-fips.us-east-1.amazonaws.com"},
		{"DualStack", map[string]string{"AWS_ENDPOINT_URL_STS": vpcEndpoint, "AWS_USE_DUALSTACK_ENDPOINT": "true"}, "us-east-2", "sts.us-east-2.api.aws"},
		{"FIPSDualStack", map[string]string{"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "true"}, "us-west-2", "sts-fips.us-west-2.api.aws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_PROFILE"} {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_CONFIG_FILE", "/dev/null")
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIDBASE")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "base-secret")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("eu-west-1"))
			if err != nil {
				t.Fatal(err)
			}
			token, err := presignToken(context.Background(), cfg, testCreds, tc.region, "demo", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			u := decodeToken(t, token)
			if u.Scheme != "https" || u.Host != tc.want || u.Path != "/" {
				t.Errorf("token URL = %s://%s%s, want https://%s/", u.Scheme, u.Host, u.Path, tc.want)
			}
			if got, want := u.Query().Get("X-Amz-Credential"), "ASIATESTKEY/"; !strings.HasPrefix(got, want) ||
				!strings.HasSuffix(got, "/"+tc.region+"/sts/aws4_request") {
				t.Errorf("X-Amz-Credential = %q, want scope %s/sts", got, tc.region)
			}
		})
	}

	t.Run("BaseEndpointInConfig", func(t *testing.T) {
		cfg := aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(vpcEndpoint)}
		token, err := presignToken(context.Background(), cfg, testCreds, "eu-west-1", "demo", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if u := decodeToken(t, token); u.Host != "sts.eu-west-1.amazonaws.com" {
			t.Errorf("token host = %q, want sts.eu-west-1.amazonaws.com", u.Host)
		}
	})
}

func TestRenewAt(t *testing.T) {
	issued := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		creds aws.Credentials
		want  time.Time
	}{
		{"FourteenMinutes", aws.Credentials{CanExpire: true, Expires: issued.Add(time.Hour)}, issued.Add(14 * time.Minute)},
		{"CredentialsExpireFirst", aws.Credentials{CanExpire: true, Expires: issued.Add(10 * time.Minute)}, issued.Add(9 * time.Minute)},
		{"Boundary", aws.Credentials{CanExpire: true, Expires: issued.Add(15 * time.Minute)}, issued.Add(14 * time.Minute)},
		{"NeverExpire", aws.Credentials{}, issued.Add(14 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renewAt(issued, tc.creds); !got.Equal(tc.want) {
				t.Errorf("renewAt = %v, want %v", got, tc.want)
			}
		})
	}
}

// countingProvider hands out new credentials on each call, valid for life.
type countingProvider struct {
	clock *testclock.Clock
	life  time.Duration
	mu    sync.Mutex
	calls int
}

func (p *countingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return aws.Credentials{AccessKeyID: "ASIA" + strings.Repeat("X", p.calls), SecretAccessKey: "s", SessionToken: "t",
		CanExpire: true, Expires: p.clock.Now().Add(p.life)}, nil
}

func (p *countingProvider) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// invalidatingProvider is a provider with the cache's Invalidate: after it,
// the next Retrieve asks the underlying provider again.
type invalidatingProvider struct {
	base  *countingProvider
	mu    sync.Mutex
	creds *aws.Credentials
}

func (p *invalidatingProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.creds == nil || !p.base.clock.Now().Before(p.creds.Expires) {
		c, err := p.base.Retrieve(ctx)
		if err != nil {
			return c, err
		}
		p.creds = &c
	}
	return *p.creds, nil
}

func (p *invalidatingProvider) Invalidate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creds = nil
}

func newTestTokenSource(clock *testclock.Clock, life time.Duration) (*tokenSource, *countingProvider) {
	base := &countingProvider{clock: clock, life: life}
	cached := &invalidatingProvider{base: base}
	return &tokenSource{cfg: aws.Config{Region: "us-east-1"}, region: "us-east-1", clusterName: "demo", now: clock.Now,
		creds: func() (aws.CredentialsProvider, error) { return cached, nil }}, base
}

func TestTokenSourceRenewsWhenDue(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	ts, base := newTestTokenSource(clock, time.Hour)
	first, err := ts.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(14*time.Minute - time.Second)
	if again, _ := ts.Token(ctx); again != first {
		t.Error("token renewed before 14 minutes")
	}
	clock.Advance(time.Second)
	renewed, _ := ts.Token(ctx)
	if renewed == first {
		t.Fatal("token not renewed at 14 minutes")
	}
	if got := decodeToken(t, renewed).Query().Get("X-Amz-Date"); got != "20300101T121400Z" {
		t.Errorf("renewed token's X-Amz-Date = %s, want the clock's time 20300101T121400Z", got)
	}
	if base.Calls() != 1 {
		t.Errorf("credentials retrieved %d times, want 1 (still valid)", base.Calls())
	}
}

func TestTokenSourceRenewsBeforeCredentialsExpire(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	ts, base := newTestTokenSource(clock, 10*time.Minute)
	first, _ := ts.Token(ctx)
	clock.Advance(9*time.Minute - time.Second)
	if again, _ := ts.Token(ctx); again != first {
		t.Error("token renewed too early")
	}
	clock.Advance(time.Second)
	if again, _ := ts.Token(ctx); again == first {
		t.Error("token not renewed a minute before its credentials expire")
	}
	clock.Advance(time.Minute)
	_, _ = ts.Token(ctx)
	if base.Calls() != 2 {
		t.Errorf("credentials retrieved %d times, want 2 (once expired)", base.Calls())
	}
}

func TestTokenSourceRenewAfterRefusal(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	ts, base := newTestTokenSource(clock, time.Hour)
	stale, _ := ts.Token(ctx)
	fresh, err := ts.Renew(ctx, stale)
	if err != nil || fresh == stale {
		t.Fatalf("Renew = %v, %v: want a different token (same second, new credentials)", fresh, err)
	}
	if again, _ := ts.Renew(ctx, stale); again != fresh {
		t.Error("a second refusal of the same stale token renewed again")
	}
	// A cluster that keeps refusing cannot force AssumeRole per request.
	_, _ = ts.Renew(ctx, fresh)
	if base.Calls() != 2 {
		t.Errorf("credentials retrieved %d times, want 2 (forced refreshes are spaced out)", base.Calls())
	}
}
