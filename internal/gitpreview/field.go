package gitpreview

import (
	"encoding/json"
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// mergeKeys are the keys that name an item of a list, by the list's field
// name, as Kubernetes' strategic merge patches do (the patchMergeKey of the
// core types): a pointer's index into a live list names the item with the
// same key in Git, as Argo CD's diff matches them, not the item at the
// same index. Lists not named here are matched by index.
var mergeKeys = map[string]string{
	"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
	"env": "name", "volumes": "name", "imagePullSecrets": "name", "ports": "containerPort",
	"volumeMounts": "mountPath", "volumeDevices": "devicePath", "hostAliases": "ip",
	"topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
}

// field finds one field in the object's manifest: set with the value and
// the line of the key that sets it, or unset (with where the manifest is).
func field(f service.FieldPreview, obj service.ObjectInfo, doc *docMask, at service.GitSource) (setting, bool) {
	tokens, ok := service.SplitPointer(f.Field)
	node, line, gitTokens, found := locate(doc.node, tokens, obj.Object)
	if !ok || !found {
		at.Line = doc.node.Line
		return setting{source: at}, false
	}
	at.Line = line
	var v any
	err := node.Decode(&v)
	return setting{source: at, value: v, doc: doc, tokens: gitTokens, masked: err != nil}, true
}

// setting is where a field's desired value comes from: its source, the
// value, and the document holding it (with the value's pointer there) for
// the masker; masked when it cannot be judged.
type setting struct {
	source service.GitSource
	value  any
	doc    *docMask
	tokens []string
	masked bool
}

// fillAll gives each field its Git part: unset where nothing sets it, else
// set with the value — masked when the field is, when there is no masker,
// or when the masker masks the value in its document (judged in one pass
// per document, and kept). A masked Git value masks the whole field.
func (l *Locator) fillAll(fields []service.FieldPreview, settings []setting, set []bool) []service.FieldPreview {
	asks := map[*docMask][]string{}
	for i, s := range settings {
		if set[i] && s.doc != nil {
			asks[s.doc] = append(asks[s.doc], pointer(s.tokens))
		}
	}
	judged := map[*docMask]map[string]bool{}
	for d, ps := range asks {
		judged[d] = d.masked(l.Masker, ps)
	}
	out := slices.Clone(fields)
	for i, s := range settings {
		src := s.source
		if !set[i] {
			out[i].Git = &service.GitValue{State: service.GitUnset, Source: &src}
			continue
		}
		out[i].Git = &service.GitValue{State: service.GitSet, Source: &src}
		if out[i].Masked || l.Masker == nil || s.masked || s.doc == nil || judged[s.doc][pointer(s.tokens)] {
			out[i].Masked, out[i].Live, out[i].Planned = true, nil, nil
			continue
		}
		b, err := json.Marshal(s.value)
		if err != nil || s.doc.reveals(b) || s.doc.reveals(out[i].Live) || s.doc.reveals(out[i].Planned) {
			out[i].Masked, out[i].Live, out[i].Planned = true, nil, nil
			continue
		}
		out[i].Git.Value = b
	}
	return out
}

// locate follows a pointer's tokens through a manifest, matching list
// items by their merge key in the live object. It returns the value node,
// the line of the key (or list item) that sets it, and the pointer's tokens
// as they index the manifest.
func locate(doc *yaml.Node, tokens []string, live any) (*yaml.Node, int, []string, bool) {
	cur, line := resolve(doc), doc.Line
	gitTokens := make([]string, 0, len(tokens))
	// Through an alias (or a << merge) the value is the anchor's: its line
	// stays the alias's, where the field is given for this object, since
	// editing the anchor would change every place that uses it.
	pinned := false
	step := func(raw *yaml.Node, keyLine int) {
		if !pinned {
			line = keyLine
		}
		pinned = pinned || raw.Kind == yaml.AliasNode
		cur = resolve(raw)
	}
	listField := ""
	for _, tok := range tokens {
		switch cur.Kind {
		case yaml.MappingNode:
			k, v, viaMerge := mappingEntry(cur, tok)
			if k == nil {
				return nil, 0, nil, false
			}
			if viaMerge && !pinned {
				line, pinned = k.Line, true
			}
			step(v, k.Line)
			gitTokens = append(gitTokens, tok)
			live, _ = service.LookupPointer(live, []string{tok})
			listField = tok
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 {
				return nil, 0, nil, false
			}
			item, _ := service.LookupPointer(live, []string{tok})
			j := matchItem(cur, i, item, mergeKeys[listField])
			if j < 0 {
				return nil, 0, nil, false
			}
			step(cur.Content[j], cur.Content[j].Line)
			gitTokens = append(gitTokens, strconv.Itoa(j))
			live = item
		default:
			return nil, 0, nil, false
		}
		if cur == nil {
			return nil, 0, nil, false
		}
	}
	return cur, line, gitTokens, true
}

// mappingEntry is a mapping's key and raw value for key, looking in its <<
// merges (a mapping or a list of them) when the mapping does not hold it;
// viaMerge then says so, with the << key returned.
func mappingEntry(m *yaml.Node, key string) (k, v *yaml.Node, viaMerge bool) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case key:
			return m.Content[i], m.Content[i+1], false
		case "<<":
			merges = append(merges, m.Content[i], m.Content[i+1])
		}
	}
	for i := 0; i+1 < len(merges); i += 2 {
		src := resolve(merges[i+1])
		sources := []*yaml.Node{src}
		if src != nil && src.Kind == yaml.SequenceNode {
			sources = src.Content
		}
		for _, s := range sources {
			if s = resolve(s); s != nil && s.Kind == yaml.MappingNode {
				if _, mv, _ := mappingEntry(s, key); mv != nil {
					return merges[i], mv, true
				}
			}
		}
	}
	return nil, nil, false
}

// matchItem is the index in a Git list of the live item at index i: the
// item with the same value of the list's merge key, or index i for a list
// matched by index; -1 when there is none.
func matchItem(list *yaml.Node, i int, liveItem any, key string) int {
	if m, ok := liveItem.(map[string]any); ok && key != "" {
		want, ok := m[key]
		if !ok {
			return -1
		}
		wantText := jsonText(want)
		for j, n := range list.Content {
			if v := value(n, key); v != nil && v.Kind == yaml.ScalarNode && v.Value == wantText {
				return j
			}
		}
		return -1
	}
	if i < len(list.Content) {
		return i
	}
	return -1
}

// jsonText is a scalar's text as YAML writes it (numbers without quotes).
func jsonText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(t, 10)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// pointer writes tokens as an RFC 6901 pointer.
func pointer(tokens []string) string { return service.JoinPointer(tokens) }
