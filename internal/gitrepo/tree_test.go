package gitrepo_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
)

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

func TestTreeCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	h := w.repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	remote := gitrepo.Remote{URL: h.URL}
	// Each tree is 185 bytes (18 of contents, 39 of paths, 2×64 of
	// bookkeeping); the cache holds two.
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), TreeCacheBytes: 2*185 + 5})
	fetch := func(i int) int {
		t.Helper()
		before := h.Counts().Packs
		if _, err := f.Tree(ctx, remote, "", w.commits[i]); err != nil {
			t.Fatal(err)
		}
		return h.Counts().Packs - before
	}
	for _, step := range []struct{ commit, packs int }{
		{0, 1}, {1, 1}, {0, 0}, // 0 is now the most recent
		{2, 1}, // evicts 1
		{0, 0}, {1, 1},
	} {
		if got := fetch(step.commit); got != step.packs {
			t.Fatalf("commit %d: %d packs, want %d", step.commit, got, step.packs)
		}
	}
}
