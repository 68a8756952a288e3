package gitrepo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// world is a repository with three commits on main and its servers.
type world struct {
	repo    *gittest.Repo
	commits []string // oldest first
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{repo: gittest.NewRepo(t)}
	for i := 1; i <= 3; i++ {
		w.commits = append(w.commits, w.repo.Commit(t, map[string]string{
			"apps/guestbook/deployment.yaml": fmt.Sprintf("replicas: %d\n", i),
			"README.md":                      "hello\n",
		}, fmt.Sprintf("commit %d", i)))
	}
	return w
}

type counted interface{ Counts() gittest.Counts }

// server is one way of serving the world's repository.
type server struct {
	name   string
	remote gitrepo.Remote
	opts   gitrepo.Options
	counts counted
}

func servers(t *testing.T, w *world) []server {
	t.Helper()
	var out []server
	for _, allow := range []bool{true, false} {
		h := w.repo.ServeHTTP(t, gittest.HTTPOptions{Token: "s3cret-token", AllowAnyCommit: allow})
		out = append(out, server{
			name:   fmt.Sprintf("HTTP/AllowAnyCommit=%v", allow),
			remote: gitrepo.Remote{URL: h.URL, Auth: gitrepo.Auth{Token: "s3cret-token"}},
			opts:   gitrepo.Options{HTTPClient: h.Client()},
			counts: h,
		})
		s := w.repo.ServeSSH(t, gittest.SSHOptions{AllowAnyCommit: allow})
		out = append(out, server{
			name:   fmt.Sprintf("SSH/AllowAnyCommit=%v", allow),
			remote: gitrepo.Remote{URL: s.URL, Auth: gitrepo.Auth{PrivateKey: string(s.PrivateKeyPEM), KnownHosts: s.KnownHosts}},
			counts: s,
		})
	}
	return out
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	// Generous: only catches hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func wantReason(t *testing.T, err error, reason service.Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", reason)
	}
	if got := service.ErrorReason(err); got != reason {
		t.Fatalf("got reason %q (%v), want %q", got, err, reason)
	}
}
