package gitrepo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/netguard"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// mustTeamRepos is the production wiring of the repo tab's fetcher (see
// cmd/kukie-server/repo.go) on a real guard with allowList as
// KUKIE_GIT_ALLOWED_PRIVATE_HOSTS, SSH only, credentials from auth.
func mustTeamRepos(t *testing.T, allowList, cacheDir string, auth service.RepoAuth) *gitrepo.ClusterRepos {
	t.Helper()
	entries, err := netguard.ParseAllowList(allowList)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := netguard.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	return &gitrepo.ClusterRepos{
		Fetcher:  gitrepo.New(gitrepo.Options{DialSSH: guard.DialContext, CacheDir: cacheDir}),
		Auth:     func(context.Context, service.Cluster) (service.RepoAuth, error) { return auth, nil },
		WithTeam: netguard.NewContextWithTeam,
		TeamOnly: guard.TeamOnly,
	}
}

// TestTeamPrivateHost: the Git server listens on 127.0.0.1, a private
// address, allowed for team-a only. team-a fetches; team-b, with the same
// URL and the same credentials, is refused at the dial and is not served
// team-a's tree from the memory cache or, after a restart, from the disk
// cache.
func TestTeamPrivateHost(t *testing.T) {
	repo := gittest.NewRepo(t)
	commit := repo.Commit(t, map[string]string{"apps/web/deploy.yaml": "kind: Deployment\n"}, "first")
	srv := repo.ServeSSH(t, gittest.SSHOptions{})
	auth := service.RepoAuth{Type: "ssh_key", PrivateKey: string(srv.PrivateKeyPEM), KnownHosts: srv.KnownHosts}
	a := service.Cluster{ID: "c1", TeamID: "team-a", GitOpsRepo: srv.URL}
	b := service.Cluster{ID: "c1", TeamID: "team-b", GitOpsRepo: srv.URL}
	ctx := context.Background()
	dir := t.TempDir()
	const allow = "team-a=127.0.0.1"

	repos := mustTeamRepos(t, allow, dir, auth)
	got, err := repos.Resolve(ctx, a, "")
	if err != nil || got != commit {
		t.Fatalf("team-a resolve = %q, %v; want %s", got, err, commit)
	}
	files, err := repos.Tree(ctx, a, "", commit)
	if err != nil || string(files["apps/web/deploy.yaml"]) != "kind: Deployment\n" {
		t.Fatalf("team-a tree = %v, %v", files, err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, netguard.ErrRefused) || service.ErrorReason(err) != gitrepo.ReasonUnreachable {
			t.Errorf("%s: %v, want the guard's refusal as %s", what, err, gitrepo.ReasonUnreachable)
		}
	}
	_, err = repos.Resolve(ctx, b, "")
	refused("team-b resolve", err)
	files, err = repos.Tree(ctx, b, "", commit)
	refused("team-b tree (team-a's is in memory)", err)
	if files != nil {
		t.Errorf("team-b was served team-a's tree: %v", files)
	}
	if err := repos.Verify(service.NewContextWithPrincipal(ctx, service.Principal{TeamID: "team-b"}), srv.URL, auth); err == nil {
		t.Error("team-b verified a repository on team-a's private host")
	}
	if err := repos.Verify(service.NewContextWithPrincipal(ctx, service.Principal{TeamID: "team-a"}), srv.URL, auth); err != nil {
		t.Errorf("team-a verify: %v", err)
	}

	// A restart: a new fetcher on the same disk cache.
	restarted := mustTeamRepos(t, allow, dir, auth)
	files, err = restarted.Tree(ctx, b, "", commit)
	refused("team-b tree after a restart (team-a's is on disk)", err)
	if files != nil {
		t.Errorf("team-b was served team-a's tree from disk: %v", files)
	}
	fetches := srv.Counts()
	if files, err := restarted.Tree(ctx, a, "", commit); err != nil || len(files) != 1 {
		t.Fatalf("team-a tree after a restart = %v, %v", files, err)
	}
	if srv.Counts() != fetches {
		t.Errorf("team-a's tree was fetched again (%+v -> %+v), want it from the disk cache", fetches, srv.Counts())
	}
}

// TestEveryoneEntryShared: a host allowed by an entry for every team is
// read once for all teams: the cache is shared.
func TestEveryoneEntryShared(t *testing.T) {
	repo := gittest.NewRepo(t)
	commit := repo.Commit(t, map[string]string{"a.yaml": "a: 1\n"}, "first")
	srv := repo.ServeSSH(t, gittest.SSHOptions{})
	auth := service.RepoAuth{Type: "ssh_key", PrivateKey: string(srv.PrivateKeyPEM), KnownHosts: srv.KnownHosts}
	repos := mustTeamRepos(t, "team-a=127.0.0.1,127.0.0.1", "", auth)
	ctx := context.Background()
	if _, err := repos.Tree(ctx, service.Cluster{ID: "c1", TeamID: "team-a", GitOpsRepo: srv.URL}, "", commit); err != nil {
		t.Fatalf("team-a: %v", err)
	}
	fetches := srv.Counts()
	if _, err := repos.Tree(ctx, service.Cluster{ID: "c1", TeamID: "team-b", GitOpsRepo: srv.URL}, "", commit); err != nil {
		t.Fatalf("team-b: %v", err)
	}
	if srv.Counts() != fetches {
		t.Errorf("team-b fetched again (%+v -> %+v), want team-a's cached tree", fetches, srv.Counts())
	}
}

func TestIdentityTeam(t *testing.T) {
	r := gitrepo.Remote{URL: "ssh://git@git.acme.internal/gitops.git", Auth: gitrepo.Auth{PrivateKey: "k", KnownHosts: "kh"}}
	// Without a team the identity is what it always was (length-prefixed
	// URL and credentials), so disk caches of shared remotes stay valid —
	// the URL normalized (here without its ".git"), as since refusals are
	// shared between spellings of one repository: a URL already in that
	// form keeps its identity.
	h := sha256.New()
	for _, s := range []string{"ssh://git@git.acme.internal/gitops", "", "", "k", "kh"} {
		h.Write([]byte{byte(len(s) >> 24), byte(len(s) >> 16), byte(len(s) >> 8), byte(len(s))})
		h.Write([]byte(s))
	}
	if got, want := r.Identity(), hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("identity without a team changed: %s, want %s", got, want)
	}
	withA, withB := r, r
	withA.Team, withB.Team = "team-a", "team-b"
	if r.Identity() == withA.Identity() || withA.Identity() == withB.Identity() {
		t.Error("the team is not part of the identity")
	}
}
