package snstest

import (
	"encoding/xml"
	"net"
	"net/http"

	"github.com/google/uuid"

	"github.com/kukie/gitops-server/internal/sns"
)

// Confirmation is one accepted ConfirmSubscription request.
type Confirmation struct {
	Host            string // the SNS endpoint asked, e.g. sns.us-east-1.amazonaws.com
	TopicARN        string
	Token           string
	SubscriptionARN string // what the host answered
}

// Confirmations lists the accepted ConfirmSubscription requests, in order.
func (h *Host) Confirmations() []Confirmation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Confirmation(nil), h.confirmations...)
}

// snsXMLNamespace is the namespace of SNS's query API responses.
const snsXMLNamespace = "http://sns.amazonaws.com/doc/2010-03-31/"

type confirmSubscriptionResponse struct {
	XMLName         xml.Name `xml:"ConfirmSubscriptionResponse"`
	Namespace       string   `xml:"xmlns,attr"`
	SubscriptionARN string   `xml:"ConfirmSubscriptionResult>SubscriptionArn"`
	RequestID       string   `xml:"ResponseMetadata>RequestId"`
}

type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Namespace string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

// serveAction answers SNS's query API, of which only ConfirmSubscription
// (what a SubscribeURL calls) is implemented. A token the host did not
// issue for the topic, or a topic of another region, is refused as SNS
// does, with 400 InvalidParameter.
func (h *Host) serveAction(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, "MalformedQueryString", err.Error())
		return
	}
	if action := r.Form.Get("Action"); action != "ConfirmSubscription" {
		writeError(w, "InvalidAction", "snstest does not implement action "+action)
		return
	}
	topic, token := r.Form.Get("TopicArn"), r.Form.Get("Token")
	host := r.Host
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	if t, err := sns.ParseTopicARN(topic); err != nil || t.SNSHost() != host {
		writeError(w, "InvalidParameter", "Invalid parameter: TopicArn")
		return
	}
	h.mu.Lock()
	if h.tokens[token] != topic {
		h.mu.Unlock()
		writeError(w, "InvalidParameter", "Invalid token")
		return
	}
	sub := h.subscriptionLocked(topic)
	h.confirmations = append(h.confirmations, Confirmation{Host: host, TopicARN: topic, Token: token, SubscriptionARN: sub})
	h.mu.Unlock()
	id := uuid.NewString()
	writeXML(w, http.StatusOK, id, confirmSubscriptionResponse{Namespace: snsXMLNamespace, SubscriptionARN: sub, RequestID: id})
}

// subscriptionLocked is the ARN of the webhook's subscription to topic,
// made up on first use; h.mu must be held.
func (h *Host) subscriptionLocked(topic string) string {
	sub, ok := h.subscriptions[topic]
	if !ok {
		sub = topic + ":" + uuid.NewString()
		h.subscriptions[topic] = sub
	}
	return sub
}

// writeError answers 400 with SNS's error document for a caller's fault.
func writeError(w http.ResponseWriter, code, message string) {
	id := uuid.NewString()
	writeXML(w, http.StatusBadRequest, id, errorResponse{Namespace: snsXMLNamespace, Type: "Sender", Code: code, Message: message, RequestID: id})
}

func writeXML(w http.ResponseWriter, status int, requestID string, v any) {
	body, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
