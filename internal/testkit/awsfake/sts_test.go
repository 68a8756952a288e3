package awsfake_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
)

func TestAssumeRoleExternalID(t *testing.T) {
	// The three checks the product makes at registration, against each trust
	// policy: the team's ExternalId, none, and a wrong one.
	cases := []struct {
		name                    string
		trust                   awsfake.Trust
		right, absent, wrongOne bool // whether AssumeRole succeeds
	}{
		{"Pinned", awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: externalID}, true, false, false},
		{"NoCondition", awsfake.Trust{Mode: awsfake.TrustNone}, true, true, true},
		{"WildcardStringLike", awsfake.Trust{Mode: awsfake.TrustWildcard}, true, false, true},
		{"OtherAccountTrusted", awsfake.Trust{Mode: awsfake.TrustNone, Account: "444455556666"}, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := awsfake.Start(t)
			f.AddRole(awsfake.Role{ARN: roleARN, Trust: tc.trust, Level: awsfake.LevelFull})
			client := sts.NewFromConfig(baseConfig(f), f.STSOptions)
			for _, try := range []struct {
				label string
				id    *string
				want  bool
			}{{"right", aws.String(externalID), tc.right}, {"absent", nil, tc.absent}, {"wrong", aws.String("kukie-wrong-0000"), tc.wrongOne}} {
				out, err := client.AssumeRole(ctx(t), &sts.AssumeRoleInput{
					RoleArn: aws.String(roleARN), RoleSessionName: aws.String("kukie-check"), ExternalId: try.id,
				})
				if !try.want {
					apiError(t, err, "AccessDenied", http.StatusForbidden)
					continue
				}
				if err != nil {
					t.Fatalf("%s ExternalId: %v", try.label, err)
				}
				wantARN := "arn:aws:sts::" + customer + ":assumed-role/KukieAccess/kukie-check"
				if got := aws.ToString(out.AssumedRoleUser.Arn); got != wantARN {
					t.Errorf("AssumedRoleUser.Arn = %s, want %s", got, wantARN)
				}
				if out.Credentials == nil || aws.ToString(out.Credentials.SessionToken) == "" || out.Credentials.Expiration == nil {
					t.Fatalf("credentials incomplete: %+v", out.Credentials)
				}
			}
			if n := f.CallsBy(awsfake.OpAssumeRole, roleARN); n != 3 {
				t.Errorf("AssumeRole calls for the role = %d, want 3", n)
			}
		})
	}
}

func TestAssumeRoleValidation(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	client := sts.NewFromConfig(baseConfig(f), f.STSOptions)
	cases := []struct {
		name string
		in   sts.AssumeRoleInput
		code string
	}{
		{"ErrSessionNameChars", sts.AssumeRoleInput{RoleSessionName: aws.String("kukie team"), ExternalId: aws.String(externalID)}, "ValidationError"},
		{"ErrSessionNameShort", sts.AssumeRoleInput{RoleSessionName: aws.String("k"), ExternalId: aws.String(externalID)}, "ValidationError"},
		{"ErrExternalIDChars", sts.AssumeRoleInput{RoleSessionName: aws.String("kukie"), ExternalId: aws.String("team id!")}, "ValidationError"},
		{"ErrExternalIDShort", sts.AssumeRoleInput{RoleSessionName: aws.String("kukie"), ExternalId: aws.String("x")}, "ValidationError"},
		{"ErrExternalIDEmpty", sts.AssumeRoleInput{RoleSessionName: aws.String("kukie"), ExternalId: aws.String("")}, "ValidationError"},
		{"ErrDurationTooShort", sts.AssumeRoleInput{RoleSessionName: aws.String("kukie"), ExternalId: aws.String(externalID), DurationSeconds: aws.Int32(60)}, "ValidationError"},
		{"ErrDurationOverRoleMax", sts.AssumeRoleInput{RoleSessionName: aws.String("kukie"), ExternalId: aws.String(externalID), DurationSeconds: aws.Int32(7200)}, "ValidationError"},
		{"ErrUnknownRole", sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::" + customer + ":role/Nope"), RoleSessionName: aws.String("kukie"), ExternalId: aws.String(externalID)}, "AccessDenied"},
		{"ExternalIDAllowedChars", sts.AssumeRoleInput{RoleSessionName: aws.String("a+=,.@-_b"), ExternalId: aws.String(externalID)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if in.RoleArn == nil {
				in.RoleArn = aws.String(roleARN)
			}
			_, err := client.AssumeRole(ctx(t), &in)
			switch tc.code {
			case "":
				if err != nil {
					t.Fatal(err)
				}
			case "AccessDenied":
				apiError(t, err, tc.code, http.StatusForbidden)
			default:
				apiError(t, err, tc.code, http.StatusBadRequest)
			}
		})
	}
	// STS's ExternalId alphabet includes ':' and '/', RoleSessionName's does not.
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: "team:a/b=c"}})
	if _, err := client.AssumeRole(ctx(t), &sts.AssumeRoleInput{RoleArn: aws.String(roleARN),
		RoleSessionName: aws.String("kukie"), ExternalId: aws.String("team:a/b=c")}); err != nil {
		t.Fatalf("ExternalId with ':' and '/': %v", err)
	}
}

func TestGetCallerIdentity(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})

	base, err := sts.NewFromConfig(baseConfig(f), f.STSOptions).GetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(base.Account) != f.Account() || aws.ToString(base.Arn) != f.BasePrincipalARN() {
		t.Errorf("base identity = %s %s, want %s %s", aws.ToString(base.Account), aws.ToString(base.Arn), f.Account(), f.BasePrincipalARN())
	}

	cfg := assumed(f, roleARN, externalID)
	got, err := sts.NewFromConfig(cfg, f.STSOptions).GetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "arn:aws:sts::" + customer + ":assumed-role/KukieAccess/kukie-test"; aws.ToString(got.Arn) != want || aws.ToString(got.Account) != customer {
		t.Errorf("assumed identity = %s %s, want %s %s", aws.ToString(got.Account), aws.ToString(got.Arn), customer, want)
	}
	if n := f.CallsBy(awsfake.OpGetCallerIdentity, roleARN); n != 1 {
		t.Errorf("GetCallerIdentity calls by the role = %d, want 1", n)
	}
}

func TestAssumeRoleOnceForManyCalls(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	client := sts.NewFromConfig(assumed(f, roleARN, externalID), f.STSOptions)
	for range 5 {
		if _, err := client.GetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.Calls(awsfake.OpAssumeRole); n != 1 {
		t.Errorf("AssumeRole calls = %d, want 1 (credentials cached)", n)
	}
}

func TestSessionExpiry(t *testing.T) {
	clock := newClock()
	f := awsfake.Start(t, awsfake.WithClock(clock.Now))
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	f.SetSessionDuration(2 * time.Minute)
	out, err := sts.NewFromConfig(baseConfig(f), f.STSOptions).AssumeRole(ctx(t), &sts.AssumeRoleInput{
		RoleArn: aws.String(roleARN), RoleSessionName: aws.String("kukie"), ExternalId: aws.String(externalID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := clock.Now().Add(2 * time.Minute).Truncate(time.Second); !out.Credentials.Expiration.Equal(want) {
		t.Errorf("Expiration = %s, want %s", out.Credentials.Expiration, want)
	}
	cfg := baseConfig(f)
	cfg.Credentials = staticCreds(*out.Credentials.AccessKeyId,
		*out.Credentials.SecretAccessKey, *out.Credentials.SessionToken)
	client := sts.NewFromConfig(cfg, f.STSOptions)
	if _, err := client.GetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{}); err != nil {
		t.Fatalf("fresh credentials: %v", err)
	}
	clock.Advance(2 * time.Minute)
	_, err = client.GetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{})
	apiError(t, err, "ExpiredToken", http.StatusForbidden)
}

func TestSTSThrottling(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	client := sts.NewFromConfig(baseConfig(f), f.STSOptions)
	in := &sts.AssumeRoleInput{RoleArn: aws.String(roleARN), RoleSessionName: aws.String("kukie"), ExternalId: aws.String(externalID)}

	t.Run("RetriedThenSucceeds", func(t *testing.T) {
		f.ResetCalls()
		f.Fail(awsfake.OpAssumeRole, 2, "Throttling", http.StatusBadRequest)
		if _, err := client.AssumeRole(ctx(t), in); err != nil {
			t.Fatal(err)
		}
		if n := f.Calls(awsfake.OpAssumeRole); n != 3 {
			t.Errorf("AssumeRole calls = %d, want 3 (two throttled, retried by the SDK)", n)
		}
	})
	t.Run("GivesUp", func(t *testing.T) {
		f.ResetCalls()
		f.Fail(awsfake.OpAssumeRole, awsfake.Always, "Throttling", http.StatusBadRequest)
		defer f.ClearFaults()
		_, err := client.AssumeRole(ctx(t), in)
		apiError(t, err, "Throttling", http.StatusBadRequest)
		var maxAttempts *retry.MaxAttemptsError
		if !errors.As(err, &maxAttempts) {
			t.Errorf("error %v: the SDK did not treat Throttling as retryable", err)
		}
	})
	t.Run("InternalFailure", func(t *testing.T) {
		f.Fail(awsfake.OpAssumeRole, awsfake.Always, "InternalFailure", http.StatusInternalServerError)
		defer f.ClearFaults()
		_, err := client.AssumeRole(ctx(t), in)
		apiError(t, err, "InternalFailure", http.StatusInternalServerError)
	})
}

func TestEnvironment(t *testing.T) {
	// The product finds the fakes through the SDK's standard variables only.
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	f.Setenv(t)
	cfg, err := config.LoadDefaultConfig(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx(t), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Arn) != f.BasePrincipalARN() {
		t.Errorf("Arn = %s, want %s", aws.ToString(out.Arn), f.BasePrincipalARN())
	}
	if n := f.Calls(awsfake.OpGetCallerIdentity); n != 1 {
		t.Errorf("GetCallerIdentity calls = %d, want 1", n)
	}
}
