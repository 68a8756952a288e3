package snstest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// The fixed clock of the tests and the topics they deliver from.
var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const (
	testTopic   = "arn:aws:sns:us-east-1:123456789012:kukie-stack-events"
	testTopicCN = "arn:aws-cn:sns:cn-north-1:123456789012:kukie-stack-events"
)

// hangDeadline only catches a hang; no test depends on it passing quickly.
const hangDeadline = time.Minute

func fixedClock() time.Time { return testNow }

// mustHost starts a host on the test clock.
func mustHost(t *testing.T, o HostOptions) *Host {
	t.Helper()
	if o.Now == nil {
		o.Now = fixedClock
	}
	return StartHost(t, testCA, o)
}

// mustVerifier points the proxy variables at h and builds a Verifier on the
// test clock, as the product's start-up would.
func mustVerifier(t *testing.T, h *Host, o sns.Options) *sns.Verifier {
	t.Helper()
	h.SetEnv(t)
	if o.Now == nil {
		o.Now = fixedClock
	}
	v, err := sns.New(o)
	if err != nil {
		t.Fatalf("sns.New: %v", err)
	}
	return v
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), hangDeadline)
	t.Cleanup(cancel)
	return ctx
}

// delivery is what the test webhook received.
type delivery struct {
	header http.Header
	body   string
	msg    sns.Message
	err    error
}

// webhook is a minimal SNS subscriber: it parses and verifies each delivery
// with v and answers 200, or 400, 403 or 503 by the error's kind.
type webhook struct {
	mu         sync.Mutex
	deliveries []delivery
}

func startWebhook(t *testing.T, v *sns.Verifier) (string, *webhook) {
	t.Helper()
	wh := &webhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d := delivery{header: r.Header.Clone(), body: string(body)}
		d.msg, d.err = sns.ParseMessage(body)
		if d.err == nil {
			d.err = v.Verify(r.Context(), d.msg)
		}
		wh.mu.Lock()
		wh.deliveries = append(wh.deliveries, d)
		wh.mu.Unlock()
		switch {
		case d.err == nil:
			w.WriteHeader(http.StatusOK)
		case errors.Is(d.err, sns.ErrMalformed):
			http.Error(w, d.err.Error(), http.StatusBadRequest)
		case errors.Is(d.err, sns.ErrRejected):
			http.Error(w, d.err.Error(), http.StatusForbidden)
		default:
			http.Error(w, d.err.Error(), http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, wh
}

func (wh *webhook) last(t *testing.T) delivery {
	t.Helper()
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if len(wh.deliveries) == 0 {
		t.Fatal("webhook received nothing")
	}
	return wh.deliveries[len(wh.deliveries)-1]
}

func mustPost(t *testing.T, endpoint string, m sns.Message, header http.Header) int {
	t.Helper()
	resp, err := Post(testContext(t), nil, endpoint, m, header)
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Logf("webhook answered %d: %s", resp.StatusCode, body)
	}
	return resp.StatusCode
}

func TestSignedMessagesVerify(t *testing.T) {
	h := mustHost(t, HostOptions{})
	v := mustVerifier(t, h, sns.Options{})
	endpoint, wh := startWebhook(t, v)
	messages := []struct {
		name string
		m    sns.Message
	}{
		{"Notification", h.Notification(testTopic, sns.CloudFormationSubject, "StackId='x'\n")},
		{"NotificationWithoutSubject", h.Notification(testTopic, "", `{"a":"<b> & c"}`)},
		{"SubscriptionConfirmation", h.SubscriptionConfirmation(testTopic)},
		{"UnsubscribeConfirmation", h.UnsubscribeConfirmation(testTopic)},
		{"ChinaPartition", h.Notification(testTopicCN, "", "hello")},
	}
	for _, tt := range messages {
		for _, version := range []string{sns.SignatureVersion1, sns.SignatureVersion2} {
			t.Run(tt.name+"/v"+version, func(t *testing.T) {
				signed := h.Sign(tt.m, version)
				if code := mustPost(t, endpoint, signed, nil); code != http.StatusOK {
					t.Fatalf("webhook answered %d, want 200", code)
				}
				d := wh.last(t)
				if d.err != nil {
					t.Fatalf("Verify: %v", d.err)
				}
				if diff := cmp.Diff(signed, d.msg); diff != "" {
					t.Errorf("message (-sent +received):\n%s", diff)
				}
				wantHeader := map[string]string{
					"Content-Type":           "text/plain; charset=UTF-8",
					"X-Amz-Sns-Message-Type": signed.Type,
					"X-Amz-Sns-Message-Id":   signed.MessageID,
					"X-Amz-Sns-Topic-Arn":    signed.TopicARN,
				}
				for k, want := range wantHeader {
					if got := d.header.Get(k); got != want {
						t.Errorf("header %s = %q, want %q", k, got, want)
					}
				}
			})
		}
	}
	// Every region was reached through the proxy, and the certificate of
	// each endpoint fetched once (the Verifier caches it).
	wantTargets := []string{"sns.us-east-1.amazonaws.com:443", "sns.cn-north-1.amazonaws.com.cn:443"}
	for _, target := range wantTargets {
		if !contains(h.ConnectTargets(), target) {
			t.Errorf("ConnectTargets() = %v, want %s among them", h.ConnectTargets(), target)
		}
	}
	if got := h.Hits(h.CertPath()); got != 2 {
		t.Errorf("Hits(CertPath) = %d, want 2 (one per endpoint)", got)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestMessageFields(t *testing.T) {
	h := mustHost(t, HostOptions{})
	n := h.Notification(testTopic, "s", "m")
	if n.Timestamp != "2026-03-04T05:06:07.000Z" {
		t.Errorf("Timestamp = %q, want the host clock in SNS's format", n.Timestamp)
	}
	if want := "https://sns.us-east-1.amazonaws.com" + h.CertPath(); n.SigningCertURL != want || n.SigningCertURL != h.CertURL("us-east-1") {
		t.Errorf("SigningCertURL = %q, want %q", n.SigningCertURL, want)
	}
	if err := sns.CheckCertURL(n.SigningCertURL, testTopic); err != nil {
		t.Errorf("CheckCertURL: %v", err)
	}
	if got := h.CertURL("cn-north-1"); got != "https://sns.cn-north-1.amazonaws.com.cn"+h.CertPath() {
		t.Errorf("CertURL(cn-north-1) = %q", got)
	}
	if n2 := h.Notification(testTopic, "s", "m"); n2.MessageID == n.MessageID {
		t.Errorf("two notifications share MessageId %q", n.MessageID)
	}
	if !strings.HasPrefix(n.UnsubscribeURL, "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn="+testTopic+":") {
		t.Errorf("UnsubscribeURL = %q", n.UnsubscribeURL)
	}
	c := h.SubscriptionConfirmation(testTopic)
	if err := sns.SubscribeURLAllowed(c); err != nil {
		t.Errorf("SubscribeURLAllowed: %v", err)
	}
	if c2 := h.SubscriptionConfirmation(testTopic); c2.Token == c.Token {
		t.Error("two confirmations share a Token")
	}
}

func TestCertificateFaults(t *testing.T) {
	tests := []struct {
		name       string
		opts       HostOptions
		verifier   sns.Options
		wantKind   error
		wantReason sns.Reason
	}{
		{"Redirect", HostOptions{CertMode: CertRedirect}, sns.Options{}, sns.ErrTransient, sns.ReasonCertRedirect},
		{"ServerError", HostOptions{CertMode: CertServerError}, sns.Options{}, sns.ErrTransient, sns.ReasonCertFetch},
		// The fetch never gets an answer, so it ends at FetchTimeout however
		// fast or slow the machine is.
		{"Hang", HostOptions{CertMode: CertHang}, sns.Options{FetchTimeout: 50 * time.Millisecond}, sns.ErrTransient, sns.ReasonCertTimeout},
		{"UntrustedHost", HostOptions{TLSIssuer: MustAuthority(t, "impostor")}, sns.Options{}, sns.ErrTransient, sns.ReasonCertFetch},
		{"Expired", HostOptions{CertNotBefore: testNow.Add(-48 * time.Hour), CertNotAfter: testNow.Add(-time.Hour)}, sns.Options{}, sns.ErrRejected, sns.ReasonCertExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustHost(t, tt.opts)
			v := mustVerifier(t, h, tt.verifier)
			err := v.Verify(testContext(t), h.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion2))
			if !errors.Is(err, tt.wantKind) || sns.ReasonOf(err) != tt.wantReason {
				t.Fatalf("Verify = %v, want %v (%s)", err, tt.wantKind, tt.wantReason)
			}
			if h.Hits(h.RedirectPath()) != 0 {
				t.Error("the Verifier followed the redirect")
			}
		})
	}
}

func TestSetCertModeRecovers(t *testing.T) {
	h := mustHost(t, HostOptions{CertMode: CertServerError})
	clock := testclock.New(testNow)
	v := mustVerifier(t, h, sns.Options{Now: clock.Now})
	m := h.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion1)
	if err := v.Verify(testContext(t), m); !errors.Is(err, sns.ErrTransient) {
		t.Fatalf("Verify while failing = %v, want ErrTransient", err)
	}
	h.SetCertMode(CertServe)
	clock.Advance(sns.FailureCacheTTL) // the Verifier remembers the failure until then
	if err := v.Verify(testContext(t), m); err != nil {
		t.Fatalf("Verify after recovery: %v", err)
	}
	if got := h.Hits(h.CertPath()); got != 2 {
		t.Errorf("Hits(CertPath) = %d, want 2", got)
	}
}

func TestTamperedMessageRejected(t *testing.T) {
	h := mustHost(t, HostOptions{})
	v := mustVerifier(t, h, sns.Options{})
	m := h.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion1)
	m.Message = "changed"
	if err := v.Verify(testContext(t), m); !errors.Is(err, sns.ErrRejected) || sns.ReasonOf(err) != sns.ReasonSignature {
		t.Fatalf("Verify = %v, want ErrRejected (signature)", err)
	}
	other := mustHost(t, HostOptions{})
	forged := other.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion1)
	if err := v.Verify(testContext(t), forged); !errors.Is(err, sns.ErrRejected) {
		t.Fatalf("Verify of a message signed by another key = %v, want ErrRejected", err)
	}
}

func TestEnv(t *testing.T) {
	h := mustHost(t, HostOptions{})
	want := []string{
		"HTTPS_PROXY=" + h.ProxyURL(),
		"https_proxy=" + h.ProxyURL(),
		"NO_PROXY=" + NoProxy,
		"no_proxy=" + NoProxy,
	}
	if diff := cmp.Diff(want, h.Env()); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}

// TestNewHostStop leaves a tunnel open through a host started outside a
// test, and checks that stop ends it, closes the proxy and leaves none of
// the host's goroutines running.
func TestNewHostStop(t *testing.T) {
	h, stop, err := NewHost(testCA, HostOptions{Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	proxy := strings.TrimPrefix(h.ProxyURL(), "http://")
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(hangDeadline)); err != nil {
		t.Fatal(err)
	}
	const target = "sns.us-east-1.amazonaws.com:443"
	if _, err := io.WriteString(conn, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		t.Fatalf("CONNECT answered %q (%v), want 200", status, err)
	}

	stop()
	stopped = true
	stop() // a second stop is harmless
	if _, err := io.ReadAll(br); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Errorf("reading the tunnel after stop: %v, want its end", err)
	}
	if c, err := net.Dial("tcp", proxy); err == nil {
		c.Close()
		t.Errorf("the proxy at %s still accepts connections after stop", proxy)
	}
	waitHostGoroutines(t)
}
