package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"golang.org/x/text/language"

	"github.com/kukie/gitops-server/service"
)

// handleOwnership answers whether Argo CD manages the given resources. It
// is 200 whenever the cluster is the team's: failures are in `skipped`.
func handleOwnership(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	type request struct {
		Resources []service.ResourceRef `json:"resources"`
		Tool      string                `json:"tool"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[request](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		o, err := argo.Ownership(r.Context(), p, chi.URLParam(r, "cluster_id"), service.WithTool(in.Resources, in.Tool),
			warningLanguage(r))
		reply(w, r, log, o, err)
	})
}

// languages are the warning languages, the product's own (Korean) first:
// it is the answer when the client prefers neither.
var languages = language.NewMatcher([]language.Tag{language.Korean, language.English})

// warningLanguage picks the warning language from Accept-Language, with
// its q-values: "ko;q=0.1, en" prefers English.
func warningLanguage(r *http.Request) string {
	tags, _, err := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	if err != nil || len(tags) == 0 {
		return "ko"
	}
	if _, i, confidence := languages.Match(tags...); i == 1 && confidence != language.No {
		return "en"
	}
	return "ko"
}
