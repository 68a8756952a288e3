package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
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

// handleAccessLevelPut records the level an admin chose for an account and
// starts the reconcile that applies it: 202 with the account.
func handleAccessLevelPut(log *slog.Logger, switches *service.Switches) http.Handler {
	type request struct {
		AccessLevel service.AccessLevel `json:"access_level"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[request](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		a, err := switches.ChooseLevel(r.Context(), p, chi.URLParam(r, "account_id"), in.AccessLevel)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusAccepted, a)
	})
}

// handleAccessChanges answers an account's switch history, newest first,
// paged by the id of the last step seen (before).
func handleAccessChanges(log *slog.Logger, switches *service.Switches) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var v service.ValidationErrors
		limit, err := service.ParseLimit(q.Get("limit"))
		var se *service.Error
		if errors.As(err, &se) {
			// The route's contract answers 422 for every bad parameter,
			// a limit that is not a number too.
			v = append(v, se.Fields...)
		}
		before := int64(0)
		if s := q.Get("before"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 1 {
				v.Add("before", "must be the id of a step")
			}
			before = n
		}
		if err := v.Err(); err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		page, err := switches.History(r.Context(), p, chi.URLParam(r, "account_id"), limit, before)
		reply(w, r, log, page, err)
	})
}
