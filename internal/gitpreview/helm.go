package gitpreview

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

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

// Reasons a helm_values field's key cannot be rewritten by a patch
// (GitValue.Reason; key_planned is absent).
const (
	ReasonHelmKeyShared   service.Reason = "helm_key_shared"   // set through a YAML alias or << merge: the anchor is shared
	ReasonSecretInContext service.Reason = "secret_in_context" // a secret's line is within the patch's context
)

// helmIndex is a Helm source's traced render at one commit, parsed: the
// rendered documents in order, where each object is, and the traced
// fields by document and pointer.
type helmIndex struct {
	trace   service.HelmTrace
	docs    []*docMask
	objects map[objectKey][]placedDoc
	fields  map[int]map[string]service.HelmField
	// probes are, by document and pointer, fields the render does not
	// have that an empty values key the template reads would set.
	probes map[int]map[string]service.HelmField

	// secretLines are, by values file, the lines of leaves that feed a
	// Secret's data or a field the masker masks: a patch whose context
	// holds one is not written. Judged once, on first need.
	secretOnce  sync.Once
	secretLines map[string][]int
	// expires ends a failed render's stay in the cache (zero: kept).
	expires time.Time
}

// transientTraceTTL is how long a traced render that timed out or died is
// remembered.
const transientTraceTTL = time.Minute

type placedDoc struct {
	namespace string
	doc       int
}

func newHelmIndex(tr service.HelmTrace, app service.Application) *helmIndex {
	h := &helmIndex{trace: tr, objects: map[objectKey][]placedDoc{}}
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
	h.fields, h.probes = byDocument(tr.Fields, len(tr.Leaves)), byDocument(tr.Probes, len(tr.Leaves))
	return h
}

// byDocument indexes traced fields by document and pointer; the child's
// answer is checked, not trusted.
func byDocument(fields []service.HelmField, leaves int) map[int]map[string]service.HelmField {
	out := map[int]map[string]service.HelmField{}
	for _, f := range fields {
		if !validField(f, leaves) {
			continue
		}
		if out[f.Doc] == nil {
			out[f.Doc] = map[string]service.HelmField{}
		}
		out[f.Doc][f.Pointer] = f
	}
	return out
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
	case h.trace.Code == service.ReasonRepoTooLarge:
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonRepoTooLarge})
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
			if pf, probed := h.probes[i][service.JoinPointer(tokens)]; ok && probed {
				// Unset, but a values key the template reads would set it.
				at, notes[j] = h.fromLeaf(l.Masker, at, pf, f.Planned)
			}
			settings[j] = setting{source: at}
			continue
		}
		var v any
		err := node.Decode(&v)
		at, notes[j] = h.source(l.Masker, i, at, files, gitTokens, v, f.Planned)
		settings[j], set[j] = setting{source: at, value: v, doc: doc, tokens: gitTokens, masked: err != nil}, true
	}
	out := l.fillAll(fields, settings, set)
	for j := range out {
		if notes[j] != "" && out[j].Git != nil {
			out[j].Git.Reason = notes[j]
		}
		if src := gitSource(out[j]); src != nil && src.Key != "" && l.keyMasked(obj, out[j].Field, src.Key, doc) {
			// A values key that is itself a secret (a webhook URL as a
			// map key): the whole field is masked, its key and entry too.
			out[j].Masked, out[j].Live, out[j].Planned, out[j].Git.Value = true, nil, nil, nil
			src.Key, src.Override = "", ""
		}
		if src := gitSource(out[j]); src != nil && out[j].Masked {
			src.KeyPlanned = nil
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

// traced is the Helm source's traced render under key, from the cache, or
// rendered in one of the team's render slots by one flight that callers of
// the same inputs share and that outlives them: a caller whose ctx ends
// first gets ctx's error (pending) and a later detection finds it cached.
// A slot that stays busy past the queue's timeout is pending too.
func (l *Locator) traced(ctx context.Context, key, team string, in service.RenderInput, app service.Application) (*helmIndex, error) {
	if ix, ok := l.cache().Get(key); ok && ix.helm != nil && (ix.helm.expires.IsZero() || time.Now().Before(ix.helm.expires)) {
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
		if len(tr.Manifests) > MaxSourceBytes {
			// Parsed, it would hold ten times that in the server's heap.
			tr = service.HelmTrace{Code: service.ReasonRepoTooLarge}
		}
		h := newHelmIndex(tr, app)
		switch tr.Reason {
		case service.ReasonRenderTimeout, service.ReasonRenderMemory, service.ReasonRenderProcessFailed:
			// The replica's load and limits as much as the source: kept a
			// short while, so a chart that never ends does not take a
			// render slot for every detection.
			h.expires = time.Now().Add(transientTraceTTL)
		}
		l.add(key, &index{helm: h, bytes: helmBytes(tr)})
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

func gitSource(f service.FieldPreview) *service.GitSource {
	if f.Git == nil {
		return nil
	}
	return f.Git.Source
}

// keyMasked reports a values key the masker would mask as the field's
// value, or one holding a value masked in the rendered document.
func (l *Locator) keyMasked(obj service.ObjectInfo, field, key string, doc *docMask) bool {
	b, err := json.Marshal(key)
	return err != nil || l.Masker == nil || l.Masker.MasksValue(obj.Group, obj.Kind, field, b) || doc.reveals(b)
}

// helmBytes is what a traced render counts against MaxCachedBytes: its
// YAML parsed (about ten times its text), and its fields and leaves.
func helmBytes(tr service.HelmTrace) int64 {
	n := 10 * int64(len(tr.Manifests))
	for _, l := range tr.Leaves {
		n += 64 + int64(len(l.Text)+len(l.Origin.File)+len(l.Origin.Parameter))
		for _, p := range l.Path {
			n += 16 + int64(len(p))
		}
	}
	for _, f := range slices.Concat(tr.Fields, tr.Probes) {
		n += 64 + int64(len(f.Pointer))
		for _, p := range f.Parts {
			n += 24 + int64(len(p.Text))
		}
	}
	return n
}
