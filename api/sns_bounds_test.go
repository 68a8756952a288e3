package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
	"github.com/kukie/gitops-server/service"
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

	// Larger than any SubscriptionConfirmation SNS sends: not kept.
	big := f.host.SubscriptionConfirmation("arn:aws:sns:us-east-1:210987654321:forged-big")
	big.Message += strings.Repeat(" ", service.MaxDeferredBody)
	f.wantRefused(f.deliver(forge(t, big), nil), 403, "sns_rejected", "too_large")
	// A stale or future one, a bad certificate URL or SubscribeURL: refused
	// without network either.
	for _, tt := range []struct {
		reason string
		change func(*sns.Message)
	}{
		{"stale", func(m *sns.Message) {
			m.Timestamp = f.clock.Now().Add(-sns.DefaultMaxAge - time.Second).Format(snsTimeLayout)
		}},
		{"future", func(m *sns.Message) {
			m.Timestamp = f.clock.Now().Add(sns.MaxFutureSkew + time.Second).Format(snsTimeLayout)
		}},
		{"cert_url", func(m *sns.Message) {
			m.SigningCertURL = "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-ab.pem"
		}},
		{"subscribe_url", func(m *sns.Message) { m.SubscribeURL += "&Endpoint=https://evil.example/" }},
	} {
		m := f.host.SubscriptionConfirmation("arn:aws:sns:us-east-1:210987654321:forged-" + tt.reason)
		tt.change(&m)
		f.wantRefused(f.deliver(forge(t, m), nil), 403, "sns_rejected", tt.reason)
	}
	unknownRegion := f.host.SubscriptionConfirmation("arn:aws:sns:us-east-1:210987654321:forged")
	unknownRegion.TopicARN = "arn:aws:sns:us-east-9:210987654321:forged" // not a region the AWS SDK knows
	f.wantRefused(f.deliver(forge(t, unknownRegion), nil), 400, "sns_malformed", "topic_arn")
	if targets, fetches := f.host.ConnectTargets(), f.host.CertFetches(); len(targets) != 0 || fetches != 0 {
		t.Errorf("refused subscriptions reached the network: CONNECTs %q, %d certificate requests", targets, fetches)
	}
	f.wantEffects(snsEffects{Pending: 10, State: service.AccountActive})
}

// TestSNSWebhookDeferredVerifiedWhenListed: a deferred subscription is
// verified only once an account lists its topic — its certificate fetched
// then, not before — and a forged one is never confirmed.
func TestSNSWebhookDeferredVerifiedWhenListed(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	const forgedTopic = "arn:aws:sns:us-east-1:210987654321:kukie-forged"
	const genuineTopic = "arn:aws:sns:us-east-1:210987654321:kukie-genuine"
	// Forged: the host's genuine certificate URL, a signature of nothing.
	f.wantDeferred(f.deliver(forge(t, f.host.SubscriptionConfirmation(forgedTopic)), nil))
	genuine := f.host.Sign(f.host.SubscriptionConfirmation(genuineTopic), sns.SignatureVersion2)
	f.wantDeferred(f.deliver(genuine, nil))
	if targets, fetches := f.host.ConnectTargets(), f.host.CertFetches(); len(targets) != 0 || fetches != 0 {
		t.Fatalf("deferred subscriptions reached the network before an account listed them: CONNECTs %q, %d certificate requests",
			targets, fetches)
	}
	f.wantEffects(snsEffects{Pending: 2, State: service.AccountActive})

	later := f.createAccount("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", "210987654321",
		"arn:aws:cloudformation:us-east-1:210987654321:stack/kukie-access/9a8b7c6d", forgedTopic, genuineTopic)
	f.switches.ConfirmTopics(context.Background(), later)
	f.wantEffects(snsEffects{ConfirmJobs: 2, State: service.AccountActive})
	if n := f.runJobs(); n != 1 {
		t.Errorf("%d confirmation jobs did not complete, want 1 (the forged one, cancelled)", n)
	}
	want := []snstest.Confirmation{{Host: "sns.us-east-1.amazonaws.com", TopicARN: genuineTopic, Token: genuine.Token}}
	if diff := cmp.Diff(want, f.host.Confirmations(), cmpopts.IgnoreFields(snstest.Confirmation{}, "SubscriptionARN")); diff != "" {
		t.Errorf("subscriptions confirmed (-want +got):\n%s", diff)
	}
	if n := f.host.CertFetches(); n != 1 {
		t.Errorf("%d certificate requests, want 1 (both verified with the one certificate, when listed)", n)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "deferred SNS subscription not authentic") {
		t.Error("the forged subscription's cancellation is not logged")
	}
}

// TestSNSWebhookCertificateBucket: messages of a listed topic that name
// uncached certificates share one process-wide bucket of fetches (the
// topic's own bucket made roomy here); beyond it the answer is 503
// sns_unavailable without a fetch; a failed fetch is remembered 30 s; a
// delivery whose certificate is cached is never refused.
func TestSNSWebhookCertificateBucket(t *testing.T) {
	const burst = 3
	f := newSNSFixture(t, snsOptions{fetchBurst: burst, topicBurst: 100})
	f.wantVerdict(f.deliver(f.stackStatus("UPDATE_COMPLETE"), nil), service.VerdictAccepted, "UPDATE_COMPLETE") // token 1
	forged := func(i int) sns.Message {
		m := f.stackEvent(snstest.StackStatusEvent(snsStackARN, "UPDATE_COMPLETE", f.clock.Now()))
		m.SigningCertURL = certFile(i, 40)
		return forge(t, m)
	}
	for i := range 12 {
		reason := "cert_budget"
		if i < burst-1 {
			reason = "cert_fetch" // fetched: the host has no such file
		}
		f.wantRefused(f.deliver(forged(i), nil), 503, "sns_unavailable", reason)
	}
	if n := f.host.CertFetches(); n != burst {
		t.Errorf("%d certificate requests, want %d (the bucket)", n, burst)
	}
	// The cached certificate is never refused, the bucket empty.
	for range 3 {
		f.wantVerdict(f.deliver(f.stackStatus("UPDATE_COMPLETE"), nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	}
	// SNS's first retry, 20 s later: the failure is remembered (no fetch,
	// no token); its second, 40 s after the first try, fetches again.
	f.clock.Advance(20 * time.Second)
	f.wantRefused(f.deliver(forged(0), nil), 503, "sns_unavailable", "cert_fetch")
	if n := f.host.CertFetches(); n != burst {
		t.Errorf("%d certificate requests after a remembered failure, want %d", n, burst)
	}
	f.clock.Advance(20 * time.Second)
	f.wantRefused(f.deliver(forged(0), nil), 503, "sns_unavailable", "cert_fetch")
	if n := f.host.CertFetches(); n != burst+1 {
		t.Errorf("%d certificate requests after the failure expired, want %d", n, burst+1)
	}
	f.wantEffects(snsEffects{Messages: 4, SwitchJobs: 1, Desired: 4, State: service.AccountActive})
}

// TestSNSWebhookTopicCertificateBucket: at the production buckets, a listed
// topic posting forged deliveries, each naming a fresh certificate file,
// gets 2 fetches and then 503 cert_budget without a fetch, and the
// process-wide bucket is left for every other topic.
func TestSNSWebhookTopicCertificateBucket(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	for i := range 3 * sns.DefaultFetchBurst {
		m := f.stackEvent(snstest.StackStatusEvent(snsStackARN, "UPDATE_COMPLETE", f.clock.Now()))
		m.SigningCertURL = certFile(i, 40)
		reason := "cert_budget"
		if i < sns.DefaultTopicFetchBurst {
			reason = "cert_fetch" // fetched: the host has no such file
		}
		f.wantRefused(f.deliver(forge(t, m), nil), 503, "sns_unavailable", reason)
		f.clock.Advance(100 * time.Millisecond)
	}
	if n := f.host.CertFetches(); n != sns.DefaultTopicFetchBurst {
		t.Errorf("%d certificate requests, want %d (the topic's bucket)", n, sns.DefaultTopicFetchBurst)
	}
}
