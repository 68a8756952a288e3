package snstest

import (
	"crypto"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"

	"github.com/google/uuid"

	"github.com/kukie/gitops-server/internal/sns"
)

// timestampLayout is how SNS writes a message's Timestamp.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Notification is an unsigned Notification of topicARN, as SNS delivers a
// published message: a fresh MessageId, the host's clock as Timestamp, the
// topic endpoint's SigningCertURL and the webhook subscription's
// UnsubscribeURL. An empty subject means none. It panics if topicARN is not
// an SNS topic ARN (build a valid message and then change the field to test
// a malformed one).
func (h *Host) Notification(topicARN, subject, message string) sns.Message {
	m := h.envelope(sns.TypeNotification, topicARN)
	h.mu.Lock()
	sub := h.subscriptionLocked(topicARN)
	h.mu.Unlock()
	m.Subject = subject
	m.Message = message
	m.UnsubscribeURL = "https://" + snsHost(topicARN) + "/?Action=Unsubscribe&SubscriptionArn=" + sub
	return m
}

// SubscriptionConfirmation is an unsigned SubscriptionConfirmation of
// topicARN with a new Token, whose SubscribeURL the host accepts. It panics
// if topicARN is not an SNS topic ARN.
func (h *Host) SubscriptionConfirmation(topicARN string) sns.Message {
	m := h.confirmation(sns.TypeSubscriptionConfirmation, topicARN)
	m.Message = "You have chosen to subscribe to the topic " + topicARN + ".\n" +
		"To confirm the subscription, visit the SubscribeURL included in this message."
	return m
}

// UnsubscribeConfirmation is an unsigned UnsubscribeConfirmation of
// topicARN, sent when the webhook's subscription is deleted; its
// SubscribeURL (which the host accepts) would restore the subscription. It
// panics if topicARN is not an SNS topic ARN.
func (h *Host) UnsubscribeConfirmation(topicARN string) sns.Message {
	m := h.confirmation(sns.TypeUnsubscribeConfirmation, topicARN)
	h.mu.Lock()
	sub := h.subscriptionLocked(topicARN)
	h.mu.Unlock()
	m.Message = "You have chosen to deactivate subscription " + sub + ".\n" +
		"To cancel this operation and restore the subscription, visit the SubscribeURL included in this message."
	return m
}

// confirmation is a confirmation message of type typ with a Token the host
// registers for topicARN.
func (h *Host) confirmation(typ, topicARN string) sns.Message {
	m := h.envelope(typ, topicARN)
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		panic("snstest: token: " + err.Error())
	}
	m.Token = hex.EncodeToString(b)
	m.SubscribeURL = "https://" + snsHost(topicARN) + "/?Action=ConfirmSubscription&TopicArn=" + topicARN + "&Token=" + m.Token
	h.mu.Lock()
	h.tokens[m.Token] = topicARN
	h.mu.Unlock()
	return m
}

// envelope fills the fields every message type has, but the signature.
func (h *Host) envelope(typ, topicARN string) sns.Message {
	return sns.Message{
		Type:           typ,
		MessageID:      uuid.NewString(),
		TopicARN:       topicARN,
		Timestamp:      h.now().UTC().Format(timestampLayout),
		SigningCertURL: "https://" + snsHost(topicARN) + h.certPath,
	}
}

// snsHost is topicARN's SNS endpoint; it panics if topicARN does not parse.
func snsHost(topicARN string) string {
	t, err := sns.ParseTopicARN(topicARN)
	if err != nil {
		panic("snstest: " + err.Error())
	}
	return t.SNSHost()
}

// Sign sets m's SignatureVersion to version and its Signature to the
// host's PKCS#1 v1.5 signature over sns.StringToSign(m): SHA1withRSA for
// "1", SHA256withRSA for "2". It panics for another version or a message
// StringToSign refuses (set those fields after signing to test them).
func (h *Host) Sign(m sns.Message, version string) sns.Message {
	m.SignatureVersion = version
	text, err := sns.StringToSign(m)
	if err != nil {
		panic("snstest: Sign: " + err.Error())
	}
	var hash crypto.Hash
	var digest []byte
	switch version {
	case sns.SignatureVersion1:
		sum := sha1.Sum(text)
		hash, digest = crypto.SHA1, sum[:]
	case sns.SignatureVersion2:
		sum := sha256.Sum256(text)
		hash, digest = crypto.SHA256, sum[:]
	default:
		panic("snstest: Sign: unknown SignatureVersion " + version)
	}
	sig, err := h.key.Sign(rand.Reader, digest, hash)
	if err != nil {
		panic("snstest: Sign: " + err.Error())
	}
	m.Signature = base64.StdEncoding.EncodeToString(sig)
	return m
}
