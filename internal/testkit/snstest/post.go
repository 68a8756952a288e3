package snstest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/kukie/gitops-server/internal/sns"
)

// Body is m's JSON as SNS posts it: the fields in SNS's order, indented
// with "Key" : "value", fields m's type does not carry (empty ones) left
// out, and <, > and & unescaped.
func Body(m sns.Message) []byte {
	fields := [][2]string{
		{"Type", m.Type},
		{"MessageId", m.MessageID},
		{"Token", m.Token},
		{"TopicArn", m.TopicARN},
		{"Subject", m.Subject},
		{"Message", m.Message},
		{"SubscribeURL", m.SubscribeURL},
		{"Timestamp", m.Timestamp},
		{"SignatureVersion", m.SignatureVersion},
		{"Signature", m.Signature},
		{"SigningCertURL", m.SigningCertURL},
		{"UnsubscribeURL", m.UnsubscribeURL},
	}
	var b bytes.Buffer
	b.WriteString("{")
	sep := "\n  "
	for _, f := range fields {
		if f[1] == "" {
			continue
		}
		b.WriteString(sep)
		b.Write(jsonString(f[0]))
		b.WriteString(" : ")
		b.Write(jsonString(f[1]))
		sep = ",\n  "
	}
	b.WriteString("\n}")
	return b.Bytes()
}

// jsonString is s as a JSON string, with <, > and & as they are.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// NewRequest is the POST SNS makes to deliver m to endpoint: Body(m) as
// text/plain, SNS's User-Agent and x-amz-sns-message-type,
// x-amz-sns-message-id and x-amz-sns-topic-arn headers, and
// x-amz-sns-subscription-arn where m's UnsubscribeURL names the
// subscription. Each key of header replaces that header; a key with no
// values removes it (to test a missing or mismatched header).
func NewRequest(ctx context.Context, endpoint string, m sns.Message, header http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(Body(m)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	req.Header.Set("User-Agent", "Amazon Simple Notification Service Agent")
	req.Header.Set("x-amz-sns-message-type", m.Type)
	req.Header.Set("x-amz-sns-message-id", m.MessageID)
	req.Header.Set("x-amz-sns-topic-arn", m.TopicARN)
	if sub := subscriptionOf(m); sub != "" {
		req.Header.Set("x-amz-sns-subscription-arn", sub)
	}
	for k, vs := range header {
		k = http.CanonicalHeaderKey(k)
		if len(vs) == 0 {
			req.Header.Del(k)
			continue
		}
		req.Header[k] = append([]string(nil), vs...)
	}
	return req, nil
}

// Post delivers m to endpoint with client (nil means http.DefaultClient), as
// NewRequest builds it. The caller closes the response body.
func Post(ctx context.Context, client *http.Client, endpoint string, m sns.Message, header http.Header) (*http.Response, error) {
	req, err := NewRequest(ctx, endpoint, m, header)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	return client.Do(req)
}

// subscriptionOf is the SubscriptionArn of m's UnsubscribeURL, or "".
func subscriptionOf(m sns.Message) string {
	u, err := url.Parse(m.UnsubscribeURL)
	if err != nil || m.UnsubscribeURL == "" {
		return ""
	}
	return u.Query().Get("SubscriptionArn")
}
