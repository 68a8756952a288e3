package sns

import (
	"errors"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// The error kinds every failure of this package wraps; test with errors.Is.
var (
	// ErrMalformed: the body or a field does not parse (answer 400).
	ErrMalformed = service.ErrSNSMalformed
	// ErrRejected: the message parses but is not authentic or not fresh
	// (answer 403; SNS does not retry it).
	ErrRejected = service.ErrSNSRejected
	// ErrTransient: the message could not be checked now, e.g. the
	// certificate fetch failed (answer 503 so SNS retries).
	ErrTransient = service.ErrSNSTransient
	// ErrBadStackEvent: a verified message whose text is not a
	// CloudFormation stack event (ignore it, answer 200).
	ErrBadStackEvent = errors.New("sns: not a CloudFormation stack event")
)

// Reason is a stable, machine-readable refinement of an error's kind, meant
// for metric labels and log fields.
type Reason string

// Reasons returned in Error.Reason.
const (
	ReasonSyntax           Reason = "syntax"            // JSON or a field's format (ErrMalformed)
	ReasonType             Reason = "type"              // unknown Type (ErrMalformed)
	ReasonSignatureVersion Reason = "signature_version" // SignatureVersion not 1 or 2 (ErrMalformed)
	ReasonTopicARN         Reason = "topic_arn"         // TopicArn is not an SNS topic ARN (ErrMalformed)
	ReasonCertURL          Reason = "cert_url"          // SigningCertURL not on the topic's SNS host (ErrRejected)
	ReasonStale            Reason = "stale"             // Timestamp older than the maximum age (ErrRejected)
	ReasonFuture           Reason = "future"            // Timestamp too far ahead (ErrRejected)
	ReasonCertExpired      Reason = "cert_expired"      // certificate outside its validity dates (ErrRejected)
	ReasonSignature        Reason = "signature"         // signature does not verify (ErrRejected)
	ReasonSubscribeURL     Reason = "subscribe_url"     // SubscribeURL not a confirmation of this topic (ErrRejected)
	ReasonCertFetch        Reason = "cert_fetch"        // certificate fetch failed (ErrTransient)
	ReasonCertRedirect     Reason = "cert_redirect"     // certificate host answered a redirect (ErrTransient)
	ReasonCertTimeout      Reason = "cert_timeout"      // certificate fetch timed out (ErrTransient)
	ReasonCertTooLarge     Reason = "cert_too_large"    // certificate response over the size cap (ErrTransient)
	ReasonCertBudget       Reason = "cert_budget"       // the process-wide certificate fetch bucket is empty: not fetched (ErrTransient)
	ReasonStackEvent       Reason = "stack_event"       // stack event text does not parse (ErrBadStackEvent)
)

// Error is the one error type of this package: a kind to map to a status,
// a reason for metrics, and a detail and cause for the logs. Its text never
// holds the message's Message, SubscribeURL, Token or UnsubscribeURL, so it
// can be logged.
type Error struct {
	Kind   error // ErrMalformed, ErrRejected, ErrTransient or ErrBadStackEvent
	Reason Reason
	Detail string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("sns: error")
	}
	b.WriteString(" (")
	b.WriteString(string(e.Reason))
	b.WriteString(")")
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// SNSReason is the reason as the service reads it (service.SNSFault).
func (e *Error) SNSReason() string { return string(e.Reason) }

// SNSDetail is the detail as the service reads it (service.SNSFault).
func (e *Error) SNSDetail() string { return e.Detail }

// Unwrap exposes both the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ReasonOf returns the Reason of the first *Error in err's chain, or "".
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func malformed(r Reason, detail string) error {
	return &Error{Kind: ErrMalformed, Reason: r, Detail: detail}
}

func rejected(r Reason, detail string) error {
	return &Error{Kind: ErrRejected, Reason: r, Detail: detail}
}

func transient(r Reason, detail string, cause error) error {
	return &Error{Kind: ErrTransient, Reason: r, Detail: detail, Err: cause}
}
