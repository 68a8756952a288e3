package gitrepo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// clusterStore holds one cluster.
type clusterStore struct {
	service.ClusterStore
	c service.Cluster
}

func (s clusterStore) GetCluster(_ context.Context, teamID, id string) (service.Cluster, error) {
	if teamID != s.c.TeamID || id != s.c.ID {
		return service.Cluster{}, service.ErrClusterNotFound()
	}
	return s.c, nil
}

type redact struct{}

func (redact) File(_ string, b []byte) service.MaskedText {
	return service.MaskedText{Content: []byte(strings.ReplaceAll(string(b), "s3cr3t", "<masked>")), Secrets: []string{"s3cr3t"}}
}

func (redact) Redactor(secrets []string, join ...service.Redactor) service.Redactor {
	return redactSecrets(secrets)
}

// redactSecrets cuts its secrets by replacing them (the tree and file
// views join nothing).
type redactSecrets []string

func (r redactSecrets) Redact(text string) string {
	for _, s := range r {
		text = strings.ReplaceAll(text, s, "<masked>")
	}
	return text
}

// The repo tab over a real Git server: the cluster's connected repository
// fetched with its stored token, the tree and a file at a ref, a wrong
// token refused as repo_auth_failed.
func TestClusterReposThroughRepoView(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Commit(t, map[string]string{"apps/web/deploy.yaml": "kind: Deployment\n", "apps/web/values.yaml": "password: s3cr3t\n"}, "first")
	srv := repo.ServeHTTP(t, gittest.HTTPOptions{Token: "tok-1234"})
	c := service.Cluster{ID: "c1", TeamID: "t1", AccessLevel: service.AccessLimited, GitOpsRepo: srv.URL}
	token := "tok-1234"
	repos := &gitrepo.ClusterRepos{Fetcher: gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()}),
		Auth: func(context.Context, service.Cluster) (service.RepoAuth, error) {
			return service.RepoAuth{Type: "https_token", Token: token}, nil
		}}
	view := &service.RepoView{Clusters: clusterStore{c: c}, Fetcher: repos, Masker: redact{}}
	p := service.Principal{TeamID: "t1"}
	ctx := context.Background()

	tree, err := view.Tree(ctx, p, "c1", "", "apps")
	if err != nil || len(tree.Folders) != 2 || tree.Commit == "" || tree.AppsUnavailable != "limited_access" {
		t.Fatalf("tree = %+v, %v", tree, err)
	}
	f, err := view.File(ctx, p, "c1", "apps/web/values.yaml", "")
	if err != nil || f.Content != "password: <masked>\n" || f.Commit != tree.Commit {
		t.Fatalf("file = %+v, %v", f, err)
	}
	if err := repos.Verify(ctx, srv.URL, service.RepoAuth{Type: "https_token", Token: "wrong"}); service.ErrorReason(err) != service.ReasonRepoAuthFailed {
		t.Errorf("verify with a wrong token: %v", err)
	}
	if _, err := view.File(ctx, p, "c1", "apps/web/values.yaml", "no-such-branch"); service.ErrorReason(err) != service.ReasonRefNotFound {
		t.Errorf("unknown ref: %v", err)
	}
}
