package gittest

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"os/exec"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// PackBuilder writes a pack by hand, for objects git itself would not
// write (a delta whose target is far larger than its base, say); AddPack
// stores it in a repository, and the servers then send its objects as
// they are (git reuses stored deltas).
type PackBuilder struct {
	body  bytes.Buffer
	count uint32
	zw    *zlib.Writer
}

// Object appends a whole object and returns its id and its offset in the
// pack.
func (p *PackBuilder) Object(typ plumbing.ObjectType, data []byte) (plumbing.Hash, int64) {
	off := p.header(typ, int64(len(data)))
	p.deflate(data)
	return plumbing.ComputeHash(typ, data), off
}

// OffsetDelta appends a delta (instructions in git's format) against the
// object at base and returns its offset.
func (p *PackBuilder) OffsetDelta(base int64, delta []byte) int64 {
	off := p.header(plumbing.OFSDeltaObject, int64(len(delta)))
	// The distance back to the base, in git's offset encoding.
	dist := uint64(off - base)
	enc := []byte{byte(dist & 0x7f)}
	for dist >>= 7; dist > 0; dist >>= 7 {
		dist--
		enc = append([]byte{byte(0x80 | dist&0x7f)}, enc...)
	}
	p.body.Write(enc)
	p.deflate(delta)
	return off
}

// RefDelta appends a delta against the object base (anywhere in the pack,
// or not in it: a thin pack) and returns its offset.
func (p *PackBuilder) RefDelta(base plumbing.Hash, delta []byte) int64 {
	off := p.header(plumbing.REFDeltaObject, int64(len(delta)))
	p.body.Write(base[:])
	p.deflate(delta)
	return off
}

func (p *PackBuilder) header(typ plumbing.ObjectType, size int64) int64 {
	off := int64(12 + p.body.Len())
	p.count++
	c := byte(typ)<<4 | byte(size&0x0f)
	for size >>= 4; size > 0; size >>= 7 {
		p.body.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
	}
	p.body.WriteByte(c)
	return off
}

func (p *PackBuilder) deflate(data []byte) {
	if p.zw == nil {
		p.zw = zlib.NewWriter(&p.body)
	} else {
		p.zw.Reset(&p.body)
	}
	_, _ = p.zw.Write(data)
	_ = p.zw.Close()
}

// Bytes returns the pack: header, objects and checksum.
func (p *PackBuilder) Bytes() []byte {
	var out bytes.Buffer
	out.WriteString("PACK")
	_ = binary.Write(&out, binary.BigEndian, uint32(2))
	_ = binary.Write(&out, binary.BigEndian, p.count)
	out.Write(p.body.Bytes())
	sum := sha1.Sum(out.Bytes())
	out.Write(sum[:])
	return out.Bytes()
}

// AddPack stores pack in the repository as a fetch would (git index-pack
// checks it); point a branch at its commit with Branch.
func (r *Repo) AddPack(tb testing.TB, pack []byte) {
	tb.Helper()
	cmd := exec.Command("git", "--git-dir="+r.Dir, "index-pack", "--stdin")
	cmd.Env = gitEnv(nil)
	cmd.Stdin = bytes.NewReader(pack)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("gittest: git index-pack: %v: %s", err, out)
	}
}
