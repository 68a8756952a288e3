package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/ownership"
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

// detailResource is a status.resources row with the level a direct change
// to it would meet (the same level code as ownership detection).
type detailResource struct {
	service.AppResource
	Level  service.Level `json:"level"`
	Reason string        `json:"reason"`
}

// appDetail is one app with everything the detail screen shows.
type appDetail struct {
	service.Application
	HealthMessage      string                    `json:"health_message"`
	OutOfSyncResources []detailResource          `json:"out_of_sync_resources"`
	Resources          []detailResource          `json:"resources"`
	Conditions         conditions                `json:"conditions"`
	History            []service.AppHistoryEntry `json:"history"`
	FetchedAt          time.Time                 `json:"fetched_at"`
}

// conditions splits status.conditions by type suffix: "...Error" are
// errors, "...Warning" warnings; others are listed as warnings too, so
// nothing the cluster says is hidden.
type conditions struct {
	Errors   []service.AppCondition `json:"errors"`
	Warnings []service.AppCondition `json:"warnings"`
}

func handleAppDetail(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		app, snap, err := argo.Detail(r.Context(), p, chi.URLParam(r, "cluster_id"), chi.URLParam(r, "app_id"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		d := appDetail{Application: app, HealthMessage: app.HealthMessage, Resources: []detailResource{},
			OutOfSyncResources: []detailResource{}, History: app.History, FetchedAt: snap.FetchedAt.UTC(),
			Conditions: conditions{Errors: []service.AppCondition{}, Warnings: []service.AppCondition{}}}
		level, reason := ownership.AppLevel(app)
		for _, res := range app.Resources {
			row := detailResource{AppResource: res, Level: level, Reason: reason}
			d.Resources = append(d.Resources, row)
			if res.Status == "OutOfSync" {
				d.OutOfSyncResources = append(d.OutOfSyncResources, row)
			}
		}
		for _, c := range app.Conditions {
			if strings.HasSuffix(c.Type, "Error") {
				d.Conditions.Errors = append(d.Conditions.Errors, c)
			} else {
				d.Conditions.Warnings = append(d.Conditions.Warnings, c)
			}
		}
		encode(w, http.StatusOK, d)
	})
}

// handleOwnership answers whether Argo CD manages the given resources. It
// is 200 whenever the cluster is the team's: failures are in `skipped`.
func handleOwnership(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	type request struct {
		Resources []service.ResourceRef `json:"resources"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[request](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		o, err := argo.Ownership(r.Context(), p, chi.URLParam(r, "cluster_id"), in.Resources, language(r))
		reply(w, r, log, o, err)
	})
}

// language picks the warning language: English when Accept-Language
// prefers it, Korean (the product's language) otherwise.
func language(r *http.Request) string {
	first, _, _ := strings.Cut(r.Header.Get("Accept-Language"), ",")
	first, _, _ = strings.Cut(strings.TrimSpace(first), ";")
	if strings.HasPrefix(strings.ToLower(first), "en") {
		return "en"
	}
	return "ko"
}

// handleKukieHistory lists the Action Plans that touched an app, visible to
// the caller (private plans only to their creator).
func handleKukieHistory(log *slog.Logger, argo *service.ArgoCD) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := 0
		if s := r.URL.Query().Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n == 0 {
				writeError(w, r, log, &service.Error{Code: service.EINVALID, Message: "limit must be a positive integer.",
					Fields: []service.FieldError{{Field: "limit", Message: "must be an integer from 1 to 200"}}})
				return
			}
			limit = n
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
