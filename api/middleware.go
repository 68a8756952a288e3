package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/service"
)

type requestInfoKey struct{}

// requestInfo is what the access log needs to know about a request; later
// middleware (authentication) fills in the caller.
type requestInfo struct {
	id     string
	userID string
	teamID string
}

func requestIDFromContext(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// RequestLogHandler wraps h so that records logged with a request's
// context carry its request_id, also when code outside this package logs
// them (ownership detection logs the causes of failed reads that way).
func RequestLogHandler(h slog.Handler) slog.Handler { return requestLogHandler{h} }

type requestLogHandler struct{ slog.Handler }

func (h requestLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestIDFromContext(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestLogHandler) WithGroup(name string) slog.Handler {
	return requestLogHandler{h.Handler.WithGroup(name)}
}

// validRequestID limits a client-supplied X-Request-Id to a safe shape, so it
// can be echoed into logs and headers.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Metrics are the HTTP metrics the public API exports.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the HTTP metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_http_requests_total",
			Help: "HTTP requests served by the public API, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kukie_http_request_duration_seconds",
			Help:    "Time to serve public API requests, by method and route pattern.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// observe is the outermost middleware: request id, panic recovery, the
// access log line (with the client's address, as proxies says) and
// metrics. It never logs headers or bodies.
func observe(log *slog.Logger, m *Metrics, proxies TrustedProxies) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			info := &requestInfo{id: r.Header.Get("X-Request-Id")}
			if !validRequestID.MatchString(info.id) {
				b := make([]byte, 12)
				_, _ = rand.Read(b)
				info.id = hex.EncodeToString(b)
			}
			w.Header().Set("X-Request-Id", info.id)
			r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
			rec := &statusRecorder{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					log.ErrorContext(r.Context(), "panic serving request", "request_id", info.id,
						"panic", p, "stack", string(debug.Stack()))
					if rec.status == 0 {
						writeProblem(rec, r, http.StatusInternalServerError, service.ReasonInternal, "An internal error occurred.", nil)
					}
				}
				route := "unmatched"
				if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
					route = rc.RoutePattern()
				}
				if rec.status == 0 {
					rec.status = http.StatusOK
				}
				elapsed := time.Since(start)
				method := metricMethod(r.Method)
				m.requests.WithLabelValues(method, route, strconv.Itoa(rec.status)).Inc()
				m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
				log.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("request_id", info.id), slog.String("method", method),
					slog.String("route", route), slog.Int("status", rec.status), slog.Int("bytes", rec.bytes),
					slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
					slog.String("user", info.userID), slog.String("team", info.teamID),
					slog.String("client_ip", proxies.ClientIP(r)))
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// metricMethod bounds the method label: Go's server accepts any token as a
// method, and each new label value would be a new series.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// authenticate requires a valid bearer token and puts its principal into
// the request context.
func authenticate(log *slog.Logger, verifier service.TokenVerifier) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			token = strings.TrimSpace(token)
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				writeProblem(w, r, http.StatusUnauthorized, service.ReasonUnauthenticated,
					"An Authorization: Bearer <token> header is required.", nil)
				return
			}
			p, err := verifier.Verify(r.Context(), token)
			if err != nil {
				if service.ErrorCode(err) == service.EUNAUTHENTICATED {
					log.InfoContext(r.Context(), "token refused", "request_id", requestIDFromContext(r.Context()), "reason", err)
				}
				writeError(w, r, log, err)
				return
			}
			if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
				info.userID, info.teamID = p.UserID, p.TeamID
			}
			next.ServeHTTP(w, r.WithContext(service.NewContextWithPrincipal(r.Context(), p)))
		})
	}
}

// authorize lets a request through when the caller has one of the roles; a
// human-only route also refuses any token carrying the agent role.
func authorize(roles []service.Role, humanOnly bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := service.PrincipalFromContext(r.Context())
			if humanOnly && p.IsAgent() {
				writeProblem(w, r, http.StatusForbidden, service.ReasonForbidden,
					"A token acting as the agent cannot do this; a person must.", nil)
				return
			}
			if len(roles) > 0 {
				allowed := false
				for _, role := range roles {
					allowed = allowed || p.Has(role)
				}
				if !allowed {
					writeProblem(w, r, http.StatusForbidden, service.ReasonForbidden,
						"Your token does not carry a role allowed to do this.", nil)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// limitBody caps the request body and bounds the time a request may take.
func limitBody(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// paramRules are the path parameters' identifier rules and the 404 each
// route answers for a value that breaks them.
var paramRules = map[string]struct {
	valid    func(string) bool
	notFound func() error
}{
	"cluster_id": {service.ValidClusterID, service.ErrClusterNotFound},
	"account_id": {service.ValidUUID, service.ErrAccountNotFound},
	"app_id":     {service.ValidAppID, service.ErrAppNotFound},
	"id":         {service.ValidUUID, service.ErrPlanNotFound},
}

// checkParams answers the route's 404 for a path parameter that breaks
// its identifier rule, before the handler looks anything up.
func checkParams(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc := chi.RouteContext(r.Context()); rc != nil {
			for i, key := range rc.URLParams.Keys {
				if rule, ok := paramRules[key]; ok && !rule.valid(rc.URLParams.Values[i]) {
					writeError(w, r, log, rule.notFound())
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
