package eksaccess

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/service"
)

func testStack(version string, params map[string]string) cftypes.Stack {
	s := cftypes.Stack{NotificationARNs: []string{"arn:aws:sns:us-east-1:111122223333:kukie"}}
	for k, v := range params {
		s.Parameters = append(s.Parameters, cftypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if version != "" {
		s.Outputs = []cftypes.Output{{OutputKey: aws.String("Other"), OutputValue: aws.String("x")},
			{OutputKey: aws.String(outputTemplateVersion), OutputValue: aws.String(version)}}
	}
	return s
}

func TestStackFacts(t *testing.T) {
	topics := []string{"arn:aws:sns:us-east-1:111122223333:kukie"}
	for _, tc := range []struct {
		name  string
		stack cftypes.Stack
		want  service.StackFacts
	}{
		{"V5Full", testStack("5", map[string]string{"AccessLevel": "FULL", "AllowedNamespaces": "team-b, team-a,,team-a "}),
			service.StackFacts{AccessLevel: service.AccessFull, TemplateVersion: "5",
				AllowedNamespaces: []string{"team-a", "team-b"}, NotificationARNs: topics}},
		{"V5Limited", testStack("5", map[string]string{"AccessLevel": "LIMITED", "AllowedNamespaces": "dev-*"}),
			service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "5",
				AllowedNamespaces: []string{"dev-*"}, NotificationARNs: topics}},
		{"V4WithoutOutputNeverFull", testStack("", map[string]string{"AccessLevel": "FULL", "AllowedNamespaces": "default"}),
			service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "4", ConfirmationRequired: true,
				AllowedNamespaces: []string{"kukie-*"}, NotificationARNs: topics}},
		{"UnknownAccessLevelLimited", testStack("5", map[string]string{"AccessLevel": "ADMIN"}),
			service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "5", ConfirmationRequired: true,
				AllowedNamespaces: []string{}, NotificationARNs: topics}},
		{"MissingAccessLevelLimited", testStack("5", nil),
			service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "5", ConfirmationRequired: true,
				AllowedNamespaces: []string{}, NotificationARNs: topics}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stackFacts(tc.stack)
			if got.ConfirmationRequired == (got.Reason == "") {
				t.Errorf("Reason %q must be set exactly when confirmation is required", got.Reason)
			}
			got.Reason = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("stackFacts (-want +got):\n%s", diff)
			}
		})
	}
}
