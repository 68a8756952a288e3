package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

func handleClusterList(log *slog.Logger, clusters *service.Clusters) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		cs, err := clusters.List(r.Context(), p)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, map[string]any{"clusters": cs})
	})
}

// handleGitOpsRepoPut connects the repository Kukie opens pull requests
// against; it is compared with the apps' sources after normalisation.
func handleGitOpsRepoPut(log *slog.Logger, clusters *service.Clusters) http.Handler {
	type request struct {
		RepoURL *string `json:"repo_url"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[request](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if in.RepoURL == nil {
			writeError(w, r, log, &service.Error{Code: service.EVALIDATION, Message: "repo_url is required.",
				Fields: []service.FieldError{{Field: "repo_url", Message: "is required (an empty string disconnects)"}}})
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		c, err := clusters.SetGitOpsRepo(r.Context(), p, chi.URLParam(r, "cluster_id"), *in.RepoURL)
		reply(w, r, log, c, err)
	})
}
