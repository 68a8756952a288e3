package snstest

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// confirmClient fetches SubscribeURLs the way the product does: through the
// proxy, trusting the system roots (which hold testCA by SSL_CERT_FILE).
func confirmClient(t *testing.T, h *Host) *http.Client {
	t.Helper()
	proxy, err := url.Parse(h.ProxyURL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxy)}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestConfirmSubscription(t *testing.T) {
	h := mustHost(t, HostOptions{})
	client := confirmClient(t, h)
	get := func(t *testing.T, rawURL string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, rawURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", rawURL, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}

	c := h.SubscriptionConfirmation(testTopic)
	code, body := get(t, c.SubscribeURL)
	if code != http.StatusOK {
		t.Fatalf("ConfirmSubscription answered %d: %s", code, body)
	}
	var resp struct {
		SubscriptionARN string `xml:"ConfirmSubscriptionResult>SubscriptionArn"`
		RequestID       string `xml:"ResponseMetadata>RequestId"`
	}
	if err := xml.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("response is not XML: %v\n%s", err, body)
	}
	n := h.Notification(testTopic, "", "m")
	if !strings.HasSuffix(n.UnsubscribeURL, "SubscriptionArn="+resp.SubscriptionARN) || resp.RequestID == "" {
		t.Errorf("response %+v does not name the subscription of UnsubscribeURL %q", resp, n.UnsubscribeURL)
	}
	want := []Confirmation{{Host: "sns.us-east-1.amazonaws.com", TopicARN: testTopic, Token: c.Token, SubscriptionARN: resp.SubscriptionARN}}
	if diff := cmp.Diff(want, h.Confirmations()); diff != "" {
		t.Errorf("Confirmations (-want +got):\n%s", diff)
	}

	refused := []struct {
		name, url string
	}{
		{"UnknownToken", strings.Replace(c.SubscribeURL, c.Token, strings.Repeat("0", len(c.Token)), 1)},
		{"OtherRegion", strings.Replace(c.SubscribeURL, "sns.us-east-1.", "sns.eu-west-1.", 1)},
		{"OtherAction", strings.Replace(c.SubscribeURL, "ConfirmSubscription", "Subscribe", 1)},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := get(t, tt.url); code != http.StatusBadRequest || !strings.Contains(body, "<ErrorResponse") {
				t.Errorf("answered %d, want 400 with an ErrorResponse: %s", code, body)
			}
		})
	}
	if got := len(h.Confirmations()); got != 1 {
		t.Errorf("%d confirmations after refused ones, want 1", got)
	}
}
