package mask

import (
	"bytes"
	"errors"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// maskStructured masks JSON through its node tree. It reports false when the
// text does not parse or cannot be written back, and the caller then masks it
// with the scanner.
func (m *Masker) maskStructured(text string, asJSON bool) (res Result, ok bool) {
	defer func() {
		if recover() != nil {
			res, ok = Result{}, false
		}
	}()
	docs, err := parseDocs(text)
	if err != nil || len(docs) == 0 && strings.TrimSpace(text) != "" {
		return Result{}, false
	}
	p := &pass{scan: m.scanner, secrets: m.secrets(text, rewrittenScalars(docs))}
	for _, d := range docs {
		p.walk(d, false, 0)
	}
	var out []byte
	if asJSON {
		out, err = emitJSON(docs)
	} else {
		out, err = emitYAML(docs)
	}
	if err != nil {
		return Result{}, false
	}
	return Result{Content: out, Masked: p.masked, Encrypted: p.encrypted, Redactions: p.redact.Merge()}, true
}

func parseDocs(text string) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

func emitYAML(docs []*yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// rewrittenScalars joins the scalars whose parsed text differs from how it
// is written (quoted with escapes, folded, or plain over several lines), so
// that gitleaks also sees the values as they are meant. Literal blocks are
// written as they are meant, only indented, and are left out.
func rewrittenScalars(docs []*yaml.Node) string {
	var b strings.Builder
	var visit func(n *yaml.Node, depth int)
	visit = func(n *yaml.Node, depth int) {
		if n == nil || depth > maxDepth {
			return
		}
		if n.Kind == yaml.ScalarNode && (n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.FoldedStyle) != 0 ||
			n.Style&yaml.LiteralStyle == 0 && strings.Contains(n.Value, "\n")) {
			b.WriteString(n.Value)
			b.WriteByte('\n')
		}
		for _, c := range n.Content {
			visit(c, depth+1)
		}
	}
	for _, d := range docs {
		visit(d, 0)
	}
	return b.String()
}

// maxDepth bounds recursion over nodes; deeper content is masked whole.
const maxDepth = 200

// walk masks a node. inSecret marks content under a secret-looking key, where
// every scalar leaf is a secret unless its key only names or locates one.
func (p *pass) walk(n *yaml.Node, inSecret bool, depth int) {
	if n == nil {
		return
	}
	if depth > maxDepth {
		p.setMarker(n)
		return
	}
	p.comments(n)
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if inSecret && n.Kind == yaml.SequenceNode {
				p.secretValue(c, depth+1)
				continue
			}
			p.walk(c, inSecret, depth+1)
		}
	case yaml.MappingNode:
		p.mapping(n, inSecret, depth)
	case yaml.ScalarNode:
		p.scalar(n)
	case yaml.AliasNode:
		// An alias under a secret masks its anchor's value, so neither
		// the anchor nor any other alias of it shows the value.
		if inSecret {
			p.secretValue(n, depth+1)
		}
	}
}

func (p *pass) comments(n *yaml.Node) {
	for _, c := range []*string{&n.HeadComment, &n.LineComment, &n.FootComment} {
		if *c != "" {
			*c = p.text(*c, false)
		}
	}
}

// mapping masks a mapping's keys and values: a Secret's data, a SealedSecret's
// ciphertext, SOPS metadata, secret-looking keys and env-style name/value pairs.
func (p *pass) mapping(n *yaml.Node, inSecret bool, depth int) {
	isSecret := isSecretMapping(n)
	isSealed := field(n, "kind") == "SealedSecret"
	pairSecret := namesSecretPair(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := ""
		switch {
		case k.Kind == yaml.ScalarNode:
			key = k.Value
			p.comments(k)
			k.Value = p.text(k.Value, false)
		case inSecret:
			// A complex key under a secret ({{ .pw | default "x" }} read
			// as YAML) is content, not a name: masked like a value.
			p.maskLeaves(k, depth+1)
		default:
			p.walk(k, false, depth+1)
		}
		switch {
		case key == "sops" && v.Kind == yaml.MappingNode && (field(v, "mac") != "" || field(v, "version") != ""):
			// SOPS metadata holds encrypted data keys and an ENC[...] MAC; it
			// is walked like anything else, so nothing hides in it.
			p.encrypted = true
			p.walk(v, inSecret, depth+1)
		case isSealed && key == "spec" && v.Kind == yaml.MappingNode:
			p.sealedSpec(v, inSecret, depth+1)
		case isSecret && (key == "data" || key == "stringData"):
			p.secretData(v)
		case isSecretKey(key),
			inSecret && !namesSecret(key),
			pairSecret && isPairValue(key):
			p.secretValue(v, depth+1)
		default:
			p.walk(v, inSecret, depth+1)
		}
	}
}

// secretValue masks the value of a secret-looking key.
func (p *pass) secretValue(v *yaml.Node, depth int) {
	p.comments(v)
	switch v.Kind {
	case yaml.ScalarNode:
		// The value decides, not its tag: "!!bool hunter2" is a password.
		if keepValue(p, v.Value) {
			return
		}
		p.setMarker(v)
	case yaml.AliasNode:
		if t := p.aliasTarget(v); t != nil && t.Kind == yaml.ScalarNode {
			p.secretValue(t, depth+1)
		} else if t != nil {
			p.maskLeaves(t, depth+1)
		}
	default:
		p.walk(v, true, depth)
	}
}

// aliasTarget returns the node an alias names, once per pass (nil after
// that, or for an alias without a target), so that cycles end.
func (p *pass) aliasTarget(a *yaml.Node) *yaml.Node {
	if a.Alias == nil || p.aliased[a.Alias] {
		return nil
	}
	if p.aliased == nil {
		p.aliased = map[*yaml.Node]bool{}
	}
	p.aliased[a.Alias] = true
	return a.Alias
}

// maskLeaves masks every scalar under n, and under the anchors of the
// aliases it holds.
func (p *pass) maskLeaves(n *yaml.Node, depth int) {
	if depth > maxDepth {
		return
	}
	if n.Kind == yaml.AliasNode {
		if t := p.aliasTarget(n); t != nil {
			p.maskLeaves(t, depth+1)
		}
		return
	}
	if n.Kind == yaml.ScalarNode {
		p.secretValue(n, depth)
		return
	}
	for _, c := range n.Content {
		p.maskLeaves(c, depth+1)
	}
}

// scalar masks secrets inside a scalar that is not itself a secret: tokens,
// key blocks, URL passwords, and secret keys in nested properties, env, YAML
// or JSON text.
func (p *pass) scalar(n *yaml.Node) {
	if sopsValue.MatchString(n.Value) || n.Tag == "!vault" && ansibleVault.MatchString(n.Value) {
		p.encrypted = true
		return
	}
	if p.holdsSecret(n.Value) || heldManifest(n.Value) {
		p.setMarker(n)
		return
	}
	v := n.Value
	nv := v
	if t := strings.TrimSpace(v); !strings.Contains(t, "\n") && len(t) > 1 &&
		(t[0] == '{' && t[len(t)-1] == '}' || t[0] == '[' && t[len(t)-1] == ']') {
		if j, ok := p.nestedJSON(t); ok {
			nv = j
		}
	}
	nv = p.text(nv, strings.Contains(nv, "\n"))
	if nv != v {
		n.Value = nv
		n.Tag = "!!str"
	}
}

// heldManifest reports a string holding a Secret with its data on one line,
// as YAML folded into a quoted, plain or folded scalar becomes: its
// structure is gone, so it is masked whole.
func heldManifest(v string) bool {
	if strings.HasPrefix(strings.TrimSpace(v), "{") || !secretKind.MatchString(v) {
		return false
	}
	for line := range strings.SplitSeq(v, "\n") {
		if secretKind.MatchString(line) && secretData.MatchString(line) {
			return true
		}
	}
	return false
}

// nestedJSON masks JSON held in a value, such as kubectl's
// last-applied-configuration annotation, and writes it back compact.
func (p *pass) nestedJSON(t string) (string, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(t), &doc); err != nil || len(doc.Content) == 0 {
		return "", false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode && root.Kind != yaml.SequenceNode {
		return "", false
	}
	p.walk(root, false, 1)
	var b bytes.Buffer
	if err := writeJSON(&b, root, "", 0); err != nil {
		return "", false
	}
	return b.String(), true
}

// setMarker turns n into the Marker scalar.
func (p *pass) setMarker(n *yaml.Node) {
	p.comments(n)
	if n.Kind == yaml.ScalarNode && n.Value == Marker {
		return
	}
	p.masked++
	p.recordNode(n, 0)
	n.Kind = yaml.ScalarNode
	n.Tag = "!!str"
	n.Value = Marker
	n.Style = 0
	n.Content = nil
	n.Alias = nil
}

// recordNode records the values under n (not its mapping keys).
func (p *pass) recordNode(n *yaml.Node, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		p.record(n.Value)
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.recordNode(n.Content[i], depth+1)
		}
	default:
		for _, c := range n.Content {
			p.recordNode(c, depth+1)
		}
	}
}
