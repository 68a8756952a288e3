package mask

import "strings"

// The scanner masks text that is not parsed as YAML — Helm templates with
// {{ }}, env and properties files, YAML that does not parse — while
// following YAML's block structure: under a secret-looking key, or in the
// data and stringData of a Secret document, the whole value is masked up to
// the next line at the same or a lower indentation (continuation lines,
// block scalars, flow collections and quoted scalars over several lines,
// sequences under the key), and a value an alias repeats is masked where
// its anchor is defined. Template actions are opaque text: a line holding
// only actions never ends a value. It is a pure function of its input.

// lines masks text line by line along its YAML structure; inSecret masks
// the data and stringData of the text as a Kubernetes Secret's.
func (p *pass) lines(s string, inSecret bool) string {
	ls := splitLines(s)
	pairs := pairValueLines(ls)
	var anchors map[string]bool
	if anchorDef.MatchString(s) && aliasUse.MatchString(s) {
		// Aliases met under secrets name anchors whose values must be
		// masked where they are defined, and so do the aliases inside
		// those values, transitively: one pass finds the first, the
		// anchors' values give the rest, however long the chain.
		scratch := &pass{scan: p.scan, secrets: p.secrets, decoded: true}
		_, seeds := scratch.scanLines(ls, inSecret, nil, pairs)
		anchors = aliasClosure(seeds, anchorAliases(ls))
	}
	out, _ := p.scanLines(ls, inSecret, anchors, pairs)
	return out
}

// scanLines is one masking pass over ls; it returns the masked text and the
// aliases met under secrets. anchors names the anchors to mask, pairs the
// lines holding a secret by the pair rule (pairValueLines).
func (p *pass) scanLines(ls []yline, inSecret bool, anchors map[string]bool, pairs map[int]bool) (string, map[string]bool) {
	aliases := map[string]bool{}
	out := make([]string, 0, len(ls))
	dataCol := -1   // key column of an open Secret data block
	secretCol := -1 // key column of a secret-looking key holding a mapping
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		if l.trimmed == "" {
			out = append(out, l.text+l.cr)
			continue
		}
		if l.trimmed[0] == '#' || templateOnly(l.trimmed) {
			out = append(out, p.line(l.text)+l.cr)
			continue
		}
		dataCol, secretCol = closeBlock(dataCol, l.indent), closeBlock(secretCol, l.indent)
		kl, ok := parseLine(l.text, l.indent)
		if !ok && dataCol < 0 && secretCol < 0 {
			out = append(out, p.line(l.text)+l.cr)
			continue
		}
		if !ok {
			kl = keyLine{col: l.indent, head: l.text[:l.indent], value: l.text[l.indent:]}
		}
		props, anchor, alias, body := valueProps(kl.value)
		isData := inSecret && kl.hasKey && (kl.key == "data" || kl.key == "stringData")
		if isData && (body == "" || body[0] == '#') {
			dataCol = kl.col
			out = append(out, l.text+l.cr)
			continue
		}
		secret := isData || dataCol >= 0 && kl.col > dataCol ||
			secretCol >= 0 && kl.col > secretCol && !(kl.hasKey && namesSecret(kl.key)) ||
			kl.hasKey && isSecretKey(kl.key) ||
			kl.hasKey && pairs[i] ||
			anchor != "" && anchors[anchor]
		if !secret && inSecret {
			if masked, ok := p.foldedData(l, kl.col); ok {
				out = append(out, masked)
				continue
			}
		}
		if !secret && isFlowStart(stripComment(body)) {
			// A flow collection on the line ([{name: DB_PASSWORD, value: x}])
			// is judged by the YAML walk when it parses.
			if masked, end, ok := p.flowValue(ls, i, kl, props, body, aliases); ok {
				out = append(out, masked...)
				i = end - 1
				continue
			}
		}
		if !secret && !p.holdsSecret(strings.Trim(stripComment(body), `"'`)) {
			out = append(out, p.line(l.text)+l.cr)
			continue
		}
		if alias != "" {
			// The alias prints nothing itself: its anchor is masked.
			aliases[alias] = true
			out = append(out, l.text+l.cr)
			continue
		}
		if dataCol < 0 && secretCol < 0 && kl.hasKey && (body == "" || body[0] == '#') && holdsMapping(ls, i, kl.col) {
			// Keys under a secret-looking key stay; their values are masked.
			secretCol = kl.col
			out = append(out, l.text+l.cr)
			continue
		}
		end := valueEnd(ls, i, kl.col, kl.hasKey, body)
		if end == i+1 && keepValue(p, strings.TrimSpace(stripComment(body))) {
			out = append(out, l.text+l.cr)
			continue
		}
		out = append(out, p.maskValue(ls, i, end, kl, props, body, aliases)...)
		i = end - 1
	}
	return strings.Join(out, "\n"), aliases
}

// closeBlock is the key column of an open block (col, -1 when none) after
// a line at indent: -1 when the line is indented no more than the key.
func closeBlock(col, indent int) int {
	if col >= 0 && indent <= col {
		return -1
	}
	return col
}

// foldedData masks a Secret's data folded onto another key's line (the key
// at column col), reporting false when the line holds none.
func (p *pass) foldedData(l yline, col int) (string, bool) {
	loc := secretData.FindStringIndex(l.text)
	if loc == nil || loc[0] <= col {
		return "", false
	}
	p.masked++
	p.record(l.text[loc[1]:])
	return l.text[:loc[1]] + " " + Marker + l.cr, true
}

// holdsMapping reports a block mapping as the value of the key on line i at
// column col: the next line that is not blank, a comment or a template
// action is a key line indented more.
func holdsMapping(ls []yline, i, col int) bool {
	for j := i + 1; j < len(ls); j++ {
		t := ls[j].trimmed
		if t == "" || t[0] == '#' || templateOnly(t) {
			continue
		}
		kl, ok := parseLine(ls[j].text, ls[j].indent)
		return ls[j].indent > col && ok && kl.hasKey && !kl.item
	}
	return false
}

// valueEnd returns the index after the last line of the value starting on
// line i with body, whose key (or item) is at column col.
func valueEnd(ls []yline, i, col int, hasKey bool, body string) int {
	b := stripComment(body)
	switch {
	case b == "":
		return blockEnd(ls, i, col, hasKey)
	case b[0] == '|' || b[0] == '>':
		return blockEnd(ls, i, col, false)
	case b[0] == '"' || b[0] == '\'':
		return quoteEnd(ls, i, len(ls[i].text)-len(body), b[0])
	case isFlowStart(b):
		return flowEnd(ls, i, len(ls[i].text)-len(body))
	default:
		return blockEnd(ls, i, col, false)
	}
}

// blockEnd returns the index after the last line more indented than col
// (or, with seqAtCol, a sequence item at col) following line i. Blank
// lines, comments and template actions in between do not end it.
func blockEnd(ls []yline, i, col int, seqAtCol bool) int {
	last := i
	for j := i + 1; j < len(ls); j++ {
		t := ls[j].trimmed
		if t == "" || templateOnly(t) {
			continue
		}
		if ls[j].indent > col || seqAtCol && ls[j].indent == col && (t == "-" || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "-\t")) {
			last = j
			continue
		}
		if t[0] == '#' {
			continue
		}
		break
	}
	return last + 1
}

// quoteEnd returns the index after the line closing the quoted scalar that
// opens at ls[i].text[start]; an unclosed one runs to the end.
func quoteEnd(ls []yline, i, start int, q byte) int {
	pos := start + 1
	for j := i; j < len(ls); j++ {
		t := ls[j].text
		for k := pos; k < len(t); k++ {
			switch {
			case q == '"' && t[k] == '\\':
				k++
			case t[k] == q && q == '\'' && k+1 < len(t) && t[k+1] == '\'':
				k++
			case t[k] == q:
				return j + 1
			}
		}
		pos = 0
	}
	return len(ls)
}

// flowEnd returns the index after the line closing the flow collection
// that opens at ls[i].text[start]; an unclosed one runs to the end.
func flowEnd(ls []yline, i, start int) int {
	depth := 0
	var quote byte
	pos := start
	for j := i; j < len(ls); j++ {
		t := ls[j].text
		for k := pos; k < len(t); k++ {
			c := t[k]
			switch {
			case quote == '"' && c == '\\':
				k++
			case quote != 0:
				if c == quote {
					if quote == '\'' && k+1 < len(t) && t[k+1] == '\'' {
						k++
					} else {
						quote = 0
					}
				}
			case strings.HasPrefix(t[k:], "{{"):
				end := strings.Index(t[k:], "}}")
				if end < 0 {
					k = len(t)
				} else {
					k += end + 1
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (k == 0 || t[k-1] == ' ' || t[k-1] == '\t'):
				k = len(t)
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth <= 0 {
					return j + 1
				}
			}
		}
		pos = 0
	}
	return len(ls)
}

// maskValue writes the masked form of the value on lines [i, end): the key
// line with its anchor and tag and one Marker, and the template actions
// without literals that were inside it. What it removed is recorded.
func (p *pass) maskValue(ls []yline, i, end int, kl keyLine, props, body string, aliases map[string]bool) []string {
	p.masked++
	l := ls[i]
	collectAliases(body, aliases)
	b := stripComment(body)
	var out []string
	var parts []string
	marker := func(first int) string {
		// A Marker line at the indentation of the value's first line.
		for j := first; j < end; j++ {
			t := ls[j].trimmed
			if t == "" || templateOnly(t) || t[0] == '#' {
				continue
			}
			prefix := ""
			if t == "-" || strings.HasPrefix(t, "- ") {
				prefix = "- "
			}
			return strings.Repeat(" ", ls[j].indent) + prefix + Marker + l.cr
		}
		return strings.Repeat(" ", kl.col+2) + Marker + l.cr
	}
	switch {
	case b == "":
		out = append(out, strings.TrimRight(kl.head+props, " \t")+l.cr, marker(i+1))
	case b[0] == '|' || b[0] == '>':
		ind := b
		if k := strings.IndexAny(ind, " \t"); k >= 0 {
			ind = ind[:k]
		}
		out = append(out, kl.head+props+ind+l.cr, marker(i+1))
	case b[0] == '"' || b[0] == '\'':
		out = append(out, kl.head+props+string(b[0])+Marker+string(b[0])+l.cr)
		parts = append(parts, strings.Trim(b, `"'`))
	default:
		out = append(out, kl.head+props+Marker+l.cr)
		parts = append(parts, strings.Trim(b, `"'{}[], `))
	}
	for j := i + 1; j < end; j++ {
		t := ls[j].trimmed
		collectAliases(t, aliases)
		if templateOnly(t) && !hasLiteral(t) {
			out = append(out, ls[j].text+ls[j].cr)
			continue
		}
		if t != "" {
			parts = append(parts, strings.Trim(strings.TrimLeft(t, "- \t"), `"'{}[], `))
		}
	}
	for _, part := range parts {
		p.record(part)
	}
	if len(parts) > 1 {
		p.record(strings.Join(parts, " "))
		p.record(strings.Join(parts, "\n"))
	}
	return out
}

// collectAliases adds the aliases named in t.
func collectAliases(t string, aliases map[string]bool) {
	for {
		i := strings.IndexByte(t, '*')
		if i < 0 {
			return
		}
		t = t[i+1:]
		end := strings.IndexAny(t, " \t,]}\"'")
		if end < 0 {
			end = len(t)
		}
		if end > 0 {
			aliases[t[:end]] = true
		}
		t = t[end:]
	}
}
