package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/net/http2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kukie/gitops-server/service"
)

// TestFaultClasses checks the classes of the faults an API server (or what
// stands in front of it) can answer with, as client-go returns them; the
// end-to-end fault test (cmd/kukie-server) provokes them for real.
func TestFaultClasses(t *testing.T) {
	live := context.Background()
	expired, cancel := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel()
	apps := schema.GroupResource{Group: "argoproj.io", Resource: "applications"}
	// client-go's rate limiter refusing to wait for a Retry-After retry past
	// the deadline: a plain error, not context.DeadlineExceeded.
	limiter := errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	streamReset := fmt.Errorf("stream error when reading response body, may be caused by closed connection. Please retry. Original error: %w",
		http2.StreamError{StreamID: 5, Code: http2.ErrCodeInternal})
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		code string
	}{
		{"InternalError", live, apierrors.NewInternalError(errors.New("etcd is down")), service.EUPSTREAM},
		{"NotImplemented", live, apierrors.NewGenericServerResponse(501, "list", apps, "", "", 0, false), service.EUPSTREAM},
		{"TooManyRequests", live, apierrors.NewTooManyRequests("slow down", 1), service.EUPSTREAM},
		{"HTTP2StreamReset", live, streamReset, service.EUPSTREAM},
		{"LimiterPastDeadline", expired, limiter, service.EUPSTREAM},
		{"UnknownErrorInTime", live, limiter, service.EINTERNAL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, got := range []struct {
				what string
				err  error
			}{{"review", accessError(c.ctx, c.err)}, {"object", objectError(live, c.ctx, c.err)}} {
				if service.ErrorCode(got.err) != c.code {
					t.Errorf("%s: code %q (%v), want %q", got.what, service.ErrorCode(got.err), got.err, c.code)
				}
				if c.code == service.EUPSTREAM && service.ErrorReason(got.err) != ReasonUnreachable {
					t.Errorf("%s: reason %q, want %s", got.what, service.ErrorReason(got.err), ReasonUnreachable)
				}
			}
		})
	}
	t.Run("ReviewForbidden", func(t *testing.T) {
		err := accessError(live, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io",
			Resource: "selfsubjectaccessreviews"}, "", errors.New("denied")))
		if service.ErrorCode(err) != service.EUPSTREAM || service.ErrorReason(err) != ReasonUnreachable {
			t.Errorf("a refused access review: %v", err)
		}
	})
}
