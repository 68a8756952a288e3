package awsfake_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
)

const stackARN = "arn:aws:cloudformation:us-east-1:" + customer + ":stack/kukie-access/8f3c2a10-0000-11ef-8000-0a1b2c3d4e5f"

func TestDescribeStacks(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelLimited})
	f.AddStack(awsfake.Stack{
		ARN:              stackARN,
		Parameters:       map[string]string{"AccessLevel": "LIMITED", "AllowedNamespaces": "kukie-*,team-a"},
		Outputs:          map[string]string{"KukieTemplateVersion": "5", "RoleArn": roleARN},
		NotificationARNs: []string{"arn:aws:sns:us-east-1:" + customer + ":kukie-events"},
	})
	f.AddStack(awsfake.Stack{ARN: "arn:aws:cloudformation:us-east-1:" + customer + ":stack/v4-stack/0000"})
	f.AddStack(awsfake.Stack{ARN: "arn:aws:cloudformation:us-east-1:444455556666:stack/theirs/0000"})
	f.AddStack(awsfake.Stack{ARN: "arn:aws:cloudformation:eu-west-1:" + customer + ":stack/irish/0000"})
	client := cfnClient(f, assumed(f, roleARN, externalID))

	type param struct{ Key, Value string }
	for _, name := range []string{stackARN, "kukie-access"} {
		out, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeStacks %s: %v", name, err)
		}
		if len(out.Stacks) != 1 {
			t.Fatalf("%d stacks, want 1", len(out.Stacks))
		}
		s := out.Stacks[0]
		var params, outputs []param
		for _, p := range s.Parameters {
			params = append(params, param{aws.ToString(p.ParameterKey), aws.ToString(p.ParameterValue)})
		}
		for _, o := range s.Outputs {
			outputs = append(outputs, param{aws.ToString(o.OutputKey), aws.ToString(o.OutputValue)})
		}
		if diff := cmp.Diff([]param{{"AccessLevel", "LIMITED"}, {"AllowedNamespaces", "kukie-*,team-a"}}, params); diff != "" {
			t.Errorf("parameters (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]param{{"KukieTemplateVersion", "5"}, {"RoleArn", roleARN}}, outputs); diff != "" {
			t.Errorf("outputs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"arn:aws:sns:us-east-1:" + customer + ":kukie-events"}, s.NotificationARNs); diff != "" {
			t.Errorf("notification ARNs (-want +got):\n%s", diff)
		}
		if aws.ToString(s.StackId) != stackARN || aws.ToString(s.StackName) != "kukie-access" ||
			s.StackStatus != types.StackStatusCreateComplete || s.CreationTime == nil {
			t.Errorf("stack = %s %s %s %v", aws.ToString(s.StackId), aws.ToString(s.StackName), s.StackStatus, s.CreationTime)
		}
	}

	t.Run("NoOutputsNoTopics", func(t *testing.T) {
		out, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{StackName: aws.String("v4-stack")})
		if err != nil {
			t.Fatal(err)
		}
		if s := out.Stacks[0]; len(s.Outputs) != 0 || len(s.NotificationARNs) != 0 || len(s.Parameters) != 0 {
			t.Errorf("stack = %+v, want no parameters, outputs or topics", s)
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		_, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{
			StackName: aws.String("arn:aws:cloudformation:us-east-1:" + customer + ":stack/gone/0000")})
		apiError(t, err, "ValidationError", http.StatusBadRequest)
	})
	t.Run("ErrOtherRegion", func(t *testing.T) {
		// The stack exists, but the client signs for us-east-1.
		_, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{
			StackName: aws.String("arn:aws:cloudformation:eu-west-1:" + customer + ":stack/irish/0000")})
		apiError(t, err, "ValidationError", http.StatusBadRequest)
	})
	t.Run("ErrOtherAccount", func(t *testing.T) {
		_, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{
			StackName: aws.String("arn:aws:cloudformation:us-east-1:444455556666:stack/theirs/0000")})
		apiError(t, err, "AccessDenied", http.StatusForbidden)
	})
	t.Run("ErrBaseIdentity", func(t *testing.T) {
		_, err := cfnClient(f, baseConfig(f)).DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{StackName: aws.String(stackARN)})
		apiError(t, err, "AccessDenied", http.StatusForbidden)
	})
	t.Run("OnlyOwnStack", func(t *testing.T) {
		f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelLimited, StackARN: stackARN})
		if _, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{StackName: aws.String(stackARN)}); err != nil {
			t.Fatal(err)
		}
		_, err := client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{StackName: aws.String("v4-stack")})
		apiError(t, err, "AccessDenied", http.StatusForbidden)
		_, err = client.DescribeStacks(ctx(t), &cloudformation.DescribeStacksInput{
			StackName: aws.String("arn:aws:cloudformation:us-east-1:" + customer + ":stack/gone/0000")})
		apiError(t, err, "AccessDenied", http.StatusForbidden)
	})
	if n := f.CallsBy(awsfake.OpDescribeStacks, roleARN); n != 9 {
		t.Errorf("DescribeStacks calls by the role = %d, want 9", n)
	}
}

func TestCloudFormationSignature(t *testing.T) {
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull})
	f.AddStack(awsfake.Stack{ARN: stackARN})
	creds, err := assumed(f, roleARN, externalID).Credentials.Retrieve(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	in := &cloudformation.DescribeStacksInput{StackName: aws.String(stackARN)}

	cfg := baseConfig(f)
	cfg.Credentials = staticCreds(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	if _, err := cfnClient(f, cfg).DescribeStacks(ctx(t), in); err != nil {
		t.Fatalf("assumed credentials: %v", err)
	}
	cfg.Credentials = staticCreds(creds.AccessKeyID, tamper(creds.SecretAccessKey), creds.SessionToken)
	_, err = cfnClient(f, cfg).DescribeStacks(ctx(t), in)
	apiError(t, err, "SignatureDoesNotMatch", http.StatusForbidden)
	cfg.Credentials = staticCreds(creds.AccessKeyID, creds.SecretAccessKey, "other-token")
	_, err = cfnClient(f, cfg).DescribeStacks(ctx(t), in)
	apiError(t, err, "InvalidClientTokenId", http.StatusForbidden)
	cfg.Credentials = staticCreds("ASIAUNKNOWN000000000", creds.SecretAccessKey, creds.SessionToken)
	_, err = cfnClient(f, cfg).DescribeStacks(ctx(t), in)
	apiError(t, err, "InvalidClientTokenId", http.StatusForbidden)
}
