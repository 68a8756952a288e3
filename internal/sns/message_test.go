package sns

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestParseMessage(t *testing.T) {
	t.Run("Notification", func(t *testing.T) {
		want := sign(t, notification(testNow), SignatureVersion1)
		got, err := ParseMessage(mustJSON(t, want))
		if err != nil {
			t.Fatalf("ParseMessage: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("message (-want +got):\n%s", diff)
		}
	})
	t.Run("SNSWireFormat", func(t *testing.T) {
		// As SNS posts it: no Subject key, unknown keys it may add.
		body := `{
  "Type" : "Notification",
  "MessageId" : "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic",
  "Message" : "My First Message",
  "Timestamp" : "2012-05-02T00:54:06.655Z",
  "SignatureVersion" : "1",
  "Signature" : "EXAMPLEw6JRNwQ==",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c9135db0",
  "MessageAttributes" : {"k": {"Type": "String", "Value": "v"}}
}`
		got, err := ParseMessage([]byte(body))
		if err != nil {
			t.Fatalf("ParseMessage: %v", err)
		}
		if got.Subject != "" || got.MessageID != "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324" || got.SignatureVersion != "1" {
			t.Errorf("ParseMessage = %+v", got)
		}
	})
	t.Run("Confirmations", func(t *testing.T) {
		for _, typ := range []string{TypeSubscriptionConfirmation, TypeUnsubscribeConfirmation} {
			want := sign(t, confirmation(typ, testNow), SignatureVersion2)
			got, err := ParseMessage(mustJSON(t, want))
			if err != nil {
				t.Fatalf("ParseMessage(%s): %v", typ, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", typ, diff)
			}
		}
	})
}

func TestParseMessageMalformed(t *testing.T) {
	good := sign(t, notification(testNow), SignatureVersion1)
	goodConf := sign(t, confirmation(TypeSubscriptionConfirmation, testNow), SignatureVersion1)
	edit := func(m Message, f func(*Message)) []byte {
		f(&m)
		return mustJSON(t, m)
	}
	// asMap lets a case give a field a value of the wrong JSON type.
	asMap := func(m Message, key string, value any) []byte {
		var obj map[string]any
		if err := json.Unmarshal(mustJSON(t, m), &obj); err != nil {
			t.Fatal(err)
		}
		obj[key] = value
		return mustJSON(t, obj)
	}
	tests := []struct {
		name   string
		body   []byte
		reason Reason
	}{
		{"ErrNotJSON", []byte("Type=Notification"), ReasonSyntax},
		{"ErrEmpty", nil, ReasonSyntax},
		{"ErrNull", []byte("null"), ReasonType},
		{"ErrArray", []byte("[]"), ReasonSyntax},
		{"ErrTrailingData", append(mustJSON(t, good), []byte(" {}")...), ReasonSyntax},
		{"ErrSignatureVersionNumber", asMap(good, "SignatureVersion", 1), ReasonSyntax},
		{"ErrUnknownType", edit(good, func(m *Message) { m.Type = "Unsubscribe" }), ReasonType},
		{"ErrSignatureVersion3", edit(good, func(m *Message) { m.SignatureVersion = "3" }), ReasonSignatureVersion},
		{"ErrNoSignatureVersion", edit(good, func(m *Message) { m.SignatureVersion = "" }), ReasonSignatureVersion},
		{"ErrNoMessage", edit(good, func(m *Message) { m.Message = "" }), ReasonSyntax},
		{"ErrNoMessageId", edit(good, func(m *Message) { m.MessageID = "" }), ReasonSyntax},
		{"ErrNoTimestamp", edit(good, func(m *Message) { m.Timestamp = "" }), ReasonSyntax},
		{"ErrNoTopicArn", edit(good, func(m *Message) { m.TopicARN = "" }), ReasonSyntax},
		{"ErrNoSignature", edit(good, func(m *Message) { m.Signature = "" }), ReasonSyntax},
		{"ErrNoSigningCertURL", edit(good, func(m *Message) { m.SigningCertURL = "" }), ReasonSyntax},
		{"ErrTimestampNotRFC3339", edit(good, func(m *Message) { m.Timestamp = "Wed, 04 Mar 2026 05:06:07 GMT" }), ReasonSyntax},
		{"ErrSignatureNotBase64", edit(good, func(m *Message) { m.Signature = "not base64!" }), ReasonSyntax},
		{"ErrTopicArnNotSNS", edit(good, func(m *Message) { m.TopicARN = "arn:aws:sqs:us-east-1:123456789012:q" }), ReasonTopicARN},
		{"ErrTopicArnPartition", edit(good, func(m *Message) { m.TopicARN = "arn:aws-iso:sns:us-iso-east-1:123456789012:t" }), ReasonTopicARN},
		{"ErrTopicArnAccount", edit(good, func(m *Message) { m.TopicARN = "arn:aws:sns:us-east-1:1234:t" }), ReasonTopicARN},
		{"ErrConfirmationNoToken", edit(goodConf, func(m *Message) { m.Token = "" }), ReasonSyntax},
		{"ErrConfirmationNoSubscribeURL", edit(goodConf, func(m *Message) { m.SubscribeURL = "" }), ReasonSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMessage(tt.body)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseMessage = %v, want ErrMalformed", err)
			}
			if got := ReasonOf(err); got != tt.reason {
				t.Errorf("reason = %q, want %q (%v)", got, tt.reason, err)
			}
		})
	}
}

func TestStringToSign(t *testing.T) {
	n := notification(testNow)
	conf := confirmation(TypeSubscriptionConfirmation, testNow)
	unsub := confirmation(TypeUnsubscribeConfirmation, testNow)
	noSubject := n
	noSubject.Subject = ""
	lines := func(l ...string) string { return strings.Join(l, "\n") + "\n" }
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"NotificationWithSubject", n, lines(
			"Message", n.Message, "MessageId", testMessageID, "Subject", CloudFormationSubject,
			"Timestamp", n.Timestamp, "TopicArn", testTopic, "Type", "Notification")},
		{"NotificationWithoutSubject", noSubject, lines(
			"Message", n.Message, "MessageId", testMessageID,
			"Timestamp", n.Timestamp, "TopicArn", testTopic, "Type", "Notification")},
		{"SubscriptionConfirmation", conf, lines(
			"Message", conf.Message, "MessageId", testMessageID, "SubscribeURL", conf.SubscribeURL,
			"Timestamp", conf.Timestamp, "Token", testToken, "TopicArn", testTopic, "Type", "SubscriptionConfirmation")},
		{"UnsubscribeConfirmation", unsub, lines(
			"Message", unsub.Message, "MessageId", testMessageID, "SubscribeURL", unsub.SubscribeURL,
			"Timestamp", unsub.Timestamp, "Token", testToken, "TopicArn", testTopic, "Type", "UnsubscribeConfirmation")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StringToSign(tt.m)
			if err != nil {
				t.Fatalf("StringToSign: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("string to sign (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("ErrUnknownType", func(t *testing.T) {
		m := n
		m.Type = "Other"
		if _, err := StringToSign(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("StringToSign = %v, want ErrMalformed", err)
		}
	})
	t.Run("ErrConfirmationWithoutToken", func(t *testing.T) {
		m := conf
		m.Token = ""
		if _, err := StringToSign(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("StringToSign = %v, want ErrMalformed", err)
		}
	})
}

func TestCheckTime(t *testing.T) {
	const maxAge = time.Hour
	tests := []struct {
		name   string
		ts     time.Time
		kind   error
		reason Reason
	}{
		{"Now", testNow, nil, ""},
		{"MaxAgeOld", testNow.Add(-maxAge), nil, ""},
		{"ErrStale", testNow.Add(-maxAge - time.Millisecond), ErrRejected, ReasonStale},
		{"ErrVeryStale", testNow.Add(-30 * 24 * time.Hour), ErrRejected, ReasonStale},
		{"SkewAhead", testNow.Add(MaxFutureSkew), nil, ""},
		{"ErrFuture", testNow.Add(MaxFutureSkew + time.Millisecond), ErrRejected, ReasonFuture},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTime(notification(tt.ts), testNow, maxAge)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("CheckTime = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.kind) || ReasonOf(err) != tt.reason {
				t.Errorf("CheckTime = %v, want %v (%s)", err, tt.kind, tt.reason)
			}
		})
	}
	t.Run("ErrTimestampSyntax", func(t *testing.T) {
		m := notification(testNow)
		m.Timestamp = "yesterday"
		if err := CheckTime(m, testNow, maxAge); !errors.Is(err, ErrMalformed) {
			t.Errorf("CheckTime = %v, want ErrMalformed", err)
		}
	})
	t.Run("OtherZone", func(t *testing.T) {
		m := notification(testNow)
		m.Timestamp = testNow.In(time.FixedZone("CET", 3600)).Format(time.RFC3339)
		if err := CheckTime(m, testNow, maxAge); err != nil {
			t.Errorf("CheckTime = %v, want nil", err)
		}
	})
}

func TestErrorNeverHoldsSecrets(t *testing.T) {
	m := confirmation(TypeSubscriptionConfirmation, testNow)
	m.SubscribeURL = "https://evil.example/?Token=" + testToken
	err := SubscribeURLAllowed(m)
	if err == nil {
		t.Fatal("SubscribeURLAllowed accepted a foreign host")
	}
	for _, secret := range []string{testToken, "evil.example"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q contains %q", err, secret)
		}
	}
}

// FuzzParseMessage: any body either parses or fails with ErrMalformed, and
// what parses has a string to sign.
func FuzzParseMessage(f *testing.F) {
	f.Add(mustJSON(f, sign(f, notification(testNow), SignatureVersion1)))
	f.Add(mustJSON(f, sign(f, confirmation(TypeSubscriptionConfirmation, testNow), SignatureVersion2)))
	f.Add([]byte(`{"Type":"Notification","Type":"Other"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > maxFuzzInput {
			return
		}
		m, err := ParseMessage(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseMessage error %v is not ErrMalformed", err)
			}
			return
		}
		if _, err := StringToSign(m); err != nil {
			t.Fatalf("StringToSign of a parsed message: %v", err)
		}
	})
}
