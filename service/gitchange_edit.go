package service

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// lineEdit is one change to a file: the line replaced, or lines added
// before it.
type lineEdit struct {
	line    int
	replace *string
	insert  []string
}

// fileEdits are a file's edits by line.
type fileEdits map[int]*lineEdit

func (fe fileEdits) conflicts(e lineEdit) bool {
	old, ok := fe[e.line]
	return ok && ((e.replace != nil && old.replace != nil) || (e.insert != nil && old.insert != nil))
}

func (fe fileEdits) add(e lineEdit) {
	old, ok := fe[e.line]
	if !ok {
		fe[e.line] = &e
		return
	}
	if e.replace != nil {
		old.replace = e.replace
	}
	old.insert = append(old.insert, e.insert...)
}

// addition writes a field Git does not set into the object's manifest
// (the mapping at line objectLine): under the deepest mapping of the
// pointer that exists, before its first key, at that key's indentation,
// the missing keys nested two spaces deeper each. A pointer through a list,
// an empty or flow-style mapping, or a field set as something else than a
// mapping is left out.
func addition(content []byte, objectLine int, pointer, scalar string) (lineEdit, string) {
	tokens, ok := SplitPointer(pointer)
	if !ok || len(tokens) == 0 {
		return lineEdit{}, UnsupportedValueShape
	}
	obj := manifestAt(content, objectLine)
	if obj == nil {
		return lineEdit{}, UnsupportedNotManifest
	}
	cur, depth := obj, 0
	for depth < len(tokens) {
		var next *yaml.Node
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value == tokens[depth] {
				next = cur.Content[i+1]
			}
		}
		if next == nil {
			break
		}
		if next.Kind != yaml.MappingNode {
			return lineEdit{}, UnsupportedValueShape // set as a scalar or a list: not a missing field
		}
		cur, depth = next, depth+1
	}
	if depth == len(tokens) || len(cur.Content) == 0 || cur.Style&yaml.FlowStyle != 0 {
		return lineEdit{}, UnsupportedValueShape
	}
	first := cur.Content[0]
	indent := strings.Repeat(" ", first.Column-1)
	var added []string
	for i, tok := range tokens[depth:] {
		if isIndex(tok) {
			return lineEdit{}, UnsupportedValueShape
		}
		key, _ := yamlScalar([]byte(jsonString(tok)))
		line := indent + strings.Repeat("  ", i) + key + ":"
		if i == len(tokens)-depth-1 {
			line += " " + scalar
		}
		added = append(added, line)
	}
	return lineEdit{line: first.Line, insert: added}, ""
}

// manifestAt is the mapping of the YAML document that starts at line.
func manifestAt(content []byte, line int) *yaml.Node {
	dec := yaml.NewDecoder(strings.NewReader(string(content)))
	for {
		var doc yaml.Node
		if dec.Decode(&doc) != nil {
			return nil
		}
		if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode && doc.Content[0].Line == line {
			return doc.Content[0]
		}
	}
}

func isIndex(tok string) bool {
	return tok != "" && strings.Trim(tok, "0123456789") == ""
}

func jsonString(s string) string {
	return fmt.Sprintf("%q", s)
}

// diffContext is the lines of context around each change.
const diffContext = 3

// diffOp is one line of a diff: ' ' kept, '-' removed, '+' added, with the
// line's number in the old file (0 for an added line).
type diffOp struct {
	kind    byte
	text    string
	oldLine int
}

// diff writes a unified diff of a file's edits; false when a hunk's
// context would hold a value the masker masks (masking the context would
// break git apply, showing it would leak it).
func (s *GitChanges) diff(path string, content []byte, edits fileEdits) (string, bool) {
	text := string(content)
	trailingNewline := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	// The values the masker masks in the file: a hunk whose lines hold one
	// is not written. Compared by value, as the masker re-emits YAML in its
	// own layout.
	var secrets []string
	if s.Masker != nil {
		for _, v := range s.Masker.File(path, content).Secrets {
			if strings.TrimSpace(v) != "" {
				secrets = append(secrets, v)
			}
		}
	}
	var ops []diffOp
	var changed []int
	for l, line := range lines {
		e := edits[l+1]
		if e != nil {
			for _, add := range e.insert {
				changed = append(changed, len(ops))
				ops = append(ops, diffOp{kind: '+', text: add})
			}
		}
		if e != nil && e.replace != nil {
			changed = append(changed, len(ops), len(ops)+1)
			ops = append(ops, diffOp{kind: '-', text: line, oldLine: l + 1}, diffOp{kind: '+', text: *e.replace})
			continue
		}
		ops = append(ops, diffOp{kind: ' ', text: line, oldLine: l + 1})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", path, path)
	for i := 0; i < len(changed); {
		start, end := max(0, changed[i]-diffContext), min(len(ops)-1, changed[i]+diffContext)
		j := i + 1
		for j < len(changed) && changed[j]-diffContext <= end+1 {
			end = min(len(ops)-1, changed[j]+diffContext)
			j++
		}
		hunk := ops[start : end+1]
		for _, op := range hunk {
			for _, secret := range secrets {
				if strings.Contains(op.text, secret) {
					return "", false
				}
			}
		}
		oldStart, newStart := hunkStarts(ops, start)
		oldCount, newCount := 0, 0
		for _, op := range hunk {
			if op.kind != '+' {
				oldCount++
			}
			if op.kind != '-' {
				newCount++
			}
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldStart, oldCount, newStart, newCount)
		lastNew := lastNewOp(ops)
		for k, op := range hunk {
			b.WriteString(string(op.kind) + op.text + "\n")
			endsOld := op.kind != '+' && op.oldLine == len(lines)
			if !trailingNewline && (endsOld || start+k == lastNew) {
				b.WriteString("\\ No newline at end of file\n")
			}
		}
		i = j
	}
	return b.String(), true
}

// hunkStarts are a hunk's first line numbers in the old and new file.
func hunkStarts(ops []diffOp, start int) (int, int) {
	oldLine, newLine := 1, 1
	for _, op := range ops[:start] {
		if op.kind != '+' {
			oldLine++
		}
		if op.kind != '-' {
			newLine++
		}
	}
	return oldLine, newLine
}

// lastNewOp is the index of the op that holds the new file's last line.
func lastNewOp(ops []diffOp) int {
	for k := len(ops) - 1; k >= 0; k-- {
		if ops[k].kind != '-' {
			return k
		}
	}
	return -1
}
