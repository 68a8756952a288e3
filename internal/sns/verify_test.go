package sns

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// hangGuard only catches hangs; no test asserts on elapsed time.
const hangGuard = time.Minute

// withCert points m at the certificate at path and re-signs it.
func withCert(tb testing.TB, m Message, path, version string) Message {
	tb.Helper()
	m.SigningCertURL = certURL(path)
	return sign(tb, m, version)
}

func TestVerify(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	noSubject := notification(testNow)
	noSubject.Subject = ""
	messages := []struct {
		name string
		m    Message
	}{
		{"Notification", notification(testNow.Add(-time.Minute))},
		{"NotificationWithoutSubject", noSubject},
		{"SubscriptionConfirmation", confirmation(TypeSubscriptionConfirmation, testNow)},
		{"UnsubscribeConfirmation", confirmation(TypeUnsubscribeConfirmation, testNow)},
	}
	for _, tt := range messages {
		for _, version := range []string{SignatureVersion1, SignatureVersion2} {
			t.Run(tt.name+"V"+version, func(t *testing.T) {
				body := mustJSON(t, sign(t, tt.m, version))
				m, err := ParseMessage(body)
				if err != nil {
					t.Fatalf("ParseMessage: %v", err)
				}
				if err := h.verifier.Verify(t.Context(), m); err != nil {
					t.Errorf("Verify = %v, want nil", err)
				}
			})
		}
	}
	if got := h.connectsSeen(); len(got) == 0 || got[0] != "CONNECT "+testHost+":443" {
		t.Errorf("proxy saw %q, want a CONNECT to %s:443", got, testHost)
	}
}

func TestVerifyTampered(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	n := notification(testNow)
	noSubject := n
	noSubject.Subject = ""
	sub := confirmation(TypeSubscriptionConfirmation, testNow)
	unsub := confirmation(TypeUnsubscribeConfirmation, testNow)
	tests := []struct {
		name   string
		base   Message
		tamper func(*Message)
	}{
		{"Message", n, func(m *Message) { m.Message = strings.Replace(m.Message, "kukie", "kukie2", 1) }},
		{"MessageId", n, func(m *Message) { m.MessageID = "165545c9-2a5c-472c-8df2-7ff2be2b3b1c" }},
		{"SubjectChanged", n, func(m *Message) { m.Subject = "Something else" }},
		{"SubjectRemoved", n, func(m *Message) { m.Subject = "" }},
		{"SubjectAdded", noSubject, func(m *Message) { m.Subject = CloudFormationSubject }},
		{"Timestamp", n, func(m *Message) { m.Timestamp = snsTimestamp(testNow.Add(time.Second)) }},
		{"TopicArn", n, func(m *Message) { m.TopicARN = "arn:aws:sns:us-east-1:123456789012:other-topic" }},
		{"TypeSubscriptionToUnsubscribe", sub, func(m *Message) { m.Type = TypeUnsubscribeConfirmation }},
		{"TypeUnsubscribeToSubscription", unsub, func(m *Message) { m.Type = TypeSubscriptionConfirmation }},
		{"ConfirmationMessage", sub, func(m *Message) { m.Message += " " }},
		{"Token", sub, func(m *Message) { m.Token = "0" + m.Token[1:] }},
		{"SubscribeURL", sub, func(m *Message) { m.SubscribeURL = strings.Replace(m.SubscribeURL, "Token=", "Token=0", 1) }},
		{"UnsubscribeToken", unsub, func(m *Message) { m.Token = "0" + m.Token[1:] }},
		{"Signature", n, func(m *Message) {
			sig, _ := base64.StdEncoding.DecodeString(m.Signature)
			sig[len(sig)/2] ^= 1
			m.Signature = base64.StdEncoding.EncodeToString(sig)
		}},
		{"VersionRaised", n, func(m *Message) {
			m.SignatureVersion = map[string]string{"1": "2", "2": "1"}[m.SignatureVersion]
		}},
	}
	for _, tt := range tests {
		for _, version := range []string{SignatureVersion1, SignatureVersion2} {
			t.Run(tt.name+"V"+version, func(t *testing.T) {
				m := sign(t, tt.base, version)
				if err := h.verifier.Verify(t.Context(), m); err != nil {
					t.Fatalf("untampered Verify = %v, want nil", err)
				}
				tt.tamper(&m)
				err := h.verifier.Verify(t.Context(), m)
				if !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonSignature {
					t.Errorf("Verify = %v, want ErrRejected (signature)", err)
				}
			})
		}
	}
	if n := h.hitCount(testCertPath); n != 1 {
		t.Errorf("certificate fetched %d times, want 1 (cached)", n)
	}
}

func TestVerifyCertificateDates(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	tests := []struct {
		name                string
		notBefore, notAfter time.Time
	}{
		{"ErrExpired", testNow.Add(-48 * time.Hour), testNow.Add(-time.Second)},
		{"ErrNotYetValid", testNow.Add(time.Second), testNow.Add(48 * time.Hour)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("/SimpleNotificationService-d%d.pem", i)
			h.mux.Handle(path, servePEM(signingCertPEM(t, tt.notBefore, tt.notAfter)))
			err := h.verifier.Verify(t.Context(), withCert(t, notification(testNow), path, SignatureVersion2))
			if !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonCertExpired {
				t.Errorf("Verify = %v, want ErrRejected (cert_expired)", err)
			}
		})
	}
}

// TestVerifyChecksBeforeFetching: a bad certificate URL, a stale or future
// Timestamp and a malformed message are refused without any network call.
func TestVerifyChecksBeforeFetching(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	for _, tt := range badCertURLs {
		t.Run("CertURL"+tt.name, func(t *testing.T) {
			m := notification(testNow)
			m.SigningCertURL = tt.url
			err := h.verifier.Verify(t.Context(), sign(t, m, SignatureVersion1))
			want := ErrRejected
			if tt.url == "" {
				want = ErrMalformed
			}
			if !errors.Is(err, want) {
				t.Errorf("Verify(%q) = %v, want %v", tt.url, err, want)
			}
		})
	}
	times := []struct {
		name   string
		ts     time.Time
		reason Reason
	}{
		{"ErrStale", testNow.Add(-DefaultMaxAge - time.Second), ReasonStale},
		{"ErrFuture", testNow.Add(MaxFutureSkew + time.Second), ReasonFuture},
	}
	for _, tt := range times {
		t.Run(tt.name, func(t *testing.T) {
			err := h.verifier.Verify(t.Context(), sign(t, notification(tt.ts), SignatureVersion2))
			if !errors.Is(err, ErrRejected) || ReasonOf(err) != tt.reason {
				t.Errorf("Verify = %v, want ErrRejected (%s)", err, tt.reason)
			}
		})
	}
	t.Run("ErrMalformed", func(t *testing.T) {
		m := sign(t, notification(testNow), SignatureVersion2)
		m.SignatureVersion = "3"
		if err := h.verifier.Verify(t.Context(), m); !errors.Is(err, ErrMalformed) {
			t.Errorf("Verify = %v, want ErrMalformed", err)
		}
	})
	if got := h.connectsSeen(); len(got) != 0 {
		t.Errorf("proxy saw %q, want no connection", got)
	}
}

func TestVerifyMaxAgeOption(t *testing.T) {
	h := mustSNSHost(t, hostOptions{verifier: Options{MaxAge: 10 * time.Minute}})
	err := h.verifier.Verify(t.Context(), sign(t, notification(testNow.Add(-11*time.Minute)), SignatureVersion2))
	if !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonStale {
		t.Errorf("Verify = %v, want ErrRejected (stale)", err)
	}
}

func TestVerifyCache(t *testing.T) {
	t.Run("OneFetchForManyVerifies", func(t *testing.T) {
		h := mustSNSHost(t, hostOptions{})
		for i := range 10 {
			m := notification(testNow)
			m.MessageID = strconv.Itoa(i)
			if err := h.verifier.Verify(t.Context(), sign(t, m, SignatureVersion1)); err != nil {
				t.Fatalf("Verify %d = %v", i, err)
			}
		}
		if n := h.hitCount(testCertPath); n != 1 {
			t.Errorf("certificate fetched %d times, want 1", n)
		}
	})
	t.Run("Bounded", func(t *testing.T) {
		h := mustSNSHost(t, hostOptions{verifier: Options{CacheSize: 1, TopicFetchBurst: roomyTopicBucket}}) // three fetches of one topic
		other := "/SimpleNotificationService-b0.pem"
		h.mux.Handle(other, servePEM(signingCertPEM(t, testNow.Add(-time.Hour), testNow.Add(time.Hour))))
		for _, path := range []string{testCertPath, other, testCertPath} {
			if err := h.verifier.Verify(t.Context(), withCert(t, notification(testNow), path, SignatureVersion2)); err != nil {
				t.Fatalf("Verify(%s) = %v", path, err)
			}
		}
		if n := h.hitCount(testCertPath); n != 2 {
			t.Errorf("first certificate fetched %d times, want 2 (evicted by the second)", n)
		}
	})
}

// joinSignal is a context that reports the first time a caller waits on it,
// which Verify does only once it has joined the certificate fetch.
type joinSignal struct {
	context.Context
	once   sync.Once
	joined chan<- struct{}
}

func (c *joinSignal) Done() <-chan struct{} {
	c.once.Do(func() { c.joined <- struct{}{} })
	return c.Context.Done()
}

func TestVerifyCollapsesConcurrentFetches(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	path := "/SimpleNotificationService-c0.pem"
	body := signingCertPEM(t, testNow.Add(-time.Hour), testNow.Add(time.Hour))
	release := make(chan struct{})
	h.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-h.stop:
		}
		_, _ = w.Write(body)
	}))

	const callers = 8
	joined := make(chan struct{}, callers)
	errs := make(chan error, callers)
	for i := range callers {
		m := notification(testNow)
		m.MessageID = strconv.Itoa(i)
		m = withCert(t, m, path, SignatureVersion2)
		ctx := &joinSignal{Context: t.Context(), joined: joined}
		go func() { errs <- h.verifier.Verify(ctx, m) }()
	}
	for range callers {
		select {
		case <-joined:
		case <-time.After(hangGuard):
			t.Fatal("callers never waited for the certificate")
		}
	}
	close(release)
	for range callers {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("Verify = %v", err)
			}
		case <-time.After(hangGuard):
			t.Fatal("Verify hung")
		}
	}
	if n := h.hitCount(path); n != 1 {
		t.Errorf("certificate fetched %d times, want 1", n)
	}
}

// TestVerifyCallerGivesUp: a caller whose context ends stops waiting with
// ErrTransient, and the fetch carries on for the next caller.
func TestVerifyCallerGivesUp(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	path := "/SimpleNotificationService-c1.pem"
	body := signingCertPEM(t, testNow.Add(-time.Hour), testNow.Add(time.Hour))
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	h.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
		case <-h.stop:
		}
		_, _ = w.Write(body)
	}))
	m := withCert(t, notification(testNow), path, SignatureVersion1)

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- h.verifier.Verify(ctx, m) }()
	select {
	case <-started:
	case <-time.After(hangGuard):
		t.Fatal("the certificate was never requested")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrTransient) || !errors.Is(err, context.Canceled) {
			t.Errorf("Verify = %v, want ErrTransient wrapping context.Canceled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Verify did not return after its context ended")
	}
	close(release)
	if err := h.verifier.Verify(t.Context(), m); err != nil {
		t.Errorf("second Verify = %v, want nil", err)
	}
	if n := h.hitCount(path); n != 1 {
		t.Errorf("certificate fetched %d times, want 1", n)
	}
}

func TestVerifyFetchFailures(t *testing.T) {
	good := signingCertPEM(t, testNow.Add(-time.Hour), testNow.Add(time.Hour))
	tests := []struct {
		name    string
		handler http.HandlerFunc
		reason  Reason
	}{
		{"ErrServerError", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "oops", http.StatusInternalServerError)
		}, ReasonCertFetch},
		{"ErrNotFound", http.NotFound, ReasonCertFetch},
		{"ErrNotPEM", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<html>not a certificate</html>"))
		}, ReasonCertFetch},
		{"ErrNotACertificate", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
		}, ReasonCertFetch},
		{"ErrTooLargeStreamed", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(good)
			_, _ = w.Write([]byte(strings.Repeat("\n", MaxCertSize+1-len(good))))
		}, ReasonCertTooLarge},
		{"ErrTooLargeDeclared", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(MaxCertSize+1))
			_, _ = w.Write(good)
			_, _ = w.Write([]byte(strings.Repeat("\n", MaxCertSize+1-len(good))))
		}, ReasonCertTooLarge},
	}
	for _, code := range []int{301, 302, 303, 307, 308} {
		tests = append(tests, struct {
			name    string
			handler http.HandlerFunc
			reason  Reason
		}{"ErrRedirect" + strconv.Itoa(code), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, testCertPath, code)
		}, ReasonCertRedirect})
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testclock.New(testNow)
			h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now}})
			path := fmt.Sprintf("/SimpleNotificationService-f%d.pem", i)
			h.mux.Handle(path, tt.handler)
			m := withCert(t, notification(testNow), path, SignatureVersion2)
			// The failure is remembered for FailureCacheTTL, then fetched
			// again.
			for attempt, step := range []time.Duration{0, FailureCacheTTL - time.Millisecond, time.Millisecond} {
				clock.Advance(step)
				err := h.verifier.Verify(t.Context(), m)
				if !errors.Is(err, ErrTransient) || ReasonOf(err) != tt.reason {
					t.Fatalf("Verify attempt %d = %v, want ErrTransient (%s)", attempt, err, tt.reason)
				}
				if n, want := h.hitCount(path), []int{1, 1, 2}[attempt]; n != want {
					t.Errorf("after attempt %d the failing certificate was fetched %d times, want %d", attempt, n, want)
				}
			}
			if n := h.hitCount(testCertPath); n != 0 {
				t.Errorf("redirect target fetched %d times, want 0", n)
			}
		})
	}
	t.Run("ExactlyMaxSize", func(t *testing.T) {
		h := mustSNSHost(t, hostOptions{})
		path := "/SimpleNotificationService-a0.pem"
		h.mux.Handle(path, servePEM(append(good, strings.Repeat("\n", MaxCertSize-len(good))...)))
		if err := h.verifier.Verify(t.Context(), withCert(t, notification(testNow), path, SignatureVersion2)); err != nil {
			t.Errorf("Verify = %v, want nil", err)
		}
	})
	t.Run("SuccessAfterFailure", func(t *testing.T) {
		clock := testclock.New(testNow)
		h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now}})
		path := "/SimpleNotificationService-a1.pem"
		var mu sync.Mutex
		failed := false
		h.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if !failed {
				failed = true
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write(good)
		}))
		m := withCert(t, notification(testNow), path, SignatureVersion1)
		if err := h.verifier.Verify(t.Context(), m); !errors.Is(err, ErrTransient) {
			t.Fatalf("first Verify = %v, want ErrTransient", err)
		}
		clock.Advance(FailureCacheTTL) // SNS's second retry
		for range 3 {
			if err := h.verifier.Verify(t.Context(), m); err != nil {
				t.Fatalf("Verify = %v, want nil", err)
			}
		}
		if n := h.hitCount(path); n != 2 {
			t.Errorf("certificate fetched %d times, want 2", n)
		}
	})
}

func TestVerifyTimeout(t *testing.T) {
	h := mustSNSHost(t, hostOptions{verifier: Options{FetchTimeout: 100 * time.Millisecond}})
	path := "/SimpleNotificationService-e0.pem"
	h.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-h.stop
	}))
	err := h.verifier.Verify(t.Context(), withCert(t, notification(testNow), path, SignatureVersion2))
	if !errors.Is(err, ErrTransient) || ReasonOf(err) != ReasonCertTimeout {
		t.Errorf("Verify = %v, want ErrTransient (cert_timeout)", err)
	}
}

// TestVerifyUntrustedHost: the TLS certificate of the host is what
// authenticates the signing certificate, so a host the roots do not trust
// yields nothing.
func TestVerifyUntrustedHost(t *testing.T) {
	h := mustSNSHost(t, hostOptions{tlsIssuer: mustAuthority(t, "Not trusted")})
	err := h.verifier.Verify(t.Context(), sign(t, notification(testNow), SignatureVersion2))
	if !errors.Is(err, ErrTransient) || ReasonOf(err) != ReasonCertFetch {
		t.Errorf("Verify = %v, want ErrTransient (cert_fetch)", err)
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("Verify = %v, want an unknown-authority TLS failure", err)
	}
	if n := h.hitCount(testCertPath); n != 0 {
		t.Errorf("certificate served %d times over an untrusted connection", n)
	}
}

func TestNewRefusesNegativeOptions(t *testing.T) {
	for _, o := range []Options{{MaxAge: -1}, {FetchTimeout: -1}, {CacheSize: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) = nil error", o)
		}
	}
}
