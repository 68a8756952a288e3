package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

// handleKukieHistory lists the Action Plans that touched an app, visible to
// the caller (private plans only to their creator).
func handleKukieHistory(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := service.ParseLimit(r.URL.Query().Get("limit"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		h, err := argo.History(r.Context(), p, chi.URLParam(r, "cluster_id"), chi.URLParam(r, "app_id"), limit,
			r.URL.Query().Get("cursor"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		w.Header().Set("Cache-Control", "private, no-store")
		encode(w, http.StatusOK, h)
	})
}
