package service

import (
	"context"
	"errors"
)

// SNSMessage is the JSON envelope SNS posts to an HTTP(S) subscriber, as the
// SNS adapter parses it (internal/sns.Message is this type). Fields a type
// does not carry are empty; an empty Subject means no subject. SubscribeURL,
// Token and UnsubscribeURL act on the subscription: never log them.
type SNSMessage struct {
	Type             string `json:"Type"`
	MessageID        string `json:"MessageId"`
	TopicARN         string `json:"TopicArn"`
	Subject          string `json:"Subject"`
	Message          string `json:"Message"`
	Timestamp        string `json:"Timestamp"`
	SignatureVersion string `json:"SignatureVersion"`
	Signature        string `json:"Signature"`
	SigningCertURL   string `json:"SigningCertURL"`
	SubscribeURL     string `json:"SubscribeURL"`
	Token            string `json:"Token"`
	UnsubscribeURL   string `json:"UnsubscribeURL"`
}

// Message types SNS delivers to an HTTP(S) endpoint.
const (
	SNSSubscriptionConfirmation = "SubscriptionConfirmation"
	SNSNotification             = "Notification"
	SNSUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// The kinds every error of the SNS adapter wraps; test with errors.Is.
var (
	// ErrSNSMalformed: the body or a field does not parse (answer 400).
	ErrSNSMalformed = errors.New("sns: malformed message")
	// ErrSNSRejected: the message parses but is not authentic or not fresh
	// (answer 403; SNS does not retry it).
	ErrSNSRejected = errors.New("sns: message rejected")
	// ErrSNSTransient: the message could not be checked now, e.g. the
	// certificate fetch failed (answer 503 so SNS retries).
	ErrSNSTransient = errors.New("sns: transient failure")
)

// SNSFault is what an SNS adapter's error tells beside its kind: a stable
// reason for metric labels and a detail safe to answer and log (never a
// body, URL or token).
type SNSFault interface {
	error
	SNSReason() string
	SNSDetail() string
}

// snsReason is the reason of the first SNSFault in err's chain, or "".
func snsReason(err error) string {
	var f SNSFault
	if errors.As(err, &f) {
		return f.SNSReason()
	}
	return ""
}

// SNSVerifier reads SNS deliveries (internal/sns.Verifier): the envelope,
// its checks without the network (CheckOffline) and all of them (Verify),
// the SubscribeURL rule of a confirmation and the CloudFormation event a
// notification carries. Errors are SNSFaults wrapping one of the ErrSNS
// kinds.
type SNSVerifier interface {
	ParseMessage(body []byte) (SNSMessage, error)
	CheckOffline(m SNSMessage) error
	Verify(ctx context.Context, m SNSMessage) error
	SubscribeURLAllowed(m SNSMessage) error
	ParseStackEvent(message string) (StackEvent, error)
}

// StackTypeName is the ResourceType of a stack's events about itself.
const StackTypeName = "AWS::CloudFormation::Stack"

// StackEvent is one CloudFormation stack event as published to SNS (the
// SNS adapter parses it). Values are as CloudFormation wrote them ("null"
// for none). The event only triggers a reconcile; it is never the source of
// truth for a stack's state.
type StackEvent struct {
	StackID              string
	Timestamp            string
	EventID              string
	LogicalResourceID    string
	Namespace            string // the stack's account id
	PhysicalResourceID   string
	PrincipalID          string
	ResourceProperties   string // may be JSON spanning lines
	ResourceStatus       string
	ResourceStatusReason string
	ResourceType         string
	StackName            string
	ClientRequestToken   string
}

// isStackItself reports whether e is the stack's event about itself rather
// than about one of its resources (a nested stack included).
func (e StackEvent) isStackItself() bool {
	return e.ResourceType == StackTypeName && e.StackName != "" && e.LogicalResourceID == e.StackName
}

// StackCompleted reports whether e is the stack itself reaching a settled,
// successful state after a change: CREATE_COMPLETE, UPDATE_COMPLETE or
// UPDATE_ROLLBACK_COMPLETE (the parameters reverted). It only triggers a
// reconcile; the stack's parameters are read from CloudFormation.
func (e StackEvent) StackCompleted() bool {
	if !e.isStackItself() {
		return false
	}
	switch e.ResourceStatus {
	case "CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE":
		return true
	}
	return false
}

// Deleted reports whether e is the stack itself reaching DELETE_COMPLETE.
func (e StackEvent) Deleted() bool {
	return e.isStackItself() && e.ResourceStatus == "DELETE_COMPLETE"
}
