package mask

import (
	"regexp"
	"strings"
)

// yline is one line of scanned text.
type yline struct {
	text    string // without a trailing \r
	cr      string // "\r" or ""
	indent  int
	trimmed string
}

func splitLines(s string) []yline {
	raw := strings.Split(s, "\n")
	ls := make([]yline, len(raw))
	for i, r := range raw {
		l := yline{text: r}
		if strings.HasSuffix(r, "\r") {
			l.text, l.cr = r[:len(r)-1], "\r"
		}
		l.trimmed = strings.TrimSpace(l.text)
		l.indent = len(l.text) - len(strings.TrimLeft(l.text, " \t"))
		ls[i] = l
	}
	return ls
}

// keyLine is a line's YAML shape: after its indentation and any "- "
// sequence indicators, a key and its value, or a sequence item's value.
type keyLine struct {
	col    int    // column of the key, or of an item's value
	key    string // unquoted key ("" for an item without one)
	hasKey bool
	item   bool   // the line starts a sequence item
	head   string // the line up to the value
	value  string // the rest of the line
}

// parseLine reads a line's shape; false when it is neither a key nor an item.
func parseLine(t string, indent int) (keyLine, bool) {
	i := indent
	kl := keyLine{}
	for i < len(t) && t[i] == '-' && (i+1 == len(t) || t[i+1] == ' ' || t[i+1] == '\t') {
		kl.item = true
		i++
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
	}
	kl.col = i
	item := func() (keyLine, bool) {
		kl.head, kl.value = t[:i], t[i:]
		return kl, kl.item
	}
	if i >= len(t) {
		return item()
	}
	colon := -1
	switch c := t[i]; {
	case c == '"' || c == '\'':
		end := closingQuote(t[i:], c)
		if end < 0 {
			return item()
		}
		j := i + end + 1
		for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
			j++
		}
		if j < len(t) && t[j] == ':' && (j+1 == len(t) || t[j+1] == ' ' || t[j+1] == '\t') {
			kl.key, colon = t[i+1:i+end], j
		}
	case strings.HasPrefix(t[i:], "{{") || !strings.ContainsRune("{[&*!|>#%@`,", rune(c)):
		colon = plainKeyEnd(t, i)
		if colon > i {
			kl.key = strings.TrimSpace(t[i:colon])
		} else {
			colon = -1
		}
	}
	if colon < 0 {
		return item()
	}
	kl.hasKey = true
	j := colon + 1
	for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
		j++
	}
	kl.head, kl.value = t[:j], t[j:]
	return kl, true
}

// plainKeyEnd returns the index of the ":" ending a plain key starting at
// i (a colon followed by a space or the end of the line, outside template
// actions), or -1.
func plainKeyEnd(t string, i int) int {
	for j := i; j < len(t); j++ {
		switch {
		case strings.HasPrefix(t[j:], "{{"):
			end := strings.Index(t[j:], "}}")
			if end < 0 {
				return -1
			}
			j += end + 1
		case t[j] == '#' && j > i && (t[j-1] == ' ' || t[j-1] == '\t'):
			return -1
		case t[j] == ':' && (j+1 == len(t) || t[j+1] == ' ' || t[j+1] == '\t'):
			return j
		}
	}
	return -1
}

// valueProps splits a value's anchor and tag from its body, and names the
// alias when the body is one.
func valueProps(v string) (props, anchor, alias, body string) {
	body = v
	for body != "" && (body[0] == '&' || body[0] == '!') {
		end := strings.IndexAny(body, " \t")
		if end < 0 {
			end = len(body)
		}
		if body[0] == '&' {
			anchor = body[1:end]
		}
		body = strings.TrimLeft(body[end:], " \t")
	}
	props = v[:len(v)-len(body)]
	if body != "" && body[0] == '*' {
		end := strings.IndexAny(body, " \t,]}")
		if end < 0 {
			end = len(body)
		}
		alias = body[1:end]
	}
	return props, anchor, alias, body
}

// templateOnly reports a line holding nothing but template actions.
func templateOnly(t string) bool {
	for t != "" {
		if !strings.HasPrefix(t, "{{") {
			return false
		}
		end := strings.Index(t, "}}")
		if end < 0 {
			return false
		}
		t = strings.TrimLeft(t[end+2:], " \t")
	}
	return true
}

var (
	// anchorDef and aliasUse find YAML anchors and aliases (not the & of
	// a query string or the * of a glob inside a word).
	anchorDef = regexp.MustCompile(`(?m)(?:^|[ \t\[{,:-])&[^ \t\r\n,\[\]{}]+`)
	aliasUse  = regexp.MustCompile(`(?m)(?:^|[ \t\[{,:-])\*[^ \t\r\n,\[\]{}]+`)
)

// hasLiteral reports a template line that holds a string literal, which
// may be a secret (default "...").
func hasLiteral(t string) bool { return strings.ContainsAny(t, "\"'`") }

// stripComment removes a trailing " # comment" from a one-line value
// (outside quotes).
func stripComment(v string) string {
	if v == "" || v[0] == '"' || v[0] == '\'' {
		return v
	}
	if v[0] == '#' {
		return ""
	}
	if i := strings.Index(v, " #"); i >= 0 {
		return strings.TrimRight(v[:i], " \t")
	}
	if i := strings.Index(v, "\t#"); i >= 0 {
		return strings.TrimRight(v[:i], " \t")
	}
	return v
}
