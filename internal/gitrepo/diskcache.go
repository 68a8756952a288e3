package gitrepo

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync"
	"time"
)

// diskMagic opens every cache file; the version in it changes with the
// format, so an old file reads as corrupt and is refetched.
const diskMagic = "kukie-gitrepo-tree-v1\n"

// diskCache keeps trees on disk across restarts, one file per (identity,
// commit): <dir>/<sha256(identity)>/<commit>, written through a temporary
// file and a rename. A file is the magic, the SHA-256 of the payload, and
// the payload (a gob of diskTree). Every name under dir is a hash; all
// access goes through an os.Root, so nothing outside dir is reached and no
// symbolic link is created. Least recently used files go first once the
// files exceed max bytes; use is the file's mtime, touched on every read,
// so the order survives a restart.
type diskCache struct {
	root *os.Root
	max  int64
	now  func() time.Time

	mu      sync.Mutex
	entries map[string]diskEntry // by name, "<idhash>/<commit>"
	total   int64
}

type diskEntry struct {
	size int64
	used time.Time
}

// diskTree is what a cache file holds: the regular files and the links as
// written. Link resolution and Bytes are recomputed on load.
type diskTree struct {
	Commit string
	Files  map[string][]byte
	Links  map[string]string
}

// openDiskCache creates dir if needed and indexes the files already in it.
func openDiskCache(dir string, max int64, now func() time.Time) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	c := &diskCache{root: root, max: max, now: now, entries: map[string]diskEntry{}}
	fsys := root.FS()
	ids, err := fs.ReadDir(fsys, ".")
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	for _, id := range ids {
		if !id.IsDir() || !isHexName(id.Name(), 64) {
			continue
		}
		files, err := fs.ReadDir(fsys, id.Name())
		if err != nil {
			continue
		}
		for _, file := range files {
			name := path.Join(id.Name(), file.Name())
			if !file.Type().IsRegular() || !isHexName(file.Name(), 40) {
				continue // temporary files of an interrupted write, or not ours
			}
			info, err := file.Info()
			if err != nil {
				continue
			}
			c.entries[name] = diskEntry{size: info.Size(), used: info.ModTime()}
			c.total += info.Size()
		}
	}
	c.mu.Lock()
	victims := c.evictLocked()
	c.mu.Unlock()
	c.remove(victims)
	return c, nil
}

func isHexName(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func diskName(identity, commit string) string {
	h := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(h[:]) + "/" + commit
}

// get returns the cached tree of (identity, commit), or false. A file that
// cannot be read or fails its checksum is removed: the caller refetches.
func (c *diskCache) get(identity, commit string) (*Tree, bool) {
	name := diskName(identity, commit)
	c.mu.Lock()
	_, ok := c.entries[name]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	t, err := c.read(name, commit)
	if err != nil {
		c.drop(name)
		return nil, false
	}
	now := c.now()
	_ = c.root.Chtimes(name, now, now)
	c.mu.Lock()
	if e, ok := c.entries[name]; ok {
		e.used = now
		c.entries[name] = e
	}
	c.mu.Unlock()
	return t, true
}

func (c *diskCache) read(name, commit string) (*Tree, error) {
	info, err := c.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > c.max {
		return nil, errors.New("not a cache file")
	}
	data, err := c.root.ReadFile(name)
	if err != nil {
		return nil, err
	}
	payload, ok := bytes.CutPrefix(data, []byte(diskMagic))
	if !ok || len(payload) < sha256.Size {
		return nil, errors.New("cache file without its header")
	}
	sum, payload := payload[:sha256.Size], payload[sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("cache file checksum mismatch")
	}
	var d diskTree
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&d); err != nil {
		return nil, err
	}
	if d.Commit != commit {
		return nil, fmt.Errorf("cache file holds commit %s", d.Commit)
	}
	t := &Tree{Commit: commit, Files: make(map[string][]byte, len(d.Files)), Symlinks: make(map[string]Symlink, len(d.Links))}
	for name, data := range d.Files {
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("cache file holds the path %q", name)
		}
		t.Files[name] = data
		t.Bytes += fileCost(name, data)
	}
	for name, target := range d.Links {
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("cache file holds the path %q", name)
		}
		if data, ok := t.Files[name]; ok {
			t.Bytes -= fileCost(name, data)
		}
		delete(t.Files, name) // a link is never also a file
		t.Symlinks[name] = Symlink{Target: target}
		t.Bytes += linkCost(name, target)
	}
	resolveLinks(t)
	return t, nil
}

// touch marks (identity, commit) used now, when a tree is served from
// memory, so a tree hot in memory is not the first out on disk. The file's
// mtime is written at most once a minute per entry.
func (c *diskCache) touch(identity, commit string) {
	name := diskName(identity, commit)
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[name]
	stale := ok && now.Sub(e.used) >= time.Minute
	if stale {
		e.used = now
		c.entries[name] = e
	}
	c.mu.Unlock()
	if stale {
		_ = c.root.Chtimes(name, now, now)
	}
}

// put writes t as (identity, commit), then evicts the least recently used
// files past the bound. Failures leave the cache without the entry.
func (c *diskCache) put(identity string, t *Tree) error {
	d := diskTree{Commit: t.Commit, Files: make(map[string][]byte, len(t.Files)), Links: make(map[string]string, len(t.Symlinks))}
	for name, data := range t.Files {
		if _, isLink := t.Symlinks[name]; !isLink {
			d.Files[name] = data
		}
	}
	for name, l := range t.Symlinks {
		d.Links[name] = l.Target
	}
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(&d); err != nil {
		return err
	}
	sum := sha256.Sum256(payload.Bytes())
	size := int64(len(diskMagic) + len(sum) + payload.Len())
	if size > c.max {
		return errors.New("tree larger than the whole cache")
	}

	name := diskName(identity, t.Commit)
	dir := path.Dir(name)
	if err := c.root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	tmp := path.Join(dir, ".tmp-"+rand.Text())
	f, err := c.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(diskMagic))
	if err == nil {
		_, err = f.Write(sum[:])
	}
	if err == nil {
		_, err = f.Write(payload.Bytes())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	now := c.now()
	if err == nil {
		err = c.root.Chtimes(tmp, now, now)
	}
	if err == nil {
		err = c.root.Rename(tmp, name)
	}
	if err != nil {
		_ = c.root.Remove(tmp)
		return err
	}

	c.mu.Lock()
	if old, ok := c.entries[name]; ok {
		c.total -= old.size
	}
	c.entries[name] = diskEntry{size: size, used: now}
	c.total += size
	victims := c.evictLocked()
	c.mu.Unlock()
	c.remove(victims)
	return nil
}

// evictLocked takes the least recently used entries out of the index until
// the total is within the bound, and returns their names for removal.
func (c *diskCache) evictLocked() []string {
	var victims []string
	for c.total > c.max && len(c.entries) > 0 {
		var oldest string
		var at time.Time
		for name, e := range c.entries {
			if oldest == "" || e.used.Before(at) || e.used.Equal(at) && name < oldest {
				oldest, at = name, e.used
			}
		}
		c.total -= c.entries[oldest].size
		delete(c.entries, oldest)
		victims = append(victims, oldest)
	}
	return victims
}

// drop removes a bad entry from the index and the disk.
func (c *diskCache) drop(name string) {
	c.mu.Lock()
	if e, ok := c.entries[name]; ok {
		c.total -= e.size
		delete(c.entries, name)
	}
	c.mu.Unlock()
	c.remove([]string{name})
}

func (c *diskCache) remove(names []string) {
	for _, name := range names {
		_ = c.root.Remove(name)
		_ = c.root.Remove(path.Dir(name)) // only when empty
	}
}
