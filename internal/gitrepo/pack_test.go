package gitrepo_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
)

// Issue 19: a pack is refused on what its objects declare they inflate to,
// before they are inflated. Each case serves a repository through git
// http-backend (and SSH) and checks the refusal, the bytes inflated before
// it (the Fetcher's counter) and, for the bombs, what the whole test
// process allocated during the fetch.

const mib = 1 << 20

// allocated returns the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// zeros is n zero bytes: git deflates 64 MiB of them to about 64 KiB.
func zeros(n int) string { return strings.Repeat("\x00", n) }

func TestTreeRefusesPackBombBeforeInflating(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	commit := repo.Commit(t, map[string]string{"bomb.bin": zeros(64 * mib), "app/ok.yaml": "kind: ConfigMap\n"}, "bomb")
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	s := repo.ServeSSH(t, gittest.SSHOptions{})
	for name, srv := range map[string]struct {
		remote gitrepo.Remote
		opts   gitrepo.Options
	}{
		"HTTP": {gitrepo.Remote{URL: h.URL}, gitrepo.Options{HTTPClient: h.Client()}},
		"SSH":  {gitrepo.Remote{URL: s.URL, Auth: gitrepo.Auth{PrivateKey: string(s.PrivateKeyPEM), KnownHosts: s.KnownHosts}}, gitrepo.Options{}},
	} {
		t.Run(name, func(t *testing.T) {
			opts := srv.opts
			opts.MaxFileBytes = 1 * mib
			f := gitrepo.New(opts)
			var err error
			alloc := allocated(func() { _, err = f.Tree(ctx, srv.remote, "", commit) })
			wantReason(t, err, gitrepo.ReasonRepoTooLarge)
			t.Logf("inflated %d bytes, allocated %d bytes", gitrepo.InflatedBytes(f), alloc)
			if got := gitrepo.InflatedBytes(f); got >= 2*mib {
				t.Errorf("inflated %d bytes before refusing a 64 MiB blob over a 1 MiB limit, want < 2 MiB", got)
			}
			if alloc >= 32*mib {
				t.Errorf("the process allocated %d bytes while refusing a 64 MiB blob, want < 32 MiB", alloc)
			}
		})
	}
}

// A delta is refused on the target size its header declares, however
// small its base: the pack holds a 64 KiB blob and a 1 KiB delta that
// copies it 1,024 times (64 MiB), which git stores and serves as it is.
func TestTreeRefusesDeltaOnItsTargetSize(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	var p gittest.PackBuilder
	small, baseOff := p.Object(plumbing.BlobObject, []byte(zeros(64<<10)))
	delta := append(varint(64<<10), varint(64*mib)...)
	delta = append(delta, bytes.Repeat([]byte{0x80}, 1024)...) // copy 0x10000 bytes from offset 0
	p.OffsetDelta(baseOff, delta)
	big := plumbing.ComputeHash(plumbing.BlobObject, []byte(zeros(64*mib)))
	tree, _ := p.Object(plumbing.TreeObject, treeObject(map[string]plumbing.Hash{"big.bin": big, "small.bin": small}))
	commit, _ := p.Object(plumbing.CommitObject, commitObject(tree))
	repo.AddPack(t, p.Bytes())
	repo.Branch(t, "main", commit.String())

	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), MaxFileBytes: 1 * mib})
	var err error
	alloc := allocated(func() { _, err = f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "", commit.String()) })
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	t.Logf("inflated %d bytes, allocated %d bytes", gitrepo.InflatedBytes(f), alloc)
	if got := gitrepo.InflatedBytes(f); got >= 2*mib {
		t.Errorf("inflated %d bytes before refusing a delta to 64 MiB, want < 2 MiB", got)
	}
	if alloc >= 32*mib {
		t.Errorf("the process allocated %d bytes while refusing a delta to 64 MiB, want < 32 MiB", alloc)
	}

	// Within the limits the same pack reads: the delta is applied.
	f = gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), MaxFileBytes: 64 * mib})
	got, err := f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "", commit.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files["big.bin"]) != 64*mib || len(got.Files["small.bin"]) != 64<<10 {
		t.Errorf("big.bin has %d bytes, small.bin %d", len(got.Files["big.bin"]), len(got.Files["small.bin"]))
	}
}

// Many files, each within the file limit, over the tree limit together:
// refused once the blobs declared pass it, not after inflating them all.
// The files differ in their first line only, so git sends most as deltas.
func TestTreeRefusesTreeOverItsLimitWhileReading(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("data/%02d.bin", i)] = fmt.Sprintf("file %d\n", i) + zeros(900<<10)
	}
	commit := repo.Commit(t, files, "twenty files of 900 KiB")
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client(), MaxFileBytes: 1 * mib, MaxTreeBytes: 4 * mib})
	_, err := f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "", commit)
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	t.Logf("inflated %d bytes", gitrepo.InflatedBytes(f))
	if got := gitrepo.InflatedBytes(f); got >= 5*mib {
		t.Errorf("inflated %d bytes before refusing 18 MiB of files over a 4 MiB tree limit, want < 5 MiB", got)
	}
}

// Deepening fetches history: all it inflates is bounded by MaxFetchBytes,
// though every commit's tree is within the other limits.
func TestTreeRefusesHistoryOverTheFetchLimit(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	rnd := rand.New(rand.NewPCG(19, 19))
	var commits []string
	for i := range 12 {
		data := make([]byte, 600<<10) // random, so no commit's file is a delta of another's
		for j := range data {
			data[j] = byte(rnd.Uint32())
		}
		commits = append(commits, repo.Commit(t, map[string]string{"data.bin": string(data)}, fmt.Sprint(i)))
	}
	// A strict server: the oldest commit comes only by deepening main.
	h := repo.ServeHTTP(t, gittest.HTTPOptions{})
	opts := gitrepo.Options{HTTPClient: h.Client(), MaxFileBytes: 1 * mib, MaxTreeBytes: 1 * mib, DeepenSteps: []int{1, 50}}

	opts.MaxFetchBytes = 4 * mib
	f := gitrepo.New(opts)
	_, err := f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "main", commits[0])
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	t.Logf("inflated %d bytes", gitrepo.InflatedBytes(f))
	if got := gitrepo.InflatedBytes(f); got > 4*mib {
		t.Errorf("inflated %d bytes of 7.2 MiB of history over a 4 MiB fetch limit, want <= 4 MiB", got)
	}

	// The same history within the limit reads.
	opts.MaxFetchBytes = 16 * mib
	tree, err := gitrepo.New(opts).Tree(ctx, gitrepo.Remote{URL: h.URL}, "main", commits[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Files["data.bin"]) != 600<<10 {
		t.Errorf("data.bin has %d bytes, want %d", len(tree.Files["data.bin"]), 600<<10)
	}
}

// Files sent as deltas (of the previous commit's, and of each other) read
// back exactly, by id and through deepening.
func TestTreeReadsDeltas(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	body := strings.Repeat("line of a manifest that repeats itself\n", 5000)
	var commits []string
	for i := range 4 {
		commits = append(commits, repo.Commit(t, map[string]string{
			"a.yaml": fmt.Sprintf("version: %d\n", i) + body,
			"b.yaml": body + fmt.Sprintf("version: %d\n", i),
		}, fmt.Sprint(i)))
	}
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("AllowAnyCommit=%v", allow), func(t *testing.T) {
			h := repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: allow})
			f := gitrepo.New(gitrepo.Options{HTTPClient: h.Client()})
			for i, c := range commits {
				tree, err := f.Tree(ctx, gitrepo.Remote{URL: h.URL}, "main", c)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := string(tree.Files["a.yaml"]), fmt.Sprintf("version: %d\n", i)+body; got != want {
					t.Errorf("commit %d: a.yaml differs (%d bytes, want %d)", i, len(got), len(want))
				}
				if got, want := string(tree.Files["b.yaml"]), body+fmt.Sprintf("version: %d\n", i); got != want {
					t.Errorf("commit %d: b.yaml differs (%d bytes, want %d)", i, len(got), len(want))
				}
			}
		})
	}
}

func varint(n int) []byte {
	var out []byte
	for {
		c := byte(n & 0x7f)
		if n >>= 7; n == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// treeObject encodes a flat tree of regular files (names in git's order,
// which for plain file names is byte order).
func treeObject(entries map[string]plumbing.Hash) []byte {
	var names []string
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		h := entries[n]
		b.WriteString("100644 " + n + "\x00")
		b.Write(h[:])
	}
	return b.Bytes()
}

func commitObject(tree plumbing.Hash) []byte {
	return []byte("tree " + tree.String() + "\n" +
		"author gittest <gittest@example.com> 1767225600 +0000\n" +
		"committer gittest <gittest@example.com> 1767225600 +0000\n\nhand-made pack\n")
}

// A refused fetch is remembered for 10 minutes by (Identity, commit,
// limits): retries do not ask the Git server again; another commit,
// other credentials or other limits do.
func TestTreeRemembersRefusals(t *testing.T) {
	ctx := testContext(t)
	repo := gittest.NewRepo(t)
	small := repo.Commit(t, map[string]string{"ok.yaml": "kind: ConfigMap\n"}, "small")
	big := repo.Commit(t, map[string]string{"ok.yaml": "kind: ConfigMap\n", "big.bin": zeros(64 << 10)}, "big")
	h := repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	clock := testclock.New(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	opts := gitrepo.Options{HTTPClient: h.Client(), Now: clock.Now, MaxFileBytes: 32 << 10}
	f := gitrepo.New(opts)
	remote := gitrepo.Remote{URL: h.URL}

	fetches := func(remote gitrepo.Remote, commit string, f *gitrepo.Fetcher) (int, error) {
		t.Helper()
		before := h.Counts()
		_, err := f.Tree(ctx, remote, "", commit)
		after := h.Counts()
		if after.Packs-before.Packs != 0 && after.RefLists == before.RefLists {
			t.Fatalf("a pack without a ref listing")
		}
		return after.RefLists - before.RefLists, err
	}

	n, err := fetches(remote, big, f)
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	if n != 1 {
		t.Fatalf("the first Tree contacted the server %d times, want 1", n)
	}
	for _, step := range []time.Duration{0, time.Minute, 9*time.Minute - time.Second} {
		clock.Advance(step)
		n, err := fetches(remote, big, f)
		wantReason(t, err, gitrepo.ReasonRepoTooLarge)
		if n != 0 {
			t.Fatalf("a retry within 10 minutes contacted the server %d times", n)
		}
	}

	// Another commit of the same remote is fetched.
	if n, err := fetches(remote, small, f); err != nil || n != 1 {
		t.Fatalf("another commit: %d contacts, %v; want 1, nil", n, err)
	}
	// Other credentials are another Identity: fetched.
	other := gitrepo.Remote{URL: h.URL, Auth: gitrepo.Auth{Username: "someone-else"}}
	if n, err := fetches(other, big, f); n != 1 || err == nil {
		t.Fatalf("other credentials: %d contacts, %v; want 1, refused", n, err)
	}
	// Other limits: fetched, and within them the commit reads.
	wider := opts
	wider.MaxFileBytes = 1 * mib
	if n, err := fetches(remote, big, gitrepo.New(wider)); err != nil || n != 1 {
		t.Fatalf("other limits: %d contacts, %v; want 1, nil", n, err)
	}

	// Ten minutes after the refusal, it is fetched (and refused) again.
	clock.Advance(time.Second)
	n, err = fetches(remote, big, f)
	wantReason(t, err, gitrepo.ReasonRepoTooLarge)
	if n != 1 {
		t.Fatalf("after 10 minutes: %d contacts, want 1", n)
	}
	if n, _ := fetches(remote, big, f); n != 0 {
		t.Fatalf("the new refusal is not remembered: %d contacts", n)
	}
}
