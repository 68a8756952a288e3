package argocd

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// walker reads one JSON document member by member, the way the map reads
// it did: a value of an unexpected type reads as absent and is skipped, so
// a wrong field spoils only itself. Names match exactly (case-sensitive,
// like map keys); when a name repeats, the last one wins because every
// object is read into a fresh value that replaces the earlier one. Only a
// syntax error stops the walk; it is kept in err and every later read is a
// no-op.
type walker struct {
	dec     *jsontext.Decoder
	src     bytes.Buffer // what dec reads, in place
	scratch []byte       // unquoted text that had escapes
	err     error
}

// decodeOptions accept what encoding/json accepted: repeated names (the
// last wins) and invalid UTF-8 (replaced, see text).
var decodeOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// reset points the walker at doc, which is read in place and must not
// change until the walk is done.
func (w *walker) reset(doc []byte) {
	w.src = *bytes.NewBuffer(doc)
	if w.dec == nil {
		w.dec = jsontext.NewDecoder(&w.src, decodeOptions...)
	} else {
		w.dec.Reset(&w.src, decodeOptions...)
	}
	w.err = nil
}

func (w *walker) fail(err error) {
	if w.err == nil && err != nil {
		w.err = err
	}
}

// kind is the kind of the next value, 0 after an error.
func (w *walker) kind() jsontext.Kind {
	if w.err != nil {
		return 0
	}
	return w.dec.PeekKind()
}

// skip discards the next value. ReadValue scans a whole value at once,
// which is faster than SkipValue's token by token; the document is in
// memory anyway.
func (w *walker) skip() {
	if w.err == nil {
		_, err := w.dec.ReadValue()
		w.fail(err)
	}
}

func (w *walker) token() {
	if w.err == nil {
		_, err := w.dec.ReadToken()
		w.fail(err)
	}
}

// value returns the next value's exact bytes, valid until the next read.
func (w *walker) value() []byte {
	if w.err != nil {
		return nil
	}
	v, err := w.dec.ReadValue()
	w.fail(err)
	return v
}

// object calls member with each name of the next value when it is an
// object (member must read or skip the name's value) and reports whether it
// was one; any other value is skipped. The name is valid until the next
// read.
func (w *walker) object(member func(name []byte)) bool {
	if w.kind() != '{' {
		w.skip()
		return false
	}
	w.token()
	for w.err == nil && w.dec.PeekKind() != '}' {
		name := w.unquote(w.value())
		if w.err != nil {
			break
		}
		member(name)
	}
	w.token()
	return w.err == nil
}

// array calls elem for each element of the next value when it is an array
// (elem must read or skip it) and reports whether it was one.
func (w *walker) array(elem func()) bool {
	if w.kind() != '[' {
		w.skip()
		return false
	}
	w.token()
	for w.err == nil && w.dec.PeekKind() != ']' {
		elem()
	}
	w.token()
	return w.err == nil
}

// text returns the next value when it is a string (nil and false for any
// other type), valid until the next read.
func (w *walker) text() ([]byte, bool) {
	if w.kind() != '"' {
		w.skip()
		return nil, false
	}
	v := w.value()
	if w.err != nil {
		return nil, false
	}
	return w.unquote(v), true
}

// unquote returns a quoted JSON string's text. Text with escapes or invalid
// UTF-8 is decoded by encoding/json, whose rules (U+FFFD for invalid bytes
// and lone surrogates) the dynamic client's decoder followed.
func (w *walker) unquote(v []byte) []byte {
	if len(v) < 2 {
		return nil
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		w.fail(err)
		return nil
	}
	w.scratch = append(w.scratch[:0], s...)
	return w.scratch
}

// boolean reads the next value: true only for the literal true.
func (w *walker) boolean() bool {
	if w.kind() != 't' {
		w.skip()
		return false
	}
	w.token()
	return true
}

// count reads an array and returns its length (0 for any other type).
func (w *walker) count() int {
	n := 0
	w.array(func() { n++; w.skip() })
	return n
}

// strings reads an array's string elements, skipping the others; it always
// returns a non-nil slice.
func (w *walker) strings(intern func([]byte) string) []string {
	out := []string{}
	w.array(func() {
		if s, ok := w.text(); ok {
			out = append(out, intern(s))
		}
	})
	return out
}

// integer reads a number the way the dynamic client decoded it into an
// int64 or a float64 (sigs.k8s.io/json PreserveInts: an int64 unless it has
// a fraction, an exponent or overflows) and converts it to an int64; any
// other type is 0.
func (w *walker) integer() int64 {
	if w.kind() != '0' {
		w.skip()
		return 0
	}
	v := w.value()
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && bytes.IndexByte(v, '.') < 0 {
		return n
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0
	}
	return int64(f)
}
