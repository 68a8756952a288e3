package gitrepo

import (
	"context"

	"github.com/kukie/gitops-server/service"
)

var _ service.RepoFetcher = (*ClusterRepos)(nil)

// ClusterRepos is service.RepoFetcher over a Fetcher: a cluster's connected
// repository, fetched with the credentials stored for it, for the cluster's
// team.
type ClusterRepos struct {
	Fetcher *Fetcher
	// Auth returns the cluster's stored credentials, opened (the zero
	// RepoAuth when none are stored).
	Auth func(ctx context.Context, c service.Cluster) (service.RepoAuth, error)
	// WithTeam returns the context a fetch for team runs in, so the
	// guarded dialer applies that team's private-host entries
	// (netguard.NewContextWithTeam). Nil: the context as it is.
	WithTeam func(ctx context.Context, team string) context.Context
	// TeamOnly reports whether host is reachable for team only through the
	// team's own private-host entry (netguard.Guard.TeamOnly); what is
	// fetched from such a host is cached for that team only. Nil: never.
	TeamOnly func(team, host string) bool
}

// forTeam returns the context and remote of a fetch for team.
func (r *ClusterRepos) forTeam(ctx context.Context, team string, remote Remote) (context.Context, Remote) {
	if r.WithTeam != nil {
		ctx = r.WithTeam(ctx, team)
	}
	if r.TeamOnly != nil && r.TeamOnly(team, remote.host()) {
		remote.Team = team
	}
	return ctx, remote
}

func (r *ClusterRepos) remote(ctx context.Context, c service.Cluster) (context.Context, Remote, error) {
	remote := Remote{URL: c.GitOpsRepo}
	if r.Auth != nil {
		a, err := r.Auth(ctx, c)
		if err != nil {
			return ctx, remote, err
		}
		remote.Auth = Auth{Username: a.Username, Token: a.Token, PrivateKey: a.PrivateKey, KnownHosts: a.KnownHosts}
	}
	ctx, remote = r.forTeam(ctx, c.TeamID, remote)
	return ctx, remote, nil
}

// Resolve implements service.RepoFetcher.
func (r *ClusterRepos) Resolve(ctx context.Context, c service.Cluster, ref string) (string, error) {
	ctx, remote, err := r.remote(ctx, c)
	if err != nil {
		return "", err
	}
	return r.Fetcher.Resolve(ctx, remote, ref)
}

// Tree implements service.RepoFetcher.
func (r *ClusterRepos) Tree(ctx context.Context, c service.Cluster, ref, commit string) (map[string][]byte, error) {
	ctx, remote, err := r.remote(ctx, c)
	if err != nil {
		return nil, err
	}
	t, err := r.Fetcher.Tree(ctx, remote, ref, commit)
	if err != nil {
		return nil, err
	}
	return t.Files, nil
}

// Verify lists the remote's refs with the given credentials, for the
// caller's team (the principal in ctx): the check a connection gets before
// it is stored (repo_auth_failed, host_key_mismatch, repo_unreachable).
func (r *ClusterRepos) Verify(ctx context.Context, repoURL string, a service.RepoAuth) error {
	p, _ := service.PrincipalFromContext(ctx)
	ctx, remote := r.forTeam(ctx, p.TeamID, Remote{URL: repoURL,
		Auth: Auth{Username: a.Username, Token: a.Token, PrivateKey: a.PrivateKey, KnownHosts: a.KnownHosts}})
	_, err := r.Fetcher.ListRefs(ctx, remote)
	return err
}
