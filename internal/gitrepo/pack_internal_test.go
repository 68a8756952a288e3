package gitrepo

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

// Packs git would not write, read by readPack directly from a stream (not
// seekable, as from the network).

func streamOf(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }

func testBounds(maxObject, maxFetch int64) packBounds {
	return packBounds{maxObject: maxObject, budget: &fetchBudget{max: maxFetch, inflated: &int64Counter{}}}
}

// delta is git's delta: the sizes, then one insert of data.
func delta(baseSize int, data string) []byte {
	b := append(leb(baseSize), leb(len(data))...)
	return append(append(b, byte(len(data))), data...)
}

func leb(n int) []byte {
	var out []byte
	for ; n >= 0x80; n >>= 7 {
		out = append(out, byte(n)|0x80)
	}
	return append(out, byte(n))
}

func TestReadPackDeltaBeforeItsBase(t *testing.T) {
	var p gittest.PackBuilder
	base := plumbing.ComputeHash(plumbing.BlobObject, []byte("base"))
	p.RefDelta(base, delta(4, "target"))
	p.Object(plumbing.BlobObject, []byte("base"))
	st, err := readPack(streamOf(p.Bytes()), testBounds(1<<20, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := st.blob(plumbing.ComputeHash(plumbing.BlobObject, []byte("target")))
	if !ok || string(got) != "target" {
		t.Errorf("target = %q, %v", got, ok)
	}
}

func TestReadPackThinPackFails(t *testing.T) {
	var p gittest.PackBuilder
	p.RefDelta(plumbing.ComputeHash(plumbing.BlobObject, []byte("elsewhere")), delta(9, "target"))
	_, err := readPack(streamOf(p.Bytes()), testBounds(1<<20, 1<<20))
	if !errors.Is(err, errIncompletePack) {
		t.Fatalf("err = %v, want errIncompletePack", err)
	}
}

func TestReadPackBounds(t *testing.T) {
	for name, tc := range map[string]struct {
		pack      func(p *gittest.PackBuilder)
		maxObject int64
		maxFetch  int64
		// inflated is the most the refusal may have inflated.
		inflated int64
	}{
		"ErrCommitTooLarge": {
			pack:      func(p *gittest.PackBuilder) { p.Object(plumbing.CommitObject, bytes.Repeat([]byte("x"), 2048)) },
			maxObject: 1024, maxFetch: 1 << 20,
		},
		"ErrDeltaInstructionsTooLarge": {
			pack: func(p *gittest.PackBuilder) {
				_, off := p.Object(plumbing.BlobObject, []byte("base"))
				p.OffsetDelta(off, append(delta(4, "t"), bytes.Repeat([]byte{0}, 4096)...))
			},
			maxObject: 1024, maxFetch: 1 << 20, inflated: 4,
		},
		"ErrDeltaTargetTooLarge": {
			pack: func(p *gittest.PackBuilder) {
				_, off := p.Object(plumbing.BlobObject, []byte("base"))
				d := append(leb(4), leb(1<<40)...)
				p.OffsetDelta(off, append(d, 0x90, 0x04)) // copy 4 bytes: a lie the header is refused before
			},
			maxObject: 1024, maxFetch: 1 << 20, inflated: 4 + 16,
		},
		"ErrManyEmptyObjects": {
			pack: func(p *gittest.PackBuilder) {
				for range 10_000 {
					p.Object(plumbing.BlobObject, nil)
				}
			},
			maxObject: 1024, maxFetch: 1 << 20,
		},
		"ErrFetchTooLarge": {
			pack: func(p *gittest.PackBuilder) {
				for i := range 8 {
					p.Object(plumbing.BlobObject, bytes.Repeat([]byte{byte(i)}, 1000))
				}
			},
			maxObject: 1024, maxFetch: 4096, inflated: 3000,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var p gittest.PackBuilder
			tc.pack(&p)
			b := testBounds(tc.maxObject, tc.maxFetch)
			_, err := readPack(streamOf(p.Bytes()), b)
			if got := service.ErrorReason(err); got != ReasonRepoTooLarge {
				t.Fatalf("err = %v, want %s", err, ReasonRepoTooLarge)
			}
			if got := b.budget.inflated.load(); got > tc.inflated {
				t.Errorf("inflated %d bytes before the refusal, want at most %d", got, tc.inflated)
			}
		})
	}
}

func TestDeltaTargetSize(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int64
		ok   bool
	}{
		{nil, 0, false},
		{leb(5), 0, false},
		{append(leb(5), 0x80), 0, false},
		{append(leb(5), leb(300)...), 300, true},
		{append(leb(1<<20), leb(64<<20)...), 64 << 20, true},
		{append(leb(1), bytes.Repeat([]byte{0xff}, 12)...), 1<<63 - 1, true},
	} {
		got, ok := deltaTargetSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("deltaTargetSize(%x) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
