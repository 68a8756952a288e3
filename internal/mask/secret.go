package mask

import yaml "go.yaml.in/yaml/v3"

// sealedSpec masks a SealedSecret's spec, leaving its encryptedData, which is
// ciphertext, as it is.
func (p *pass) sealedSpec(spec *yaml.Node, inSecret bool, depth int) {
	p.comments(spec)
	for i := 0; i+1 < len(spec.Content); i += 2 {
		k, v := spec.Content[i], spec.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "encryptedData" {
			p.comments(k)
			p.ciphertexts(v, depth+1)
			continue
		}
		// Re-walk the pair as a one-entry mapping so keys and values are
		// judged like anywhere else.
		p.mapping(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, v}}, inSecret, depth)
	}
}

// ciphertexts keeps a SealedSecret's encryptedData values that look like its
// ciphertext (long base64) and masks anything else found there.
func (p *pass) ciphertexts(v *yaml.Node, depth int) {
	if v.Kind != yaml.MappingNode {
		p.secretValue(v, depth)
		return
	}
	p.comments(v)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		p.secretKey(k)
		if val.Kind == yaml.ScalarNode && sealedCiphertext.MatchString(val.Value) {
			p.comments(val)
			p.encrypted = true
			continue
		}
		p.secretValue(val, depth+1)
	}
}

// secretKey keeps a key of a secret mapping visible (its text still
// scanned) unless it is not a plain scalar, which is masked whole.
func (p *pass) secretKey(k *yaml.Node) {
	p.comments(k)
	if k.Kind == yaml.ScalarNode {
		k.Value = p.text(k.Value, false)
	} else {
		p.setMarker(k)
	}
}

// secretData masks every value of a Secret's data or stringData, keeping keys.
func (p *pass) secretData(v *yaml.Node) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	if v.Kind == yaml.AliasNode {
		// data: *d masks the values of the anchor d, wherever it is.
		if t := p.aliasTarget(v); t != nil {
			p.secretData(t)
		}
		return
	}
	if v.Kind != yaml.MappingNode {
		p.setMarker(v)
		return
	}
	p.comments(v)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		p.secretKey(k)
		if val.Kind == yaml.ScalarNode && sopsValue.MatchString(val.Value) {
			p.encrypted = true
			continue
		}
		if val.Kind == yaml.AliasNode {
			if t := p.aliasTarget(val); t != nil {
				p.setMarker(t)
			}
			continue
		}
		p.setMarker(val)
	}
}

// field returns the scalar value of key in mapping n, or "".
func field(n *yaml.Node, key string) string {
	if v := valueOf(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// isSecretMapping reports a Kubernetes Secret holding data or stringData:
// a kind: Secret in any of the mapping's entries (duplicate keys and other
// API groups included: masking more is the safe side), also when kind is an
// alias or comes through a << merge. When kind cannot be resolved (an alias
// without an anchor, a merge cycle, merges past maxMergeEntries) it fails
// closed and counts as a Secret.
func isSecretMapping(n *yaml.Node) bool {
	if valueOf(n, "data") == nil && valueOf(n, "stringData") == nil {
		return false
	}
	secret, known, lost := false, false, false
	unresolved := mergedEntries(n, func(k string, v *yaml.Node) {
		if k != "kind" {
			return
		}
		switch t, ok := resolveAlias(v); {
		case !ok:
			lost = true
		case t.Kind == yaml.ScalarNode:
			known, secret = true, secret || t.Value == "Secret"
		}
	})
	return secret || (unresolved || lost) && !known
}

// namesSecretPair reports a mapping whose naming key (name, key, ...),
// its own or merged in (<<), holds a secret-looking name, so that its value
// keys hold that secret: env entries (name/value), tags and Terraform or
// Crossplane variables (key/value).
func namesSecretPair(n *yaml.Node) bool {
	hasValue := false
	for i := 0; i < len(n.Content); i += 2 {
		hasValue = hasValue || n.Content[i].Kind == yaml.ScalarNode && isPairValue(n.Content[i].Value)
	}
	if !hasValue {
		return false
	}
	named := false
	mergedEntries(n, func(k string, v *yaml.Node) {
		if t, ok := resolveAlias(v); ok && t.Kind == yaml.ScalarNode && namesSecretValue(k, t.Value) {
			named = true
		}
	})
	return named
}

// maxMergeEntries bounds the entries read through merges for one mapping,
// so that mappings merging large anchors cost linear time.
const maxMergeEntries = 1000

// mergedEntries calls visit with each scalar-keyed entry of mapping n and
// of the mappings it merges (<<, an alias, a mapping or a sequence of
// them), and reports whether some merge could not be followed (an alias
// without an anchor, a cycle, past maxMergeEntries).
func mergedEntries(n *yaml.Node, visit func(key string, v *yaml.Node)) (unresolved bool) {
	budget := maxMergeEntries
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		t, ok := resolveAlias(n)
		if !ok || depth > maxAliasDepth || seen[t] {
			unresolved = true
			return
		}
		seen[t] = true
		if t.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(t.Content); i += 2 {
			if budget--; budget < 0 {
				unresolved = true
				return
			}
			k, v := t.Content[i], t.Content[i+1]
			switch {
			case k.Kind != yaml.ScalarNode:
			case k.Value == "<<" && (k.Tag == "!!merge" || k.Style == 0):
				merged := []*yaml.Node{v}
				if m, ok := resolveAlias(v); ok && m.Kind == yaml.SequenceNode {
					merged = m.Content
				}
				for _, m := range merged {
					walk(m, depth+1)
				}
			default:
				visit(k.Value, v)
			}
		}
	}
	walk(n, 0)
	return unresolved
}

// resolveAlias follows an alias chain to its node; false when it ends
// without one or loops.
func resolveAlias(n *yaml.Node) (*yaml.Node, bool) {
	for range maxAliasDepth {
		if n == nil {
			return nil, false
		}
		if n.Kind != yaml.AliasNode {
			return n, true
		}
		n = n.Alias
	}
	return nil, false
}

// maxAliasDepth bounds the aliases and merges followed to find a kind.
const maxAliasDepth = 64

func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
