package api

import (
	"context"
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

// handleClusterGet answers one of the team's clusters, the object the list
// holds: a client polls it after a 202 registration until access is active.
func handleClusterGet(log *slog.Logger, clusters *service.Clusters) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		c, err := clusters.Get(r.Context(), p, chi.URLParam(r, "cluster_id"))
		reply(w, r, log, c, err)
	})
}

// handleGitOpsRepoPut connects the repository Kukie opens pull requests
// against; it is compared with the apps' sources after normalisation.
func handleGitOpsRepoPut(log *slog.Logger, clusters *service.Clusters) http.Handler {
	// auth carries secrets in; they are never encoded back out.
	type auth struct {
		Type       string `json:"type"`
		Username   string `json:"username"`
		Token      string `json:"token"`
		PrivateKey string `json:"private_key"`
		KnownHosts string `json:"known_hosts"`
	}
	type request struct {
		RepoURL *string `json:"repo_url"`
		Auth    *auth   `json:"auth"`
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
		var a *service.RepoAuth
		if in.Auth != nil {
			a = &service.RepoAuth{Type: in.Auth.Type, Username: in.Auth.Username, Token: in.Auth.Token,
				PrivateKey: in.Auth.PrivateKey, KnownHosts: in.Auth.KnownHosts}
		}
		c, err := clusters.SetGitOpsRepo(r.Context(), p, chi.URLParam(r, "cluster_id"), *in.RepoURL, a)
		reply(w, r, log, c, err)
	})
}

// handleClusterRegister registers an EKS cluster of a connected account:
// 201 when access is in place, 202 while AWS propagates it (a job finishes).
func handleClusterRegister(log *slog.Logger, reg *service.Registrations) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[service.RegisterCluster](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		c, err := reg.Register(r.Context(), p, in)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		w.Header().Set("Location", "/v1/clusters/"+c.ID)
		status := http.StatusCreated
		if c.AccessState != service.AccessActive {
			status = http.StatusAccepted
		}
		encode(w, status, c)
	})
}

// clusterJob serves a route that starts a background access change on a
// cluster and answers 202 with the cluster.
func clusterJob(log *slog.Logger, start func(context.Context, service.Principal, string) (service.Cluster, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := service.PrincipalFromContext(r.Context())
		c, err := start(r.Context(), p, chi.URLParam(r, "cluster_id"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusAccepted, c)
	})
}

// handleCanI answers whether Kukie's connection to the cluster may do
// something, from the cluster's own RBAC (cached briefly).
func handleCanI(log *slog.Logger, reviews *service.AccessReviews) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := decode[service.AccessQuestion](r)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		p, _ := service.PrincipalFromContext(r.Context())
		a, err := reviews.CanI(r.Context(), p, chi.URLParam(r, "cluster_id"), q)
		reply(w, r, log, a, err)
	})
}
