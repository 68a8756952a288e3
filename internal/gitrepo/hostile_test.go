package gitrepo_test

// Regression tests for the security review of issue 19 (PoCs of branch
// trial, 3901e01): hand-made packs served by the real git http-backend.

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

type hostileEntry struct {
	mode string
	name string
	hash plumbing.Hash
}

// hostileTree encodes a tree with its entries sorted as git sorts them
// (a directory compares as its name followed by "/").
func hostileTree(entries ...hostileEntry) []byte {
	key := func(e hostileEntry) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	slices.SortFunc(entries, func(a, b hostileEntry) int { return strings.Compare(key(a), key(b)) })
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(e.mode + " " + e.name + "\x00")
		b.Write(e.hash[:])
	}
	return b.Bytes()
}

// serveHostilePack stores pack in a fresh repository with main at commit
// and serves it over HTTP.
func serveHostilePack(t *testing.T, pack []byte, commit plumbing.Hash) *gittest.HTTPServer {
	t.Helper()
	repo := gittest.NewRepo(t)
	repo.AddPack(t, pack)
	repo.Branch(t, "main", commit.String())
	return repo.ServeHTTP(t, gittest.HTTPOptions{})
}

// A tree DAG: T0 is empty and each T(i) holds directories a and b, both
// T(i-1). 42 levels fit in a 2 KB pack and name 2^42 directories; the walk
// counts every entry it visits (directories too) and is refused at
// 4×MaxFiles entries, remembered like any other refusal.
func TestTreeDirectoryDAGIsRefused(t *testing.T) {
	ctx := testContext(t)
	var p gittest.PackBuilder
	h, _ := p.Object(plumbing.TreeObject, nil)
	for range 42 {
		h, _ = p.Object(plumbing.TreeObject, hostileTree(hostileEntry{"40000", "a", h}, hostileEntry{"40000", "b", h}))
	}
	commit, _ := p.Object(plumbing.CommitObject, commitObject(h))
	srv := serveHostilePack(t, p.Bytes(), commit)
	f := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()})
	_, err := f.Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)

	packs := srv.Counts().Packs
	_, err = f.Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	if got := srv.Counts().Packs - packs; got != 0 {
		t.Errorf("the refused walk was fetched again (%d packs): it is not remembered", got)
	}
}

// Submodules and names that are never a path are walked entries too: a
// tree of 10 links to 10 trees of submodules and ".." names is refused
// past 4×MaxFiles entries though it holds no file at all.
func TestTreeSkippedEntriesAreCounted(t *testing.T) {
	ctx := testContext(t)
	var p gittest.PackBuilder
	sub := plumbing.ComputeHash(plumbing.CommitObject, []byte("elsewhere"))
	var leaves []hostileEntry
	for i := range 30 {
		leaves = append(leaves, hostileEntry{"160000", fmt.Sprintf("sub%02d", i), sub})
	}
	leaf, _ := p.Object(plumbing.TreeObject, hostileTree(leaves...))
	var dirs []hostileEntry
	for i := range 10 {
		dirs = append(dirs, hostileEntry{"40000", fmt.Sprintf("d%d", i), leaf})
	}
	root, _ := p.Object(plumbing.TreeObject, hostileTree(dirs...))
	commit, _ := p.Object(plumbing.CommitObject, commitObject(root))
	srv := serveHostilePack(t, p.Bytes(), commit)

	// 310 entries: over 4×50, within 4×100.
	_, err := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client(), MaxFiles: 50}).Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	tree, err := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client(), MaxFiles: 100}).Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Files) != 0 {
		t.Errorf("a tree of submodules has %d files", len(tree.Files))
	}
}

// Paths are bounded and charged: two entries with 64 KiB names nested 10
// deep made 1,024 one-byte files with 640 MiB of paths that Tree.Bytes did
// not count. A path over 4,096 bytes is refused; within it, every path is
// charged to Tree.Bytes (and so to MaxTreeBytes and the caches).
func TestTreePathNamesAreBoundedAndCharged(t *testing.T) {
	ctx := testContext(t)
	nested := func(nameLen, depth int) (*gittest.HTTPServer, plumbing.Hash) {
		var p gittest.PackBuilder
		h, _ := p.Object(plumbing.BlobObject, []byte("x"))
		mode := "100644"
		for i := range depth {
			a := strings.Repeat("a", nameLen-1) + fmt.Sprint(i%10)
			b := strings.Repeat("b", nameLen-1) + fmt.Sprint(i%10)
			h, _ = p.Object(plumbing.TreeObject, hostileTree(hostileEntry{mode, a, h}, hostileEntry{mode, b, h}))
			mode = "40000"
		}
		commit, _ := p.Object(plumbing.CommitObject, commitObject(h))
		return serveHostilePack(t, p.Bytes(), commit), commit
	}

	t.Run("ErrPathTooLong", func(t *testing.T) {
		srv, commit := nested(64<<10, 10)
		_, err := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()}).Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
		wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	})
	t.Run("ErrTooDeep", func(t *testing.T) {
		srv, commit := nested(1, 300)
		_, err := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()}).Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
		wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	})
	t.Run("PathsCharged", func(t *testing.T) {
		// 2^8 = 256 files of one byte whose paths are 8×300 bytes.
		srv, commit := nested(299, 8)
		tree, err := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()}).Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
		if err != nil {
			t.Fatal(err)
		}
		var paths int64
		for name, data := range tree.Files {
			paths += int64(len(name) + len(data))
		}
		if len(tree.Files) != 256 || tree.Bytes < paths {
			t.Errorf("%d files, Tree.Bytes = %d, want 256 files and Bytes >= %d (their paths and contents)", len(tree.Files), tree.Bytes, paths)
		}
		// The same tree over MaxTreeBytes: its contents are 256 bytes, its
		// paths 600 KiB.
		_, err = gitrepo.New(gitrepo.Options{HTTPClient: srv.Client(), MaxTreeBytes: 64 << 10}).Tree(ctx, gitrepo.Remote{URL: srv.URL}, "", commit.String())
		wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	})
}

// panickingTransport panics on every request, as a bug anywhere under a
// fetch would.
type panickingTransport struct{ panics *atomic.Int32 }

func (p panickingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	p.panics.Add(1)
	panic("a bug under the fetch")
}

// A panic in a collapsed fetch was re-panicked by singleflight in a
// goroutine of its own, which ends the process. Now it is an internal
// error to every caller waiting on it, and it is not remembered.
func TestFetchPanicIsAnInternalError(t *testing.T) {
	ctx := testContext(t)
	var panics atomic.Int32
	var logs bytes.Buffer
	f := gitrepo.New(gitrepo.Options{HTTPClient: &http.Client{Transport: panickingTransport{&panics}},
		Logger: slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))})
	remote := gitrepo.Remote{URL: "https://git.example.com/team/apps.git"}
	commit := strings.Repeat("ab", 20)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			if i%2 == 0 {
				_, errs[i] = f.Tree(ctx, remote, "", commit)
			} else {
				_, errs[i] = f.Resolve(ctx, remote, "main")
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if service.ErrorCode(err) != service.EINTERNAL {
			t.Errorf("caller %d: err = %v, want %s", i, err, service.EINTERNAL)
		}
	}
	before := panics.Load()
	_, err := f.Tree(ctx, remote, "", commit)
	if service.ErrorCode(err) != service.EINTERNAL || panics.Load() == before {
		t.Errorf("the retry: err = %v after %d more requests; a panic must not be remembered", err, panics.Load()-before)
	}
	if !strings.Contains(logs.String(), "a bug under the fetch") {
		t.Errorf("the panic is not logged: %s", logs.String())
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// The refusal key omitted how the commit was fetched: on a server that
// sends no commit by id, tenant A asking for commit C through a ref with a
// huge history got C refused under (identity, C), and tenant B, asking
// through a ref where C is near the tip, was refused for 10 minutes. A
// deepening refusal is now remembered under its ref: it is served to the
// same ref only.
func TestTreeRefusalIsKeyedByRef(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	c := repo.Commit(t, map[string]string{"app.yaml": "kind: ConfigMap\n"}, "C")
	repo.Commit(t, map[string]string{"app.yaml": "kind: ConfigMap\n", "small.txt": "d\n"}, "D")
	repo.Branch(t, "small", "main")
	repo.Branch(t, "huge", c)
	repo.SetHead(t, "huge")
	noise := make([]byte, 2<<20)
	for i := range noise {
		noise[i] = byte(i*7919 + i>>8*31)
	}
	for i := range 2 {
		noise[0] = byte(i)
		repo.Commit(t, map[string]string{"app.yaml": "kind: ConfigMap\n", "noise.bin": string(noise)}, fmt.Sprint("big ", i))
	}
	srv := repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: false})
	f := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client(), MaxFetchBytes: 1 << 20})
	remote := gitrepo.Remote{URL: srv.URL}

	_, err := f.Tree(ctx, remote, "huge", c)
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	// The same fetch again: remembered, the server is not asked.
	packs := srv.Counts().Packs
	_, err = f.Tree(ctx, remote, "huge", c)
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	if got := srv.Counts().Packs - packs; got != 0 {
		t.Errorf("the remembered refusal cost %d packs", got)
	}
	// Another ref reaches C in two commits: not refused.
	tree, err := f.Tree(ctx, remote, "small", c)
	if err != nil {
		t.Fatalf("tenant B, through ref small: %v; A's refusal through huge was served to it", err)
	}
	if tree.Commit != c {
		t.Errorf("tree at %s, want %s", tree.Commit, c)
	}
}

// endlessAdvertisement is an HTTPS Git server whose ref advertisement
// never ends: one ref line after another until the client hangs up. It
// counts what it wrote.
func endlessAdvertisement(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var written atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
		head := pkt("# service=git-upload-pack\n") + "0000" +
			pkt(strings.Repeat("ab", 20)+" HEAD\x00multi_ack shallow no-progress\n")
		if _, err := io.WriteString(w, head); err != nil {
			return
		}
		var chunk strings.Builder
		for i := range 1000 {
			chunk.WriteString(pkt(fmt.Sprintf("%s refs/heads/branch-%08d\n", strings.Repeat("cd", 20), i)))
		}
		for {
			n, err := io.WriteString(w, chunk.String())
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &written
}

// The ref advertisement (and the shallow lines before a pack) were read
// before the pack's limit wrapped the response: a server could stream
// them for the whole 2-minute timeout. Every response is now capped at the
// transport — an advertisement at 64 MiB, everything one fetch reads at
// MaxPackBytes — and past it the answer is repo_too_large.
func TestEndlessAdvertisementIsRefused(t *testing.T) {
	ctx := testContext(t)
	srv, written := endlessAdvertisement(t)
	remote := gitrepo.Remote{URL: srv.URL + "/repo.git"}

	t.Run("ListRefs", func(t *testing.T) {
		f := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client()})
		_, err := f.ListRefs(ctx, remote)
		wantReason(t, err, gitrepo.ReasonRepoTooLarge)
		t.Logf("refused after the server wrote %d MiB", written.Load()>>20)
	})
	t.Run("TreeWithinMaxPackBytes", func(t *testing.T) {
		// A fetch reads at most MaxPackBytes in all, its advertisement
		// included.
		f := gitrepo.New(gitrepo.Options{HTTPClient: srv.Client(), MaxPackBytes: 1 << 20})
		_, err := f.Tree(ctx, remote, "", strings.Repeat("ab", 20))
		wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	})
}
