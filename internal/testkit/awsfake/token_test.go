package awsfake_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
)

// presignOptions shape a GetCallerIdentity presign like `aws eks get-token`.
type presignOptions struct {
	clusterHeader bool   // sign x-k8s-aws-id
	expires       bool   // add X-Amz-Expires=60
	endpoint      string // presign for this endpoint instead of the SDK's default
}

// token presigns GetCallerIdentity with the SDK's presign client for the
// SDK's default STS endpoint of cfg's region (what `aws eks get-token`
// names), adding the x-k8s-aws-id header and X-Amz-Expires=60 before
// signing.
func token(t *testing.T, cfg aws.Config, cluster string, po presignOptions) string {
	t.Helper()
	presigner := sts.NewPresignClient(sts.NewFromConfig(cfg, func(o *sts.Options) {
		if po.endpoint != "" {
			o.BaseEndpoint = aws.String(po.endpoint)
		}
	}))
	addEKS := func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("kukieEKSToken",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					if po.clusterHeader {
						req.Header.Set("x-k8s-aws-id", cluster)
					}
					if po.expires {
						q := req.URL.Query()
						q.Set("X-Amz-Expires", "60")
						req.URL.RawQuery = q.Encode()
					}
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
	out, err := presigner.PresignGetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, func(o *sts.Options) { o.APIOptions = append(o.APIOptions, addEKS) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return awsfake.TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(out.URL))
}

// rewrite decodes a token's URL, lets edit change it, and encodes it again.
func rewrite(t *testing.T, tok string, edit func(u *url.URL)) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, awsfake.TokenPrefix))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	edit(u)
	return awsfake.TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(u.String()))
}

func TestVerifyToken(t *testing.T) {
	clock := newClock()
	f := awsfake.Start(t, awsfake.WithClock(clock.Now))
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	cfg := assumed(f, roleARN, externalID)
	good := token(t, cfg, "prod", presignOptions{clusterHeader: true, expires: true})

	got, err := f.VerifyToken(good, "prod")
	if err != nil {
		t.Fatalf("good token: %v", err)
	}
	if got.PrincipalARN != roleARN || got.Account != customer ||
		got.ARN != "arn:aws:sts::"+customer+":assumed-role/KukieAccess/kukie-test" {
		t.Errorf("caller = %+v", got)
	}

	helper, err := f.Token(ctx(t), cfg.Credentials, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.VerifyToken(helper, "prod"); err != nil || got.PrincipalARN != roleARN {
		t.Fatalf("Token helper's token: %+v %v", got, err)
	}

	cases := []struct {
		name    string
		token   string
		cluster string
		want    error
	}{
		{"ErrOtherCluster", good, "staging", awsfake.ErrTokenSignature},
		{"ErrClusterHeaderNotSigned", token(t, cfg, "prod", presignOptions{expires: true}), "prod", awsfake.ErrTokenMalformed},
		{"ErrNoExpires", token(t, cfg, "prod", presignOptions{clusterHeader: true}), "prod", awsfake.ErrTokenMalformed},
		{"ErrExtraQueryKey", rewrite(t, good, func(u *url.URL) {
			q := u.Query()
			q.Set("X-Amz-Foo", "bar")
			u.RawQuery = q.Encode()
		}), "prod", awsfake.ErrTokenMalformed},
		{"ErrRepeatedQueryKey", rewrite(t, good, func(u *url.URL) { u.RawQuery += "&Action=GetCallerIdentity" }), "prod", awsfake.ErrTokenMalformed},
		{"ErrOtherHost", rewrite(t, good, func(u *url.URL) { u.Host = "sts.eu-west-1.amazonaws.com" }), "prod", awsfake.ErrTokenMalformed},
		{"ErrTamperedSignature", rewrite(t, good, func(u *url.URL) {
			q := u.Query()
			q.Set("X-Amz-Signature", strings.Repeat("0", 64))
			u.RawQuery = q.Encode()
		}), "prod", awsfake.ErrTokenSignature},
		{"ErrTamperedExpires", rewrite(t, good, func(u *url.URL) {
			q := u.Query()
			q.Set("X-Amz-Expires", "900")
			u.RawQuery = q.Encode()
		}), "prod", awsfake.ErrTokenSignature},
		{"ErrWrongPrefix", strings.Replace(good, "k8s-aws-v1.", "k8s-aws-v2.", 1), "prod", awsfake.ErrTokenMalformed},
		{"ErrNotBase64", awsfake.TokenPrefix + "!!!", "prod", awsfake.ErrTokenMalformed},
		{"ErrUnknownKey", token(t, baseConfigWith(f, "AKIAUNKNOWN000000000", "secret"), "prod",
			presignOptions{clusterHeader: true, expires: true}), "prod", awsfake.ErrTokenCredentials},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.VerifyToken(tc.token, tc.cluster); !errors.Is(err, tc.want) {
				t.Fatalf("VerifyToken: %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("ErrTamperedSecret", func(t *testing.T) {
		creds, err := cfg.Credentials.Retrieve(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		bad := baseConfig(f)
		bad.Credentials = staticCreds(creds.AccessKeyID, tamper(creds.SecretAccessKey), creds.SessionToken)
		tok := token(t, bad, "prod", presignOptions{clusterHeader: true, expires: true})
		if _, err := f.VerifyToken(tok, "prod"); !errors.Is(err, awsfake.ErrTokenSignature) {
			t.Fatalf("VerifyToken: %v, want %v", err, awsfake.ErrTokenSignature)
		}
	})

	t.Run("ErrExpired", func(t *testing.T) {
		clock.Advance(awsfake.TokenLifetime - time.Second)
		if _, err := f.VerifyToken(good, "prod"); err != nil {
			t.Fatalf("token within its lifetime: %v", err)
		}
		clock.Advance(2 * time.Second)
		if _, err := f.VerifyToken(good, "prod"); !errors.Is(err, awsfake.ErrTokenExpired) {
			t.Fatalf("VerifyToken: %v, want %v", err, awsfake.ErrTokenExpired)
		}
	})
}

// TestVerifyTokenHost: a token is accepted only when it names a standard
// STS host for the region it is signed for (what aws-iam-authenticator
// accepts), however well it is signed: never this fake's own host or a
// VPC endpoint.
func TestVerifyTokenHost(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	cfg := assumed(f, roleARN, externalID)
	inRegion := func(region string) aws.Config {
		c := cfg.Copy()
		c.Region = region
		return c
	}
	for _, tc := range []struct {
		name     string
		cfg      aws.Config
		endpoint string
		want     error
	}{
		{"Default", cfg, "", nil},
		{"Global", cfg, "https://sts.amazonaws.com", nil},
		{"Regional", cfg, "https://sts.us-east-1.amazonaws.com", nil},
		{"FIPS", cfg, "https://sts-fips.us-east-1.amazonaws.com", nil},
		{"DualStack", cfg, "https://sts.us-east-1.api.aws", nil},
		{"FIPSDualStack", cfg, "https://sts-fips.us-east-1.api.aws", nil},
		{"OtherRegion", inRegion("eu-west-1"), "", nil},
		{"ErrFakeHost", cfg, f.STSURL(), awsfake.ErrTokenMalformed},
		{"ErrFakeHostHTTPS", cfg, strings.Replace(f.STSURL(), "http://", "https://", 1), awsfake.ErrTokenMalformed},
		{"ErrVPCEndpoint", cfg, "https://vpce-0123456789abcdef0-abcdefgh.sts.us-east-1.vpce.amazonaws.com", awsfake.ErrTokenMalformed},
		{"ErrHTTP", cfg, "http://sts.us-east-1.amazonaws.com", awsfake.ErrTokenMalformed},
		{"ErrRegionNotScope", cfg, "https://sts.eu-west-1.amazonaws.com", awsfake.ErrTokenMalformed},
		{"ErrGlobalOtherScope", inRegion("eu-west-1"), "https://sts.amazonaws.com", awsfake.ErrTokenMalformed},
		{"ErrLookalike", cfg, "https://sts.us-east-1.amazonaws.com.example.net", awsfake.ErrTokenMalformed},
		{"ErrPath", cfg, "https://sts.us-east-1.amazonaws.com/sts", awsfake.ErrTokenMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := token(t, tc.cfg, "prod", presignOptions{clusterHeader: true, expires: true, endpoint: tc.endpoint})
			_, err := f.VerifyToken(tok, "prod")
			if tc.want == nil && err != nil {
				t.Fatalf("VerifyToken: %v, want success", err)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("VerifyToken: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTokenHosts(t *testing.T) {
	want := []string{"sts.amazonaws.com", "sts.us-east-1.amazonaws.com", "sts.us-east-1.api.aws",
		"sts-fips.us-east-1.amazonaws.com", "sts-fips.us-east-1.api.aws"}
	if diff := cmp.Diff(want, awsfake.TokenHosts("us-east-1")); diff != "" {
		t.Errorf("TokenHosts(us-east-1) (-want +got):\n%s", diff)
	}
	want = []string{"sts.eu-west-1.amazonaws.com", "sts.eu-west-1.api.aws", "sts-fips.eu-west-1.amazonaws.com", "sts-fips.eu-west-1.api.aws"}
	if diff := cmp.Diff(want, awsfake.TokenHosts("eu-west-1")); diff != "" {
		t.Errorf("TokenHosts(eu-west-1) (-want +got):\n%s", diff)
	}
}

func TestPresignedGetCallerIdentity(t *testing.T) {
	// What the EKS authenticator does with a token: GET the URL with the
	// cluster header.
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	tok := token(t, assumed(f, roleARN, externalID), "prod", presignOptions{clusterHeader: true, expires: true})
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, awsfake.TokenPrefix))
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "sts.us-east-1.amazonaws.com" {
		t.Fatalf("token host = %q, want the standard sts.us-east-1.amazonaws.com", u.Host)
	}
	// The URL names the standard host; the request reaches the fake, with
	// that host in its Host header, as if DNS pointed there.
	fake, _ := url.Parse(f.STSURL())

	get := func(cluster string) (int, string) {
		to := *u
		to.Scheme, to.Host = fake.Scheme, fake.Host
		req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, to.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = u.Host
		req.Header.Set("x-k8s-aws-id", cluster)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get("prod")
	if status != http.StatusOK || !strings.Contains(body, "<Arn>arn:aws:sts::"+customer+":assumed-role/KukieAccess/kukie-test</Arn>") {
		t.Fatalf("GET token URL: %d %s", status, body)
	}
	if status, body := get("staging"); status != http.StatusForbidden || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Fatalf("GET token URL for another cluster: %d %s", status, body)
	}
}
