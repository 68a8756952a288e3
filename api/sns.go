package api

import (
	"context"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/kukie/gitops-server/service"
)

// The SNS webhook's limits: SNS waits about 15 s for an answer, so a
// delivery gets well under that; each source address may post 20 messages
// a second with bursts of 100 (SNS's own retries and a stack's burst of
// events stay far below).
const (
	webhookTimeout      = 10 * time.Second
	webhookRate         = 20
	webhookBurst        = 100
	webhookLimiterCache = 10000
)

// sourceLimiter is a token bucket per source address, the least recently
// seen addresses forgotten first.
type sourceLimiter struct {
	buckets *lru.Cache[string, *rate.Limiter]
	now     func() time.Time
}

// newSourceLimiter refills its buckets by now's clock (nil: time.Now).
func newSourceLimiter(now func() time.Time) *sourceLimiter {
	c, err := lru.New[string, *rate.Limiter](webhookLimiterCache)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	if now == nil {
		now = time.Now
	}
	return &sourceLimiter{buckets: c, now: now}
}

// allow takes a token from the bucket of host (the client's address).
func (l *sourceLimiter) allow(host string) bool {
	b, ok := l.buckets.Get(host)
	if !ok {
		b = rate.NewLimiter(webhookRate, webhookBurst)
		if prev, found, _ := l.buckets.PeekOrAdd(host, b); found {
			b = prev
		}
	}
	return b.AllowN(l.now(), 1)
}

// handleSNSWebhook takes Amazon SNS deliveries of customers' CloudFormation
// stack events. SNS authenticates by signature, so the route has no token;
// it answers 400 for a body that is not an SNS message, 403 for one that
// is not authentic, fresh or from an allowed topic (SNS does not retry
// 4xx), 503 for a failure worth SNS's retry, 202 for a subscription kept
// unverified (deferred), and 200 with the verdict otherwise. Bodies are
// never logged.
func handleSNSWebhook(log *slog.Logger, webhook *service.Webhook, limiter *sourceLimiter, proxies TrustedProxies) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !limiter.allow(proxies.ClientIP(r)) {
			w.Header().Set("Retry-After", "1")
			writeProblem(w, r, http.StatusTooManyRequests, service.ReasonRateLimited,
				"Too many SNS deliveries from this address; retry shortly.", nil)
			return
		}
		if webhook == nil {
			writeError(w, r, log, service.ErrAWSUnavailable())
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil ||
			(mt != "text/plain" && mt != "application/json") {
			writeProblem(w, r, http.StatusUnsupportedMediaType, service.ReasonUnsupportedMediaType,
				"SNS deliveries are text/plain (application/json is accepted too).", nil)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), webhookTimeout)
		defer cancel()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			writeError(w, r, log, decodeError(err))
			return
		}
		d, err := webhook.Deliver(ctx, body, r.Header.Get("x-amz-sns-topic-arn"))
		if err == nil && d.Verdict == service.VerdictDeferred {
			encode(w, http.StatusAccepted, d) // kept, not verified yet
			return
		}
		reply(w, r, log, d, err)
	})
}
