package mask

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// pairValueLines returns the lines holding a value key (value, default, ...)
// of a block mapping whose naming key (name, key, ...) names a secret
// (namesSecretValue), whichever order the keys come in. A mapping's keys are
// the key lines at one column up to a line indented less or the next
// sequence item at that column.
func pairValueLines(ls []yline) map[int]bool {
	type mapping struct {
		col    int
		named  bool
		values []int
	}
	var stack []mapping
	out := map[int]bool{}
	closeAbove := func(col int) {
		for n := len(stack); n > 0 && stack[n-1].col > col; n-- {
			if m := stack[n-1]; m.named {
				for _, i := range m.values {
					out[i] = true
				}
			}
			stack = stack[:n-1]
		}
	}
	for i, l := range ls {
		if l.trimmed == "" || l.trimmed[0] == '#' || templateOnly(l.trimmed) {
			continue
		}
		kl, ok := parseLine(l.text, l.indent)
		switch {
		case !ok || !kl.hasKey:
			closeAbove(l.indent)
			continue
		case kl.item:
			closeAbove(l.indent) // the previous item's keys end here
		default:
			closeAbove(kl.col)
		}
		if n := len(stack); n == 0 || stack[n-1].col != kl.col {
			stack = append(stack, mapping{col: kl.col})
		}
		m := &stack[len(stack)-1]
		_, _, _, body := valueProps(kl.value)
		if namesSecretValue(kl.key, strings.Trim(stripComment(body), `"' `)) {
			m.named = true
		}
		if isPairValue(kl.key) {
			m.values = append(m.values, i)
		}
	}
	closeAbove(-1)
	return out
}

// isFlowStart reports a value opening a flow collection (not a template
// action).
func isFlowStart(b string) bool {
	return b != "" && (b[0] == '[' || b[0] == '{' && !strings.HasPrefix(b, "{{"))
}

// flowValue masks a flow collection starting on line i through the YAML
// walk, its template actions read as placeholders, so that the rules of
// structured YAML (name/value pairs, secret keys) apply to it. It reports
// false, leaving the lines to the scanner, when the collection does not
// parse or nothing in it is secret; otherwise it returns the collection
// written back on one line, and the index after its last line.
func (p *pass) flowValue(ls []yline, i int, kl keyLine, props, body string, aliases map[string]bool) ([]string, int, bool) {
	start := len(ls[i].text) - len(body)
	// Bounded, so that lines opening collections that never close cost
	// linear time, not quadratic: a longer one is left to the scanner.
	end := flowEnd(ls[:min(len(ls), i+maxFlowLines)], i, start)
	var b strings.Builder
	b.WriteString(ls[i].text[start:])
	for j := i + 1; j < end; j++ {
		b.WriteString("\n" + ls[j].text)
	}
	src, restore, ok := placeholders(b.String())
	var root *yaml.Node
	if ok {
		root, ok = parseFlow(src)
	}
	if !ok {
		if flowNamesSecret(b.String()) {
			// It cannot be read, and a pair in it names a secret: fail
			// closed.
			return p.maskValue(ls, i, end, kl, props, body, aliases), end, true
		}
		return nil, 0, false
	}
	before := p.masked
	p.walk(root, false, 1)
	if p.masked == before {
		return nil, 0, false
	}
	var out bytes.Buffer
	if err := writeJSON(&out, root, "", 0); err != nil {
		return p.maskValue(ls, i, end, kl, props, body, aliases), end, true
	}
	return []string{kl.head + props + restore.Replace(out.String()) + ls[end-1].cr}, end, true
}

// flowPair is a "key: word" pair in a flow collection's text.
var flowPair = regexp.MustCompile(`(?:^|[{,\s])["']?([A-Za-z]{1,32})["']?[ \t]*:[ \t]*["']?([A-Za-z0-9_.\-]{1,128})`)

// flowNamesSecret reports flow text holding a naming key that names a
// secret (namesSecretValue), such as name: DB_PASSWORD.
func flowNamesSecret(s string) bool {
	for _, m := range flowPair.FindAllStringSubmatch(s, -1) {
		if namesSecretValue(m[1], m[2]) {
			return true
		}
	}
	return false
}

// parseFlow parses one flow collection; false when it does not parse or is
// something else.
func parseFlow(src string) (root *yaml.Node, ok bool) {
	defer func() {
		if recover() != nil {
			root, ok = nil, false
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil || len(doc.Content) != 1 {
		return nil, false
	}
	root = doc.Content[0]
	return root, root.Kind == yaml.MappingNode || root.Kind == yaml.SequenceNode
}

// placeholders replaces each template action in s by a plain word, one that
// reads as a reference ($(X)) when the action is one, so that the walk
// keeps it under a secret key, and returns what puts the actions back.
func placeholders(s string) (string, *strings.Replacer, bool) {
	var b strings.Builder
	var pairs []string
	for n := 0; ; n++ {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 || n >= maxFlowActions {
			return "", nil, false
		}
		action := s[i : i+j+2]
		word := fmt.Sprintf("KukieTplAction%04dZ", n)
		if reference.MatchString(action) {
			word = "$(" + word + ")"
		}
		b.WriteString(s[:i] + word)
		pairs = append(pairs, word, action)
		s = s[i+j+2:]
	}
	b.WriteString(s)
	return b.String(), strings.NewReplacer(pairs...), true
}

// maxFlowActions bounds the template actions read in one flow collection,
// and maxFlowLines its lines.
const (
	maxFlowActions = 1000
	maxFlowLines   = 64
)
