package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/service"
)

// TestOwnRateLimit: a read the cluster's own token bucket cannot let start
// before its deadline fails through client-go as Kukie's budget running
// out — budget_exceeded for detection, 503 unavailable elsewhere — not as
// the cluster being unreachable or an internal error; a refusal past the
// deadline stays the deadline's.
func TestOwnRateLimit(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer api.Close()
	// One token, and the next in about 17 minutes.
	cfg := &rest.Config{Host: api.URL, RateLimiter: newClusterLimiter(0.001, 1)}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := cms.Get(ctx, "first", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("first read, within the burst: %v", err)
	}
	_, err = cms.Get(ctx, "second", metav1.GetOptions{})
	if !errors.Is(err, errOwnRateLimit) {
		t.Fatalf("second read: %v, want the bucket's refusal", err)
	}
	if got := objectError(ctx, ctx, err); service.ErrorCode(got) != service.EUNAVAILABLE || service.ErrorReason(got) != ReasonBudget {
		t.Errorf("detection read: %s %s (%v), want unavailable %s", service.ErrorCode(got), service.ErrorReason(got), got, ReasonBudget)
	}
	for what, got := range map[string]error{"access review": accessError(ctx, err), "list": connectionError(service.Cluster{}, err)} {
		if service.ErrorCode(got) != service.EUNAVAILABLE || service.ErrorReason(got) != "" {
			t.Errorf("%s: %s %s (%v), want unavailable", what, service.ErrorCode(got), service.ErrorReason(got), got)
		}
	}

	expired, cancelExpired := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancelExpired()
	if err := newClusterLimiter(0.001, 1).Wait(expired); err == nil || errors.Is(err, errOwnRateLimit) {
		t.Errorf("a wait past the deadline: %v, want the deadline's error", err)
	}
}
