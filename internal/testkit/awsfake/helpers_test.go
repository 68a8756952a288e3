package awsfake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

const (
	customer   = "111122223333"
	externalID = "kukie-team-0123456789abcdef"
	// roleARN carries a path, as customer roles may.
	roleARN = "arn:aws:iam::" + customer + ":role/kukie/access/KukieAccess"
)

// fastRetries keeps the SDK's standard retry policy (3 attempts, the same
// retryable codes) without its backoff delays.
func fastRetries() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

// baseConfig is the service's base configuration with fast retries.
func baseConfig(f *awsfake.AWS) aws.Config {
	cfg := f.Config()
	cfg.Retryer = fastRetries
	return cfg
}

// assumed returns a configuration holding the credentials of role, assumed
// with the ExternalId through stscreds, as the product does.
func assumed(f *awsfake.AWS, role, externalID string) aws.Config {
	cfg := baseConfig(f)
	stsClient := sts.NewFromConfig(cfg, f.STSOptions)
	cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, role, func(o *stscreds.AssumeRoleOptions) {
		o.ExternalID = aws.String(externalID)
		o.RoleSessionName = "kukie-test"
	}))
	return cfg
}

func eksClient(f *awsfake.AWS, cfg aws.Config) *eks.Client {
	return eks.NewFromConfig(cfg, f.EKSOptions)
}

func cfnClient(f *awsfake.AWS, cfg aws.Config) *cloudformation.Client {
	return cloudformation.NewFromConfig(cfg, f.CloudFormationOptions)
}

// apiError asserts err is an AWS API error with code and HTTP status.
func apiError(t *testing.T, err error, code string, status int) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an API error; want %s", err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("error code %q (%v), want %q", ae.ErrorCode(), err, code)
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v has no HTTP response", err)
	}
	if re.HTTPStatusCode() != status {
		t.Fatalf("HTTP status %d (%v), want %d", re.HTTPStatusCode(), err, status)
	}
}

func newClock() *testclock.Clock { return testclock.New(time.Now()) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func staticCreds(id, secret, token string) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(id, secret, token)
}

// baseConfigWith is the base configuration with other static credentials.
func baseConfigWith(f *awsfake.AWS, id, secret string) aws.Config {
	cfg := baseConfig(f)
	cfg.Credentials = staticCreds(id, secret, "")
	return cfg
}

// tamper changes the first character of a secret.
func tamper(secret string) string {
	if secret[0] == 'A' {
		return "B" + secret[1:]
	}
	return "A" + secret[1:]
}
