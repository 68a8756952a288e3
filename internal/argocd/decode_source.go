package argocd

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kukie/gitops-server/service"
)

// sourceList is a list of source objects: n counts its elements of any
// type (an array of junk still replaces spec.source), sources the objects.
type sourceList struct {
	n       int
	sources []service.AppSource
}

func (d *ApplicationDecoder) sourceList() sourceList {
	w := &d.w
	out := sourceList{sources: []service.AppSource{}}
	w.array(func() {
		out.n++
		if src, ok := d.sourceValue(); ok {
			out.sources = append(out.sources, src.AppSource)
		}
	})
	return out
}

// parsedSource is a source and how many members its object has.
type parsedSource struct {
	service.AppSource
	members int
}

// sourceValue reads the next value as a source; false when it is not an
// object.
func (d *ApplicationDecoder) sourceValue() (parsedSource, bool) {
	w := &d.w
	if w.kind() != '{' {
		w.skip()
		return parsedSource{}, false
	}
	raw := w.value()
	if w.err != nil {
		return parsedSource{}, false
	}
	if src, ok := d.plainSource(raw); ok {
		return src, true
	}
	// The source's text is not what encoding/json writes, or its repoURL
	// changes: build the spec from the map, as the dynamic client's object
	// gave it.
	var m map[string]any
	_ = utiljson.Unmarshal(raw, &m)
	return parsedSource{AppSource: d.internSource(sourceFromMap(m)), members: len(m)}, true
}

// plainSource reads a source object whose text already is its spec: what
// encoding/json.Marshal writes for it (the API server writes objects so),
// with a repoURL that carries no credentials. Spec is then a copy of raw,
// identical to marshalling the object read as a map.
func (d *ApplicationDecoder) plainSource(raw []byte) (parsedSource, bool) {
	if !marshalledText(raw) {
		return parsedSource{}, false
	}
	s := &d.sub
	s.reset(raw)
	var out parsedSource
	ok := true
	var prev []byte
	s.object(func(name []byte) {
		if out.members > 0 && bytes.Compare(prev, name) >= 0 {
			ok = false // not in encoding/json's order, or repeated
		}
		out.members++
		prev = append(prev[:0], name...)
		if s.kind() != '"' {
			// A repoURL of another type becomes "" in the spec.
			plain := s.canonical()
			ok = ok && plain && string(prev) != "repoURL"
			return
		}
		t, _ := s.text()
		switch string(prev) {
		case "repoURL":
			out.RepoURL = d.in.shared(t)
			ok = ok && service.StripRepoCredentials(out.RepoURL) == out.RepoURL
		case "path":
			out.Path = d.in.local(t)
		case "chart":
			out.Chart = d.in.shared(t)
		case "targetRevision":
			out.TargetRevision = d.in.shared(t)
		case "ref":
			out.Ref = d.in.shared(t)
		}
	})
	if !ok || s.err != nil {
		return parsedSource{}, false
	}
	out.Spec = d.in.spec(raw)
	return out, true
}

// canonical reads the next value and reports whether encoding/json would
// write it as it is, given marshalledText: objects' names in its (byte)
// order without repeats, and numbers as int64s (the dynamic client reads
// other numbers as float64s, which may print differently).
func (w *walker) canonical() bool {
	switch w.kind() {
	case '{':
		ok := true
		var prev []byte
		first := true
		w.object(func(name []byte) {
			if !first && bytes.Compare(prev, name) >= 0 {
				ok = false
			}
			first = false
			prev = append(prev[:0], name...)
			ok = w.canonical() && ok
		})
		return ok
	case '[':
		ok := true
		w.array(func() { ok = w.canonical() && ok })
		return ok
	case '0':
		v := w.value()
		_, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil && string(v) != "-0"
	}
	w.skip()
	return true
}

var (
	lineSeparator      = []byte("\u2028")
	paragraphSeparator = []byte("\u2029")
)

// marshalledText reports whether raw's text is as encoding/json.Marshal
// writes it, as far as bytes go: no space between tokens, and strings
// without escapes or the characters Marshal escapes (<, > and & for HTML,
// U+2028, U+2029, invalid UTF-8). Names' order and numbers are left to
// canonical.
func marshalledText(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) ||
		bytes.Contains(raw, lineSeparator) || bytes.Contains(raw, paragraphSeparator) {
		return false
	}
	inString := false
	for _, c := range raw {
		switch {
		case c == '"':
			inString = !inString
		case inString:
			if c == '<' || c == '>' || c == '&' {
				return false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// internSource shares a source's strings and spec with the read's others.
func (d *ApplicationDecoder) internSource(src service.AppSource) service.AppSource {
	src.RepoURL = d.in.shared([]byte(src.RepoURL))
	src.Path = d.in.local([]byte(src.Path))
	src.Chart = d.in.shared([]byte(src.Chart))
	src.TargetRevision = d.in.shared([]byte(src.TargetRevision))
	src.Ref = d.in.shared([]byte(src.Ref))
	if src.Spec != nil {
		src.Spec = d.in.spec(src.Spec)
	}
	return src
}
