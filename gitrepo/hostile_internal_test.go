package gitrepo

// Regression tests for the security review of issue 19 (PoCs of branch
// trial, 3901e01) on hand-made packs read by readPack directly.

import (
	"runtime/debug"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kukie/gitops-server/internal/gittest"
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
