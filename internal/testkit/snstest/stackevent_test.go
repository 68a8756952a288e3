package snstest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/sns"
)

const testStackARN = "arn:aws:cloudformation:us-east-1:123456789012:stack/kukie-access/5b0fd7a0-1c2d-11f0-9e3b-0a1b2c3d4e5f"

func TestStackEventMessage(t *testing.T) {
	e := StackStatusEvent(testStackARN, "UPDATE_COMPLETE", time.Date(2026, 3, 4, 5, 6, 7, 123e6, time.UTC))
	want := `StackId='` + testStackARN + `'
Timestamp='2026-03-04T05:06:07.123Z'
EventId='` + e.EventID + `'
LogicalResourceId='kukie-access'
Namespace='123456789012'
PhysicalResourceId='` + testStackARN + `'
PrincipalId='` + StackEventPrincipal + `'
ResourceProperties='null'
ResourceStatus='UPDATE_COMPLETE'
ResourceStatusReason=''
ResourceType='AWS::CloudFormation::Stack'
StackName='kukie-access'
ClientRequestToken='null'
`
	if diff := cmp.Diff(want, StackEventMessage(e)); diff != "" {
		t.Errorf("StackEventMessage (-want +got):\n%s", diff)
	}
	got, err := sns.ParseStackEvent(StackEventMessage(e))
	if err != nil {
		t.Fatalf("ParseStackEvent: %v", err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !got.StackCompleted() {
		t.Error("StackCompleted() = false for the stack's UPDATE_COMPLETE")
	}
}

func TestStackStatusEvent(t *testing.T) {
	tests := []struct {
		status             string
		completed, deleted bool
	}{
		{"CREATE_COMPLETE", true, false},
		{"UPDATE_COMPLETE", true, false},
		{"UPDATE_ROLLBACK_COMPLETE", true, false},
		{"UPDATE_IN_PROGRESS", false, false},
		{"DELETE_COMPLETE", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			got, err := sns.ParseStackEvent(StackEventMessage(StackStatusEvent(testStackARN, tt.status, testNow)))
			if err != nil {
				t.Fatalf("ParseStackEvent: %v", err)
			}
			if got.StackCompleted() != tt.completed || got.Deleted() != tt.deleted {
				t.Errorf("StackCompleted() = %v, Deleted() = %v, want %v, %v", got.StackCompleted(), got.Deleted(), tt.completed, tt.deleted)
			}
		})
	}
}

func TestStackEventMessageNulls(t *testing.T) {
	resource := sns.StackEvent{
		StackID:           testStackARN,
		LogicalResourceID: "KukieRole",
		Namespace:         "123456789012",
		ResourceStatus:    "CREATE_IN_PROGRESS",
		ResourceType:      "AWS::IAM::Role",
		StackName:         "kukie-access",
	}
	got, err := sns.ParseStackEvent(StackEventMessage(resource))
	if err != nil {
		t.Fatalf("ParseStackEvent: %v", err)
	}
	if got.ResourceProperties != "null" || got.ClientRequestToken != "null" || got.PhysicalResourceID != "" {
		t.Errorf("got %+v, want null ResourceProperties and ClientRequestToken, empty PhysicalResourceId", got)
	}
	if got.StackCompleted() {
		t.Error("a resource's event counts as the stack completing")
	}
}

// TestDeliverStackEvent is the whole path a webhook test takes: a signed
// CloudFormation notification, posted, verified and read.
func TestDeliverStackEvent(t *testing.T) {
	h := mustHost(t, HostOptions{})
	v := mustVerifier(t, h, sns.Options{})
	endpoint, wh := startWebhook(t, v)
	text := StackEventMessage(StackStatusEvent(testStackARN, "UPDATE_COMPLETE", testNow))
	m := h.Sign(h.Notification(testTopic, sns.CloudFormationSubject, text), sns.SignatureVersion1)
	if code := mustPost(t, endpoint, m, nil); code != 200 {
		t.Fatalf("webhook answered %d", code)
	}
	d := wh.last(t)
	if d.err != nil {
		t.Fatalf("Verify: %v", d.err)
	}
	e, err := sns.ParseStackEvent(d.msg.Message)
	if err != nil || !e.StackCompleted() {
		t.Fatalf("ParseStackEvent = %+v, %v; want a completed stack", e, err)
	}
}
