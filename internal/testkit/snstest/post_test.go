package snstest

import (
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/sns"
)

func TestBody(t *testing.T) {
	m := sns.Message{
		Type:             sns.TypeNotification,
		MessageID:        "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		TopicARN:         testTopic,
		Subject:          "My First Message",
		Message:          "a <b> & \"c\"\nd",
		Timestamp:        "2026-03-04T05:06:07.000Z",
		SignatureVersion: "1",
		Signature:        "RVhBTVBMRQ==",
		SigningCertURL:   "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
		UnsubscribeURL:   "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=" + testTopic + ":c9135db0",
	}
	want := `{
  "Type" : "Notification",
  "MessageId" : "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
  "TopicArn" : "` + testTopic + `",
  "Subject" : "My First Message",
  "Message" : "a <b> & \"c\"\nd",
  "Timestamp" : "2026-03-04T05:06:07.000Z",
  "SignatureVersion" : "1",
  "Signature" : "RVhBTVBMRQ==",
  "SigningCertURL" : "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
  "UnsubscribeURL" : "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=` + testTopic + `:c9135db0"
}`
	if diff := cmp.Diff(want, string(Body(m))); diff != "" {
		t.Errorf("Body (-want +got):\n%s", diff)
	}
	got, err := sns.ParseMessage(Body(m))
	if err != nil {
		t.Fatalf("ParseMessage: %v", err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestNewRequestHeaders(t *testing.T) {
	h := mustHost(t, HostOptions{})
	m := h.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion1)
	tests := []struct {
		name   string
		header http.Header
		want   map[string]string
	}{
		{"Defaults", nil, map[string]string{
			"Content-Type":               "text/plain; charset=UTF-8",
			"User-Agent":                 "Amazon Simple Notification Service Agent",
			"X-Amz-Sns-Message-Type":     sns.TypeNotification,
			"X-Amz-Sns-Message-Id":       m.MessageID,
			"X-Amz-Sns-Topic-Arn":        testTopic,
			"X-Amz-Sns-Subscription-Arn": subscriptionOf(m),
		}},
		{"TopicMismatch", http.Header{"x-amz-sns-topic-arn": {"arn:aws:sns:us-east-1:123456789012:other"}}, map[string]string{
			"X-Amz-Sns-Topic-Arn": "arn:aws:sns:us-east-1:123456789012:other",
		}},
		{"Removed", http.Header{"X-Amz-Sns-Message-Type": nil}, map[string]string{
			"X-Amz-Sns-Message-Type": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := NewRequest(t.Context(), "http://127.0.0.1/sns", m, tt.header)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost {
				t.Errorf("Method = %s, want POST", req.Method)
			}
			for k, want := range tt.want {
				if got := req.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(Body(m)), string(body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	if subscriptionOf(m) == "" {
		t.Error("a notification's request names no subscription")
	}
}
