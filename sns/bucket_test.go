package sns

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testclock"
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

// TestVerifyFetchBucket: uncached certificates are fetched from one
// process-wide bucket; beyond it Verify fails with cert_budget without
// connecting; a cached certificate and a remembered failure take no token,
// and a cached certificate is never refused.
func TestVerifyFetchBucket(t *testing.T) {
	clock := testclock.New(testNow)
	const burst = 3
	h := mustSNSHost(t, hostOptions{verifier: Options{Now: clock.Now, FetchBurst: burst, FetchRate: 1}})
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
	h := mustSNSHost(t, hostOptions{verifier: Options{FetchBurst: burst, FetchRate: 1}}) // the clock stands still
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
