package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/gitrepo"
	"github.com/kukie/gitops-server/internal/gittest"
	"github.com/kukie/gitops-server/internal/testclock"
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

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", reason)
	}
	if got := service.ErrorReason(err); got != reason {
		t.Fatalf("got reason %q (%v), want %q", got, err, reason)
	}
}

func TestListRefs(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	w.repo.Tag(t, "v1", w.commits[0])
	w.repo.Branch(t, "release", w.commits[1])
	for _, s := range servers(t, w) {
		t.Run(s.name, func(t *testing.T) {
			refs, err := gitrepo.New(s.opts).ListRefs(ctx, s.remote)
			if err != nil {
				t.Fatal(err)
			}
			if refs.Head != "refs/heads/main" || refs.HeadCommit != w.commits[2] {
				t.Errorf("HEAD = %s at %s, want refs/heads/main at %s", refs.Head, refs.HeadCommit, w.commits[2])
			}
			for ref, want := range map[string]string{"": w.commits[2], "main": w.commits[2], "release": w.commits[1],
				"v1": w.commits[0], "refs/tags/v1": w.commits[0], w.commits[0]: w.commits[0]} {
				if got, err := refs.Commit(ref); err != nil || got != want {
					t.Errorf("Commit(%q) = %s, %v; want %s", ref, got, err, want)
				}
			}
			_, err = refs.Commit("no-such-branch")
			wantReason(t, err, gitrepo.ReasonRefNotFound)
		})
	}
}

func TestListRefsHTTPCredentials(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{Token: "right-token"})
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client()})
	for name, auth := range map[string]gitrepo.Auth{
		"ErrWrongToken": {Token: "wrong-token"},
		"ErrNoToken":    {},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.ListRefs(ctx, gitrepo.Remote{URL: h.URL, Auth: auth})
			wantReason(t, err, gitrepo.ReasonRepoAuthFailed)
		})
	}
	t.Run("AnyUsername", func(t *testing.T) {
		if _, err := f.ListRefs(ctx, gitrepo.Remote{URL: h.URL, Auth: gitrepo.Auth{Username: "x-access-token", Token: "right-token"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrNoSuchRepository", func(t *testing.T) {
		_, err := f.ListRefs(ctx, gitrepo.Remote{URL: strings.TrimSuffix(h.URL, "repo.git") + "other.git", Auth: gitrepo.Auth{Token: "right-token"}})
		wantReason(t, err, gitrepo.ReasonUnreachable)
	})
}

func TestListRefsSSHKeys(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	s := w.repo.ServeSSH(t, gittest.SSHOptions{})
	other := w.repo.ServeSSH(t, gittest.SSHOptions{}) // another host key
	// other's host key, written for s's address: a mismatch.
	otherKey := other.KnownHosts[strings.Index(other.KnownHosts, " ")+1:]
	sAddr := s.KnownHosts[:strings.Index(s.KnownHosts, " ")]
	f := gitrepo.New(gitrepo.Options{})
	key := string(s.PrivateKeyPEM)
	for _, tc := range []struct {
		name   string
		auth   gitrepo.Auth
		reason string
	}{
		{"ErrHostKeyMismatch", gitrepo.Auth{PrivateKey: key, KnownHosts: sAddr + " " + otherKey}, gitrepo.ReasonHostKey},
		{"ErrHostUnknown", gitrepo.Auth{PrivateKey: key, KnownHosts: other.KnownHosts}, gitrepo.ReasonHostKey},
		{"ErrNoKnownHosts", gitrepo.Auth{PrivateKey: key}, gitrepo.ReasonAuthInvalid},
		{"ErrKeyNotAuthorized", gitrepo.Auth{PrivateKey: string(gittest.NewClientKey(t)), KnownHosts: s.KnownHosts}, gitrepo.ReasonRepoAuthFailed},
		{"ErrKeyUnreadable", gitrepo.Auth{PrivateKey: "not a key", KnownHosts: s.KnownHosts}, gitrepo.ReasonAuthInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ListRefs(ctx, gitrepo.Remote{URL: s.URL, Auth: tc.auth})
			wantReason(t, err, tc.reason)
		})
	}
	t.Run("ErrNoSuchRepository", func(t *testing.T) {
		_, err := f.ListRefs(ctx, gitrepo.Remote{URL: strings.TrimSuffix(s.URL, "repo.git") + "other.git",
			Auth: gitrepo.Auth{PrivateKey: key, KnownHosts: s.KnownHosts}})
		wantReason(t, err, gitrepo.ReasonUnreachable)
	})
	if got := s.Counts().RefLists; got != 0 {
		t.Errorf("the server ran upload-pack %d times for refused clients", got)
	}
}

func TestListRefsUnreachable(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{})
	url := h.URL
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client()})
	// A client that does not trust the server's certificate cannot reach it.
	_, err := gitrepo.New(gitrepo.Options{}).ListRefs(ctx, gitrepo.Remote{URL: url})
	wantReason(t, err, gitrepo.ReasonUnreachable)
	for _, bad := range []string{
		strings.Replace(url, "https://", "http://", 1),
		strings.Replace(url, "https://", "https://user:pw@", 1),
		strings.Replace(url, "https://", "https://ghp_token@", 1),
		"file:///etc",
		"/tmp/repo.git",
	} {
		_, err := f.ListRefs(ctx, gitrepo.Remote{URL: bad})
		wantReason(t, err, gitrepo.ReasonRepoURLInvalid)
	}
}

func TestTree(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	for _, s := range servers(t, w) {
		t.Run(s.name, func(t *testing.T) {
			f := gitrepo.New(s.opts)
			before := s.counts.Counts().Packs
			// Not a tip: by id where allowed, else main fetched and deepened.
			tree, err := f.Tree(ctx, s.remote, "", w.commits[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := string(tree.Files["apps/guestbook/deployment.yaml"]); got != "replicas: 1\n" {
				t.Errorf("deployment.yaml = %q, want replicas: 1", got)
			}
			if len(tree.Files) != 2 || tree.Commit != w.commits[0] {
				t.Errorf("tree = %d files at %s, want 2 at %s", len(tree.Files), tree.Commit, w.commits[0])
			}
			packs := s.counts.Counts().Packs - before
			if strings.Contains(s.name, "AllowAnyCommit=true") && packs != 1 {
				t.Errorf("fetching a commit by id took %d packs, want 1", packs)
			}
			if strings.Contains(s.name, "AllowAnyCommit=false") && packs < 2 {
				t.Errorf("the strict server sent the commit in %d pack(s); the fallback never ran", packs)
			}
			if s.counts.Counts().Refused != 0 {
				t.Errorf("the server refused %d requests", s.counts.Counts().Refused)
			}

			// The tip is sent by id by any server.
			before = s.counts.Counts().Packs
			if _, err := f.Tree(ctx, s.remote, "", w.commits[2]); err != nil {
				t.Fatal(err)
			}
			if packs := s.counts.Counts().Packs - before; packs != 1 {
				t.Errorf("fetching the tip took %d packs, want 1", packs)
			}

			// Same commit: no fetch at all.
			before = s.counts.Counts().Packs
			lists := s.counts.Counts().RefLists
			if _, err := f.Tree(ctx, s.remote, "", w.commits[0]); err != nil {
				t.Fatal(err)
			}
			if c := s.counts.Counts(); c.Packs != before || c.RefLists != lists {
				t.Errorf("a cached tree cost %d packs and %d ref lists", c.Packs-before, c.RefLists-lists)
			}

			_, err = f.Tree(ctx, s.remote, "", strings.Repeat("ab", 20))
			wantReason(t, err, gitrepo.ReasonRefNotFound)
		})
	}
}

func TestTreeStrictServerDeepensPastFirstStep(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	var commits []string
	for i := 0; i < 8; i++ {
		commits = append(commits, repo.Commit(t, map[string]string{"n.txt": fmt.Sprint(i)}, fmt.Sprint(i)))
	}
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), DeepenSteps: []int{1, 3, 10}})
	tree, err := f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "main", commits[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(tree.Files["n.txt"]); got != "1" {
		t.Errorf("n.txt = %q, want 1", got)
	}
	if got := h.Counts().Packs; got != 3 {
		t.Errorf("packs = %d, want 3 (depth 1, 3, 10)", got)
	}

	// Deeper than the steps reach: not found, after the last step.
	f = gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), DeepenSteps: []int{1, 3}})
	_, err = f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "main", commits[1])
	wantReason(t, err, gitrepo.ReasonRefNotFound)
}

func TestResolveWindow(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	for _, s := range servers(t, w)[:2] {
		t.Run(s.name, func(t *testing.T) {
			clock := testclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
			s.opts.Now = clock.Now
			f := gitrepo.New(s.opts)
			head := w.commits[2]
			lists := s.counts.Counts().RefLists
			for range 3 {
				got, err := f.Resolve(ctx, s.remote, "")
				if err != nil {
					t.Fatal(err)
				}
				if got != head {
					t.Fatalf("Resolve = %s, want %s", got, head)
				}
			}
			if got, err := f.Resolve(ctx, s.remote, "main"); err != nil || got != head {
				t.Fatalf("Resolve(main) = %s, %v", got, err)
			}
			if n := s.counts.Counts().RefLists - lists; n != 1 {
				t.Errorf("4 resolutions in the window listed refs %d times, want 1", n)
			}

			next := w.repo.Commit(t, map[string]string{"README.md": "new\n"}, "new")
			t.Cleanup(func() { w.repo.Branch(t, "main", head) })
			clock.Advance(9 * time.Second)
			if got, _ := f.Resolve(ctx, s.remote, ""); got != head {
				t.Errorf("inside the window Resolve = %s, want the cached %s", got, head)
			}
			clock.Advance(time.Second)
			got, err := f.Resolve(ctx, s.remote, "")
			if err != nil {
				t.Fatal(err)
			}
			if got != next {
				t.Errorf("after the window Resolve = %s, want the new commit %s", got, next)
			}
			if n := s.counts.Counts().RefLists - lists; n != 2 {
				t.Errorf("ref lists = %d, want 2", n)
			}
			w.repo.Branch(t, "main", head)

			// Other credentials are another identity: their own listing.
			other := s.remote
			other.Auth.Username = "someone-else"
			if _, err := f.Resolve(ctx, other, ""); err != nil {
				t.Fatal(err)
			}
			if n := s.counts.Counts().RefLists - lists; n != 3 {
				t.Errorf("ref lists = %d, want 3 (another identity lists its own)", n)
			}

			_, err = f.Resolve(ctx, s.remote, "no-such-branch")
			wantReason(t, err, gitrepo.ReasonRefNotFound)
		})
	}
}

func TestTreeConcurrentCallsFetchOnce(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	for _, s := range servers(t, w) {
		t.Run(s.name, func(t *testing.T) {
			// What one fetch of the commit costs on this server.
			before := s.counts.Counts()
			if _, err := gitrepo.New(s.opts).Tree(ctx, s.remote, "", w.commits[1]); err != nil {
				t.Fatal(err)
			}
			one := s.counts.Counts().Packs - before.Packs

			f := gitrepo.New(s.opts)
			before = s.counts.Counts()
			var wg sync.WaitGroup
			errs := make([]error, 8)
			trees := make([]*gitrepo.Tree, 8)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					trees[i], errs[i] = f.Tree(ctx, s.remote, "", w.commits[1])
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
				if got := string(trees[i].Files["apps/guestbook/deployment.yaml"]); got != "replicas: 2\n" {
					t.Errorf("caller %d read %q", i, got)
				}
			}
			if n := s.counts.Counts().Packs - before.Packs; n != one {
				t.Errorf("8 concurrent calls fetched %d packs; one call fetches %d", n, one)
			}
		})
	}
}

func TestTreeSymlinksStayInside(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	commit := repo.CommitWithLinks(t, map[string]string{
		"base/config.yaml": "kind: ConfigMap\n",
	}, map[string]string{
		"passwd":             "/etc/passwd",
		"environ":            "/proc/self/environ",
		"climb":              "../../../../../../etc/passwd",
		"base/climb":         "../../etc/passwd",
		"overlay/config":     "../base/config.yaml",
		"overlay/chain":      "config",
		"overlay/to-dir":     "../base",
		"overlay/missing":    "nothing-here",
		"loop-a":             "loop-b",
		"loop-b":             "loop-a",
		"overlay/via-passwd": "../passwd",
	}, "links")
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client()})
	tree, err := f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "", commit)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"overlay/config", "overlay/chain"} {
		if got := string(tree.Files[name]); got != "kind: ConfigMap\n" {
			t.Errorf("%s = %q, want base/config.yaml's content", name, got)
		}
		if tree.Symlinks[name].Resolved != "base/config.yaml" {
			t.Errorf("%s resolved to %q", name, tree.Symlinks[name].Resolved)
		}
	}
	for _, name := range []string{"passwd", "environ", "climb", "base/climb", "overlay/to-dir", "overlay/missing", "loop-a", "loop-b", "overlay/via-passwd"} {
		if _, ok := tree.Files[name]; ok {
			t.Errorf("%s (a link out of the tree or to nothing) is in Files", name)
		}
		if l, ok := tree.Symlinks[name]; !ok || l.Resolved != "" {
			t.Errorf("%s: symlink %+v, %v; want listed, unresolved", name, l, ok)
		}
	}
	var secrets [][]byte
	for _, p := range []string{"/etc/passwd", "/proc/self/environ"} {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			secrets = append(secrets, b)
		}
	}
	for name, content := range tree.Files {
		for _, s := range secrets {
			if strings.Contains(string(content), string(s)) {
				t.Errorf("%s holds a file from outside the tree", name)
			}
		}
	}
	if len(tree.Files) != 3 {
		t.Errorf("Files has %d entries, want 3", len(tree.Files))
	}
}

func TestTreeLimits(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	commit := repo.Commit(t, map[string]string{"a": strings.Repeat("a", 100), "b": strings.Repeat("b", 100)}, "big")
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	remote := gitrepo.Remote{URL: h.URL}
	for name, opts := range map[string]gitrepo.Options{
		"ErrFileTooLarge": {MaxFileBytes: 50},
		"ErrTreeTooLarge": {MaxTreeBytes: 150},
		"ErrTooManyFiles": {MaxFiles: 1},
		"ErrPackTooLarge": {MaxPackBytes: 64},
	} {
		t.Run(name, func(t *testing.T) {
			opts.HTTPClient = h.Client()
			_, err := gitrepo.New(opts).Tree(ctx, remote, "", commit)
			wantReason(t, err, gitrepo.ReasonRepoTooLarge)
		})
	}
}

func TestIdentity(t *testing.T) {
	a := gitrepo.Remote{URL: "https://example.com/r.git", Auth: gitrepo.Auth{Token: "t1"}}
	b := a
	b.Auth.Token = "t2"
	c := gitrepo.Remote{URL: "https://example.com/r.gitt", Auth: gitrepo.Auth{Token: "1"}}
	same := gitrepo.Remote{URL: a.URL, Auth: gitrepo.Auth{Token: "t1"}}
	if a.Identity() == b.Identity() || a.Identity() == c.Identity() || a.Identity() != same.Identity() {
		t.Error("identities must differ exactly when URL or credentials differ")
	}
	if strings.Contains(a.Identity(), "t1") {
		t.Error("the identity shows the token")
	}
}
