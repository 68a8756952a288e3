package kube

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/util/flowcontrol"

	"github.com/kukie/gitops-server/service"
)

// errOwnRateLimit is Kukie's own per-cluster rate limit (Options.QPS and
// Burst) refusing a request that would have to wait past its deadline for
// a token: Kukie's budget, not the cluster, stopped it. client-go wraps it
// with %w ("client rate limiter Wait returned an error"), so errors.Is
// finds it.
var errOwnRateLimit = errors.New("the per-cluster request rate limit would delay the request past its deadline")

// clusterLimiter is one cluster's token bucket, shared by every client of
// the cluster (REST, dynamic, discovery), which marks its own refusals.
type clusterLimiter struct{ flowcontrol.RateLimiter }

func newClusterLimiter(qps float32, burst int) clusterLimiter {
	return clusterLimiter{flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// Wait waits for a token. A refusal while the deadline is still ahead is
// the bucket's (errOwnRateLimit); past it, or with ctx done, the error is
// left as it is (the deadline ran out, whatever was waited for).
func (l clusterLimiter) Wait(ctx context.Context) error {
	err := l.RateLimiter.Wait(ctx)
	if err != nil && ctx.Err() == nil && !pastDeadline(ctx) {
		return fmt.Errorf("%w: %w", errOwnRateLimit, err)
	}
	return err
}

// rateLimitError is the failure of a call Kukie's own rate limit refused,
// or nil.
func rateLimitError(err error) error {
	if !errors.Is(err, errOwnRateLimit) {
		return nil
	}
	return service.WrapError(service.EUNAVAILABLE,
		"Kukie is making too many requests to this cluster right now (its own per-cluster limit); try again in a moment.", err)
}
