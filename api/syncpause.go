package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

// handleSyncPlan creates the plan that stops an app's automated sync
// (pause-plan) or puts back what a pause changed (resume-plan): 201 with
// the plan, as POST /v1/plans answers.
func handleSyncPlan(log *slog.Logger, pauses *service.SyncPauses, resume bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pauses == nil {
			writeError(w, r, log, service.Errorf(service.EUNAVAILABLE, "Stopping sync is not available on this server."))
			return
		}
		in, err := decode[service.SyncPlanRequest](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		in.Lang = warningLanguage(r)
		p, _ := service.PrincipalFromContext(r.Context())
		create := pauses.PausePlan
		if resume {
			create = pauses.ResumePlan
		} else if in.PausePlanID != "" {
			writeError(w, r, log, &service.Error{Code: service.EVALIDATION, Message: "The request is invalid.",
				Fields: []service.FieldError{{Field: "pause_plan_id", Message: "is for resume-plan only"}}})
			return
		}
		plan, err := create(r.Context(), p, chi.URLParam(r, "cluster_id"), chi.URLParam(r, "app_id"), in)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		w.Header().Set("Location", "/v1/plans/"+plan.ID)
		encode(w, http.StatusCreated, plan)
	})
}
