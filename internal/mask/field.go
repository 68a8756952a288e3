package mask

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/kukie/gitops-server/service"
)

var _ service.ValueMasker = (*Masker)(nil)

// MasksValue reports whether the masker would mask value at pointer in an
// object of group and kind: it masks a one-object manifest holding just
// that value there (a Secret's data, a key named like a password, a value
// shaped like a token) and looks whether anything was masked. It is the
// masker's own rule, not a second copy of it. Anything it cannot place
// (a bad pointer, a value that is not JSON) counts as masked.
func (m *Masker) MasksValue(group, kind, pointer string, value json.RawMessage) bool {
	var v any
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return true
	}
	apiVersion := "v1"
	if group != "" {
		apiVersion = group + "/v1"
	}
	doc := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "planned"}}
	if !place(doc, pointer, v) {
		return true
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return true
	}
	return m.Manifests(b).Masked > 0
}

// place sets the value at a JSON pointer in doc, creating what is missing:
// a token of digits under a missing parent makes a list long enough to
// hold that index (up to 256), anything else a mapping.
func place(doc map[string]any, pointer string, v any) bool {
	tokens, ok := pointerTokens(pointer)
	if !ok || len(tokens) == 0 {
		return false
	}
	var parent any = doc
	for i, tok := range tokens {
		last := i == len(tokens)-1
		var next any = map[string]any{}
		if !last {
			if n, err := strconv.Atoi(tokens[i+1]); err == nil && n >= 0 && n < 256 {
				list := make([]any, n+1)
				for j := range list {
					list[j] = map[string]any{}
				}
				next = list
			}
		} else {
			next = v
		}
		switch p := parent.(type) {
		case map[string]any:
			p[tok] = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(p) {
				return false
			}
			p[n] = next
		default:
			return false
		}
		parent = next
	}
	return true
}

// pointerTokens splits an RFC 6901 pointer into its unescaped tokens.
func pointerTokens(pointer string) ([]string, bool) {
	if !strings.HasPrefix(pointer, "/") {
		return nil, false
	}
	parts := strings.Split(pointer[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, true
}
