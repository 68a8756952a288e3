package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"golang.org/x/text/language"

	"github.com/kukie/gitops-server/service"
)

func handleArgoCDSidebar(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		sb, err := argo.Sidebar(r.Context(), p)
		reply(w, r, log, sb, err)
	})
}

// handleAppList serves a cluster's app list from the shared snapshot. The
// applications array is the snapshot's pre-encoded JSON; the summary (which
// joins the team's connected repo) is encoded per request.
func handleAppList(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		refresh := r.URL.Query().Get("refresh") == "true"
		list, err := argo.List(r.Context(), p, chi.URLParam(r, "cluster_id"), refresh)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		etag := service.ContentETag(list.Snapshot, list.KukieRepo.URL+"\x00"+boolString(list.KukieRepo.Connected))
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", "private, no-cache")
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeAppList(w, list)
	})
}

// writeAppList writes {summary, applications, fetched_at} with the
// snapshot's pre-encoded applications copied as they are: encoding/json
// would re-validate and compact the whole array (hundreds of KiB) on every
// cache hit.
func writeAppList(w http.ResponseWriter, list service.AppList) {
	summary, err := json.Marshal(list.Summary)
	if err != nil {
		panic(err) // plain structs of strings and numbers: cannot fail
	}
	fetched, _ := list.Snapshot.FetchedAt.UTC().MarshalJSON()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	for _, part := range [][]byte{[]byte(`{"summary":`), summary, []byte(`,"applications":`),
		list.Snapshot.AppsJSON, []byte(`,"fetched_at":`), fetched, []byte("}\n")} {
		if _, err := w.Write(part); err != nil {
			return
		}
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// etagMatches implements If-None-Match's weak comparison.
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, candidate := range strings.Split(header, ",") {
		c := strings.TrimSpace(candidate)
		if c == "*" || strings.TrimPrefix(c, "W/") == want {
			return true
		}
	}
	return false
}

func handleAppDetail(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		d, err := argo.Detail(r.Context(), p, chi.URLParam(r, "cluster_id"), chi.URLParam(r, "app_id"))
		reply(w, r, log, d, err)
	})
}

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
