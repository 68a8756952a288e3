package gitrepo

// Regression tests for the security review of issue 19 (PoCs of branch
// trial, 3901e01) on hand-made packs read by readPack directly.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// chainPack is n one-byte deltas, the first against the blob "x" by id
// (a ref delta), every other against the delta just before it (an offset
// delta), and the blob last: all n wait for it.
func chainPack(n int) []byte {
	var p gittest.PackBuilder
	x := plumbing.ComputeHash(plumbing.BlobObject, []byte("x"))
	d := delta(1, "x")
	off := p.RefDelta(x, d)
	for range n - 1 {
		off = p.OffsetDelta(off, d)
	}
	p.Object(plumbing.BlobObject, []byte("x"))
	return p.Bytes()
}

// A chain of waiting deltas was resolved by recursion, one store and apply
// frame per link: 2.6 M links (a 37 MB pack) overflowed Go's 1 GB stack, a
// fatal error that kills the replica. Now the chain is resolved from a work
// queue — the deepest chain allowed resolves within 1 MiB of stack, which
// the recursion needed about 4 MiB for — and a longer one is refused.
func TestReadPackLongDeltaChain(t *testing.T) {
	t.Run("DeepestAllowedInConstantStack", func(t *testing.T) {
		pack := chainPack(maxDeltaDepth)
		defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
		st, err := readPack(streamOf(pack), testBounds(8<<20, 1<<30))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := st.blob(plumbing.ComputeHash(plumbing.BlobObject, []byte("x"))); !ok || string(got) != "x" {
			t.Errorf("the chain's target = %q, %v", got, ok)
		}
	})
	t.Run("ErrChainTooLong", func(t *testing.T) {
		_, err := readPack(streamOf(chainPack(maxDeltaDepth+1)), testBounds(8<<20, 1<<30))
		if service.ErrorReason(err) != ReasonRepoTooLarge {
			t.Fatalf("err = %v, want %s", err, ReasonRepoTooLarge)
		}
	})
	t.Run("ErrChainTooLongInOrder", func(t *testing.T) {
		// Each delta's base already stored: applied at once, still counted.
		var p gittest.PackBuilder
		_, off := p.Object(plumbing.BlobObject, []byte("x"))
		for range maxDeltaDepth + 1 {
			off = p.OffsetDelta(off, delta(1, "x"))
		}
		_, err := readPack(streamOf(p.Bytes()), testBounds(8<<20, 1<<30))
		if service.ErrorReason(err) != ReasonRepoTooLarge {
			t.Fatalf("err = %v, want %s", err, ReasonRepoTooLarge)
		}
	})
}

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Trees, commits and tags were bounded only by the fetch's budget (1 GiB):
// 130 distinct 8 MiB trees (a 1 MB pack) were all inflated and held before
// the refusal. In a pack of the commit alone they now count against the
// tree's bound with its blobs, and once refused nothing of the pack stays
// held.
func TestReadPackNonBlobObjectsCountAgainstTheTree(t *testing.T) {
	const mib = 1 << 20
	var p gittest.PackBuilder
	body := make([]byte, 8*mib-64)
	for i := range 40 {
		copy(body, fmt.Sprintf("%08d", i)) // distinct: all kept
		p.Object(plumbing.TreeObject, body)
	}
	pack := p.Bytes()
	base := heapAfterGC()
	b := packBounds{maxObject: 8 * mib, maxCommit: 256 * mib, budget: &fetchBudget{max: 1 << 30, inflated: &int64Counter{}}}
	st, err := readPack(streamOf(pack), b)
	if service.ErrorReason(err) != ReasonRepoTooLarge || st != nil {
		t.Fatalf("err = %v, want %s", err, ReasonRepoTooLarge)
	}
	inflated := b.budget.inflated.load()
	held := heapAfterGC() - base
	t.Logf("a %d KB pack of 40 trees of 8 MiB: refused after inflating %d MiB; %d MiB held after the refusal", len(pack)>>10, inflated/mib, held/mib)
	if inflated > 256*mib+8*mib {
		t.Errorf("inflated %d MiB of trees before the refusal, want <= 264 MiB (the tree's bound and one object)", inflated/mib)
	}
	if held > 64*mib {
		t.Errorf("the refused pack still holds %d MiB, want <= 64 MiB", held/mib)
	}
}

// sharedWorld is a repository of commits of 6 MiB each (one file of random
// bytes, so git cannot delta them) served over HTTP.
type sharedWorld struct {
	srv     *gittest.HTTPServer
	commits []string
}

func newSharedWorld(t *testing.T, n int) sharedWorld {
	t.Helper()
	repo := gittest.NewRepo(t)
	var w sharedWorld
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		data := make([]byte, 6<<20)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		w.commits = append(w.commits, repo.Commit(t, map[string]string{"blob.bin": string(data)}, fmt.Sprint(i)))
	}
	w.srv = repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	return w
}

// All fetches of a Fetcher draw from one memory budget
// (FetchMemoryBytes): while others hold it a fetch is refused
// repo_fetch_busy (503), which is not remembered; concurrent fetches never
// hold more than it together; and what a fetch held is given back when it
// ends.
func TestFetchesShareOneMemoryBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newSharedWorld(t, 4)
	remote := Remote{URL: w.srv.URL}
	const budget = 16 << 20
	newFetcher := func(timeout time.Duration) *Fetcher {
		return New(Options{HTTPClient: w.srv.Client(), FetchMemoryBytes: budget, FetchTimeout: timeout})
	}

	t.Run("ErrBusyWhileOthersHoldIt", func(t *testing.T) {
		// A FetchTimeout of 2 s: the fetch waits 1 s for its first bytes.
		f := newFetcher(2 * time.Second)
		// Another fetch holds half: this one gets its first 4 MiB, not the
		// 6 MiB more of its file.
		if err := f.memory.acquire(ctx, 0, 12<<20, false); err != nil {
			t.Fatal(err)
		}
		_, err := f.Tree(ctx, remote, "", w.commits[0])
		if service.ErrorCode(err) != service.EUNAVAILABLE || service.ErrorReason(err) != ReasonFetchBusy {
			t.Fatalf("err = %v, want %s %s", err, service.EUNAVAILABLE, ReasonFetchBusy)
		}
		// All of it held: the fetch waits for its first bytes within its
		// FetchTimeout, then is busy too.
		if err := f.memory.acquire(ctx, 0, budget-12<<20, true); err != nil {
			t.Fatal(err)
		}
		_, err = f.Tree(ctx, remote, "", w.commits[0])
		if service.ErrorReason(err) != ReasonFetchBusy {
			t.Fatalf("err = %v, want %s", err, ReasonFetchBusy)
		}
		// Given back: the same fetch succeeds (busy was not remembered).
		f.memory.sem.Release(budget)
		f.memory.held = 0
		if _, err := f.Tree(ctx, remote, "", w.commits[0]); err != nil {
			t.Fatal(err)
		}
		if f.memory.held != 0 {
			t.Errorf("the finished fetch still holds %d bytes of the budget", f.memory.held)
		}
	})

	t.Run("ConcurrentFetchesStayWithinIt", func(t *testing.T) {
		f := newFetcher(0)
		var wg sync.WaitGroup
		errs := make([]error, len(w.commits))
		for i, c := range w.commits {
			wg.Go(func() { _, errs[i] = f.Tree(ctx, remote, "", c) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil && service.ErrorReason(err) != ReasonFetchBusy {
				t.Errorf("fetch %d: %v, want success or %s", i, err, ReasonFetchBusy)
			}
		}
		f.memory.mu.Lock()
		defer f.memory.mu.Unlock()
		t.Logf("%d fetches of 6 MiB at once: at most %d MiB held together", len(w.commits), f.memory.peak>>20)
		if f.memory.peak > budget || f.memory.held != 0 {
			t.Errorf("fetches held %d bytes at most, %d at the end; want <= %d, then 0", f.memory.peak, f.memory.held, budget)
		}
	})

	t.Run("ErrOneFetchOverItIsTooLarge", func(t *testing.T) {
		// Alone over the shared budget: waiting cannot help, the repository
		// is too large for this replica.
		f := New(Options{HTTPClient: w.srv.Client(), FetchMemoryBytes: 4 << 20})
		_, err := f.Tree(ctx, remote, "", w.commits[1])
		if service.ErrorReason(err) != ReasonRepoTooLarge {
			t.Fatalf("err = %v, want %s", err, ReasonRepoTooLarge)
		}
	})
}

// cappedReader (SSH output, HTTPS bodies) stops at its cap and at what its
// fetch has left, and a stream that ends exactly at the cap is whole.
func TestCappedReader(t *testing.T) {
	read := func(r io.Reader) (int, error) {
		n, err := io.Copy(io.Discard, r)
		return int(n), err
	}
	t.Run("EndsAtTheCap", func(t *testing.T) {
		n, err := read(&cappedReader{r: strings.NewReader("12345"), left: 5})
		if n != 5 || err != nil {
			t.Errorf("read %d, %v; want 5, nil", n, err)
		}
	})
	t.Run("ErrOverTheCap", func(t *testing.T) {
		_, err := read(&cappedReader{r: strings.NewReader("123456"), left: 5})
		if !errors.Is(err, errResponseTooLarge) {
			t.Errorf("err = %v, want errResponseTooLarge", err)
		}
	})
	t.Run("ErrOverTheFetchAllowance", func(t *testing.T) {
		_, a := withReadAllowance(context.Background(), 8)
		if n, err := read(&cappedReader{r: strings.NewReader("12345"), left: 64, fetch: a}); n != 5 || err != nil {
			t.Fatalf("first response: %d, %v", n, err)
		}
		_, err := read(&cappedReader{r: strings.NewReader("6789"), left: 64, fetch: a})
		if !errors.Is(err, errResponseTooLarge) || service.ErrorReason(a.check(err)) != ReasonRepoTooLarge {
			t.Errorf("second response: err = %v, checked %v; want repo_too_large", err, a.check(err))
		}
	})
}

// The walk looks at the context every 1,024 entries, so FetchTimeout stops
// a walk that no bound has stopped yet.
func TestBuildTreeStopsWithItsContext(t *testing.T) {
	var p gittest.PackBuilder
	blob, _ := p.Object(plumbing.BlobObject, []byte("x"))
	var tree bytes.Buffer
	for i := range 3000 {
		tree.WriteString(fmt.Sprintf("100644 f%05d\x00", i))
		tree.Write(blob[:])
	}
	root, _ := p.Object(plumbing.TreeObject, tree.Bytes())
	commit, _ := p.Object(plumbing.CommitObject, []byte("tree "+root.String()+"\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nc\n"))
	st, err := readPack(streamOf(p.Bytes()), testBounds(8<<20, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Options{}).buildTree(ctx, st, commit); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if tr, err := New(Options{}).buildTree(context.Background(), st, commit); err != nil || len(tr.Files) != 3000 {
		t.Errorf("with a live context: %v", err)
	}
}
