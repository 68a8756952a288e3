package sns

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/kukie/gitops-server/service"
)

// Message types SNS delivers to an HTTP(S) endpoint (the service's names).
const (
	TypeSubscriptionConfirmation = service.SNSSubscriptionConfirmation
	TypeNotification             = service.SNSNotification
	TypeUnsubscribeConfirmation  = service.SNSUnsubscribeConfirmation
)

// Signature versions: 1 is SHA1withRSA (the default), 2 is SHA256withRSA.
const (
	SignatureVersion1 = "1"
	SignatureVersion2 = "2"
)

// MaxFutureSkew is how far ahead of the local clock a Timestamp may be.
const MaxFutureSkew = 5 * time.Minute

// Message is the JSON envelope SNS posts to an HTTP(S) subscriber: the
// service's type, which this package parses and checks.
type Message = service.SNSMessage

// ParseMessage decodes an SNS delivery body and checks that it is complete:
// a known Type and SignatureVersion, the fields its type signs (only
// Message may span lines), an RFC 3339 Timestamp, a base64 Signature and
// an SNS topic ARN. Unknown fields are ignored (SNS may add some). Every
// failure wraps ErrMalformed.
func ParseMessage(body []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return Message{}, &Error{Kind: ErrMalformed, Reason: ReasonSyntax, Detail: "body is not an SNS JSON message", Err: err}
	}
	if err := validate(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// validate checks what ParseMessage promises, so that Verify can rely on it
// for a Message built by other means.
func validate(m Message) error {
	if _, err := signedFields(m); err != nil {
		return err
	}
	switch m.SignatureVersion {
	case SignatureVersion1, SignatureVersion2:
	default:
		return malformed(ReasonSignatureVersion, "SignatureVersion must be 1 or 2")
	}
	for _, f := range []struct{ name, value string }{
		{"Signature", m.Signature},
		{"SigningCertURL", m.SigningCertURL},
	} {
		if f.value == "" {
			return malformed(ReasonSyntax, f.name+" is missing")
		}
	}
	if _, err := time.Parse(time.RFC3339, m.Timestamp); err != nil {
		return malformed(ReasonSyntax, "Timestamp is not RFC 3339")
	}
	if _, err := base64.StdEncoding.DecodeString(m.Signature); err != nil {
		return malformed(ReasonSyntax, "Signature is not base64")
	}
	if _, err := ParseTopicARN(m.TopicARN); err != nil {
		return err
	}
	return nil
}

// signedFields lists the name/value pairs SNS signs for m's type, in order,
// and fails if a required one is empty.
func signedFields(m Message) ([][2]string, error) {
	var fields [][2]string
	switch m.Type {
	case TypeNotification:
		fields = [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}}
		if m.Subject != "" {
			fields = append(fields, [2]string{"Subject", m.Subject})
		}
		fields = append(fields,
			[2]string{"Timestamp", m.Timestamp},
			[2]string{"TopicArn", m.TopicARN},
			[2]string{"Type", m.Type})
	case TypeSubscriptionConfirmation, TypeUnsubscribeConfirmation:
		fields = [][2]string{
			{"Message", m.Message},
			{"MessageId", m.MessageID},
			{"SubscribeURL", m.SubscribeURL},
			{"Timestamp", m.Timestamp},
			{"Token", m.Token},
			{"TopicArn", m.TopicARN},
			{"Type", m.Type},
		}
	default:
		return nil, malformed(ReasonType, "Type must be SubscriptionConfirmation, Notification or UnsubscribeConfirmation")
	}
	for _, f := range fields {
		if f[1] == "" {
			return nil, malformed(ReasonSyntax, f[0]+" is missing")
		}
		// The string to sign joins "name\nvalue\n" pairs, so a newline in
		// a value after Message could move text between signed fields (a
		// Subject into MessageId) without changing the signature. SNS never
		// writes one there: Subject has no line breaks, the rest are ids,
		// URLs and timestamps.
		if f[0] != "Message" && strings.Contains(f[1], "\n") {
			return nil, malformed(ReasonSyntax, f[0]+" must be a single line")
		}
	}
	return fields, nil
}

// StringToSign returns the canonical text SNS signs for m: "name\nvalue\n"
// for each signed field of m's type, in SNS's order. It fails with
// ErrMalformed for an unknown Type or a missing signed field.
func StringToSign(m Message) ([]byte, error) {
	fields, err := signedFields(m)
	if err != nil {
		return nil, err
	}
	var b []byte
	for _, f := range fields {
		b = append(b, f[0]...)
		b = append(b, '\n')
		b = append(b, f[1]...)
		b = append(b, '\n')
	}
	return b, nil
}

// CheckTime rejects a message whose Timestamp is more than maxAge before now
// or more than MaxFutureSkew after it (ErrRejected), or does not parse
// (ErrMalformed). Timestamp is the publish time, which retries keep, so
// maxAge must cover the subscription's delivery retry policy.
func CheckTime(m Message, now time.Time, maxAge time.Duration) error {
	ts, err := time.Parse(time.RFC3339, m.Timestamp)
	if err != nil {
		return malformed(ReasonSyntax, "Timestamp is not RFC 3339")
	}
	if now.Sub(ts) > maxAge {
		return rejected(ReasonStale, "Timestamp older than "+maxAge.String())
	}
	if ts.Sub(now) > MaxFutureSkew {
		return rejected(ReasonFuture, "Timestamp more than "+MaxFutureSkew.String()+" ahead")
	}
	return nil
}
