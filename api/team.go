package api

import (
	"log/slog"
	"net/http"

	"github.com/kukie/gitops-server/service"
)

// handleTeamGet answers the caller's team, created on first use, with the
// ExternalId the customer puts into the IAM role's trust policy.
func handleTeamGet(log *slog.Logger, teams *service.Teams) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		team, err := teams.Current(r.Context(), p)
		reply(w, r, log, team, err)
	})
}
