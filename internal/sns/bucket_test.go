package sns

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// missingCert is the SigningCertURL path of a certificate the test host
// does not serve (it answers 404), a different one for each i.
func missingCert(i int) string {
	return fmt.Sprintf("/SimpleNotificationService-%x.pem", 0xdead0000+i)
}

// certRequests is how many requests the host served for any certificate
// path.
func (h *snsHost) certRequests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for path, hits := range h.hits {
		if strings.HasPrefix(path, "/SimpleNotificationService-") {
			n += hits
		}
	}
	return n
}

// wantReason fails unless err is ErrTransient with reason.
func wantReason(t *testing.T, what string, err error, reason Reason) {
	t.Helper()
	if !errors.Is(err, ErrTransient) || ReasonOf(err) != reason {
		t.Errorf("%s: Verify = %v, want ErrTransient (%s)", what, err, reason)
	}
}

// roomyTopicBucket leaves the per-topic bucket out of the way of a test of
// the process-wide one whose messages are all of one topic.
const roomyTopicBucket = 1000

// TestVerifyFetchBucket: uncached certificates are fetched from one
// process-wide bucket; beyond it Verify fails with cert_budget without
// connecting; a cached certificate and a remembered failure take no token,
// and a cached certificate is never refused.
func TestVerifyFetchBucket(t *testing.T) {
	clock := testclock.New(testNow)
	const burst = 3
	h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now, FetchBurst: burst, FetchRate: 1, TopicFetchBurst: roomyTopicBucket}})
	genuine := sign(t, notification(testNow), SignatureVersion1)
	if err := h.verifier.Verify(t.Context(), genuine); err != nil { // token 1
		t.Fatalf("genuine Verify = %v", err)
	}
	for i := range 10 {
		err := h.verifier.Verify(t.Context(), withCert(t, notification(testNow), missingCert(i), SignatureVersion1))
		if i < burst-1 {
			wantReason(t, fmt.Sprint("forged ", i), err, ReasonCertFetch) // tokens 2 and 3
		} else {
			wantReason(t, fmt.Sprint("forged ", i), err, ReasonCertBudget)
		}
	}
	if n := h.certRequests(); n != burst {
		t.Errorf("%d certificate requests, want %d (the burst)", n, burst)
	}
	if conns := len(h.connectsSeen()); conns > burst {
		t.Errorf("%d CONNECTs, want at most %d", conns, burst)
	}
	// The cached certificate is never refused, the bucket empty or not.
	for range 5 {
		if err := h.verifier.Verify(t.Context(), genuine); err != nil {
			t.Fatalf("genuine Verify with an empty bucket = %v", err)
		}
	}
	// A second later one token is back: a remembered failure does not
	// take it, the next new URL does.
	clock.Advance(time.Second)
	wantReason(t, "remembered failure", h.verifier.Verify(t.Context(),
		withCert(t, notification(testNow), missingCert(0), SignatureVersion1)), ReasonCertFetch)
	wantReason(t, "new URL after a second", h.verifier.Verify(t.Context(),
		withCert(t, notification(testNow), missingCert(100), SignatureVersion1)), ReasonCertFetch)
	wantReason(t, "another new URL", h.verifier.Verify(t.Context(),
		withCert(t, notification(testNow), missingCert(101), SignatureVersion1)), ReasonCertBudget)
	if n := h.certRequests(); n != burst+1 {
		t.Errorf("%d certificate requests, want %d", n, burst+1)
	}
	if n := h.hitCount(testCertPath); n != 1 {
		t.Errorf("genuine certificate fetched %d times, want 1", n)
	}
}

// TestVerifyFetchBucketConcurrent: callers racing with forged URLs never
// make more fetches than the bucket holds, and the cached certificate is
// never refused meanwhile.
func TestVerifyFetchBucketConcurrent(t *testing.T) {
	const burst = 4
	h := mustSNSHost(t, hostOptions{verifier: Options{FetchBurst: burst, FetchRate: 1, TopicFetchBurst: roomyTopicBucket}}) // the clock stands still
	genuine := sign(t, notification(testNow), SignatureVersion2)
	if err := h.verifier.Verify(t.Context(), genuine); err != nil {
		t.Fatalf("genuine Verify = %v", err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		forged := withCert(t, notification(testNow), missingCert(i), SignatureVersion2)
		wg.Go(func() {
			if err := h.verifier.Verify(t.Context(), forged); !errors.Is(err, ErrTransient) {
				t.Errorf("forged Verify = %v, want ErrTransient", err)
			}
		})
		wg.Go(func() {
			if err := h.verifier.Verify(t.Context(), genuine); err != nil {
				t.Errorf("genuine Verify = %v, want nil", err)
			}
		})
	}
	wg.Wait()
	if n := h.certRequests(); n > burst {
		t.Errorf("%d certificate requests, want at most %d", n, burst)
	}
}

// attackerTopic is a listed topic of the test's region whose owner posts
// forged messages.
const attackerTopic = "arn:aws:sns:us-east-1:210987654321:attacker"

// ofTopic is m with topic as its TopicArn.
func ofTopic(m Message, topic string) Message {
	m.TopicARN = topic
	return m
}

// TestVerifyTopicBucket (review2 finding 4): a topic flooding forged
// messages, ten a second, each naming a fresh certificate file on its SNS
// host, is refused beyond its own bucket (2, then one a minute) without a
// fetch, and cannot empty the process-wide bucket: another topic's first
// delivery of a certificate not cached yet succeeds at its first try,
// at the production defaults.
func TestVerifyTopicBucket(t *testing.T) {
	clock := testclock.New(testNow)
	h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now}}) // production buckets
	forged := 0
	attack := func() error {
		m := withCert(t, ofTopic(notification(clock.Now()), attackerTopic), missingCert(forged), SignatureVersion1)
		forged++
		return h.verifier.Verify(t.Context(), m)
	}
	attackFetches := func() int { return h.certRequests() - h.hitCount(testCertPath) }
	for i := range 100 { // ten seconds of the flood
		clock.Advance(100 * time.Millisecond)
		err := attack()
		if i < DefaultTopicFetchBurst {
			wantReason(t, fmt.Sprint("forged ", i), err, ReasonCertFetch) // fetched: no such file
		} else {
			wantReason(t, fmt.Sprint("forged ", i), err, ReasonCertBudget)
		}
	}
	if n := attackFetches(); n != DefaultTopicFetchBurst {
		t.Errorf("the flooding topic made %d fetches, want %d (its own bucket)", n, DefaultTopicFetchBurst)
	}
	// The genuine topic's first delivery, its certificate not cached yet.
	genuine := sign(t, notification(clock.Now()), SignatureVersion1)
	if err := h.verifier.Verify(t.Context(), genuine); err != nil {
		t.Errorf("genuine first delivery during the flood = %v, want nil", err)
	}
	// A minute of the flood later: one more fetch for the attacker.
	for range 600 {
		clock.Advance(100 * time.Millisecond)
		_ = attack()
	}
	if n := attackFetches(); n != DefaultTopicFetchBurst+1 {
		t.Errorf("after a minute the flooding topic made %d fetches, want %d", n, DefaultTopicFetchBurst+1)
	}
	// The genuine topic's cached certificate is never refused, its own
	// bucket emptied or not.
	for i := range DefaultTopicFetchBurst + 1 {
		_ = h.verifier.Verify(t.Context(), withCert(t, notification(clock.Now()), missingCert(1000+i), SignatureVersion1))
	}
	if err := h.verifier.Verify(t.Context(), sign(t, notification(clock.Now()), SignatureVersion1)); err != nil {
		t.Errorf("genuine delivery of a cached certificate with the topic's bucket empty = %v", err)
	}
	if n := h.hitCount(testCertPath); n != 1 {
		t.Errorf("genuine certificate fetched %d times, want 1", n)
	}
}

// TestVerifyTopicBucketWithinProcessBucket: topics each within their own
// bucket are still bounded by the process-wide one; a fetch it refuses takes
// no token from the topic's bucket, so the topic's retry fetches once the
// process-wide bucket has a token again. A failure is remembered for the
// URL, whichever topic names it next (no fetch, no token).
func TestVerifyTopicBucketWithinProcessBucket(t *testing.T) {
	clock := testclock.New(testNow)
	const burst = 4
	h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now, FetchBurst: burst, FetchRate: 1}})
	for i := range 10 {
		topic := fmt.Sprintf("arn:aws:sns:us-east-1:210987654321:many-%d", i)
		err := h.verifier.Verify(t.Context(), withCert(t, ofTopic(notification(testNow), topic), missingCert(i), SignatureVersion1))
		if i < burst {
			wantReason(t, topic, err, ReasonCertFetch)
		} else {
			wantReason(t, topic, err, ReasonCertBudget)
		}
	}
	if n := h.certRequests(); n != burst {
		t.Errorf("%d certificate requests, want %d (the process-wide bucket)", n, burst)
	}
	// The genuine topic meets the empty process-wide bucket more times than
	// its own bucket holds; none of them costs it a token.
	genuine := sign(t, notification(testNow), SignatureVersion1)
	for i := range DefaultTopicFetchBurst + 2 {
		wantReason(t, fmt.Sprint("genuine try ", i), h.verifier.Verify(t.Context(), genuine), ReasonCertBudget)
	}
	clock.Advance(time.Second)
	if err := h.verifier.Verify(t.Context(), genuine); err != nil {
		t.Errorf("genuine delivery once the process-wide bucket has a token = %v", err)
	}
	// many-0's failed URL, named by another topic: answered from the
	// failure, without a fetch.
	other := withCert(t, ofTopic(notification(testNow), "arn:aws:sns:us-east-1:210987654321:other"), missingCert(0), SignatureVersion1)
	wantReason(t, "another topic naming a failed URL", h.verifier.Verify(t.Context(), other), ReasonCertFetch)
	if n := h.hitCount(missingCert(0)); n != 1 {
		t.Errorf("%s fetched %d times, want 1", missingCert(0), n)
	}
}

// pausingClock is the test clock, except that the first call after arm
// reports on paused and waits for resume: it holds a fetch flight at the
// moment it reads the time, before it decides on a token.
type pausingClock struct {
	*testclock.Clock
	mu     sync.Mutex
	armed  bool
	paused chan struct{}
	resume chan struct{}
}

func (c *pausingClock) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.paused, c.resume = true, make(chan struct{}), make(chan struct{})
}

func (c *pausingClock) Now() time.Time {
	c.mu.Lock()
	armed, paused, resume := c.armed, c.paused, c.resume
	c.armed = false
	c.mu.Unlock()
	if armed {
		close(paused)
		<-resume
	}
	return c.Clock.Now()
}

// TestVerifyTopicRefusalNotShared: a caller that joins the fetch of its
// certificate URL started by another topic, which that topic's empty bucket
// refuses, is not handed the refusal: it fetches with its own topic's
// token. (A forged message of a flooding topic naming another topic's
// genuine certificate URL at the moment of its delivery.)
func TestVerifyTopicRefusalNotShared(t *testing.T) {
	clock := &pausingClock{Clock: testclock.New(testNow)}
	h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now}})
	for i := range DefaultTopicFetchBurst { // the attacker's bucket emptied
		_ = h.verifier.Verify(t.Context(), withCert(t, ofTopic(notification(testNow), attackerTopic), missingCert(i), SignatureVersion1))
	}
	clock.arm()
	attackerErr := make(chan error, 1)
	go func() {
		// VerifyReceived reads the clock only in the flight.
		attackerErr <- h.verifier.VerifyReceived(t.Context(), ofTopic(sign(t, notification(testNow), SignatureVersion1), attackerTopic), testNow)
	}()
	select {
	case <-clock.paused:
	case <-time.After(hangGuard):
		t.Fatal("the attacker's fetch flight never started")
	}
	joined := make(chan struct{}, 1)
	genuineErr := make(chan error, 1)
	ctx := &joinSignal{Context: t.Context(), joined: joined}
	genuine := sign(t, notification(testNow), SignatureVersion1)
	go func() { genuineErr <- h.verifier.Verify(ctx, genuine) }()
	select {
	case <-joined:
	case <-time.After(hangGuard):
		t.Fatal("the genuine delivery never joined the fetch")
	}
	close(clock.resume)
	for _, tt := range []struct {
		who  string
		errc chan error
		want Reason
	}{{"attacker", attackerErr, ReasonCertBudget}, {"genuine", genuineErr, ""}} {
		select {
		case err := <-tt.errc:
			if tt.want == "" && err != nil {
				t.Errorf("%s Verify = %v, want nil", tt.who, err)
			}
			if tt.want != "" {
				wantReason(t, tt.who, err, tt.want)
			}
		case <-time.After(hangGuard):
			t.Fatalf("%s Verify hung", tt.who)
		}
	}
	if n := h.hitCount(testCertPath); n != 1 {
		t.Errorf("genuine certificate fetched %d times, want 1", n)
	}
}
