package gitrepo

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

var _ storer.EncodedObjectStorer = (*objectStore)(nil)

// objectStore holds the objects of one pack, read-only once the pack is
// read: go-git's object package reads commits and trees through it, and a
// tree's files share its blobs' bytes (no copy).
type objectStore struct {
	objects map[plumbing.Hash]*storedObject
}

type storedObject struct {
	typ  plumbing.ObjectType
	data []byte
	// depth is the length of the chain of deltas it was patched from: 0
	// for an object sent whole.
	depth int
}

func newObjectStore(count uint32) *objectStore {
	return &objectStore{objects: make(map[plumbing.Hash]*storedObject, min(count, 1<<16))}
}

// put stores an object patched from a chain of depth deltas and returns
// its id; an object stored twice keeps its shorter chain.
func (s *objectStore) put(typ plumbing.ObjectType, data []byte, depth int) plumbing.Hash {
	h := plumbing.ComputeHash(typ, data)
	if o, ok := s.objects[h]; !ok {
		s.objects[h] = &storedObject{typ: typ, data: data, depth: depth}
	} else if depth < o.depth {
		o.depth = depth
	}
	return h
}

func (s *objectStore) has(h plumbing.Hash) bool {
	_, ok := s.objects[h]
	return ok
}

// blob returns the content of the blob h.
func (s *objectStore) blob(h plumbing.Hash) ([]byte, bool) {
	o, ok := s.objects[h]
	if !ok || o.typ != plumbing.BlobObject {
		return nil, false
	}
	return o.data, true
}

var errReadOnly = errors.New("gitrepo: the object store is read-only")

// NewEncodedObject implements storer.EncodedObjectStorer.
func (s *objectStore) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject implements storer.EncodedObjectStorer; the store is
// filled by readPack only.
func (s *objectStore) SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error) {
	return plumbing.ZeroHash, errReadOnly
}

// EncodedObject implements storer.EncodedObjectStorer.
func (s *objectStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok := s.objects[h]
	if !ok || t != plumbing.AnyObject && t != o.typ {
		return nil, plumbing.ErrObjectNotFound
	}
	return &encodedObject{hash: h, obj: o}, nil
}

// IterEncodedObjects implements storer.EncodedObjectStorer; nothing here
// iterates.
func (s *objectStore) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errors.New("gitrepo: the object store is not iterable")
}

// HasEncodedObject implements storer.EncodedObjectStorer.
func (s *objectStore) HasEncodedObject(h plumbing.Hash) error {
	if !s.has(h) {
		return plumbing.ErrObjectNotFound
	}
	return nil
}

// EncodedObjectSize implements storer.EncodedObjectStorer.
func (s *objectStore) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	o, ok := s.objects[h]
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	return int64(len(o.data)), nil
}

// AddAlternate implements storer.EncodedObjectStorer.
func (s *objectStore) AddAlternate(string) error { return errReadOnly }

// encodedObject is a stored object as go-git reads it.
type encodedObject struct {
	hash plumbing.Hash
	obj  *storedObject
}

func (o *encodedObject) Hash() plumbing.Hash             { return o.hash }
func (o *encodedObject) Type() plumbing.ObjectType       { return o.obj.typ }
func (o *encodedObject) SetType(plumbing.ObjectType)     {}
func (o *encodedObject) Size() int64                     { return int64(len(o.obj.data)) }
func (o *encodedObject) SetSize(int64)                   {}
func (o *encodedObject) Writer() (io.WriteCloser, error) { return nil, errReadOnly }
func (o *encodedObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.obj.data)), nil
}

// tree returns the bytes of the tree object h.
func (s *objectStore) tree(h plumbing.Hash) ([]byte, bool) {
	o, ok := s.objects[h]
	if !ok || o.typ != plumbing.TreeObject {
		return nil, false
	}
	return o.data, true
}
