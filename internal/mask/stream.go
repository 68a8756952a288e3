package mask

import (
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// maskStream masks YAML document by document through each document's node
// tree. A document that does not parse or cannot be written back is masked
// whole when whole is set (a rendered stream: values replaced, keys kept),
// else by the scanner (a repository file); the others are not affected.
func (m *Masker) maskStream(text string, whole bool) Result {
	chunks := splitDocs(text)
	parsed := make([][]*yaml.Node, len(chunks))
	ok := make([]bool, len(chunks))
	var rewritten strings.Builder
	for i, c := range chunks {
		parsed[i], ok[i] = parseChunk(c)
		if ok[i] {
			rewritten.WriteString(rewrittenScalars(parsed[i]))
		}
	}
	p := &pass{scan: m.scanner, secrets: m.secrets(text, rewritten.String())}
	var b strings.Builder
	for i, c := range chunks {
		out, done := "", false
		if ok[i] && len(parsed[i]) == 0 {
			out, done = p.text(c, false), true // comments or nothing
		} else if ok[i] {
			out, done = p.structuredDoc(parsed[i])
			if done && (i > 0 || strings.HasPrefix(c, "---")) {
				out = "---\n" + out
			}
		}
		if !done {
			if whole {
				out = p.wholeDoc(c)
			} else {
				out = p.text(c, true)
			}
		}
		b.WriteString(out)
		if s := b.String(); i+1 < len(chunks) && s != "" && !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	return Result{Content: []byte(b.String()), Masked: p.masked, Encrypted: p.encrypted, Redactions: p.redact.Merge()}
}

// parseChunk parses one document of a stream; false when it does not parse.
func parseChunk(c string) (docs []*yaml.Node, ok bool) {
	defer func() {
		if recover() != nil {
			docs, ok = nil, false
		}
	}()
	docs, err := parseDocs(c)
	return docs, err == nil
}

// structuredDoc masks and writes back one parsed document; false when it
// cannot be written back.
func (p *pass) structuredDoc(docs []*yaml.Node) (out string, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = "", false
		}
	}()
	for _, d := range docs {
		p.walk(d, false, 0)
	}
	b, err := emitYAML(docs)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// wholeDoc masks a document that does not parse: every value is replaced
// by Marker and keys, sequence dashes, indentation and comments stay.
func (p *pass) wholeDoc(s string) string {
	s = p.found(s)
	ls := splitLines(s)
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		var line string
		kl, ok := parseLine(l.text, l.indent)
		switch {
		case l.trimmed == "" || l.trimmed == "---" || l.trimmed[0] == '#':
			line = p.line(l.text)
		case strings.HasPrefix(l.text, "---"):
			line = "--- " + Marker
			p.record(l.text[3:])
		case ok && kl.hasKey && plainKey.MatchString(kl.key):
			line = strings.TrimRight(kl.head, " \t")
			if v := stripComment(kl.value); v != "" {
				line += " " + Marker
				p.record(strings.Trim(v, `"'`))
				p.masked++
			}
		case ok && kl.item:
			line = kl.head + Marker
			p.record(strings.Trim(kl.value, `"'`))
			p.masked++
		default:
			line = l.text[:l.indent] + Marker
			p.record(strings.Trim(l.trimmed, `"'`))
			p.masked++
		}
		line += l.cr
		if n := len(out); n > 0 && line == out[n-1] && strings.TrimSpace(line) == Marker {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// plainKey is a key a document masked whole keeps.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_.\-/]{1,128}$`)
