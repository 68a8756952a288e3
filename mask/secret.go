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
	budget := maxMergeEntries
	kinds, unresolved := mergedValues(n, "kind", 0, map[*yaml.Node]bool{}, &budget)
	for _, k := range kinds {
		if k == "Secret" {
			return true
		}
	}
	return unresolved && len(kinds) == 0
}

// maxMergeEntries bounds the entries read through merges to find one
// mapping's kind, so that mappings merging large anchors cost linear time.
const maxMergeEntries = 1000

// mergedValues returns the scalar values of key in mapping n, its aliases
// and the mappings it merges (<<), and whether some alias or merge could
// not be followed within budget entries.
func mergedValues(n *yaml.Node, key string, depth int, seen map[*yaml.Node]bool, budget *int) (values []string, unresolved bool) {
	if n == nil || depth > maxAliasDepth || seen[n] {
		return nil, true
	}
	seen[n] = true
	for n.Kind == yaml.AliasNode {
		if n = n.Alias; n == nil || seen[n] {
			return nil, true
		}
		seen[n] = true
	}
	if n.Kind != yaml.MappingNode {
		return nil, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if *budget--; *budget < 0 {
			return values, true
		}
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		switch {
		case k.Value == key:
			t, ok := resolveAlias(v)
			switch {
			case !ok:
				unresolved = true
			case t.Kind == yaml.ScalarNode:
				values = append(values, t.Value)
			}
		case k.Value == "<<" && (k.Tag == "!!merge" || k.Style == 0):
			merged := []*yaml.Node{v}
			if t, ok := resolveAlias(v); ok && t.Kind == yaml.SequenceNode {
				merged = t.Content
			}
			for _, m := range merged {
				vs, u := mergedValues(m, key, depth+1, seen, budget)
				values, unresolved = append(values, vs...), unresolved || u
			}
		}
	}
	return values, unresolved
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

// namesSecretPair reports a mapping whose naming key (name, key, ...)
// holds a secret-looking name, so that its value keys hold that secret:
// env entries (name/value), tags and Terraform or Crossplane variables
// (key/value).
func namesSecretPair(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if t, ok := resolveAlias(v); ok && k.Kind == yaml.ScalarNode && t.Kind == yaml.ScalarNode && namesSecretValue(k.Value, t.Value) {
			return true
		}
	}
	return false
}

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
