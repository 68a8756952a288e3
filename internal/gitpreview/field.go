package gitpreview

import (
	"encoding/json"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// mergeKeys are the keys that name a list item, as Kubernetes' strategic
// merge patches do (containers, env, volumes by name; ports by
// containerPort; mounts by mountPath), tried in order: a pointer's index
// into a live list names the item with the same key in Git, as Argo CD's
// diff matches them, not the item at the same index.
var mergeKeys = []string{"name", "containerPort", "mountPath", "devicePath", "ip", "topologyKey"}

// field fills one field's Git part from the object's manifest: set with
// the value and the line of the key that sets it, or unset. A masked field
// shows no Git value either, and a Git value the masker masks makes the
// field masked.
func (l *Locator) field(f service.FieldPreview, obj service.ObjectInfo, doc *yaml.Node, at service.GitSource) service.FieldPreview {
	tokens, ok := service.SplitPointer(f.Field)
	node, line, gitTokens, found := locate(doc, tokens, obj.Object)
	if !ok || !found {
		// Where the object's manifest is: the patch adds the field there.
		at.Line = doc.Line
		f.Git = &service.GitValue{State: service.GitUnset, Source: &at}
		return f
	}
	at.Line = line
	var v any
	if node.Decode(&v) != nil {
		return l.fill(f, setting{source: at, masked: true})
	}
	return l.fill(f, setting{source: at, value: v, doc: doc, tokens: gitTokens})
}

// setting is where a field's desired value comes from: its source, the
// value, and the document holding it (with the value's pointer there) for
// the masker; masked when it cannot be judged.
type setting struct {
	source service.GitSource
	value  any
	doc    *yaml.Node
	tokens []string
	masked bool
}

// fill sets a field's Git part to a found value, masked when the field is,
// when there is no masker, or when the masker masks the value in its
// document (then the whole field is masked).
func (l *Locator) fill(f service.FieldPreview, s setting) service.FieldPreview {
	src := s.source
	f.Git = &service.GitValue{State: service.GitSet, Source: &src}
	if f.Masked || l.Masker == nil || s.masked {
		f.Masked, f.Live, f.Planned = true, nil, nil
		return f
	}
	gitDoc, err := docJSON(s.doc)
	if err != nil || l.Masker.MasksField(gitDoc, pointer(s.tokens), nil) {
		f.Masked, f.Live, f.Planned = true, nil, nil
		return f
	}
	if b, err := json.Marshal(s.value); err == nil {
		f.Git.Value = b
	}
	return f
}

// locate follows a pointer's tokens through a manifest, matching list
// items by their merge key in the live object. It returns the value node,
// the line of the key (or list item) that sets it, and the pointer's tokens
// as they index the manifest.
func locate(doc *yaml.Node, tokens []string, live any) (*yaml.Node, int, []string, bool) {
	cur, line := resolve(doc), doc.Line
	gitTokens := make([]string, 0, len(tokens))
	for _, tok := range tokens {
		switch cur.Kind {
		case yaml.MappingNode:
			k, v := entry(cur, tok)
			if k == nil {
				return nil, 0, nil, false
			}
			cur, line = v, k.Line
			gitTokens = append(gitTokens, tok)
			live, _ = service.LookupPointer(live, []string{tok})
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 {
				return nil, 0, nil, false
			}
			item, _ := service.LookupPointer(live, []string{tok})
			j := matchItem(cur, i, item)
			if j < 0 {
				return nil, 0, nil, false
			}
			cur, line = resolve(cur.Content[j]), cur.Content[j].Line
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

// matchItem is the index in a Git list of the live item at index i: the
// item with the same merge key value, or index i when the live item has
// no merge key; -1 when there is none.
func matchItem(list *yaml.Node, i int, liveItem any) int {
	if m, ok := liveItem.(map[string]any); ok {
		for _, key := range mergeKeys {
			want, ok := m[key]
			if !ok {
				continue
			}
			wantText := jsonText(want)
			for j, n := range list.Content {
				if v := value(n, key); v != nil && v.Kind == yaml.ScalarNode && v.Value == wantText {
					return j
				}
			}
			return -1
		}
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

// docJSON is a manifest as JSON, for the masker.
func docJSON(doc *yaml.Node) (json.RawMessage, error) {
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// pointer writes tokens as an RFC 6901 pointer.
func pointer(tokens []string) string {
	out := ""
	for _, t := range tokens {
		out += "/" + escape(t)
	}
	return out
}

func escape(t string) string {
	b := make([]byte, 0, len(t))
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, t[i])
		}
	}
	return string(b)
}
