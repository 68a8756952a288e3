package gitpreview

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// source is where the field at gitTokens of rendered document doc is set:
// the values leaf the trace names (a values file, or the Application's
// override), else a template line that holds it literally.
func (h *helmIndex) source(m service.ValueMasker, doc int, at service.GitSource, files map[string][]byte, gitTokens []string, v any,
	planned json.RawMessage) (service.GitSource, service.Reason) {
	f, ok := h.fields[doc][pointer(gitTokens)]
	if !ok {
		if line := literalLine(files[at.Path], gitTokens, v); line > 0 && strings.HasSuffix(at.Path, ".yaml") {
			at.Line = line
			return at, ""
		}
		at.Via = ViaUnsupported
		return at, ReasonHelmNotTraced
	}
	return h.fromLeaf(m, at, f, planned)
}

// fromLeaf is where the leaf behind traced field f is set: a values file
// and the key's line, or the Application's override.
func (h *helmIndex) fromLeaf(m service.ValueMasker, at service.GitSource, f service.HelmField,
	planned json.RawMessage) (service.GitSource, service.Reason) {
	k, keyPlanned := chooseLeaf(f, h.trace.Leaves, planned)
	leaf := h.trace.Leaves[f.Parts[k].Leaf-1]
	at.Key = strings.Join(leaf.Path, ".")
	if f.Verified {
		at.KeyPlanned = keyPlanned
	}
	switch leaf.Origin.Kind {
	case service.HelmOriginFile:
		at.Via, at.Path, at.Line = ViaHelmValues, leaf.Origin.File, leaf.Origin.Line
		switch {
		case leaf.Origin.Shared:
			at.KeyPlanned = nil
			return at, ReasonHelmKeyShared
		case h.nearSecret(m, at.Path, at.Line):
			at.KeyPlanned = nil
			return at, ReasonSecretInContext
		}
	case service.HelmOriginParameter:
		at.Via, at.Path, at.Line = ViaApplicationOverride, "", 0
		at.Override = "spec.source.helm.parameters[name=" + leaf.Origin.Parameter + "]"
	case service.HelmOriginValues:
		at.Via, at.Path, at.Line, at.Override = ViaApplicationOverride, "", 0, "spec.source.helm.values"
	case service.HelmOriginValuesObject:
		at.Via, at.Path, at.Line, at.Override = ViaApplicationOverride, "", 0, "spec.source.helm.valuesObject."+at.Key
	default:
		at.Via = ViaUnsupported
		return at, ReasonHelmOriginUnknown
	}
	return at, ""
}

// chooseLeaf picks the part whose leaf feeds the field — the one the
// planned value changes when several leaves make it ("nginx:1.27" from
// repository and tag), else the last — and what that leaf must hold for
// the planned value (nil when it cannot be told).
func chooseLeaf(f service.HelmField, leaves []service.HelmLeaf, planned json.RawMessage) (int, json.RawMessage) {
	text := func(p service.HelmPart) string {
		if p.Leaf > 0 {
			return leaves[p.Leaf-1].Text
		}
		return p.Text
	}
	var want string
	wantString := json.Unmarshal(planned, &want) == nil
	chosen, value := -1, json.RawMessage(nil)
	for k, p := range f.Parts {
		if p.Leaf == 0 {
			continue
		}
		if chosen < 0 || value == nil {
			chosen = k // the last leaf, unless the planned value names one
		}
		if len(f.Parts) == 1 {
			return k, planned
		}
		var before, after strings.Builder
		for _, q := range f.Parts[:k] {
			before.WriteString(text(q))
		}
		for _, q := range f.Parts[k+1:] {
			after.WriteString(text(q))
		}
		pre, suf := before.String(), after.String()
		if !wantString || len(want) < len(pre)+len(suf) || !strings.HasPrefix(want, pre) || !strings.HasSuffix(want, suf) {
			continue
		}
		middle := want[len(pre) : len(want)-len(suf)]
		if middle == text(p) || value != nil {
			continue
		}
		chosen, value = k, leafValue(middle, leaves[p.Leaf-1].Number)
	}
	return chosen, value
}

// leafValue is text as a values leaf: a number for a number leaf when it
// reads as one, else a string.
func leafValue(text string, number bool) json.RawMessage {
	if number {
		var n json.Number
		if json.Unmarshal([]byte(text), &n) == nil {
			return json.RawMessage(text)
		}
	}
	b, _ := json.Marshal(text)
	return b
}

// literalLine is the line of a chart template that sets the field's key
// to its value literally (no template action on it): the only such line,
// 0 when there is none or several.
func literalLine(content []byte, tokens []string, v any) int {
	if len(tokens) == 0 || isIndex(tokens[len(tokens)-1]) {
		return 0
	}
	switch v.(type) {
	case map[string]any, []any:
		return 0
	}
	key, text := tokens[len(tokens)-1], jsonText(v)
	found := 0
	for i, line := range strings.Split(string(content), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		k, rest, ok := strings.Cut(line, ":")
		if !ok || strings.Contains(line, "{{") || strings.Trim(k, `"'`) != key {
			continue
		}
		rest = strings.TrimSpace(rest)
		if c := strings.Index(rest, " #"); c >= 0 {
			rest = strings.TrimSpace(rest[:c])
		}
		if rest == text || strings.Trim(rest, `"`) == text && strings.HasPrefix(rest, `"`) || strings.Trim(rest, "'") == text && strings.HasPrefix(rest, "'") {
			if found > 0 {
				return 0
			}
			found = i + 1
		}
	}
	return found
}

func isIndex(tok string) bool {
	_, err := fmt.Sscanf(tok, "%d", new(int))
	return err == nil && strings.Trim(tok, "0123456789") == ""
}

// validField reports a traced field whose parts name leaves that exist,
// at least one.
func validField(f service.HelmField, leaves int) bool {
	named := false
	for _, p := range f.Parts {
		if p.Leaf < 0 || p.Leaf > leaves {
			return false
		}
		named = named || p.Leaf > 0
	}
	return named && f.Doc >= 0
}

// nearSecret reports a secret leaf's line within a patch's context of
// line in file.
func (h *helmIndex) nearSecret(m service.ValueMasker, file string, line int) bool {
	h.secretOnce.Do(func() { h.secretLines = h.findSecretLines(m) })
	for _, l := range h.secretLines[file] {
		if l >= line-diffContext && l <= line+diffContext {
			return true
		}
	}
	return false
}

// diffContext is git-change's context: the lines either side of an edit.
const diffContext = 3

// findSecretLines are the lines of the leaves that feed a Secret's data
// (the trace's Secrets) or any traced field the masker masks in its
// document; without a masker every traced leaf counts.
func (h *helmIndex) findSecretLines(m service.ValueMasker) map[string][]int {
	secret := map[int]bool{}
	for _, i := range h.trace.Secrets {
		secret[i] = true
	}
	for doc, fields := range h.fields {
		if doc >= len(h.docs) {
			continue
		}
		pointers := make([]string, 0, len(fields))
		for p := range fields {
			pointers = append(pointers, p)
		}
		judged := h.docs[doc].masked(m, pointers)
		for p, f := range fields {
			if judged[p] {
				for _, part := range f.Parts {
					secret[part.Leaf] = true
				}
			}
		}
	}
	out := map[string][]int{}
	for i := range secret {
		if i > 0 && i <= len(h.trace.Leaves) {
			o := h.trace.Leaves[i-1].Origin
			out[o.File] = append(out[o.File], o.Line)
		}
	}
	return out
}

// firstLine is the 1-based line of the first line starting (after
// indentation) with prefix, 1 when none does.
func firstLine(content []byte, prefix string) int {
	for i, line := range strings.Split(string(content), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return i + 1
		}
	}
	return 1
}
