package service

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// MaxDeferredBody bounds the body of a SubscriptionConfirmation kept
// unverified: SNS's are under 2 KiB (a fixed sentence, a 256-digit token,
// URLs), so 16 KiB refuses only what SNS never sends and bounds what the
// pending subscriptions hold.
const MaxDeferredBody = 16 << 10

// Verdicts of an SNS delivery, for metrics and the answer's body.
const (
	VerdictAccepted     = "accepted"     // a stack event that starts a reconcile
	VerdictDuplicate    = "duplicate"    // SNS's retry of a message already taken
	VerdictIgnored      = "ignored"      // verified, but nothing to do (Reason says why)
	VerdictConfirming   = "confirming"   // a subscription of an allowed topic: being confirmed
	VerdictDeferred     = "deferred"     // a subscription of a topic no account lists yet: kept unverified for 3 days (202)
	VerdictDisconnected = "disconnected" // unsubscribed, or the stack deleted: the account is disconnected
	VerdictMalformed    = "malformed"    // 400
	VerdictRejected     = "rejected"     // 403
	VerdictTransient    = "transient"    // 503: SNS retries
)

// Delivery is the outcome of one SNS delivery.
type Delivery struct {
	Verdict string `json:"verdict"`
	// Reason refines the verdict (the SNS adapter's reasons, or why it was ignored).
	Reason string `json:"reason,omitempty"`
}

// WebhookMetrics counts SNS deliveries by verdict and reason; nil counts
// nothing.
type WebhookMetrics interface {
	SNSMessage(verdict, reason string)
}

// Why an account was disconnected by a delivery (its state_reason).
const (
	ReasonUnsubscribed = "Kukie's subscription to the stack's notification topic was removed: level switches from stack updates stop " +
		"(the periodic reconcile still applies the stack). Subscribe Kukie's endpoint to the topic again."
	ReasonStackDeleted = "The customer's Kukie stack was deleted: its role and policies are gone. " +
		"Disconnect the account, or create the stack again and reconnect it."
)

// reasonResubscribed is the state_reason of an account back from an
// unsubscription until its reconcile has read the stack.
const reasonResubscribed = "Kukie receives the stack's notifications again; the stack is being read."

// Webhook takes SNS deliveries of customers' CloudFormation stack events:
// each verified and bound to its account before anything is stored, but
// for the subscriptions of topics no account lists yet, which are kept
// unverified (and bounded) for their confirmation job to verify.
type Webhook struct {
	Store    SwitchStore
	Accounts AccountStore
	Verifier SNSVerifier
	Trigger  SwitchTrigger
	Metrics  WebhookMetrics
	// PendingMax bounds the deferred subscriptions of all topics
	// together; 0 means DefaultPendingSubscriptionsMax.
	PendingMax int
	// Switches counts disconnections.
	Switches SwitchMetrics
	Logger   *slog.Logger
	Now      func() time.Time
}

func (w *Webhook) log() *slog.Logger {
	if w.Logger == nil {
		return slog.Default()
	}
	return w.Logger
}

// Deliver checks and takes one delivery, cheapest checks first and the
// network last: the envelope parses (else EINVALID: 400); the header's
// topic, when given, is the body's; the topic is one an account lists;
// then the timestamp, certificate URL, certificate and signature (EFORBIDDEN:
// 403; a failed certificate fetch, an empty fetch bucket or the database
// is EUNAVAILABLE: 503, so SNS retries).
//
// Nothing of a topic no account lists reaches the network: its
// Notification and UnsubscribeConfirmation are refused, and its
// SubscriptionConfirmation, once the checks without network pass, is kept
// unverified (VerdictDeferred) until an account lists the topic, whose
// confirmation job verifies it before confirming. Nothing it logs holds
// the body, a SubscribeURL, a Token or an UnsubscribeURL.
func (w *Webhook) Deliver(ctx context.Context, body []byte, headerTopic string) (Delivery, error) {
	d, err := w.deliver(ctx, body, headerTopic)
	if err != nil {
		d.Verdict = VerdictTransient
		switch {
		case errors.Is(err, ErrSNSMalformed):
			d.Verdict = VerdictMalformed
			err = &Error{Code: EINVALID, Reason: "sns_malformed", Err: err, Message: "The body is not an SNS message: " + errorDetail(err)}
		case errors.Is(err, ErrSNSRejected):
			d.Verdict = VerdictRejected
			err = &Error{Code: EFORBIDDEN, Reason: "sns_rejected", Err: err, Message: "The SNS message was rejected: " + errorDetail(err)}
		case errors.Is(err, ErrSNSTransient):
			err = &Error{Code: EUNAVAILABLE, Reason: "sns_unavailable", Err: err, Message: "The SNS message cannot be checked right now; SNS retries."}
		case ErrorCode(err) != EFORBIDDEN:
			err = &Error{Code: EUNAVAILABLE, Reason: "sns_unavailable", Err: err, Message: "The SNS message cannot be taken right now; SNS retries."}
		default:
			d.Verdict = VerdictRejected
		}
		if d.Reason == "" {
			d.Reason = snsReason(err)
		}
	}
	if w.Metrics != nil {
		w.Metrics.SNSMessage(d.Verdict, d.Reason)
	}
	if d.Verdict == VerdictRejected {
		w.log().Warn("SNS message rejected", "reason", d.Reason, "error", err)
	}
	return d, err
}

// errorDetail is an SNSFault's detail (never a body, URL or token).
func errorDetail(err error) string {
	var f SNSFault
	if errors.As(err, &f) && f.SNSDetail() != "" {
		return f.SNSDetail()
	}
	return "see the reason"
}

func rejectedTopic(reason, message string) (Delivery, error) {
	return Delivery{Reason: reason}, &Error{Code: EFORBIDDEN, Reason: "sns_rejected", Message: message}
}

func (w *Webhook) deliver(ctx context.Context, body []byte, headerTopic string) (Delivery, error) {
	m, err := w.Verifier.ParseMessage(body)
	if err != nil {
		return Delivery{}, err
	}
	if headerTopic != "" && headerTopic != m.TopicARN {
		return rejectedTopic("topic_mismatch", "The x-amz-sns-topic-arn header is not the message's TopicArn.")
	}
	teamID, accountID, allowed, err := w.Store.AllowedTopic(ctx, m.TopicARN)
	if err != nil {
		return Delivery{}, err
	}
	now := w.Now().UTC().Truncate(time.Microsecond)
	if !allowed {
		if m.Type != SNSSubscriptionConfirmation {
			return rejectedTopic("unknown_topic", "The topic is not one of a connected account's stack notification topics.")
		}
		return w.deferSubscription(ctx, m, len(body), now)
	}
	if err := w.Verifier.Verify(ctx, m); err != nil {
		return Delivery{}, err
	}
	switch m.Type {
	case SNSSubscriptionConfirmation:
		if err := w.Verifier.SubscribeURLAllowed(m); err != nil {
			return Delivery{}, err
		}
		p := PendingSubscription{TopicARN: m.TopicARN, MessageID: m.MessageID, SubscribeURL: m.SubscribeURL,
			Token: m.Token, ReceivedAt: now}
		if err := w.Trigger.Confirm(ctx, p); err != nil {
			return Delivery{}, err
		}
		return Delivery{Verdict: VerdictConfirming}, nil
	case SNSUnsubscribeConfirmation:
		return w.disconnect(ctx, teamID, accountID, m, "unsubscribed", ReasonUnsubscribed)
	}
	return w.notification(ctx, teamID, accountID, m, now)
}

// deferSubscription keeps a SubscriptionConfirmation of a topic no account
// lists, unverified and without touching the network: the checks that need
// none (fields, certificate URL, timestamp, SubscribeURL) first, then the
// whole envelope is stored as the topic's one pending subscription, within
// PendingMax of all topics, for 3 days.
func (w *Webhook) deferSubscription(ctx context.Context, m SNSMessage, size int, now time.Time) (Delivery, error) {
	if err := w.Verifier.CheckOffline(m); err != nil {
		return Delivery{}, err
	}
	if err := w.Verifier.SubscribeURLAllowed(m); err != nil {
		return Delivery{}, err
	}
	if size > MaxDeferredBody {
		return rejectedTopic("too_large", "The SubscriptionConfirmation is larger than any SNS sends.")
	}
	limit := w.PendingMax
	if limit <= 0 {
		limit = DefaultPendingSubscriptionsMax
	}
	p := PendingSubscription{TopicARN: m.TopicARN, MessageID: m.MessageID, SubscribeURL: m.SubscribeURL,
		Token: m.Token, ReceivedAt: now, Envelope: &m}
	if err := w.Store.SavePendingSubscription(ctx, p, limit); err != nil {
		return Delivery{}, err
	}
	w.log().Info("SNS subscription kept unverified until an account lists its topic", "topic", m.TopicARN,
		"message_id", m.MessageID)
	return Delivery{Verdict: VerdictDeferred}, nil
}

// notification binds a stack event to its account — the topic, the stack
// and the AWS account must all be the account's — and starts the reconcile.
func (w *Webhook) notification(ctx context.Context, teamID, accountID string, m SNSMessage, now time.Time) (Delivery, error) {
	e, err := w.Verifier.ParseStackEvent(m.Message)
	if err != nil {
		return Delivery{Verdict: VerdictIgnored, Reason: "not_a_stack_event"}, nil
	}
	a, err := w.Accounts.GetAccount(ctx, teamID, accountID)
	if ErrorCode(err) == ENOTFOUND {
		return Delivery{Verdict: VerdictIgnored, Reason: "account_gone"}, nil
	} else if err != nil {
		return Delivery{}, err
	}
	if e.StackID != a.StackARN || e.Namespace != a.AWSAccountID {
		return Delivery{Verdict: VerdictIgnored, Reason: "other_stack"}, nil
	}
	if a.State == AccountDeleting {
		return Delivery{Verdict: VerdictIgnored, Reason: "account_deleting"}, nil
	}
	if e.Deleted() {
		return w.disconnect(ctx, teamID, accountID, m, "stack_deleted", ReasonStackDeleted)
	}
	if !e.StackCompleted() {
		return Delivery{Verdict: VerdictIgnored, Reason: "not_completed"}, nil
	}
	if a.State == AccountDisconnected && a.StateReason == ReasonUnsubscribed {
		// A signed event of the stack through its topic: the customer
		// subscribed Kukie again. The reconcile decides the state from the
		// stack; until then the account is confirmation_required, so that
		// a FULL stack cannot widen a limited account on the way back
		// (EffectiveFacts) — a full or LIMITED stack turns it active.
		if _, err := w.Accounts.SetAccountState(ctx, teamID, accountID, AccountConfirmationRequired,
			reasonResubscribed, now); err != nil {
			return Delivery{}, err
		}
		w.log().Info("AWS account receives stack notifications again", "team", teamID, "account", accountID)
	}
	eventTime, err := time.Parse(time.RFC3339, m.Timestamp)
	if err != nil {
		eventTime = now
	}
	_, duplicate, err := w.Trigger.Notify(ctx, StackNotification{MessageID: m.MessageID, TeamID: teamID, AccountID: accountID,
		TopicARN: m.TopicARN, Type: m.Type, StackID: e.StackID, ResourceStatus: e.ResourceStatus, EventTime: eventTime.UTC()}, now)
	switch {
	case ErrorCode(err) == ENOTFOUND:
		return Delivery{Verdict: VerdictIgnored, Reason: "account_gone"}, nil
	case err != nil:
		return Delivery{}, err
	case duplicate:
		return Delivery{Verdict: VerdictDuplicate}, nil
	}
	w.log().Info("stack event: reconcile started", "team", teamID, "account", accountID, "status", e.ResourceStatus,
		"message_id", m.MessageID)
	return Delivery{Verdict: VerdictAccepted, Reason: e.ResourceStatus}, nil
}

// disconnect marks the account disconnected: switches from stack updates
// stop, which must not happen silently.
func (w *Webhook) disconnect(ctx context.Context, teamID, accountID string, m SNSMessage, why, reason string) (Delivery, error) {
	a, err := w.Accounts.GetAccount(ctx, teamID, accountID)
	if ErrorCode(err) == ENOTFOUND {
		return Delivery{Verdict: VerdictIgnored, Reason: "account_gone"}, nil
	} else if err != nil {
		return Delivery{}, err
	}
	if a.State == AccountDeleting {
		return Delivery{Verdict: VerdictIgnored, Reason: "account_deleting"}, nil
	}
	if a.State != AccountDisconnected || a.StateReason != reason {
		if _, err := w.Accounts.SetAccountState(ctx, teamID, accountID, AccountDisconnected, reason,
			w.Now().UTC().Truncate(time.Microsecond)); err != nil {
			return Delivery{}, err
		}
		if w.Switches != nil {
			w.Switches.AccountDisconnected(why)
		}
		w.log().Warn("AWS account disconnected: level switches from stack updates stopped", "team", teamID,
			"account", accountID, "why", why, "message_id", m.MessageID)
	}
	return Delivery{Verdict: VerdictDisconnected, Reason: why}, nil
}
