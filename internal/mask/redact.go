package mask

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// Redactions are the secret values one masking run replaced by Marker (each
// at least minSecretLen bytes). A request that masks an app's inputs and
// outputs merges its Redactions and cuts them from every other text it
// returns or logs — render errors, notes, tool results — because a tool's
// message may quote a value (a values.schema.json pattern error, Helm's
// fail) that masking removed from the files themselves.
type Redactions []string

// add records v (trimmed) when it is long enough to cut safely.
func (r *Redactions) add(v string) {
	v = strings.TrimSpace(v)
	if len(v) >= minSecretLen && v != Marker && !strings.Contains(Marker, v) {
		*r = append(*r, v)
	}
}

// Merge returns r with the values of others, each once.
func (r Redactions) Merge(others ...Redactions) Redactions {
	out := slices.Clone(r)
	for _, o := range others {
		out = append(out, o...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Apply cuts r from one text (see Redactor.Redact). It compiles r each
// time: to cut the same set from several texts, Compile it once.
func (r Redactions) Apply(text string) string {
	return r.Compile().Redact(text)
}

// Bounds of one compiled set. A tenant decides how many values a render
// masks (a Secret with 100,000 keys), and the set is kept with the render
// in memory: past either bound the set is not compiled, and every text it
// should be cut from is replaced whole by Marker, since it cannot be
// checked.
const (
	maxRedactions     = 10_000
	maxRedactionBytes = 128 << 10
)

// Bounded returns r cut to what a compiled set's bounds can tell apart, for
// a process that sends its set to another (a render child): r itself when it
// is within maxRedactions and maxRedactionBytes, else its first values up
// to one past a bound (the last cut to one byte past the byte bound), which
// still overflows when compiled, so the receiver's set fails closed as r's
// would. At most maxRedactions+1 values and maxRedactionBytes+minSecretLen
// bytes.
func (r Redactions) Bounded() Redactions {
	var out Redactions
	n, size := 0, 0
	for _, v := range r {
		if len(v) < minSecretLen {
			continue
		}
		n, size = n+1, size+len(v)
		if n > maxRedactions {
			return append(out, v)
		}
		if size > maxRedactionBytes {
			// One byte past the bound, and never shorter than a value
			// Compile keeps.
			keep := max(len(v)-(size-maxRedactionBytes)+1, minSecretLen)
			return append(out, v[:keep])
		}
		out = append(out, v)
	}
	return out
}

// redactorBytesPerValueByte estimates what a compiled set keeps per byte of
// its values: four forms (the value, two base64 spellings, the JSON escape:
// ~3.7 times its length) at ~17 bytes per automaton state. At
// maxRedactionBytes a set keeps ~8 MiB.
const redactorBytesPerValueByte = 64

// Redactor cuts a set of Redactions, each value also in its base64 and
// JSON-escaped forms, from texts. It is built once per set (Compile) and
// then costs time linear in each text, whatever the size of the set; the
// automaton is built on first use. Joined redactors cut all their sets in
// one pass. A nil *Redactor cuts nothing. It is safe for concurrent use.
type Redactor struct {
	sets   []*compiledSet
	others []TextRedactor // joined redactors that are not compiled sets
}

// compiledSet is one Redactions' automaton, built once.
type compiledSet struct {
	values   Redactions
	once     sync.Once
	ac       *automaton // nil when no value is long enough
	overflow bool       // past maxRedactions or maxRedactionBytes
	bytes    int64      // estimate of what the built set keeps (Bytes)
}

// Compile returns the Redactor of r.
func (r Redactions) Compile() *Redactor {
	var values Redactions
	for _, v := range r {
		if len(v) >= minSecretLen {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return &Redactor{}
	}
	size := 0
	for _, v := range values {
		size += len(v)
	}
	var kept int64
	if len(values) <= maxRedactions && size <= maxRedactionBytes {
		kept = int64(size)*redactorBytesPerValueByte + 16*int64(len(values))
	}
	return &Redactor{sets: []*compiledSet{{values: values, bytes: kept}}}
}

// Bytes estimates the memory the redactor's sets keep once built, for a
// cache that holds it beside the render it belongs to (a tenant decides how
// many values a render masks). A set past the bounds keeps nothing.
func (r *Redactor) Bytes() int64 {
	if r == nil {
		return 0
	}
	var n int64
	for _, s := range r.sets {
		n += s.bytes
	}
	return n
}

// TextRedactor is anything that cuts secrets from a text.
type TextRedactor interface {
	Redact(text string) string
}

// Join returns a Redactor cutting what each of rs cuts, compiling nothing.
// The sets of compiled redactors (*Redactor) are cut in one pass, so values
// of two sets overlapping in a text are both cut whole; other redactors
// then cut the result, in order.
func Join(rs ...TextRedactor) *Redactor {
	out := &Redactor{}
	for _, r := range rs {
		switch r := r.(type) {
		case nil:
		case *Redactor:
			if r != nil {
				out.sets = append(out.sets, r.sets...)
				out.others = append(out.others, r.others...)
			}
		default:
			out.others = append(out.others, r)
		}
	}
	return out
}

// Redact replaces every occurrence of every value of the redactor's sets in
// text, in any of its forms, by Marker.
func (r *Redactor) Redact(text string) string {
	if r == nil || text == "" {
		return text
	}
	var spans []span
	for _, s := range r.sets {
		s.once.Do(s.build)
		if s.overflow {
			return Marker
		}
		if s.ac != nil {
			spans = s.ac.spans(text, spans)
		}
	}
	text = cut(text, spans)
	for _, o := range r.others {
		text = o.Redact(text)
	}
	return text
}

// build compiles the set's forms into its automaton.
func (s *compiledSet) build() {
	size := 0
	for _, v := range s.values {
		size += len(v)
	}
	if len(s.values) > maxRedactions || size > maxRedactionBytes {
		s.overflow, s.values = true, nil
		return
	}
	forms := make([]string, 0, 3*len(s.values))
	for _, v := range s.values {
		forms = append(forms, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)))
		if b, err := json.Marshal(v); err == nil && len(b) > len(v)+2 {
			forms = append(forms, string(b[1:len(b)-1]))
		}
	}
	s.ac, s.values = newAutomaton(forms), nil
}
