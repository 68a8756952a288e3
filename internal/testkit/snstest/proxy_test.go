package snstest

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/sns"
)

func TestProxyRefusesOtherTargets(t *testing.T) {
	h := mustHost(t, HostOptions{})
	proxy := strings.TrimPrefix(h.ProxyURL(), "http://")
	tests := []struct{ name, method, target string }{
		{"OtherHost", http.MethodConnect, "sts.amazonaws.com:443"},
		{"LookAlike", http.MethodConnect, "sns.us-east-1.amazonaws.com.evil.example:443"},
		{"OtherPort", http.MethodConnect, "sns.us-east-1.amazonaws.com:8443"},
		{"PlainRequest", http.MethodGet, "sns.us-east-1.amazonaws.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(testContext(t), tt.method, "http://"+proxy, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.target
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("proxy answered %d, want 403", resp.StatusCode)
			}
		})
	}
	want := []string{"sts.amazonaws.com:443", "sns.us-east-1.amazonaws.com.evil.example:443", "sns.us-east-1.amazonaws.com:8443"}
	if diff := cmp.Diff(want, h.ConnectTargets()); diff != "" {
		t.Errorf("ConnectTargets (-want +got):\n%s", diff)
	}
}

// TestCleanupEndsTunnels leaves a kept-alive tunnel and a hanging request
// open when a host's test ends, and checks that none of the host's
// goroutines outlive its cleanup.
func TestCleanupEndsTunnels(t *testing.T) {
	t.Run("Host", func(t *testing.T) {
		h := mustHost(t, HostOptions{})
		v := mustVerifier(t, h, sns.Options{})
		if err := v.Verify(testContext(t), h.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion1)); err != nil {
			t.Fatalf("Verify: %v", err)
		}
		h.SetCertMode(CertHang)
		hanging := mustVerifier(t, h, sns.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // Verify returns at once; its fetch keeps hanging
		if err := hanging.Verify(ctx, h.Sign(h.Notification(testTopic, "", "m"), sns.SignatureVersion1)); !errors.Is(err, sns.ErrTransient) {
			t.Fatalf("Verify = %v, want ErrTransient", err)
		}
	})
	waitHostGoroutines(t)
}

// waitHostGoroutines fails t if goroutines of a host outlive its stop. A
// goroutine that has signalled its end may still be returning, so it waits
// for them to go; the deadline only catches one that never does.
func waitHostGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(hangDeadline)
	for left := hostGoroutines(); len(left) > 0; left = hostGoroutines() {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of the host outlive its stop:\n%s", strings.Join(left, "\n\n"))
		}
		time.Sleep(time.Millisecond)
	}
}

// hostGoroutines are the stacks of other goroutines running the host's
// handlers or tunnels.
func hostGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var left []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // this goroutine
		}
		if strings.Contains(g, "internal/snstest.(*connectProxy)") || strings.Contains(g, "internal/snstest.(*Host)") {
			left = append(left, g)
		}
	}
	return left
}
