package gitpreview

import (
	"encoding/json"
	"slices"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// Bounds of one Git document the preview reads: a document past them is
// left out of the index (tenants write these files; decoding a mapping is
// quadratic in its keys).
const (
	maxDocNodes    = 50_000
	maxMappingKeys = 2_000
)

// docMask is a Git document as the masker sees it: its JSON, decoded once,
// and the masker's judgement of each pointer asked so far, kept with the
// index so a warm preview masks nothing again.
type docMask struct {
	node *yaml.Node

	once sync.Once
	json json.RawMessage
	err  error

	mu      sync.Mutex
	judged  map[string]bool
	secrets []string // the values masked in the document so far
}

func newDocMask(node *yaml.Node) *docMask { return &docMask{node: node, judged: map[string]bool{}} }

// masked judges pointers in the document, asking the masker only for those
// not judged before, in one pass. A document that does not decode masks
// everything.
func (d *docMask) masked(m service.ValueMasker, pointers []string) map[string]bool {
	d.once.Do(func() {
		var v any
		if d.err = d.node.Decode(&v); d.err == nil {
			d.json, d.err = json.Marshal(v)
		}
	})
	out := make(map[string]bool, len(pointers))
	if d.err != nil || m == nil {
		for _, p := range pointers {
			out[p] = true
		}
		return out
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var ask []string
	for _, p := range pointers {
		if _, ok := d.judged[p]; !ok {
			ask = append(ask, p)
		}
	}
	if len(ask) > 0 {
		fm := m.MaskedFields(d.json, nil, ask)
		for p, masked := range fm.Masked {
			d.judged[p] = masked
		}
		for _, s := range fm.Secrets {
			if !slices.Contains(d.secrets, s) {
				d.secrets = append(d.secrets, s)
			}
		}
	}
	for _, p := range pointers {
		out[p] = d.judged[p]
	}
	return out
}

// reveals reports a value holding one the masker masked in the document.
func (d *docMask) reveals(v json.RawMessage) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return service.FieldMasking{Secrets: d.secrets}.Reveals(v)
}

// tooComplex reports a document past the bounds.
func tooComplex(n *yaml.Node) bool {
	count := 0
	var walk func(*yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		count++
		if count > maxDocNodes || (n.Kind == yaml.MappingNode && len(n.Content) > 2*maxMappingKeys) {
			return true
		}
		for _, c := range n.Content {
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(n)
}
