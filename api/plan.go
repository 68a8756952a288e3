package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

func handlePlanCreate(log *slog.Logger, plans *service.Plans) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[service.PlanInput](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		plan, replayed, err := plans.Create(r.Context(), p, in, r.Header.Get("Idempotency-Key"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Location", "/v1/plans/"+plan.ID)
		encode(w, http.StatusCreated, plan)
	})
}

func handlePlanGet(log *slog.Logger, plans *service.Plans) http.Handler {
	return planAction(log, plans.Get)
}

func handlePlanApprove(log *slog.Logger, plans *service.Plans) http.Handler {
	return planAction(log, plans.Approve)
}

func handlePlanReject(log *slog.Logger, plans *service.Plans) http.Handler {
	return planAction(log, plans.Reject)
}

// planAction serves a route that acts on the plan named in the path and
// answers with the plan.
func planAction(log *slog.Logger, act func(context.Context, service.Principal, string) (service.Plan, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		plan, err := act(r.Context(), p, chi.URLParam(r, "id"))
		reply(w, r, log, plan, err)
	})
}

func handlePlanResult(log *slog.Logger, plans *service.Plans) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[service.ResultInput](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		plan, err := plans.RecordResult(r.Context(), p, chi.URLParam(r, "id"), in)
		reply(w, r, log, plan, err)
	})
}

func handlePlanList(log *slog.Logger, plans *service.Plans) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		query := service.PlanQuery{
			ClusterID:      q.Get("cluster_id"),
			Status:         q.Get("status"),
			ConversationID: q.Get("conversation_id"),
			Kind:           q.Get("kind"),
			Namespace:      q.Get("namespace"),
			Name:           q.Get("name"),
			Cursor:         q.Get("cursor"),
		}
		limit, err := service.ParseLimit(q.Get("limit"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		query.Limit = limit
		p, _ := service.PrincipalFromContext(r.Context())
		page, err := plans.List(r.Context(), p, query)
		reply(w, r, log, page, err)
	})
}
