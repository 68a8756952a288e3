// Package api is the HTTP adapter: the chi router, middleware, JSON and
// problem responses, the embedded OpenAPI document and its docs page.
package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

// Deps are what the public API needs.
type Deps struct {
	Logger   *slog.Logger
	Verifier service.TokenVerifier
	Plans    *service.Plans
	Teams    *service.Teams
	Clusters *service.Clusters
	ArgoCD   *service.ArgoCD
	Accounts *service.Accounts
	// Registrations registers EKS clusters and changes Kukie's access.
	Registrations *service.Registrations
	AccessReviews *service.AccessReviews
	// Switches changes an account's level on request and answers its
	// history; Webhook takes SNS deliveries (nil: AWS not configured).
	Switches *service.Switches
	Webhook  *service.Webhook
	// RepoView serves the repo tab and the read tools (nil: not configured).
	RepoView *service.RepoView
	// GitChanges writes plans' changes as patches (nil: not configured).
	GitChanges *service.GitChanges
	// SyncPauses builds the stop-sync and resume plans (nil: 503).
	SyncPauses *service.SyncPauses
	Metrics    *Metrics
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client, for the SNS webhook's per-source rate limit and the access
	// log (empty: the connection's address).
	TrustedProxies TrustedProxies
	// Now is the clock of the SNS webhook's per-source rate limit
	// (default time.Now).
	Now func() time.Time
	// RequestTimeout bounds each /v1 request's context (default 30 s).
	RequestTimeout time.Duration
}

// NewServer returns the public API handler.
func NewServer(d Deps) http.Handler {
	if d.RequestTimeout == 0 {
		d.RequestTimeout = 30 * time.Second
	}
	r := chi.NewRouter()
	r.Use(observe(d.Logger, d.Metrics, d.TrustedProxies))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, http.StatusNotFound, service.ReasonNotFound, "No such route.", nil)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, http.StatusMethodNotAllowed, service.ReasonMethodNotAllowed,
			"The route does not support the "+r.Method+" method.", nil)
	})
	authn := authenticate(d.Logger, d.Verifier)
	limits := limitBody(d.RequestTimeout)
	for _, rt := range routes(d, newSourceLimiter(d.Now)) {
		h := rt.handler
		if !rt.public {
			h = limits(authn(authorize(rt.roles, rt.humanOnly)(checkParams(d.Logger, h))))
		}
		r.Method(rt.method, rt.pattern, h)
	}
	return r
}
