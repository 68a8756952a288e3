package api

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/sns"
)

// The SNS webhook's bounds on outbound connections, counted at the SNS
// stand-in: the CONNECTs its proxy received and the certificate requests
// its host served.

// forge makes m look signed without the host's key: SignatureVersion 1 and
// random signature bytes, as anyone on the Internet can post.
func forge(t *testing.T, m sns.Message) sns.Message {
	t.Helper()
	sig := make([]byte, 256)
	if _, err := rand.Read(sig); err != nil {
		t.Fatal(err)
	}
	m.SignatureVersion = sns.SignatureVersion1
	m.Signature = base64.StdEncoding.EncodeToString(sig)
	return m
}

// certFile is a SigningCertURL on region us-east-1's SNS host with a file
// name of n hex digits (1 to 128) that no one serves.
func certFile(i, n int) string {
	hex := fmt.Sprintf("%x", i)
	hex += strings.Repeat("f", max(0, n-len(hex)))
	return "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-" + hex[:n] + ".pem"
}

// wantDeferred fails unless r is 202 {"verdict":"deferred"}.
func (f *snsFixture) wantDeferred(r response) {
	f.t.Helper()
	if r.status != http.StatusAccepted {
		f.t.Errorf("status = %d, want 202 deferred; body %.300s", r.status, r.body)
		return
	}
	var got service.Delivery
	r.decode(f.t, &got)
	if want := (service.Delivery{Verdict: service.VerdictDeferred}); got != want {
		f.t.Errorf("delivery = %+v, want %+v", got, want)
	}
}

// TestSNSWebhookForgedSubscriptionsConnectNowhere: unsigned
// SubscriptionConfirmations of topics no account lists, each naming another
// certificate file, are deferred without a single outbound connection;
// what they leave is bounded to one per topic.
func TestSNSWebhookForgedSubscriptionsConnectNowhere(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	const forged = 40
	for i := range forged {
		topic := fmt.Sprintf("arn:aws:sns:us-east-1:210987654321:forged-%d", i%10)
		m := f.host.SubscriptionConfirmation(topic)
		m.SigningCertURL = certFile(i, 1+i*127/(forged-1))
		f.wantDeferred(f.deliver(forge(t, m), nil))
	}
	if targets, fetches := f.host.ConnectTargets(), f.host.CertFetches(); len(targets) != 0 || fetches != 0 {
		t.Errorf("forged subscriptions of unlisted topics reached the network: CONNECTs %q, %d certificate requests", targets, fetches)
	}
	f.wantEffects(snsEffects{Pending: 10, State: service.AccountActive})
}
