package sns

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Confirm GETs the SubscribeURL once, only when it is this topic's
// confirmation, follows no redirect and keeps the URL and the token out of
// its errors.
func TestConfirm(t *testing.T) {
	h := mustSNSHost(t, hostOptions{})
	var status atomic.Int32
	var got atomic.Pointer[string]
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.RawQuery
		got.Store(&q)
		if s := int(status.Load()); s == http.StatusFound {
			http.Redirect(w, r, "https://"+testHost+"/elsewhere", s)
		} else {
			w.WriteHeader(s)
		}
	})
	m := confirmation(TypeSubscriptionConfirmation, testNow)
	noSecret := func(t *testing.T, err error) {
		t.Helper()
		if strings.Contains(err.Error(), m.Token) || strings.Contains(err.Error(), "ConfirmSubscription") {
			t.Errorf("error %q holds the token or the URL", err)
		}
	}

	status.Store(http.StatusOK)
	if err := h.verifier.Confirm(t.Context(), m); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	if q := got.Load(); q == nil || !strings.Contains(*q, "Action=ConfirmSubscription") || !strings.Contains(*q, m.Token) {
		t.Errorf("the SNS host saw query %v", q)
	}

	for _, c := range []struct {
		name   string
		status int
		kind   error
		reason Reason
	}{
		{"Redirect", http.StatusFound, ErrTransient, ReasonConfirmRedirect},
		{"Refused", http.StatusBadRequest, ErrRejected, ReasonConfirmRefused},
		{"ServerError", http.StatusInternalServerError, ErrTransient, ReasonConfirmFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			status.Store(int32(c.status))
			err := h.verifier.Confirm(t.Context(), m)
			if !errors.Is(err, c.kind) || ReasonOf(err) != c.reason {
				t.Fatalf("Confirm = %v, want %v (%s)", err, c.kind, c.reason)
			}
			noSecret(t, err)
		})
	}
	if n := h.hitCount("/elsewhere"); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}

	t.Run("ErrNotThisTopicsConfirmation", func(t *testing.T) {
		before := h.hitCount("/")
		evil := m
		evil.SubscribeURL = "https://" + testHost + "/?Action=Unsubscribe&SubscriptionArn=" + testTopic + ":1"
		err := h.verifier.Confirm(t.Context(), evil)
		if !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonSubscribeURL {
			t.Errorf("Confirm = %v, want the SubscribeURL refused", err)
		}
		if h.hitCount("/") != before {
			t.Error("a refused SubscribeURL was fetched")
		}
	})

	t.Run("ErrHostDown", func(t *testing.T) {
		down := m
		down.TopicARN = "arn:aws:sns:eu-west-3:123456789012:kukie-stack-events"
		down.SubscribeURL = "https://sns.eu-west-3.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + down.TopicARN + "&Token=" + m.Token
		err := h.verifier.Confirm(t.Context(), down) // the test proxy refuses hosts other than the test host
		if !errors.Is(err, ErrTransient) || ReasonOf(err) != ReasonConfirmFailed {
			t.Fatalf("Confirm = %v, want a transient failure", err)
		}
		noSecret(t, err)
	})
}
