package api

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

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
		etag := service.ContentETag(list.Snapshot, list.KukieRepo.URL+"\x00"+boolString(list.KukieRepo.Connected)+
			destinationsTag(list.Destinations))
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
	apps := list.Snapshot.ListJSON()
	if len(list.Destinations) > 0 {
		// A hub's apps deploying to the team's other clusters name them:
		// team data, so encoded per request.
		if apps, err = json.Marshal(service.WithDestinations(list.Snapshot.Apps(), list.Destinations)); err != nil {
			panic(err) // the snapshot's apps encoded once already
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	for _, part := range [][]byte{[]byte(`{"summary":`), summary, []byte(`,"applications":`),
		apps, []byte(`,"fetched_at":`), fetched, []byte("}\n")} {
		if _, err := w.Write(part); err != nil {
			return
		}
	}
}

// destinationsTag is the app list's destination cluster ids for its ETag,
// in app order.
func destinationsTag(ids map[int]string) string {
	if len(ids) == 0 {
		return ""
	}
	idx := slices.Sorted(maps.Keys(ids))
	var b strings.Builder
	for _, i := range idx {
		b.WriteString("\x00" + strconv.Itoa(i) + "=" + ids[i])
	}
	return b.String()
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
