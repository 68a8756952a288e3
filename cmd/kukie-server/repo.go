package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/helmrepo"
	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/netguard"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// Render limits of the child process besides KUKIE_RENDER_TIMEOUT and its
// memory share (renderChildLimits). The output cap is of the child's JSON
// (its YAML base64-encoded: 12 MiB of YAML, above the largest charts with
// CRDs). The child masks that YAML itself, under its memory share and the
// timeout (masking takes 7 times the YAML for one large value to 36 times
// for many small documents), so the server holds only the masked output
// (docs/operations.md, "Render bounds").
const (
	renderMaxOutput = 16 << 20
	gitFetchTimeout = 2 * time.Minute
)

// repoParts reach connected repositories: one guarded dialer
// (KUKIE_GIT_ALLOWED_PRIVATE_HOSTS) and the fetcher with the stored
// credentials opened with KUKIE_SECRET_KEYS. They are built before the
// cluster reading: ownership detection's revert preview reads Git through
// them, as the repo tab does.
type repoParts struct {
	guard *netguard.Guard
	repos *gitrepo.ClusterRepos
}

func newRepoParts(cfg config, db *store.DB, log *slog.Logger) (repoParts, error) {
	guard, err := netguard.New(cfg.GitAllowedPrivateHosts)
	if err != nil {
		return repoParts{}, fmt.Errorf("KUKIE_GIT_ALLOWED_PRIVATE_HOSTS: %w", err)
	}
	fetcher := gitrepo.New(gitrepo.Options{HTTPClient: guard.HTTPClient(gitFetchTimeout), DialSSH: guard.DialContext,
		CacheDir: cfg.RepoCacheDir, CacheBytes: cfg.RepoCacheBytes, MaxFetchBytes: cfg.RepoMaxFetchBytes, Logger: log})
	if err := fetcher.CacheDirErr(); err != nil {
		return repoParts{}, fmt.Errorf("KUKIE_REPO_CACHE_DIR: %w", err)
	}
	repos := &gitrepo.ClusterRepos{Fetcher: fetcher, Auth: storedRepoAuth(db, cfg.SecretKeys),
		WithTeam: netguard.NewContextWithTeam, TeamOnly: guard.TeamOnly}
	return repoParts{guard: guard, repos: repos}, nil
}

// newRepoView builds the repo tab on parts: secret masking, Helm
// repositories through the same guarded dialer, and renders in a child
// process of this binary (`kukie-server render`) under limits, in the
// sandbox KUKIE_RENDER_SANDBOX finds at start.
func newRepoView(ctx context.Context, cfg config, db *store.DB, argo *service.ArgoCD, versions service.ClusterVersions,
	limits render.Limits, parts repoParts, reg prometheus.Registerer, log *slog.Logger) (*service.RepoView, error) {
	masker := mask.Lazy() // built on first use; fails closed
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the server's own binary for renders: %w", err)
	}
	if limits.Sandbox, err = renderSandbox(ctx, cfg.RenderSandbox, exe, limits, log); err != nil {
		return nil, err
	}
	view := &service.RepoView{Clusters: db, ArgoCD: argo, Fetcher: parts.repos, Masker: mask.ForService{M: masker},
		Charts:         helmrepo.New(parts.guard.HTTPClient(gitFetchTimeout), helmrepo.Options{}),
		Versions:       versions,
		Renderer:       render.ChildRenderer{Binary: exe, Limits: limits},
		ManifestMasker: mask.ForService{M: masker},
		Queue: service.NewRenderQueue(cfg.RenderConcurrency, cfg.RenderQueueTimeout,
			service.RenderQueueOptions{Metrics: newRenderMetrics(reg)}),
		RenderCacheBytes: cfg.RenderCacheBytes}
	return view, nil
}

// storedRepoAuth opens a cluster's stored repository credentials (none
// stored: anonymous).
func storedRepoAuth(db *store.DB, keys *keyring.Keyring) func(context.Context, service.Cluster) (service.RepoAuth, error) {
	return func(ctx context.Context, c service.Cluster) (service.RepoAuth, error) {
		sealed, err := db.GetRepoAuth(ctx, c.TeamID, c.ID)
		if service.ErrorCode(err) == service.ENOTFOUND {
			return service.RepoAuth{}, nil
		} else if err != nil {
			return service.RepoAuth{}, err
		}
		return service.OpenRepoAuth(sealerOf(keys), sealed)
	}
}

// sealerOf is the keyring as a service.Sealer, nil (not a typed nil) when
// KUKIE_SECRET_KEYS is not set: then only auth type none is accepted.
func sealerOf(keys *keyring.Keyring) service.Sealer {
	if keys == nil {
		return nil
	}
	return keys
}
