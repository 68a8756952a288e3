package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// packBounds are the limits one pack is read within.
type packBounds struct {
	// maxObject bounds every object's declared size (commits, trees, tags
	// and blobs alike; for a delta, its instructions and its target).
	maxObject int64
	// maxCommit bounds the objects of the pack together — blobs, and the
	// commit, trees and tags too — when the pack is the commit alone at
	// depth 1 (all its objects are then the commit's tree); 0 for a pack
	// of history, which only the budget bounds.
	maxCommit int64
	budget    *fetchBudget
}

// errIncompletePack is a pack whose deltas name bases it does not hold.
var errIncompletePack = errors.New("the pack holds deltas without their base")

// readPack reads a pack stream into a store, one object at a time with
// go-git's packfile.Scanner: every object's declared size — for a delta,
// the target size in its header — is checked against the bounds before
// it is inflated, and every byte inflated is counted against the fetch's
// budget as it is produced. go-git's Parser is not used because it keeps
// every delta's instructions in memory, unbounded, until the whole pack
// is read; here a delta is applied as soon as its base is in the store.
// Nothing but the store and the deltas still waiting for their base (both
// within the budget) outlives one object.
func readPack(r io.Reader, b packBounds) (*objectStore, error) {
	sc := packfile.NewScanner(r)
	_, count, err := sc.Header()
	if err != nil {
		return nil, err
	}
	p := &packReader{sc: sc, b: b, st: newObjectStore(count),
		atOffset: map[int64]plumbing.Hash{}, depthAt: map[int64]int{}, waiting: map[any][]*pendingDelta{}}
	for range count {
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if _, err := sc.Checksum(); err != nil {
		return nil, err
	}
	if p.pending > 0 {
		return nil, errIncompletePack
	}
	return p.st, nil
}

type packReader struct {
	sc *packfile.Scanner
	b  packBounds
	st *objectStore
	// atOffset names the object (resolved) at each pack offset, for
	// offset deltas.
	atOffset map[int64]plumbing.Hash
	// depthAt is the length of the chain of deltas the object at each
	// offset was patched from (absent: sent whole). An object's chain is
	// counted by offset, not by id: a chain of deltas that all produce one
	// content is as long to resolve as any other.
	depthAt map[int64]int
	// waiting holds deltas whose base is not resolved yet, by the base's
	// offset (int64) or hash (plumbing.Hash).
	waiting map[any][]*pendingDelta
	pending int
	// commitBytes is what the objects admitted declare, for maxCommit.
	commitBytes int64
}

// pendingDelta is a delta read but not applied: its instructions, and
// where it sits in the pack.
type pendingDelta struct {
	offset int64
	target int64
	data   []byte
}

func (p *packReader) next() error {
	oh, err := p.sc.NextObjectHeader()
	if err != nil {
		return err
	}
	if err := p.b.budget.reserve(objectOverhead); err != nil {
		return err
	}
	switch oh.Type {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		if err := p.admit(oh.Type, oh.Length); err != nil {
			return err
		}
		data, err := p.inflate(oh.Length, nil)
		if err != nil {
			return err
		}
		return p.store(oh.Offset, oh.Type, data)
	case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
		return p.readDelta(oh)
	default:
		return fmt.Errorf("%w: object type %v", packfile.ErrMalformedPackFile, oh.Type)
	}
}

// admit checks an object of declared size n against the bounds, before
// any of it is inflated, and reserves it in the budget.
func (p *packReader) admit(typ plumbing.ObjectType, n int64) error {
	if n > p.b.maxObject {
		return tooLarge(fmt.Sprintf("The repository holds a %s of %d bytes, over the %d bytes allowed for one file.", typ, n, p.b.maxObject))
	}
	if p.b.maxCommit > 0 {
		if p.commitBytes+n > p.b.maxCommit {
			return tooLarge(fmt.Sprintf("The commit's files and trees are over %d bytes together.", p.b.maxCommit))
		}
		p.commitBytes += n
	}
	return p.b.budget.reserve(n)
}

// inflate reads the current object's n declared bytes. check, when set,
// sees the bytes inflated so far after each write and may stop the
// inflation.
func (p *packReader) inflate(n int64, check func([]byte) error) ([]byte, error) {
	w := &objectSink{buf: make([]byte, 0, n), check: check, inflated: p.b.budget.inflated}
	written, _, err := p.sc.NextObject(w)
	if w.err != nil {
		return nil, w.err
	}
	if err != nil {
		return nil, err
	}
	if written != n {
		return nil, fmt.Errorf("%w: an object inflates to %d bytes, not the %d declared", packfile.ErrMalformedPackFile, written, n)
	}
	return w.buf, nil
}

// objectSink collects one object's inflated bytes into a buffer of its
// declared size (the Scanner never writes past it) and counts them.
type objectSink struct {
	buf      []byte
	check    func([]byte) error
	inflated *int64Counter
	err      error
}

func (s *objectSink) Write(b []byte) (int, error) {
	if len(s.buf)+len(b) > cap(s.buf) {
		return 0, packfile.ErrInflatedSizeMismatch
	}
	s.buf = append(s.buf, b...)
	s.inflated.add(int64(len(b)))
	if s.check != nil {
		if err := s.check(s.buf); err != nil {
			s.err = err
			return 0, err
		}
	}
	return len(b), nil
}

// readDelta reads a delta's instructions — refusing on the target size in
// their header as soon as it is inflated — and applies them when the base
// is in the store, or keeps them until it is.
func (p *packReader) readDelta(oh *packfile.ObjectHeader) error {
	// The instructions of a target within maxObject: inserts cost one byte
	// per 127, and the header at most 20.
	if oh.Length > p.b.maxObject+p.b.maxObject/127+32 {
		return tooLarge(fmt.Sprintf("The repository holds a delta of %d bytes, over the %d bytes allowed for one file.", oh.Length, p.b.maxObject))
	}
	if err := p.b.budget.reserve(oh.Length); err != nil {
		return err
	}
	target := int64(-1)
	data, err := p.inflate(oh.Length, func(b []byte) error {
		if target >= 0 {
			return nil
		}
		t, ok := deltaTargetSize(b)
		if !ok {
			return nil // the header is not all inflated yet
		}
		if t > p.b.maxObject {
			return tooLarge(fmt.Sprintf("The repository holds an object of %d bytes, over the %d bytes allowed for one file.", t, p.b.maxObject))
		}
		target = t
		return nil
	})
	if err != nil {
		return err
	}
	if target < 0 {
		return fmt.Errorf("%w: a delta without its header", packfile.ErrInvalidDelta)
	}
	d := &pendingDelta{offset: oh.Offset, target: target, data: data}
	var base any = oh.Reference
	if oh.Type == plumbing.OFSDeltaObject {
		if h, ok := p.atOffset[oh.OffsetReference]; ok {
			base = h
		} else {
			base = oh.OffsetReference
		}
	}
	if h, ok := base.(plumbing.Hash); ok && p.st.has(h) {
		depth := p.st.objects[h].depth
		if oh.Type == plumbing.OFSDeltaObject {
			depth = p.depthAt[oh.OffsetReference]
		}
		return p.apply(h, depth, d)
	}
	p.waiting[base] = append(p.waiting[base], d)
	p.pending++
	return nil
}

// maxDeltaDepth bounds a chain of deltas (each against the one before).
// git's pack-objects writes chains of 50 by default and of 4,095 at most
// (its --depth is capped there), and a server reuses the deltas of its
// stored packs, so no pack git wrote holds a longer one; 10,000 leaves
// room for other servers while keeping what one chain costs to resolve
// small.
const maxDeltaDepth = 10_000

// apply patches base with d and stores the target, then the deltas
// waiting for it.
func (p *packReader) apply(base plumbing.Hash, baseDepth int, d *pendingDelta) error {
	h, err := p.patch(base, baseDepth, d)
	if err != nil {
		return err
	}
	return p.resolve(resolved{d.offset, h, baseDepth + 1})
}

// patch patches base, at the end of a chain of baseDepth deltas, with d,
// within the bounds, and stores the target.
func (p *packReader) patch(base plumbing.Hash, baseDepth int, d *pendingDelta) (plumbing.Hash, error) {
	o := p.st.objects[base]
	if baseDepth >= maxDeltaDepth {
		return plumbing.ZeroHash, tooLarge(fmt.Sprintf("The repository holds a chain of more than %d deltas.", maxDeltaDepth))
	}
	if err := p.admit(o.typ, d.target); err != nil {
		return plumbing.ZeroHash, err
	}
	data, err := packfile.PatchDelta(o.data, d.data)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if int64(len(data)) != d.target {
		return plumbing.ZeroHash, fmt.Errorf("%w: a delta produces %d bytes, not the %d declared", packfile.ErrInvalidDelta, len(data), d.target)
	}
	if cap(data) > len(data)+len(data)/8 {
		// PatchDelta's buffer grew by doubling: a file kept in a cached
		// tree would hold up to twice its size.
		data = bytes.Clone(data)
	}
	p.b.budget.inflated.add(int64(len(data)))
	return p.put(d.offset, o.typ, data, baseDepth+1), nil
}

// store puts a whole object in the store and applies the deltas waiting
// for it.
func (p *packReader) store(offset int64, typ plumbing.ObjectType, data []byte) error {
	return p.resolve(resolved{offset, p.put(offset, typ, data, 0), 0})
}

func (p *packReader) put(offset int64, typ plumbing.ObjectType, data []byte, depth int) plumbing.Hash {
	h := p.st.put(typ, data, depth)
	p.atOffset[offset] = h
	if depth > 0 {
		p.depthAt[offset] = depth
	}
	return h
}

// resolved is an object stored whose waiting deltas are still to be
// applied.
type resolved struct {
	offset int64
	hash   plumbing.Hash
	depth  int
}

// resolve applies the deltas waiting for the object just stored at
// offset, and those waiting for their targets in turn, from a work queue:
// a chain of waiting deltas is resolved in constant stack, however long.
func (p *packReader) resolve(first resolved) error {
	queue := []resolved{first}
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		// By offset, the chain of this very object; by id, the shortest
		// chain that produced its content.
		for _, base := range []struct {
			key   any
			depth int
		}{{r.offset, r.depth}, {r.hash, p.st.objects[r.hash].depth}} {
			waiting := p.waiting[base.key]
			delete(p.waiting, base.key)
			for _, d := range waiting {
				p.pending--
				h, err := p.patch(r.hash, base.depth, d)
				if err != nil {
					return err
				}
				queue = append(queue, resolved{d.offset, h, base.depth + 1})
			}
		}
	}
	return nil
}

// deltaTargetSize decodes the target size from the header of a delta's
// instructions (two little-endian base-128 numbers: the base's size, then
// the target's); ok is false while b does not hold the whole header yet.
func deltaTargetSize(b []byte) (int64, bool) {
	rest, ok := skipVarint(b)
	if !ok {
		return 0, false
	}
	var n uint64
	for i, c := range rest {
		if i >= 9 {
			return 1<<63 - 1, true // over 63 bits: over any bound
		}
		n |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return int64(n), true
		}
	}
	return 0, false
}

func skipVarint(b []byte) ([]byte, bool) {
	for i, c := range b {
		if c&0x80 == 0 {
			return b[i+1:], true
		}
	}
	return nil, false
}
