package gitrepo_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

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

func TestListRefsRefusesRedirects(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	target := w.repo.ServeHTTP(t, gittest.HTTPOptions{Token: "tok"})
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, target.URL+strings.TrimPrefix(r.URL.Path, "/repo.git")+"?"+r.URL.RawQuery, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	// One client trusting both servers, so only the redirect policy can
	// stop the hop.
	client := redirector.Client()
	client.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(target.Certificate())
	f := gitrepo.New(gitrepo.Options{HTTPClient: client})
	_, err := f.ListRefs(ctx, gitrepo.Remote{URL: redirector.URL + "/repo.git", Auth: gitrepo.Auth{Token: "tok"}})
	wantReason(t, err, gitrepo.ReasonUnreachable)
	if c := target.Counts(); c.RefLists != 0 || c.Refused != 0 {
		t.Errorf("the redirect was followed: %+v", c)
	}
}
