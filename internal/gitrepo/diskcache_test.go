package gitrepo_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
)

// fakeClock is a settable clock for the disk cache's use order.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// cacheFile is where the disk cache keeps (remote, commit).
func cacheFile(dir string, remote gitrepo.Remote, commit string) string {
	h := sha256.Sum256([]byte(remote.Identity()))
	return filepath.Join(dir, hex.EncodeToString(h[:]), commit)
}

// cacheSize sums the sizes of the regular files under dir.
func cacheSize(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// mustTree fetches commit through f and checks the request counts moved by
// wantPacks packs (0: no Git request at all).
func mustTree(t *testing.T, f *gitrepo.Fetcher, h *gittest.HTTPServer, remote gitrepo.Remote, commit string, wantPacks int) *gitrepo.Tree {
	t.Helper()
	before := h.Counts()
	tree, err := f.Tree(testContext(t), remote, "", commit)
	if err != nil {
		t.Fatal(err)
	}
	after := h.Counts()
	if wantPacks == 0 && after != before {
		t.Errorf("commit %s cost %d ref lists and %d packs, want no request", commit, after.RefLists-before.RefLists, after.Packs-before.Packs)
	}
	if wantPacks > 0 && after.Packs-before.Packs != wantPacks {
		t.Errorf("commit %s cost %d packs, want %d", commit, after.Packs-before.Packs, wantPacks)
	}
	return tree
}

func TestDiskCacheServesAfterRestart(t *testing.T) {
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{Token: "s3cret-token", AllowAnyCommit: true})
	remote := gitrepo.Remote{URL: h.URL, Auth: gitrepo.Auth{Token: "s3cret-token"}}
	dir := t.TempDir()
	opts := gitrepo.Options{HTTPClient: h.Client(), CacheDir: dir}

	first := gitrepo.New(opts)
	if err := first.CacheDirErr(); err != nil {
		t.Fatal(err)
	}
	fetched := mustTree(t, first, h, remote, w.commits[0], 1)

	// A new Fetcher (a restarted server) reads the commit from disk.
	second := gitrepo.New(opts)
	tree := mustTree(t, second, h, remote, w.commits[0], 0)
	if got := string(tree.Files["apps/guestbook/deployment.yaml"]); got != "replicas: 1\n" || len(tree.Files) != 2 || tree.Commit != w.commits[0] {
		t.Errorf("tree from disk = %d files at %s, deployment.yaml %q", len(tree.Files), tree.Commit, got)
	}
	// Contents, paths and 64 bytes per entry, as the fetch counted them.
	if want := int64(len("replicas: 1\n") + len("hello\n") + len("apps/guestbook/deployment.yaml") + len("README.md") + 2*64); tree.Bytes != want || fetched.Bytes != want {
		t.Errorf("tree from disk has Bytes %d, fetched %d, want %d", tree.Bytes, fetched.Bytes, want)
	}

	t.Run("OtherUsernameFetchesAgain", func(t *testing.T) {
		// Same URL and token, other credentials: another identity.
		other := gitrepo.Remote{URL: h.URL, Auth: gitrepo.Auth{Username: "other-team", Token: "s3cret-token"}}
		mustTree(t, gitrepo.New(opts), h, other, w.commits[0], 1)
		if _, err := os.Stat(cacheFile(dir, other, w.commits[0])); err != nil {
			t.Errorf("the other identity's entry: %v", err)
		}
	})
	t.Run("OtherTokenIsNotServedFromDisk", func(t *testing.T) {
		wrong := gitrepo.Remote{URL: h.URL, Auth: gitrepo.Auth{Token: "wrong-token"}}
		_, err := gitrepo.New(opts).Tree(testContext(t), wrong, "", w.commits[0])
		wantReason(t, err, gitrepo.ReasonRepoAuthFailed)
	})
}

func TestDiskCacheKeepsLinksInsideTheTree(t *testing.T) {
	repo := gittest.NewRepo(t)
	commit := repo.CommitWithLinks(t, map[string]string{"base/app.yaml": "kind: App\n"},
		map[string]string{"app.yaml": "base/app.yaml", "env": "/proc/self/environ"}, "links")
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	remote := gitrepo.Remote{URL: h.URL}
	opts := gitrepo.Options{HTTPClient: h.Client(), CacheDir: t.TempDir()}
	mustTree(t, gitrepo.New(opts), h, remote, commit, 1)

	tree := mustTree(t, gitrepo.New(opts), h, remote, commit, 0)
	if got := string(tree.Files["app.yaml"]); got != "kind: App\n" || tree.Symlinks["app.yaml"].Resolved != "base/app.yaml" {
		t.Errorf("app.yaml from disk = %q, link %+v", got, tree.Symlinks["app.yaml"])
	}
	if _, ok := tree.Files["env"]; ok || tree.Symlinks["env"] != (gitrepo.Symlink{Target: "/proc/self/environ"}) {
		t.Errorf("env from disk: in Files %v, link %+v", ok, tree.Symlinks["env"])
	}
}

func TestDiskCacheEvictsLeastRecentlyUsed(t *testing.T) {
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	remote := gitrepo.Remote{URL: h.URL}

	// The three commits' files are the same size; room for two of them.
	probe := t.TempDir()
	mustTree(t, gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), CacheDir: probe}), h, remote, w.commits[0], 1)
	one := cacheSize(t, probe)
	bound := 2*one + one/2

	dir := t.TempDir()
	clock := newFakeClock()
	opts := gitrepo.Options{HTTPClient: h.Client(), CacheDir: dir, CacheBytes: bound, Now: clock.Now}
	f := gitrepo.New(opts)
	mustTree(t, f, h, remote, w.commits[0], 1)
	clock.Advance(time.Hour)
	mustTree(t, f, h, remote, w.commits[1], 1)
	clock.Advance(time.Hour)
	mustTree(t, f, h, remote, w.commits[0], 0) // from memory: used again
	clock.Advance(time.Hour)
	mustTree(t, f, h, remote, w.commits[2], 1)

	if size := cacheSize(t, dir); size > bound {
		t.Errorf("cache holds %d bytes, bound %d", size, bound)
	}
	for i, want := range []bool{true, false, true} {
		_, err := os.Stat(cacheFile(dir, remote, w.commits[i]))
		if got := err == nil; got != want {
			t.Errorf("commit %d on disk = %v, want %v (%v)", i, got, want, err)
		}
	}

	// After a restart, the order read from the files' times holds.
	clock.Advance(time.Hour)
	restarted := gitrepo.New(opts)
	mustTree(t, restarted, h, remote, w.commits[2], 0)
	clock.Advance(time.Hour)
	mustTree(t, restarted, h, remote, w.commits[0], 0)
	clock.Advance(time.Hour)
	mustTree(t, restarted, h, remote, w.commits[1], 1) // evicts commit 2, used before commit 0
	if _, err := os.Stat(cacheFile(dir, remote, w.commits[2])); !os.IsNotExist(err) {
		t.Errorf("commit 2 stayed on disk (%v); it was the least recently used", err)
	}
	if size := cacheSize(t, dir); size > bound {
		t.Errorf("cache holds %d bytes, bound %d", size, bound)
	}
}

func TestDiskCacheRefetchesABadEntry(t *testing.T) {
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	remote := gitrepo.Remote{URL: h.URL}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not a tree"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		corrupt func(path string) error
	}{
		{"FlippedByte", func(path string) error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			data[len(data)-3] ^= 0xff
			return os.WriteFile(path, data, 0o600)
		}},
		{"Truncated", func(path string) error { return os.Truncate(path, 10) }},
		{"Empty", func(path string) error { return os.WriteFile(path, nil, 0o600) }},
		{"Garbage", func(path string) error { return os.WriteFile(path, []byte("kukie-gitrepo-tree-v1\nshort"), 0o600) }},
		{"Symlink", func(path string) error {
			if err := os.Remove(path); err != nil {
				return err
			}
			return os.Symlink(secret, path)
		}},
		{"Directory", func(path string) error {
			if err := os.Remove(path); err != nil {
				return err
			}
			return os.Mkdir(path, 0o700)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := gitrepo.Options{HTTPClient: h.Client(), CacheDir: dir}
			mustTree(t, gitrepo.New(opts), h, remote, w.commits[0], 1)
			path := cacheFile(dir, remote, w.commits[0])

			// Corrupted after the restarted Fetcher indexed it, and before.
			indexed := gitrepo.New(opts)
			if err := tc.corrupt(path); err != nil {
				t.Fatal(err)
			}
			for _, f := range []*gitrepo.Fetcher{indexed, gitrepo.New(opts)} {
				tree := mustTree(t, f, h, remote, w.commits[0], 1)
				if got := string(tree.Files["apps/guestbook/deployment.yaml"]); got != "replicas: 1\n" {
					t.Errorf("refetched deployment.yaml = %q", got)
				}
				if err := tc.corrupt(path); err != nil {
					t.Fatal(err)
				}
			}
			if data, err := os.ReadFile(secret); err != nil || string(data) != "not a tree" {
				t.Errorf("the link's target was changed: %q, %v", data, err)
			}
		})
	}
}

func TestDiskCacheDirUnusable(t *testing.T) {
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), CacheDir: notADir})
	if f.CacheDirErr() == nil {
		t.Error("CacheDirErr is nil for a CacheDir that is a file")
	}
	mustTree(t, f, h, gitrepo.Remote{URL: h.URL}, w.commits[0], 1)
}
