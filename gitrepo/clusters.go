package gitrepo

import (
	"context"

	"github.com/kukie/gitops-server/service"
)

var _ service.RepoFetcher = (*ClusterRepos)(nil)

// ClusterRepos is service.RepoFetcher over a Fetcher: a cluster's connected
// repository, fetched with the credentials stored for it.
type ClusterRepos struct {
	Fetcher *Fetcher
	// Auth returns the cluster's stored credentials, opened (the zero
	// RepoAuth when none are stored).
	Auth func(ctx context.Context, c service.Cluster) (service.RepoAuth, error)
}

func (r *ClusterRepos) remote(ctx context.Context, c service.Cluster) (Remote, error) {
	remote := Remote{URL: c.GitOpsRepo}
	if r.Auth == nil {
		return remote, nil
	}
	a, err := r.Auth(ctx, c)
	if err != nil {
		return remote, err
	}
	remote.Auth = Auth{Username: a.Username, Token: a.Token, PrivateKey: a.PrivateKey, KnownHosts: a.KnownHosts}
	return remote, nil
}

// Resolve implements service.RepoFetcher.
func (r *ClusterRepos) Resolve(ctx context.Context, c service.Cluster, ref string) (string, error) {
	remote, err := r.remote(ctx, c)
	if err != nil {
		return "", err
	}
	return r.Fetcher.Resolve(ctx, remote, ref)
}

// Tree implements service.RepoFetcher.
func (r *ClusterRepos) Tree(ctx context.Context, c service.Cluster, ref, commit string) (map[string][]byte, error) {
	remote, err := r.remote(ctx, c)
	if err != nil {
		return nil, err
	}
	t, err := r.Fetcher.Tree(ctx, remote, ref, commit)
	if err != nil {
		return nil, err
	}
	return t.Files, nil
}

// Verify lists the remote's refs with the given credentials: the check a
// connection gets before it is stored (repo_auth_failed,
// host_key_mismatch, repo_unreachable).
func (r *ClusterRepos) Verify(ctx context.Context, repoURL string, a service.RepoAuth) error {
	_, err := r.Fetcher.ListRefs(ctx, Remote{URL: repoURL,
		Auth: Auth{Username: a.Username, Token: a.Token, PrivateKey: a.PrivateKey, KnownHosts: a.KnownHosts}})
	return err
}
