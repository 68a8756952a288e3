package render

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The request stream on the child's stdin: a magic word, the length of a
// JSON header (the request without its files, and each file's tree, name
// and size in order) as a big-endian uint32, the header, then the raw bytes
// of every file in the header's order, then the end of the stream. The
// parent writes the files from its own slices (no base64, no copy of the
// tree in its heap, nothing on disk); the child trusts none of the header's
// numbers beyond the caps below.
const (
	wireMagic = "KUKIERQ1"
	// MaxWireHeaderBytes bounds the header (file names and the source).
	MaxWireHeaderBytes = 64 << 20
	// MaxWireFiles bounds the files of a request, ref trees included.
	MaxWireFiles = 1 << 20
	// MaxWireTreeBytes bounds the file bytes of a request, ref trees
	// included: four trees at gitrepo's 256 MiB.
	MaxWireTreeBytes = 1 << 30
)

// ErrMalformedRequest is the cause of every refusal of a request stream.
var ErrMalformedRequest = errors.New("malformed render request")

// wireHeader is everything of a Request but the file contents.
type wireHeader struct {
	Request Request    `json:"request"`
	Files   []wireFile `json:"files"`
}

// wireFile is one file of the stream: Ref is "" for the source's own tree,
// else the ref tree it belongs to.
type wireFile struct {
	Ref  string `json:"ref,omitempty"`
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// WriteRequest writes req to w in the stream format: the header, then each
// file's bytes straight from req's slices (small ones gathered in one 64 KiB
// buffer), so the tree is never copied.
func WriteRequest(w io.Writer, req Request) error {
	h := wireHeader{Request: req, Files: []wireFile{}}
	h.Request.Files, h.Request.RefFiles = nil, nil
	var total int64
	add := func(ref string, files map[string][]byte) {
		for _, name := range sortedNames(files) {
			size := int64(len(files[name]))
			h.Files = append(h.Files, wireFile{Ref: ref, Name: name, Size: size})
			total += size
		}
	}
	add("", req.Files)
	for _, ref := range sortedNames(req.RefFiles) {
		add(ref, req.RefFiles[ref])
	}
	if len(h.Files) > MaxWireFiles || total > MaxWireTreeBytes {
		return fmt.Errorf("the trees to render (%d files, %d bytes) exceed the limits of %d files and %d bytes",
			len(h.Files), total, MaxWireFiles, MaxWireTreeBytes)
	}
	head, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encoding render request: %w", err)
	}
	if len(head) > MaxWireHeaderBytes {
		return fmt.Errorf("the render request's header (%d bytes) exceeds the limit of %d bytes", len(head), MaxWireHeaderBytes)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(head)))
	_, _ = bw.WriteString(wireMagic)
	_, _ = bw.Write(n[:])
	_, _ = bw.Write(head)
	for _, f := range h.Files {
		files := req.Files
		if f.Ref != "" {
			files = req.RefFiles[f.Ref]
		}
		// bufio writes a slice at least as large as its buffer straight
		// through when the buffer is empty, and copies smaller ones.
		if _, err := bw.Write(files[f.Name]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadRequest reads one request stream written by WriteRequest, refusing
// (ErrMalformedRequest) a wrong magic word, a header beyond the caps, names
// that are empty or repeated, sizes that are negative or add up beyond
// MaxWireTreeBytes, a stream that ends early and bytes after the last file.
func ReadRequest(r io.Reader) (Request, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var pre [len(wireMagic) + 4]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return Request{}, malformed("reading the stream's start: %v", err)
	}
	if string(pre[:len(wireMagic)]) != wireMagic {
		return Request{}, malformed("the stream does not start with %q", wireMagic)
	}
	size := binary.BigEndian.Uint32(pre[len(wireMagic):])
	if size > MaxWireHeaderBytes {
		return Request{}, malformed("the header claims %d bytes, above the limit of %d", size, MaxWireHeaderBytes)
	}
	head := make([]byte, size)
	if _, err := io.ReadFull(br, head); err != nil {
		return Request{}, malformed("reading the header: %v", err)
	}
	var h wireHeader
	if err := json.Unmarshal(head, &h); err != nil {
		return Request{}, malformed("decoding the header: %v", err)
	}
	if len(h.Files) > MaxWireFiles {
		return Request{}, malformed("%d files, above the limit of %d", len(h.Files), MaxWireFiles)
	}
	var total int64
	for _, f := range h.Files {
		if f.Size < 0 || f.Size > MaxWireTreeBytes-total {
			return Request{}, malformed("file sizes add up beyond the limit of %d bytes", int64(MaxWireTreeBytes))
		}
		total += f.Size
	}
	req := h.Request
	req.Files, req.RefFiles = map[string][]byte{}, nil
	for _, f := range h.Files {
		files := req.Files
		if f.Ref != "" {
			if req.RefFiles == nil {
				req.RefFiles = map[string]map[string][]byte{}
			}
			if files = req.RefFiles[f.Ref]; files == nil {
				files = map[string][]byte{}
				req.RefFiles[f.Ref] = files
			}
		}
		if f.Name == "" || strings.ContainsRune(f.Name, 0) {
			return Request{}, malformed("a file without a valid name")
		}
		if _, dup := files[f.Name]; dup {
			return Request{}, malformed("file %q appears twice", f.Name)
		}
		data := make([]byte, f.Size)
		if _, err := io.ReadFull(br, data); err != nil {
			return Request{}, malformed("reading %q (%d bytes): %v", f.Name, f.Size, err)
		}
		files[f.Name] = data
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return Request{}, malformed("bytes after the last file")
	}
	return req, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedRequest, fmt.Sprintf(format, args...))
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
