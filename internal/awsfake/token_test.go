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

	"github.com/kukie/gitops-server/internal/awsfake"
)

// presignOptions shape a GetCallerIdentity presign like `aws eks get-token`.
type presignOptions struct {
	clusterHeader bool // sign x-k8s-aws-id
	expires       bool // add X-Amz-Expires=60
}

// token presigns GetCallerIdentity with the SDK's presign client, adding
// the x-k8s-aws-id header and X-Amz-Expires=60 before signing.
func token(t *testing.T, f *awsfake.AWS, cfg aws.Config, cluster string, po presignOptions) string {
	t.Helper()
	presigner := sts.NewPresignClient(sts.NewFromConfig(cfg, f.STSOptions))
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
	good := token(t, f, cfg, "prod", presignOptions{clusterHeader: true, expires: true})

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
		{"ErrClusterHeaderNotSigned", token(t, f, cfg, "prod", presignOptions{expires: true}), "prod", awsfake.ErrTokenMalformed},
		{"ErrNoExpires", token(t, f, cfg, "prod", presignOptions{clusterHeader: true}), "prod", awsfake.ErrTokenMalformed},
		{"ErrExtraQueryKey", rewrite(t, good, func(u *url.URL) {
			q := u.Query()
			q.Set("X-Amz-Foo", "bar")
			u.RawQuery = q.Encode()
		}), "prod", awsfake.ErrTokenMalformed},
		{"ErrRepeatedQueryKey", rewrite(t, good, func(u *url.URL) { u.RawQuery += "&Action=GetCallerIdentity" }), "prod", awsfake.ErrTokenMalformed},
		{"ErrOtherHost", rewrite(t, good, func(u *url.URL) { u.Host = "sts.amazonaws.com" }), "prod", awsfake.ErrTokenMalformed},
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
		{"ErrUnknownKey", token(t, f, baseConfigWith(f, "AKIAUNKNOWN000000000", "secret"), "prod",
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
		tok := token(t, f, bad, "prod", presignOptions{clusterHeader: true, expires: true})
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

func TestPresignedGetCallerIdentity(t *testing.T) {
	// What the EKS authenticator does with a token: GET the URL with the
	// cluster header.
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	tok := token(t, f, assumed(f, roleARN, externalID), "prod", presignOptions{clusterHeader: true, expires: true})
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, awsfake.TokenPrefix))

	get := func(cluster string) (int, string) {
		req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, string(raw), nil)
		if err != nil {
			t.Fatal(err)
		}
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
