package service

import (
	"strconv"
	"strings"
)

// SplitPointer splits an RFC 6901 JSON pointer into unescaped tokens ("~1"
// is "/", "~0" is "~"); "" is the whole document. A pointer that does not
// start with "/" or holds a "~" not followed by 0 or 1 is not valid. It is
// the one reading of pointers (changed fields, ignoreDifferences, masking).
func SplitPointer(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if p[0] != '/' || badPointerEscape(p) {
		return nil, false
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, true
}

// LookupPointer follows a pointer's tokens through decoded JSON (maps and
// lists): a list item is named by its index. A JSON null counts as absent.
func LookupPointer(doc any, tokens []string) (any, bool) {
	at := doc
	for _, tok := range tokens {
		switch p := at.(type) {
		case map[string]any:
			v, ok := p[tok]
			if !ok || v == nil {
				return nil, false
			}
			at = v
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(p) {
				return nil, false
			}
			at = p[n]
		default:
			return nil, false
		}
	}
	return at, true
}

// JoinPointer writes tokens as an RFC 6901 pointer: SplitPointer's inverse.
func JoinPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
