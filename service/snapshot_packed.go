package service

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/klauspost/compress/zstd"
)

// A cached snapshot keeps one form of its apps. It is served decoded —
// the apps, the id index, the status.resources index and the list JSON —
// while it is among the hot ones (an LRU per cache); when it falls out
// while still its cluster's snapshot it is packed (gob, then zstd: about
// a tenth of the decoded form) and the decoded form dropped. A list hit,
// a detail or a detection on such a snapshot decodes it again (well under
// a millisecond for 100 apps). A replaced or evicted snapshot is retired:
// never packed, garbage once its last reader is done.
//
// zstd (klauspost/compress, already in the module graph through Helm)
// because it decodes several times faster than gzip at a better ratio;
// gob because it encodes every exported field, as the shared rows do.

// decodedApps is the decoded form of a snapshot's apps.
type decodedApps struct {
	apps []Application
	byID map[string]int
	// list is apps encoded for the list response, so hits are not
	// re-encoded while the snapshot is hot.
	list []byte
	// listed maps each status.resources identity to the indexes (in apps)
	// of the apps listing it, each app once, built on the first Listing
	// call: only detection needs it.
	listedOnce sync.Once
	listed     map[resourceIdentity][]int
}

func newDecoded(apps []Application, list []byte) *decodedApps {
	d := &decodedApps{apps: apps, list: list, byID: make(map[string]int, len(apps))}
	for i, a := range apps {
		d.byID[a.ID] = i
	}
	return d
}

// hotSnapshots keeps the decoded form of the most recently used
// snapshots; an evicted snapshot drops it (its packed form stays).
type hotSnapshots struct {
	lru *lru.Cache[*Snapshot, struct{}]
}

// DefaultHotSnapshots is how many snapshots keep their decoded form: at
// 100 apps, ~2 KiB an app decoded, 64 take ~13 MiB.
const DefaultHotSnapshots = 64

func newHotSnapshots(size int) (*hotSnapshots, error) {
	c, err := lru.NewWithEvict(size, func(s *Snapshot, _ struct{}) { s.cool() })
	if err != nil {
		return nil, err
	}
	return &hotSnapshots{lru: c}, nil
}

// Codecs shared by every snapshot: EncodeAll and DecodeAll are safe for
// concurrent use.
var (
	packEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true))
	packDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true))
)

// packApps encodes apps into the packed form.
func packApps(apps []Application) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(apps); err != nil {
		return nil, fmt.Errorf("pack applications: %w", err)
	}
	return packEncoder.EncodeAll(buf.Bytes(), make([]byte, 0, buf.Len()/6)), nil
}

// unpackApps decodes the packed form (the empty slices gob drops given back).
func unpackApps(packed []byte) ([]Application, error) {
	raw, err := packDecoder.DecodeAll(packed, nil)
	if err != nil {
		return nil, fmt.Errorf("unpack applications: %w", err)
	}
	apps := []Application{}
	if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&apps); err != nil {
		return nil, fmt.Errorf("unpack applications: %w", err)
	}
	for i := range apps {
		restoreEmpty(&apps[i])
	}
	return apps, nil
}

// pack makes the packed form from the decoded one, then drops the decoded
// form if the snapshot is still out of the hot ones. A pack that fails (it
// cannot: gob encodes these structs) leaves the decoded form in place.
func (s *Snapshot) pack() {
	d := s.decoded.Load()
	if d == nil {
		return
	}
	packed, err := packApps(d.apps)
	s.mu.Lock()
	s.packing = false
	if err == nil {
		s.packed = packed
	}
	s.mu.Unlock()
	if err == nil && (s.hot == nil || !s.hot.lru.Contains(s)) {
		s.cool()
	}
}

// cool is what happens to a snapshot that left the hot ones: a retired
// one keeps its decoded form for the readers still holding it (then it is
// garbage); a packed one drops it; another is packed in the background,
// then drops it.
func (s *Snapshot) cool() {
	if s.retired.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.packed != nil {
		s.decoded.Store(nil)
		return
	}
	if !s.packing {
		s.packing = true
		go s.pack()
	}
}

// retire takes a snapshot that left the cache out of the hot ones.
func (h *hotSnapshots) retire(s *Snapshot) {
	s.retired.Store(true)
	h.lru.Remove(s)
}

// apps returns the decoded form, decoding the packed one when the
// snapshot is not hot, and marks the snapshot recently used (never under
// mu: touching may cool another snapshot, which takes that one's mu).
func (s *Snapshot) apps() *decodedApps {
	d := s.decoded.Load()
	if d == nil {
		d = s.decode()
	}
	s.touch()
	return d
}

// decode unpacks the apps once for concurrent callers. A packed form that
// does not decode (this process encoded it: it cannot happen) yields no
// apps.
func (s *Snapshot) decode() *decodedApps {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.decoded.Load(); d != nil {
		return d
	}
	apps, err := unpackApps(s.packed)
	if err != nil {
		apps = []Application{}
	}
	d := newDecoded(apps, nil)
	s.decoded.Store(d)
	return d
}

// keepHot makes a new snapshot one of the cache's hot ones: it is served
// decoded, and packed only if it falls out of the hot ones while still
// the cluster's snapshot (off every request's path).
func (c *SnapshotCache) keepHot(s *Snapshot) {
	s.hot = c.hot
	if s.hasApps {
		s.touch()
	}
}

// touch marks the snapshot recently used among the hot ones.
func (s *Snapshot) touch() {
	if s.hot != nil && !s.retired.Load() {
		s.hot.lru.Add(s, struct{}{})
	}
}

// Apps returns the snapshot's apps, problems first. They are shared by
// every caller: read them, never change them.
func (s *Snapshot) Apps() []Application {
	if !s.hasApps {
		return []Application{}
	}
	return s.apps().apps
}

// ListJSON returns the apps encoded for the list response (the bytes a
// cache hit writes), encoding them again when the snapshot was not hot.
func (s *Snapshot) ListJSON() []byte {
	if !s.hasApps {
		return []byte("[]")
	}
	d := s.apps()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.list == nil {
		b, err := json.Marshal(d.apps)
		if err != nil {
			b = []byte("[]") // encoded once at build already: cannot happen
		}
		d.list = b
	}
	return d.list
}
