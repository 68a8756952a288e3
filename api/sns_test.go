package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
	"github.com/kukie/gitops-server/internal/testkit/tcpproxy"
	"github.com/kukie/gitops-server/service"
)

// The SNS webhook's tests run the real wiring in process: signed messages
// from an snstest.Host, the router, service.Webhook, sns.Verifier fetching
// the certificate over TLS through the host's proxy, PostgreSQL, and the
// River queue's inserts (see snsFixture).

func TestSNSWebhookSignatureVersions(t *testing.T) {
	for _, version := range []string{sns.SignatureVersion1, sns.SignatureVersion2} {
		t.Run("V"+version, func(t *testing.T) {
			f := newSNSFixture(t, snsOptions{})
			m := f.host.Sign(f.stackEvent(snstest.StackStatusEvent(snsStackARN, "UPDATE_COMPLETE", f.clock.Now())), version)
			f.wantVerdict(f.deliver(m, nil), service.VerdictAccepted, "UPDATE_COMPLETE")
			f.wantEffects(snsEffects{Messages: 1, SwitchJobs: 1, Desired: 1, State: service.AccountActive})
		})
	}
}

// TestSNSWebhookStackCompletions: each completion of the stack itself bumps
// the generation; the account keeps one unfinished reconcile job.
func TestSNSWebhookStackCompletions(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	for _, status := range []string{"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"} {
		f.wantVerdict(f.deliver(f.stackStatus(status), nil), service.VerdictAccepted, status)
	}
	f.wantEffects(snsEffects{Messages: 3, SwitchJobs: 1, Desired: 3, State: service.AccountActive})
}

func TestSNSWebhookTamperedFields(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	notification := func() sns.Message {
		return f.host.Sign(f.host.Notification(snsTopic, sns.CloudFormationSubject, "StackId='x'\n"), sns.SignatureVersion2)
	}
	stack := func() sns.Message { return f.stackStatus("UPDATE_COMPLETE") }
	subscription := func() sns.Message {
		return f.host.Sign(f.host.SubscriptionConfirmation(snsTopic), sns.SignatureVersion1)
	}
	unsubscribe := func() sns.Message {
		return f.host.Sign(f.host.UnsubscribeConfirmation(snsTopic), sns.SignatureVersion1)
	}
	tests := []struct {
		name   string
		signed func() sns.Message
		tamper func(*sns.Message)
		status int
		code   string
		reason string
	}{
		{"Message", stack, func(m *sns.Message) {
			m.Message = strings.Replace(m.Message, "UPDATE_COMPLETE", "CREATE_COMPLETE", 1)
		}, 403, "sns_rejected", "signature"},
		{"MessageId", stack, func(m *sns.Message) { m.MessageID = "0d1c2b3a-0000-4000-8000-000000000000" }, 403, "sns_rejected", "signature"},
		{"Subject", notification, func(m *sns.Message) { m.Subject = "Another subject" }, 403, "sns_rejected", "signature"},
		{"SubjectRemoved", notification, func(m *sns.Message) { m.Subject = "" }, 403, "sns_rejected", "signature"},
		{"Timestamp", stack, func(m *sns.Message) {
			m.Timestamp = f.clock.Now().Add(-time.Second).Format(snsTimeLayout)
		}, 403, "sns_rejected", "signature"},
		{"TopicArnToAnotherAllowedTopic", stack, func(m *sns.Message) { m.TopicARN = snsOtherTopic }, 403, "sns_rejected", "signature"},
		{"Signature", stack, func(m *sns.Message) {
			other := "A"
			if m.Signature[0] == 'A' {
				other = "B"
			}
			m.Signature = other + m.Signature[1:]
		}, 403, "sns_rejected", "signature"},
		{"SignatureVersion1To2", stack, func(m *sns.Message) { m.SignatureVersion = sns.SignatureVersion2 }, 403, "sns_rejected", "signature"},
		{"SignatureVersionUnknown", stack, func(m *sns.Message) { m.SignatureVersion = "3" }, 400, "sns_malformed", "signature_version"},
		{"TypeNotificationToSubscription", stack, func(m *sns.Message) { m.Type = sns.TypeSubscriptionConfirmation }, 400, "sns_malformed", "syntax"},
		{"TypeUnknown", stack, func(m *sns.Message) { m.Type = "Notice" }, 400, "sns_malformed", "type"},
		{"TypeSubscriptionToUnsubscribe", subscription, func(m *sns.Message) { m.Type = sns.TypeUnsubscribeConfirmation }, 403, "sns_rejected", "signature"},
		{"TypeUnsubscribeToSubscription", unsubscribe, func(m *sns.Message) { m.Type = sns.TypeSubscriptionConfirmation }, 403, "sns_rejected", "signature"},
		{"UnsubscribeToken", unsubscribe, func(m *sns.Message) { m.Token = strings.Repeat("0", len(m.Token)) }, 403, "sns_rejected", "signature"},
		{"TopicArnNotAnARN", stack, func(m *sns.Message) { m.TopicARN = "kukie-stack-events" }, 400, "sns_malformed", "topic_arn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := f.in(t)
			m := tt.signed()
			tt.tamper(&m)
			f.wantRefused(f.deliver(m, nil), tt.status, tt.code, tt.reason)
			f.wantEffects(untouched)
		})
	}
	// The same messages untampered are taken: the refusals above are the
	// tampering's.
	f.wantVerdict(f.deliver(unsubscribe(), nil), service.VerdictDisconnected, "unsubscribed")
	f.wantVerdict(f.deliver(stack(), nil), service.VerdictAccepted, "UPDATE_COMPLETE")
}

func TestSNSWebhookSigningCertURL(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	path := f.host.CertPath()
	tests := []struct{ name, url string }{
		{"OtherHost", "https://certs.example.com" + path},
		{"LookAlikeSuffix", "https://sns.us-east-1.amazonaws.com.evil.example" + path},
		{"S3BucketHost", "https://sns-us-east-1.s3.amazonaws.com" + path},
		{"S3PathStyle", "https://s3.amazonaws.com/sns.us-east-1.amazonaws.com" + path},
		{"HTTP", "http://sns.us-east-1.amazonaws.com" + path},
		{"OtherRegion", f.host.CertURL("eu-west-1")},
		{"OtherPartition", "https://sns.us-east-1.amazonaws.com.cn" + path},
		{"Port", "https://sns.us-east-1.amazonaws.com:443" + path},
		{"UserInfo", "https://evil@sns.us-east-1.amazonaws.com" + path},
		{"Query", f.host.CertURL("us-east-1") + "?x=1"},
		{"Fragment", f.host.CertURL("us-east-1") + "#x"},
		{"OtherFile", "https://sns.us-east-1.amazonaws.com/evil.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := f.in(t)
			m := f.stackStatus("UPDATE_COMPLETE")
			m.SigningCertURL = tt.url // not signed: the URL rule alone must refuse it
			f.wantRefused(f.deliver(m, nil), 403, "sns_rejected", "cert_url")
		})
	}
	if hits, targets := f.host.Hits(path), f.host.ConnectTargets(); hits != 0 || len(targets) != 0 {
		t.Errorf("refused certificate URLs were fetched: %d hits, CONNECTs %q", hits, targets)
	}
	f.wantEffects(untouched)

	t.Run("Redirect", func(t *testing.T) {
		f := f.in(t)
		f.host.SetCertMode(snstest.CertRedirect)
		m := f.stackStatus("UPDATE_COMPLETE")
		f.wantRefused(f.deliver(m, nil), 503, "sns_unavailable", "cert_redirect")
		if hits, followed := f.host.Hits(path), f.host.Hits(f.host.RedirectPath()); hits != 1 || followed != 0 {
			t.Errorf("certificate requests %d (want 1), redirect followed %d times (want 0)", hits, followed)
		}
		f.wantEffects(untouched)
		// SNS retries 20 s apart: the failure is remembered 30 s, so the
		// second retry fetches again.
		f.host.SetCertMode(snstest.CertServe)
		f.clock.Advance(20 * time.Second)
		f.wantRefused(f.deliver(m, nil), 503, "sns_unavailable", "cert_redirect")
		if hits := f.host.Hits(path); hits != 1 {
			t.Errorf("certificate requests %d within 30 s of the failure, want 1", hits)
		}
		f.clock.Advance(20 * time.Second)
		f.wantVerdict(f.deliver(m, nil), service.VerdictAccepted, "UPDATE_COMPLETE")
		f.wantEffects(snsEffects{Messages: 1, SwitchJobs: 1, Desired: 1, State: service.AccountActive})
	})
}

func TestSNSWebhookTimestamps(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	at := func(offset time.Duration) sns.Message {
		m := f.stackEvent(snstest.StackStatusEvent(snsStackARN, "UPDATE_COMPLETE", f.clock.Now()))
		m.Timestamp = f.clock.Now().Add(offset).Format(snsTimeLayout)
		return f.host.Sign(m, sns.SignatureVersion1)
	}
	f.wantRefused(f.deliver(at(-sns.DefaultMaxAge-time.Millisecond), nil), 403, "sns_rejected", "stale")
	f.wantRefused(f.deliver(at(sns.MaxFutureSkew+time.Millisecond), nil), 403, "sns_rejected", "future")
	f.wantEffects(untouched)

	f.wantVerdict(f.deliver(at(-sns.DefaultMaxAge), nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	f.wantVerdict(f.deliver(at(sns.MaxFutureSkew), nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	// A retry delivered after the maximum age is refused, however
	// authentic: the injected clocks move, nothing sleeps.
	m := at(0)
	f.wantVerdict(f.deliver(m, nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	f.clock.Advance(sns.DefaultMaxAge + time.Millisecond)
	f.wantRefused(f.deliver(m, nil), 403, "sns_rejected", "stale")
	f.wantEffects(snsEffects{Messages: 3, SwitchJobs: 1, Desired: 3, State: service.AccountActive})
}

func TestSNSWebhookTopics(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	event := f.stackEvent(snstest.StackStatusEvent(snsStackARN, "UPDATE_COMPLETE", f.clock.Now()))
	from := func(topic string) sns.Message {
		m := f.host.Notification(topic, sns.CloudFormationSubject, event.Message)
		return f.host.Sign(m, sns.SignatureVersion1)
	}
	f.wantRefused(f.deliver(from(snsUnknownTopic), nil), 403, "sns_rejected", "unknown_topic")
	f.wantRefused(f.deliver(from(snsForeignTopic), nil), 403, "sns_rejected", "unknown_topic")
	f.wantRefused(f.deliver(f.host.Sign(f.host.UnsubscribeConfirmation(snsUnknownTopic), sns.SignatureVersion1), nil),
		403, "sns_rejected", "unknown_topic")
	f.wantRefused(f.deliver(from(snsTopic), http.Header{"x-amz-sns-topic-arn": {snsOtherTopic}}),
		403, "sns_rejected", "topic_mismatch")
	if targets := f.host.ConnectTargets(); len(targets) != 0 {
		t.Errorf("refused topics reached the network before being refused: CONNECTs %q", targets)
	}
	f.wantEffects(untouched)
	// The header is not signed and SNS may leave it out; the body decides.
	f.wantVerdict(f.deliver(from(snsTopic), http.Header{"x-amz-sns-topic-arn": nil}), service.VerdictAccepted, "UPDATE_COMPLETE")
	f.wantVerdict(f.deliver(from(snsOtherTopic), nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	f.wantEffects(snsEffects{Messages: 2, SwitchJobs: 1, Desired: 2, State: service.AccountActive})
}

func TestSNSWebhookSubscriptionConfirmation(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	allowed := f.host.Sign(f.host.SubscriptionConfirmation(snsTopic), sns.SignatureVersion1)
	f.wantVerdict(f.deliver(allowed, nil), service.VerdictConfirming, "")
	f.wantEffects(snsEffects{ConfirmJobs: 1, State: service.AccountActive})

	malicious := []struct {
		name    string
		rewrite func(u string) string
	}{
		{"OtherHost", func(u string) string { return strings.Replace(u, "sns.us-east-1.amazonaws.com", "evil.example", 1) }},
		{"LookAlikeHost", func(u string) string { return strings.Replace(u, ".amazonaws.com/", ".amazonaws.com.evil.example/", 1) }},
		{"OtherRegion", func(u string) string { return strings.Replace(u, "sns.us-east-1.", "sns.eu-west-1.", 1) }},
		{"HTTP", func(u string) string { return strings.Replace(u, "https://", "http://", 1) }},
		{"ExtraQuery", func(u string) string { return u + "&Endpoint=https://evil.example/" }},
		{"OtherTopicArn", func(u string) string { return strings.Replace(u, "TopicArn="+snsTopic, "TopicArn="+snsOtherTopic, 1) }},
		{"OtherAction", func(u string) string {
			return strings.Replace(u, "Action=ConfirmSubscription", "Action=Unsubscribe", 1)
		}},
		{"OtherPath", func(u string) string { return strings.Replace(u, "/?", "/evil?", 1) }},
	}
	for _, tt := range malicious {
		t.Run("Malicious"+tt.name, func(t *testing.T) {
			f := f.in(t)
			m := f.host.SubscriptionConfirmation(snsTopic)
			m.SubscribeURL = tt.rewrite(m.SubscribeURL)
			// Signed as SNS would never sign it: only the URL rule refuses it.
			f.wantRefused(f.deliver(f.host.Sign(m, sns.SignatureVersion2), nil), 403, "sns_rejected", "subscribe_url")
			f.wantEffects(snsEffects{ConfirmJobs: 1, State: service.AccountActive})
		})
	}

	// A subscription to a topic no account lists yet passes the checks
	// without network, is kept unverified (one per topic: the newest), and
	// is verified and confirmed when an account lists the topic.
	const laterTopic = "arn:aws:sns:us-east-1:210987654321:kukie-later"
	badCert := f.host.SubscriptionConfirmation(laterTopic)
	badCert.SigningCertURL = "https://evil.example" + f.host.CertPath()
	f.wantRefused(f.deliver(f.host.Sign(badCert, sns.SignatureVersion1), nil), 403, "sns_rejected", "cert_url")
	stale := f.host.SubscriptionConfirmation(laterTopic)
	stale.Timestamp = f.clock.Now().Add(-sns.DefaultMaxAge - time.Second).Format(snsTimeLayout)
	f.wantRefused(f.deliver(f.host.Sign(stale, sns.SignatureVersion1), nil), 403, "sns_rejected", "stale")
	forged := f.host.Sign(f.host.SubscriptionConfirmation(laterTopic), sns.SignatureVersion1)
	forged.MessageID = "0d1c2b3a-0000-4000-8000-000000000000"
	f.wantDeferred(f.deliver(forged, nil)) // not verified yet: replaced by the genuine one below
	pending := f.host.Sign(f.host.SubscriptionConfirmation(laterTopic), sns.SignatureVersion1)
	f.wantDeferred(f.deliver(pending, nil))
	f.wantDeferred(f.deliver(pending, nil)) // SNS's retry
	f.wantEffects(snsEffects{ConfirmJobs: 1, Pending: 1, State: service.AccountActive})

	// A topic of another AWS account: its subscription is kept, but an
	// account listing the topic does not confirm it (the webhook refuses
	// that topic's messages, so Kukie must not subscribe to it).
	const foreignTopic = "arn:aws:sns:us-east-1:999999999999:kukie-foreign"
	foreign := f.host.Sign(f.host.SubscriptionConfirmation(foreignTopic), sns.SignatureVersion1)
	f.wantDeferred(f.deliver(foreign, nil))
	f.wantEffects(snsEffects{ConfirmJobs: 1, Pending: 2, State: service.AccountActive})

	later := f.createAccount("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", "210987654321",
		"arn:aws:cloudformation:us-east-1:210987654321:stack/kukie-access/9a8b7c6d", laterTopic, foreignTopic)
	f.switches.ConfirmTopics(context.Background(), later)
	f.wantEffects(snsEffects{ConfirmJobs: 2, Pending: 1, State: service.AccountActive})

	if n := f.runJobs(); n != 0 {
		t.Errorf("%d confirmation jobs did not complete", n)
	}
	want := []snstest.Confirmation{
		{Host: "sns.us-east-1.amazonaws.com", TopicARN: snsTopic, Token: allowed.Token},
		{Host: "sns.us-east-1.amazonaws.com", TopicARN: laterTopic, Token: pending.Token},
	}
	if diff := cmp.Diff(want, f.host.Confirmations(), cmpopts.IgnoreFields(snstest.Confirmation{}, "SubscriptionARN"),
		cmpopts.SortSlices(func(a, b snstest.Confirmation) bool { return a.TopicARN < b.TopicARN })); diff != "" {
		t.Errorf("subscriptions confirmed (-want +got):\n%s", diff)
	}
}

func TestSNSWebhookUnavailable(t *testing.T) {
	t.Run("CertificateHost500", func(t *testing.T) {
		f := newSNSFixture(t, snsOptions{})
		f.host.SetCertMode(snstest.CertServerError)
		m := f.stackStatus("UPDATE_COMPLETE")
		f.wantRefused(f.deliver(m, nil), 503, "sns_unavailable", "cert_fetch")
		f.wantEffects(untouched)
		f.host.SetCertMode(snstest.CertServe)
		f.clock.Advance(sns.FailureCacheTTL) // the failure is remembered until then
		f.wantVerdict(f.deliver(m, nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	})
	t.Run("CertificateHostHangs", func(t *testing.T) {
		f := newSNSFixture(t, snsOptions{fetchTimeout: time.Second})
		f.host.SetCertMode(snstest.CertHang)
		f.wantRefused(f.deliver(f.stackStatus("UPDATE_COMPLETE"), nil), 503, "sns_unavailable", "cert_timeout")
		f.wantEffects(untouched)
	})
	// The database link cut (closed), or partitioned (silent, no reset:
	// the webhook's own 10 s handler timeout ends the wait): 503, which SNS
	// retries, nothing stored, and the retry accepted once the link is back.
	for _, c := range []struct {
		name      string
		fail, fix func(p *tcpproxy.Proxy)
	}{
		{"DatabaseDown", func(p *tcpproxy.Proxy) { p.SetDown(true) }, func(p *tcpproxy.Proxy) { p.SetDown(false) }},
		{"DatabasePartitioned", func(p *tcpproxy.Proxy) { p.Partition(true) }, func(p *tcpproxy.Proxy) { p.Partition(false) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newSNSFixture(t, snsOptions{})
			m := f.stackStatus("UPDATE_COMPLETE")
			// A message from an unknown topic reads the database and
			// changes nothing: the pool then holds an open connection for
			// the fault to meet (a new one would fail at its 5 s connect
			// timeout instead).
			event := f.stackEvent(snstest.StackStatusEvent(snsStackARN, "UPDATE_COMPLETE", f.clock.Now()))
			unknown := f.host.Sign(f.host.Notification(snsUnknownTopic, sns.CloudFormationSubject, event.Message), sns.SignatureVersion1)
			f.wantRefused(f.deliver(unknown, nil), 403, "sns_rejected", "unknown_topic")
			c.fail(f.link)
			f.wantRefused(f.deliver(m, nil), 503, "sns_unavailable", "")
			c.fix(f.link)
			f.wantEffects(untouched)
			// SNS retries until the database answers again (the pool may
			// first hand out a connection the outage broke).
			deadline := time.Now().Add(30 * time.Second) // only catches a hang
			r := f.deliver(m, nil)
			for r.status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				r = f.deliver(m, nil)
			}
			f.wantVerdict(r, service.VerdictAccepted, "UPDATE_COMPLETE")
			f.wantEffects(snsEffects{Messages: 1, SwitchJobs: 1, Desired: 1, State: service.AccountActive})
		})
	}
	t.Run("AWSNotConfigured", func(t *testing.T) {
		srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: NewMetrics(prometheus.NewRegistry())}))
		t.Cleanup(srv.Close)
		doc, router := mustSpec(t)
		a := &testAPI{t: t, srv: srv, router: router, doc: doc}
		a.do(http.MethodPost, snsWebhookPath, "", "{}", header{"Content-Type": "text/plain"}).
			wantProblem(t, http.StatusServiceUnavailable, "aws_unavailable")
	})
}

// TestSNSWebhookConcurrentDuplicates delivers each message three times at
// once, as SNS's retries racing the first delivery can: one is taken.
func TestSNSWebhookConcurrentDuplicates(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	const rounds = 5
	for range rounds {
		m := f.stackStatus("UPDATE_COMPLETE")
		var wg sync.WaitGroup
		start := make(chan struct{})
		verdicts := make([]string, 3)
		for i := range verdicts {
			wg.Go(func() {
				<-start
				r, err := f.tryDeliver(m, nil)
				if err != nil {
					t.Error(err)
					return
				}
				var d service.Delivery
				if err := json.Unmarshal(r.body, &d); err != nil || r.status != http.StatusOK {
					t.Errorf("delivery %d: %d %s", i, r.status, r.body)
				}
				verdicts[i] = d.Verdict
			})
		}
		close(start)
		wg.Wait()
		slices.Sort(verdicts)
		if want := []string{service.VerdictAccepted, service.VerdictDuplicate, service.VerdictDuplicate}; !slices.Equal(verdicts, want) {
			t.Errorf("verdicts %q, want %q", verdicts, want)
		}
	}
	f.wantEffects(snsEffects{Messages: rounds, SwitchJobs: 1, Desired: rounds, State: service.AccountActive})
}

// TestSNSWebhookIgnoredEvents: verified events that are not the registered
// stack's own completion change nothing.
func TestSNSWebhookIgnoredEvents(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	const otherStack = "arn:aws:cloudformation:us-east-1:123456789012:stack/kukie-access/11111111-2222-3333-4444-555555555555"
	resource := func(status string) func(*sns.StackEvent) {
		return func(e *sns.StackEvent) {
			e.ResourceStatus = status
			e.LogicalResourceID, e.ResourceType, e.PhysicalResourceID = "KukieAccessRole", "AWS::IAM::Role", "kukie-access-KukieAccessRole-1A2B3C"
		}
	}
	tests := []struct {
		name, stack, reason string
		change              func(*sns.StackEvent)
	}{
		{"ResourceUpdated", snsStackARN, "not_completed", resource("UPDATE_COMPLETE")},
		{"ResourceDeleted", snsStackARN, "not_completed", resource("DELETE_COMPLETE")},
		{"UpdateInProgress", snsStackARN, "not_completed", func(e *sns.StackEvent) { e.ResourceStatus = "UPDATE_IN_PROGRESS" }},
		{"UpdateFailed", snsStackARN, "not_completed", func(e *sns.StackEvent) { e.ResourceStatus = "UPDATE_FAILED" }},
		{"OtherStack", otherStack, "other_stack", func(*sns.StackEvent) {}},
		{"OtherStackDeleted", otherStack, "other_stack", func(e *sns.StackEvent) { e.ResourceStatus = "DELETE_COMPLETE" }},
		{"OtherNamespace", snsStackARN, "other_stack", func(e *sns.StackEvent) { e.Namespace = "210987654321" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := f.in(t)
			e := snstest.StackStatusEvent(tt.stack, "UPDATE_COMPLETE", f.clock.Now())
			tt.change(&e)
			f.wantVerdict(f.deliver(f.host.Sign(f.stackEvent(e), sns.SignatureVersion1), nil), service.VerdictIgnored, tt.reason)
			f.wantEffects(untouched)
		})
	}
	t.Run("NotAStackEvent", func(t *testing.T) {
		f := f.in(t)
		m := f.host.Sign(f.host.Notification(snsTopic, "", "hello"), sns.SignatureVersion1)
		f.wantVerdict(f.deliver(m, nil), service.VerdictIgnored, "not_a_stack_event")
		f.wantEffects(untouched)
	})
}

func TestSNSWebhookDisconnects(t *testing.T) {
	tests := []struct {
		name, reason string
		message      func(f *snsFixture) sns.Message
	}{
		{"Unsubscribed", "unsubscribed", func(f *snsFixture) sns.Message {
			return f.host.Sign(f.host.UnsubscribeConfirmation(snsTopic), sns.SignatureVersion1)
		}},
		{"StackDeleted", "stack_deleted", func(f *snsFixture) sns.Message { return f.stackStatus("DELETE_COMPLETE") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSNSFixture(t, snsOptions{})
			if got := f.accountState(); got != service.AccountActive {
				t.Fatalf("account state before = %q, want active", got)
			}
			f.wantVerdict(f.deliver(tt.message(f), nil), service.VerdictDisconnected, tt.reason)
			if got := f.accountState(); got != service.AccountDisconnected {
				t.Errorf("account state = %q, want disconnected", got)
			}
			f.wantEffects(snsEffects{State: service.AccountDisconnected})

			// A stack event through the topic afterwards: re-subscribed
			// after an unsubscription (confirmation_required until the
			// reconcile reads the stack); a deleted stack stays disconnected.
			f.wantVerdict(f.deliver(f.stackStatus("UPDATE_COMPLETE"), nil), service.VerdictAccepted, "UPDATE_COMPLETE")
			want := service.AccountDisconnected
			if tt.reason == "unsubscribed" {
				want = service.AccountConfirmationRequired
			}
			if got := f.accountState(); got != want {
				t.Errorf("account state after a later stack event = %q, want %q", got, want)
			}
		})
	}
}

// A subscription confirmed for an account disconnected by an
// unsubscription brings it back (confirmation_required until its
// reconcile reads the stack).
func TestSNSWebhookResubscribed(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	f.wantVerdict(f.deliver(f.host.Sign(f.host.UnsubscribeConfirmation(snsTopic), sns.SignatureVersion1), nil),
		service.VerdictDisconnected, "unsubscribed")
	f.wantVerdict(f.deliver(f.host.Sign(f.host.SubscriptionConfirmation(snsTopic), sns.SignatureVersion1), nil),
		service.VerdictConfirming, "")
	if got := f.accountState(); got != service.AccountDisconnected {
		t.Fatalf("account state before the confirmation ran = %q, want disconnected", got)
	}
	if n := f.runJobs(); n != 0 {
		t.Fatalf("%d confirmation jobs did not complete", n)
	}
	if got := f.accountState(); got != service.AccountConfirmationRequired {
		t.Errorf("account state after the confirmation = %q, want confirmation_required", got)
	}
}

func TestSNSWebhookRequestLimits(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	// from posts body from a source address straight to the router (an
	// httptest server's clients all share 127.0.0.1).
	from := func(t *testing.T, addr, contentType string, body []byte) response {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, snsWebhookPath, bytes.NewReader(body))
		req.RemoteAddr = addr
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		f.handler.ServeHTTP(rec, req)
		r := response{status: rec.Code, header: rec.Result().Header, body: rec.Body.Bytes()}
		if err := f.api.validate(req, r); err != nil {
			t.Errorf("answer %d does not match the OpenAPI document: %v", r.status, err)
		}
		return r
	}
	t.Run("RateLimit", func(t *testing.T) {
		// Malformed bodies: answered without the network or the database.
		const attempts = 1000
		var limited []int
		var last response
		for i := range attempts {
			r := from(t, "192.0.2.10:40000", "text/plain", []byte("{}"))
			if r.status == http.StatusTooManyRequests {
				limited = append(limited, i)
				last = r
			} else if r.status != http.StatusBadRequest {
				t.Fatalf("request %d: %d %s", i, r.status, r.body)
			}
		}
		if len(limited) == 0 || limited[0] < 100 {
			t.Fatalf("429 answers at %v of %d requests; want some, none within the burst of 100", limited, attempts)
		}
		last.wantProblem(t, http.StatusTooManyRequests, "rate_limited")
		if last.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		if r := from(t, "192.0.2.10:40001", "text/plain", []byte("{}")); r.status != http.StatusTooManyRequests {
			t.Errorf("the same address from another port: %d, want 429", r.status)
		}
		if r := from(t, "192.0.2.11:40000", "text/plain", []byte("{}")); r.status != http.StatusBadRequest {
			t.Errorf("another address: %d, want 400 (limits are per source)", r.status)
		}
	})
	t.Run("BehindTrustedProxies", func(t *testing.T) {
		// Behind a load balancer every delivery comes from its address:
		// the buckets follow X-Forwarded-For's client, never what the
		// client wrote into it.
		behind := newSNSFixture(t, snsOptions{trustedProxies: TrustedProxies{netip.MustParsePrefix("10.0.0.0/8")}})
		post := func(client, spoofed string) int {
			req := httptest.NewRequest(http.MethodPost, snsWebhookPath, strings.NewReader("{}"))
			req.RemoteAddr = "10.0.0.5:40000"
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("X-Forwarded-For", spoofed+client)
			rec := httptest.NewRecorder()
			behind.handler.ServeHTTP(rec, req)
			return rec.Code
		}
		limited := false
		for i := range 1000 {
			// A new spoofed entry each time does not give a new bucket.
			if post("198.51.100.1", fmt.Sprintf("203.0.113.%d, ", i%250)) == http.StatusTooManyRequests {
				limited = true
				break
			}
		}
		if !limited {
			t.Fatal("one client behind the proxy was never limited")
		}
		if code := post("198.51.100.2", ""); code != http.StatusBadRequest {
			t.Errorf("another client behind the same proxy: %d, want 400 (its own bucket)", code)
		}
	})
	t.Run("ContentType", func(t *testing.T) {
		f := f.in(t)
		body := snstest.Body(f.stackStatus("UPDATE_COMPLETE"))
		for _, ct := range []string{"application/xml", "text/html", ""} {
			from(t, "192.0.2.20:1", ct, body).wantProblem(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}
		f.wantEffects(untouched)
		f.wantVerdict(from(t, "192.0.2.20:1", "application/json", body), service.VerdictAccepted, "UPDATE_COMPLETE")
	})
	t.Run("BodyTooLarge", func(t *testing.T) {
		body := append([]byte(`{"Message":"`), bytes.Repeat([]byte("a"), maxBodyBytes)...)
		from(t, "192.0.2.30:1", "text/plain", append(body, `"}`...)).
			wantProblem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	})
}

// TestSNSWebhookLogsNoSecrets delivers every kind of message, refused and
// taken, runs the confirmations (one refused by SNS), and checks the
// captured logs hold their message ids but no body, URL or token. Every
// other SNS test checks the same at its end (snsFixture.checkLogs).
func TestSNSWebhookLogsNoSecrets(t *testing.T) {
	f := newSNSFixture(t, snsOptions{})
	// First, before the certificate is cached.
	f.host.SetCertMode(snstest.CertServerError)
	f.wantRefused(f.deliver(f.host.Sign(f.host.UnsubscribeConfirmation(snsOtherTopic), sns.SignatureVersion2), nil),
		503, "sns_unavailable", "cert_fetch")
	f.host.SetCertMode(snstest.CertServe)
	f.clock.Advance(sns.FailureCacheTTL) // the failure is remembered until then
	accepted := f.stackStatus("UPDATE_COMPLETE")
	f.wantVerdict(f.deliver(accepted, nil), service.VerdictAccepted, "UPDATE_COMPLETE")
	tampered := f.stackStatus("UPDATE_COMPLETE")
	tampered.Message += "x"
	f.wantRefused(f.deliver(tampered, nil), 403, "sns_rejected", "signature")
	malicious := f.host.SubscriptionConfirmation(snsTopic)
	malicious.SubscribeURL += "&Endpoint=https://evil.example/"
	f.wantRefused(f.deliver(f.host.Sign(malicious, sns.SignatureVersion1), nil), 403, "sns_rejected", "subscribe_url")
	f.wantVerdict(f.deliver(f.host.Sign(f.host.SubscriptionConfirmation(snsTopic), sns.SignatureVersion1), nil),
		service.VerdictConfirming, "")
	f.wantDeferred(f.deliver(f.host.Sign(f.host.SubscriptionConfirmation(snsUnknownTopic), sns.SignatureVersion1), nil))
	// A token SNS does not know: the job's confirmation is refused.
	unknown := f.host.SubscriptionConfirmation(snsOtherTopic)
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	unknown.SubscribeURL = strings.Replace(unknown.SubscribeURL, unknown.Token, hex.EncodeToString(b), 1)
	unknown.Token = hex.EncodeToString(b)
	f.wantVerdict(f.deliver(f.host.Sign(unknown, sns.SignatureVersion1), nil), service.VerdictConfirming, "")
	f.wantRefused(f.deliver(accepted, http.Header{"Content-Type": {"text/plain"}, "x-amz-sns-topic-arn": {snsOtherTopic}}),
		403, "sns_rejected", "topic_mismatch")
	f.wantVerdict(f.deliver(f.host.Sign(f.host.UnsubscribeConfirmation(snsTopic), sns.SignatureVersion1), nil),
		service.VerdictDisconnected, "unsubscribed")
	if n := f.runJobs(); n != 1 {
		t.Errorf("%d confirmation jobs did not complete, want 1 (the unknown token)", n)
	}
	if got := len(f.host.Confirmations()); got != 1 {
		t.Errorf("%d subscriptions confirmed, want 1", got)
	}
	logs := f.logs.String()
	for _, want := range []string{accepted.MessageID, "SNS message rejected", "SNS subscription confirmed", "SNS subscription not confirmed"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs do not hold %q: is the capture wired?", want)
		}
	}
	f.checkLogs()
}
