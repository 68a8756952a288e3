package mask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// emitJSON writes masked JSON documents back as indented JSON, keeping key
// order.
func emitJSON(docs []*yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	for _, d := range docs {
		n := d
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				continue
			}
			n = n.Content[0]
		}
		if err := writeJSON(&b, n, "  ", 0); err != nil {
			return nil, err
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// writeJSON writes n as JSON; an empty indent writes it compact.
func writeJSON(b *bytes.Buffer, n *yaml.Node, indent string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("mask: JSON nested deeper than %d", maxDepth)
	}
	newline := func(d int) {
		if indent != "" {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(indent, d))
		}
	}
	sep := ":"
	if indent != "" {
		sep = ": "
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(depth + 1)
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("mask: JSON key is not a string")
			}
			writeJSONString(b, k.Value)
			b.WriteString(sep)
			if err := writeJSON(b, n.Content[i+1], indent, depth+1); err != nil {
				return err
			}
		}
		if len(n.Content) > 0 {
			newline(depth)
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(depth + 1)
			if err := writeJSON(b, c, indent, depth+1); err != nil {
				return err
			}
		}
		if len(n.Content) > 0 {
			newline(depth)
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 && n.Tag != "!!str" && json.Valid([]byte(n.Value)) {
			b.WriteString(n.Value)
		} else {
			writeJSONString(b, n.Value)
		}
	default:
		return fmt.Errorf("mask: YAML node kind %d has no JSON form", n.Kind)
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
