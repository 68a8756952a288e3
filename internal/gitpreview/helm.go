package gitpreview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// Vias of Helm sources.
const (
	ViaHelmValues          = "helm_values"          // the values key that feeds the field: the values file and the key's line
	ViaHelmTemplate        = "helm_template"        // literal in a chart template: that file and line
	ViaApplicationOverride = "application_override" // the Application's helm.parameters, values or valuesObject
	ViaUnsupported         = "unsupported"          // set, but where cannot be told (GitValue.Reason says why)
)

// Reasons a Helm field's location cannot be told (GitValue.Reason, with
// ViaUnsupported).
const (
	ReasonHelmNotTraced     service.Reason = "helm_value_not_traced"     // computed in the template (a function, a boolean, .Chart or .Release, a default)
	ReasonHelmOriginUnknown service.Reason = "helm_value_origin_unknown" // a values leaf no layer names (a packed subchart, an import)
)

// helmIndex is a Helm source's traced render at one commit, parsed: the
// rendered documents in order, where each object is, and the traced
// fields by document and pointer.
type helmIndex struct {
	trace   service.HelmTrace
	docs    []*docMask
	objects map[objectKey][]placedDoc
	fields  map[int]map[string]service.HelmField
}

type placedDoc struct {
	namespace string
	doc       int
}

func newHelmIndex(tr service.HelmTrace, app service.Application) *helmIndex {
	h := &helmIndex{trace: tr, objects: map[objectKey][]placedDoc{}, fields: map[int]map[string]service.HelmField{}}
	dec := yaml.NewDecoder(strings.NewReader(string(tr.Manifests)))
	for {
		var doc yaml.Node
		if dec.Decode(&doc) != nil {
			break
		}
		if len(doc.Content) != 1 {
			continue
		}
		m := doc.Content[0]
		if key, ns, ok := identity(m, app); ok && !tooComplex(m) {
			h.objects[key] = append(h.objects[key], placedDoc{namespace: ns, doc: len(h.docs)})
		}
		h.docs = append(h.docs, newDocMask(m))
	}
	for _, f := range tr.Fields {
		if h.fields[f.Doc] == nil {
			h.fields[f.Doc] = map[string]service.HelmField{}
		}
		h.fields[f.Doc][f.Pointer] = f
	}
	return h
}

// helm fills the fields from a Helm source's traced render, rendered in
// one of the repo tab's slots and kept per commit; a render the detection
// budget cuts is pending and goes on in the background.
func (l *Locator) helm(ctx context.Context, c service.Cluster, app service.Application, src service.AppSource, commit string,
	files map[string][]byte, obj service.ObjectInfo, fields []service.FieldPreview) []service.FieldPreview {
	if l.Tracer == nil {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonSourceTypeUnsupported})
	}
	var kubeVersion string
	var apiVersions []string
	if l.Versions != nil {
		kubeVersion, apiVersions, _ = l.Versions.ClusterVersion(ctx, c)
	}
	key := strings.Join([]string{"helm", c.TeamID, service.NormalizeRepoURL(src.RepoURL), commit, string(src.Spec), app.Name,
		app.Destination.Namespace, kubeVersion, strings.Join(apiVersions, ",")}, "\x00")
	h, err := l.traced(ctx, key, c.TeamID, service.RenderInput{Files: files, Spec: src.Spec, AppName: app.Name,
		Namespace: app.Destination.Namespace, KubeVersion: kubeVersion, APIVersions: apiVersions}, app)
	switch {
	case err != nil:
		return withGit(fields, service.GitValue{State: service.GitPending})
	case h.trace.Code != "":
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonRenderFailed})
	}
	i, found := h.find(obj)
	if !found {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonObjectNotRendered})
	}
	template := ""
	if i < len(h.trace.Templates) {
		template = h.trace.Templates[i]
	}
	doc := h.docs[i]
	settings, set := make([]setting, len(fields)), make([]bool, len(fields))
	notes := make([]service.Reason, len(fields))
	for j, f := range fields {
		at := service.GitSource{Revision: commit, Path: template, Via: ViaHelmTemplate}
		tokens, ok := service.SplitPointer(f.Field)
		node, _, gitTokens, found := locate(doc.node, tokens, obj.Object)
		if !ok || !found {
			at.Line = firstLine(files[template], "kind:")
			settings[j] = setting{source: at}
			continue
		}
		var v any
		err := node.Decode(&v)
		at, notes[j] = h.source(i, at, files, gitTokens, v, f.Planned)
		settings[j], set[j] = setting{source: at, value: v, doc: doc, tokens: gitTokens, masked: err != nil}, true
	}
	out := l.fillAll(fields, settings, set)
	for j := range out {
		if notes[j] != "" && out[j].Git != nil {
			out[j].Git.Reason = notes[j]
		}
		if out[j].Masked && out[j].Git != nil && out[j].Git.Source != nil {
			out[j].Git.Source.KeyPlanned = nil
		}
	}
	return out
}

// find is the document of obj: the first with its group, kind and name,
// and its namespace for a namespaced object.
func (h *helmIndex) find(obj service.ObjectInfo) (int, bool) {
	for _, p := range h.objects[objectKey{obj.Group, obj.Kind, obj.Name}] {
		if !obj.Namespaced || p.namespace == obj.Namespace {
			return p.doc, true
		}
	}
	return 0, false
}

// source is where the field at gitTokens of rendered document doc is set:
// the values leaf the trace names (a values file, or the Application's
// override), else a template line that holds it literally.
func (h *helmIndex) source(doc int, at service.GitSource, files map[string][]byte, gitTokens []string, v any,
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
	k, keyPlanned := chooseLeaf(f, h.trace.Leaves, planned)
	leaf := h.trace.Leaves[f.Parts[k].Leaf-1]
	at.Key = strings.Join(leaf.Path, ".")
	if f.Verified {
		at.KeyPlanned = keyPlanned
	}
	switch leaf.Origin.Kind {
	case service.HelmOriginFile:
		at.Via, at.Path, at.Line = ViaHelmValues, leaf.Origin.File, leaf.Origin.Line
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

// traced is the Helm source's traced render under key, from the cache, or
// rendered in one of the team's render slots by one flight that callers of
// the same inputs share and that outlives them: a caller whose ctx ends
// first gets ctx's error (pending) and a later detection finds it cached.
// A slot that stays busy past the queue's timeout is pending too.
func (l *Locator) traced(ctx context.Context, key, team string, in service.RenderInput, app service.Application) (*helmIndex, error) {
	if ix, ok := l.cache().Get(key); ok && ix.helm != nil {
		return ix.helm, nil
	}
	ch := l.flight.DoChan(key, func() (any, error) {
		bg := context.WithoutCancel(ctx)
		release, err := l.Queue.Acquire(bg, team)
		if err != nil {
			return nil, err
		}
		defer release()
		tr, err := l.Tracer.TraceHelm(bg, in)
		if err != nil {
			return nil, err
		}
		h := newHelmIndex(tr, app)
		switch tr.Reason {
		case service.ReasonRenderTimeout, service.ReasonRenderMemory, service.ReasonRenderProcessFailed:
			// The replica's load and limits, not the source: not kept.
		default:
			l.add(key, &index{helm: h, bytes: helmBytes(tr)})
		}
		return h, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*helmIndex), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// helmBytes is what a traced render counts against MaxCachedBytes: its
// YAML, and its traced fields and leaves at a rough size each.
func helmBytes(tr service.HelmTrace) int64 {
	return int64(len(tr.Manifests)) + int64(len(tr.Fields))*96 + int64(len(tr.Leaves))*128
}
