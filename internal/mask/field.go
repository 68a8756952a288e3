package mask

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

var _ service.ValueMasker = (*Masker)(nil)

// MasksValue reports whether the masker would mask value at pointer in an
// object of group and kind, judged alone: it masks a one-object manifest
// holding just that value there (a Secret's data, a key named like a
// password, a value shaped like a token). It is the masker's own rule, not
// a second copy of it. What it cannot place (a bad pointer, a value that
// is not JSON) counts as masked.
func (m *Masker) MasksValue(group, kind, pointer string, value json.RawMessage) bool {
	apiVersion := "v1"
	if group != "" {
		apiVersion = group + "/v1"
	}
	doc := map[string]any{"apiVersion": apiVersion, "kind": canonicalKind(group, kind), "metadata": map[string]any{"name": "planned"}}
	b, err := json.Marshal(doc)
	if err != nil {
		return true
	}
	return m.MaskedFields(b, map[string]json.RawMessage{pointer: value}, []string{pointer}).Masked[pointer]
}

// canonicalKind spells a core Secret as Kubernetes does, whatever the
// client wrote (secret, secrets, Secrets): the masker's Secret rule keys
// on the kind. Other kinds are judged by their keys and values.
func canonicalKind(group, kind string) string {
	if group == "" {
		switch strings.ToLower(kind) {
		case "secret", "secrets":
			return "Secret"
		}
	}
	return kind
}

// MaskedFields masks object (JSON) once — with every planned value placed
// at its pointer first — and reports, for each of pointers, whether
// anything at or under it was masked: a value is judged with its
// neighbours (an env entry named DB_PASSWORD masks its value) and with the
// other planned values. What it cannot judge counts as masked.
func (m *Masker) MaskedFields(object json.RawMessage, planned map[string]json.RawMessage, pointers []string) service.FieldMasking {
	out := make(map[string]bool, len(pointers))
	all := func() service.FieldMasking {
		for _, p := range pointers {
			out[p] = true
		}
		return service.FieldMasking{Masked: out}
	}
	var doc any
	if decodeJSON(object, &doc) != nil {
		return all()
	}
	unplaced := map[string]bool{}
	for p, value := range planned {
		var v any
		tokens, ok := service.SplitPointer(p)
		if !ok || len(tokens) == 0 || decodeJSON(value, &v) != nil || !place(doc, tokens, v) {
			unplaced[p] = true
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return all()
	}
	res := m.Manifests(b)
	var masked any
	if res.Masked > 0 && yaml.Unmarshal(res.Content, &masked) != nil {
		return all()
	}
	for _, p := range pointers {
		tokens, ok := service.SplitPointer(p)
		switch {
		case !ok || len(tokens) == 0 || unplaced[p]:
			out[p] = true
		case res.Masked == 0:
			out[p] = false
		default:
			at, found := service.LookupPointer(masked, tokens)
			if !found {
				_, existed := service.LookupPointer(doc, tokens)
				out[p] = existed // gone from the masked document: masked above it
			} else {
				out[p] = holdsMarker(at)
			}
		}
	}
	return service.FieldMasking{Masked: out, Secrets: res.Redactions}
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// place sets v at the pointer's tokens in doc, descending into what exists
// and creating what is missing: a token of digits under a missing parent
// makes a list long enough to hold that index (up to 256), anything else a
// mapping. An index outside an existing list cannot be placed.
func place(doc any, tokens []string, v any) bool {
	parent := doc
	for i, tok := range tokens {
		if i == len(tokens)-1 {
			return set(parent, tok, v)
		}
		next, ok := child(parent, tok)
		if !ok {
			next = map[string]any{}
			if n, err := strconv.Atoi(tokens[i+1]); err == nil && n >= 0 && n < 256 {
				list := make([]any, n+1)
				for j := range list {
					list[j] = map[string]any{}
				}
				next = list
			}
			if !set(parent, tok, next) {
				return false
			}
		}
		parent = next
	}
	return true
}

func set(parent any, tok string, v any) bool {
	switch p := parent.(type) {
	case map[string]any:
		p[tok] = v
		return true
	case []any:
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n >= len(p) {
			return false
		}
		p[n] = v
		return true
	}
	return false
}

func child(parent any, tok string) (any, bool) {
	switch p := parent.(type) {
	case map[string]any:
		v, ok := p[tok]
		return v, ok && v != nil
	case []any:
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n >= len(p) {
			return nil, false
		}
		return p[n], true
	}
	return nil, false
}

// holdsMarker reports whether v is, or holds, the masking marker.
func holdsMarker(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, Marker)
	case map[string]any:
		for k, e := range t {
			if strings.Contains(k, Marker) || holdsMarker(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if holdsMarker(e) {
				return true
			}
		}
	}
	return false
}
