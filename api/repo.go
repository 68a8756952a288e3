package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kukie/gitops-server/service"
)

// errRepoTabOff answers when the server has no repo tab configured.
func errRepoTabOff() error {
	return service.ReasonError(service.EUPSTREAM, service.ReasonRepoUnreachable, "The repository cannot be read from this server.")
}

// repoHandler answers a repo tab route with what answer returns, or
// repo_unreachable when the server has no repo tab configured.
func repoHandler(log *slog.Logger, view *service.RepoView, answer func(*http.Request, service.Principal) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if view == nil {
			writeError(w, r, log, errRepoTabOff())
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		v, err := answer(r, p)
		reply(w, r, log, v, err)
	})
}

// handleRepoTree lists the connected repository's folders with the apps
// that use them.
func handleRepoTree(log *slog.Logger, view *service.RepoView) http.Handler {
	return repoHandler(log, view, func(r *http.Request, p service.Principal) (any, error) {
		q := r.URL.Query()
		return view.Tree(r.Context(), p, chi.URLParam(r, "cluster_id"), q.Get("ref"), q.Get("path"))
	})
}

// handleRepoFile answers one file of the connected repository, masked.
func handleRepoFile(log *slog.Logger, view *service.RepoView) http.Handler {
	return repoHandler(log, view, func(r *http.Request, p service.Principal) (any, error) {
		q := r.URL.Query()
		return view.File(r.Context(), p, chi.URLParam(r, "cluster_id"), q.Get("path"), q.Get("ref"))
	})
}

// handleToolRepoTree is the agent's repo_tree read tool.
func handleToolRepoTree(log *slog.Logger, view *service.RepoView) http.Handler {
	type request struct {
		ClusterID string `json:"cluster_id"`
		Ref       string `json:"ref"`
		Path      string `json:"path"`
	}
	return toolHandler(log, view, func(r *http.Request, p service.Principal) (service.ToolAnswer, error) {
		in, err := decode[request](r)
		if err == nil {
			err = needCluster(in.ClusterID)
		}
		if err != nil {
			return service.ToolAnswer{}, err
		}
		return view.TreeTool(r.Context(), p, in.ClusterID, in.Ref, in.Path, warningLanguage(r))
	})
}

// handleToolRepoFile is the agent's repo_file read tool.
func handleToolRepoFile(log *slog.Logger, view *service.RepoView) http.Handler {
	type request struct {
		ClusterID string `json:"cluster_id"`
		Path      string `json:"path"`
		Ref       string `json:"ref"`
	}
	return toolHandler(log, view, func(r *http.Request, p service.Principal) (service.ToolAnswer, error) {
		in, err := decode[request](r)
		if err == nil {
			err = needCluster(in.ClusterID)
		}
		if err != nil {
			return service.ToolAnswer{}, err
		}
		return view.FileTool(r.Context(), p, in.ClusterID, in.Path, in.Ref, warningLanguage(r))
	})
}

// toolHandler runs a read tool: its answer is 200 with text, failures the
// model should read included; only malformed requests, auth and tenancy
// are problems.
func toolHandler(log *slog.Logger, view *service.RepoView, run func(*http.Request, service.Principal) (service.ToolAnswer, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		if view == nil {
			encode(w, http.StatusOK, service.ToolAnswer{Text: service.ErrorMessage(errRepoTabOff())})
			return
		}
		a, err := run(r, p)
		reply(w, r, log, a, err)
	})
}

// handleAppManifests answers the YAML an app applies, rendered per source
// and masked.
func handleAppManifests(log *slog.Logger, view *service.RepoView) http.Handler {
	return repoHandler(log, view, func(r *http.Request, p service.Principal) (any, error) {
		return view.Manifests(r.Context(), p, chi.URLParam(r, "cluster_id"), chi.URLParam(r, "app_id"))
	})
}

// handleToolAppManifests is the agent's app_manifests read tool.
func handleToolAppManifests(log *slog.Logger, view *service.RepoView) http.Handler {
	type request struct {
		ClusterID string `json:"cluster_id"`
		AppID     string `json:"app_id"`
	}
	return toolHandler(log, view, func(r *http.Request, p service.Principal) (service.ToolAnswer, error) {
		in, err := decode[request](r)
		if err == nil {
			err = needCluster(in.ClusterID)
		}
		if err != nil {
			return service.ToolAnswer{}, err
		}
		return view.ManifestsTool(r.Context(), p, in.ClusterID, in.AppID, warningLanguage(r))
	})
}

// handlePlanGitChange answers a plan's change as a patch to the connected
// repository (409 git_change_unavailable when its fields are not all
// known in Git).
func handlePlanGitChange(log *slog.Logger, changes *service.GitChanges) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if changes == nil {
			writeError(w, r, log, errRepoTabOff())
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		ch, err := changes.Change(r.Context(), p, chi.URLParam(r, "id"))
		reply(w, r, log, ch, err)
	})
}

// handleToolGitChange is the agent's git_change tool.
func handleToolGitChange(log *slog.Logger, changes *service.GitChanges) http.Handler {
	type request struct {
		ClusterID string `json:"cluster_id"`
		PlanID    string `json:"plan_id"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		in, err := decode[request](r)
		if err == nil {
			err = needCluster(in.ClusterID)
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if changes == nil {
			encode(w, http.StatusOK, service.ToolAnswer{Text: service.ErrorMessage(errRepoTabOff())})
			return
		}
		a, err := changes.Tool(r.Context(), p, in.ClusterID, in.PlanID, warningLanguage(r))
		reply(w, r, log, a, err)
	})
}

// needCluster refuses a tool call that names no cluster: a malformed
// request (422 validation_failed), not a cluster that does not exist.
func needCluster(id string) error {
	if id != "" {
		return nil
	}
	return &service.Error{Code: service.EVALIDATION, Message: "The request is invalid.",
		Fields: []service.FieldError{{Field: "cluster_id", Message: "is required"}}}
}
