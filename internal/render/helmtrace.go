package render

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kukie/gitops-server/service"
)

// Markers: a non-empty string leaf becomes "KkM<6 digits>Z" (letters and
// digits survive quote, default, trunc past them and most names; the mixed
// case shows a lower or upper applied to it); a non-zero number leaf
// becomes markerNumberBase+7i, which Go's templates print without an
// exponent and which small arithmetic (add 1) does not turn into another
// leaf's marker. Booleans, empty strings, zeros and nulls keep their
// values: their truthiness steers if and with.
const (
	markerNumberBase = 910_000
	markerNumberStep = 7
	markerNumberMax  = 999_999
	maxMarkedLeaves  = 89_999
	// maxTraceRenders bounds the traced renders of one trace: when the
	// traced render fails (a template needs a leaf's real type), the leaves
	// are split in halves and each half is tried alone.
	maxTraceRenders = 12
)

var markerRE = regexp.MustCompile(`(?i)kkm(\d{6})z|\b9[1-9]\d{4}\b`)

func stringMarker(i int) string { return fmt.Sprintf("KkM%06dZ", i) }

func numberMarker(i int) int { return markerNumberBase + markerNumberStep*i }

// parseMarker reads a marker found in the output: whether it stands for a
// number leaf, the leaf's index, and whether it is intact (a string
// marker whose case a template changed is not).
func parseMarker(m string) (num bool, i int, intact, ok bool) {
	if len(m) == 10 && strings.EqualFold(m[:3], "kkm") {
		i, err := strconv.Atoi(m[3:9])
		return false, i, m == stringMarker(i), err == nil
	}
	n, err := strconv.Atoi(m)
	if err != nil || n < markerNumberBase || (n-markerNumberBase)%markerNumberStep != 0 {
		return true, 0, false, false
	}
	return true, (n - markerNumberBase) / markerNumberStep, true, true
}

// leaf is one value of the merged values that a marker can stand for.
type leaf struct {
	path  []string
	value any
	text  string // the value as a template prints it
	num   bool
}

// TraceHelm renders a Helm source and traces which values leaf feeds each
// rendered field (service.HelmTrace).
func TraceHelm(req Request) service.HelmTrace {
	t := tree(req.Files)
	appPath, ok := cleanPath(req.Source.Path)
	if !ok || (appPath != "" && !t.isDir(appPath)) {
		return traceFailed(failed("app path %q does not exist", req.Source.Path))
	}
	src := req.Source
	if merged, err := mergeSourceOverrides(t, appPath, req.AppName, src); err != nil {
		return traceFailed(failed("error while parsing source parameters: %v", err))
	} else if merged != nil {
		src = *merged
	}
	if st, rerr := detectSourceType(t, appPath, src); rerr != nil || st != SourceTypeHelm {
		return traceFailed(unsupported("the source is not a Helm chart"))
	}
	h, rerr := prepareHelm(req, t, appPath, src.Helm)
	if rerr != nil {
		return traceFailed(rerr)
	}
	real, rerr := h.render(h.vals, true)
	if rerr != nil {
		return traceFailed(rerr)
	}
	real = flattenDocs(real)
	var out service.HelmTrace
	for _, d := range real {
		out.Templates = append(out.Templates, templatePath(appPath, d.template))
	}
	b, err := marshalObjects(objects(real)) // flattened above: the documents stay one per template entry
	if err != nil {
		return traceFailed(failed("%v", err))
	}
	out.Manifests = b
	full, err := chartutil.CoalesceValues(h.ch, h.vals)
	if err != nil {
		return out // rendered, not traced
	}
	leaves := collectLeaves(full, nil, nil, markable)
	if len(leaves) > maxMarkedLeaves {
		leaves = leaves[:maxMarkedLeaves]
	}
	out.Fields, out.Secrets = traceFields(h, full, leaves, real)
	leaves, out.Probes = probeEmpty(h, full, leaves, real)
	origins := leafOrigins(req, t, appPath, h, leaves)
	for _, l := range leaves {
		out.Leaves = append(out.Leaves, service.HelmLeaf{Path: l.path, Origin: origins[len(out.Leaves)], Text: l.text, Number: l.num})
	}
	// Only the leaves a field names keep their text: the trace is held in
	// the server's memory per commit.
	used := map[int]bool{}
	for _, f := range slices.Concat(out.Fields, out.Probes) {
		for _, p := range f.Parts {
			used[p.Leaf] = true
		}
	}
	for i := range out.Leaves {
		if !used[i+1] {
			out.Leaves[i].Text = ""
		}
	}
	return out
}

func traceFailed(e *Error) service.HelmTrace {
	return service.HelmTrace{Code: service.Reason(e.Code), Reason: service.Reason(e.Reason), Message: e.Message}
}

// traceFields renders with marked leaves, halving the marked set when a
// render fails, and reads the markers in each traced object.
func traceFields(h helmRun, full map[string]any, leaves []leaf, real []helmDoc) (fields []service.HelmField, secrets []int) {
	all := make([]int, len(leaves))
	for i := range all {
		all[i] = i
	}
	queue := [][]int{all}
	renders := 0
	seen := map[string]int{}
	for len(queue) > 0 && renders < maxTraceRenders {
		set := queue[0]
		queue = queue[1:]
		if len(set) == 0 {
			continue
		}
		renders++
		marked := map[int]bool{}
		for _, i := range set {
			marked[i] = true
		}
		counter := 0
		vals, _ := markValues(full, marked, &counter, markable).(map[string]any)
		docs, rerr := h.render(vals, false)
		if rerr != nil {
			if len(set) > 1 {
				queue = append(queue, set[:len(set)/2], set[len(set)/2:])
			}
			continue
		}
		docs = flattenDocs(docs)
		secrets = append(secrets, secretLeaves(docs, leafLookup(leaves, marked))...)
		for _, f := range readMarkers(docs, real, leaves, marked) {
			key := strconv.Itoa(f.Doc) + f.Pointer
			if i, ok := seen[key]; ok {
				// Another half traced other leaves of the same field.
				fields[i] = mergeParts(fields[i], f, leaves)
				continue
			}
			seen[key] = len(fields)
			fields = append(fields, f)
		}
	}
	sort.Slice(fields, func(i, j int) bool {
		if fields[i].Doc != fields[j].Doc {
			return fields[i].Doc < fields[j].Doc
		}
		return fields[i].Pointer < fields[j].Pointer
	})
	return fields, secrets
}

// collectLeaves lists the markable leaves below v in a fixed order (map
// keys sorted), the order markValues numbers them in.
func collectLeaves(v any, path []string, out []leaf, pick func(any) (leaf, bool)) []leaf {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			out = collectLeaves(t[k], append(path[:len(path):len(path)], k), out, pick)
		}
	case chartutil.Values:
		return collectLeaves(map[string]any(t), path, out, pick)
	case []any:
		for i, e := range t {
			out = collectLeaves(e, append(path[:len(path):len(path)], strconv.Itoa(i)), out, pick)
		}
	default:
		if l, ok := pick(v); ok {
			l.path = path
			out = append(out, l)
		}
	}
	return out
}

func markable(v any) (leaf, bool) {
	switch t := v.(type) {
	case string:
		return leaf{value: v, text: t}, t != ""
	case float64:
		return leaf{value: v, text: fmt.Sprint(t), num: true}, t != 0
	case int64:
		return leaf{value: v, text: fmt.Sprint(t), num: true}, t != 0
	case int:
		return leaf{value: v, text: fmt.Sprint(t), num: true}, t != 0
	}
	return leaf{}, false
}

// markValues copies v with the leaves in marked replaced by their markers,
// numbering leaves as collectLeaves does.
func markValues(v any, marked map[int]bool, counter *int, pick func(any) (leaf, bool)) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range sortedKeys(t) {
			out[k] = markValues(t[k], marked, counter, pick)
		}
		return out
	case chartutil.Values:
		return markValues(map[string]any(t), marked, counter, pick)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = markValues(e, marked, counter, pick)
		}
		return out
	}
	l, ok := pick(v)
	if !ok {
		return v
	}
	i := *counter
	*counter++
	switch {
	case !marked[i] || (l.num && numberMarker(i) > markerNumberMax):
		return v
	case l.num:
		return float64(numberMarker(i))
	default:
		return stringMarker(i)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// flattenDocs expands List kinds into their items, keeping the template.
func flattenDocs(docs []helmDoc) []helmDoc {
	var out []helmDoc
	for _, d := range docs {
		objs, err := flatten([]*unstructured.Unstructured{d.obj})
		if err != nil {
			continue
		}
		for _, o := range objs {
			out = append(out, helmDoc{template: d.template, obj: o})
		}
	}
	return out
}

func objects(docs []helmDoc) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		out[i] = d.obj
	}
	return out
}

// templatePath is a chart file's repository path: Helm names it
// "<chart>/templates/x.yaml", the chart being the app path's folder.
func templatePath(appPath, name string) string {
	_, rest, ok := strings.Cut(name, "/")
	if !ok {
		rest = name
	}
	if appPath == "" {
		return rest
	}
	return appPath + "/" + rest
}

// mergeParts joins two traces of one field from renders that marked
// different leaves: where both parts give the real value, the leaves of
// both are placed on it (the first wins where they overlap); otherwise the
// first trace stands.
func mergeParts(a, b service.HelmField, leaves []leaf) service.HelmField {
	if !a.Verified || !b.Verified {
		return a
	}
	type span struct{ from, to, leaf int }
	spans := func(parts []service.HelmPart) ([]span, string) {
		var out []span
		var text strings.Builder
		for _, p := range parts {
			s := p.Text
			if p.Leaf > 0 {
				s = leaves[p.Leaf-1].text
				out = append(out, span{text.Len(), text.Len() + len(s), p.Leaf})
			}
			text.WriteString(s)
		}
		return out, text.String()
	}
	as, real := spans(a.Parts)
	bs, _ := spans(b.Parts)
	all := as
	for _, s := range bs {
		if !slices.ContainsFunc(all, func(o span) bool { return s.from < o.to && o.from < s.to }) {
			all = append(all, s)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].from < all[j].from })
	var parts []service.HelmPart
	at := 0
	for _, s := range all {
		if s.from > at {
			parts = append(parts, service.HelmPart{Text: real[at:s.from]})
		}
		parts = append(parts, service.HelmPart{Leaf: s.leaf})
		at = s.to
	}
	if at < len(real) {
		parts = append(parts, service.HelmPart{Text: real[at:]})
	}
	a.Parts = parts
	return a
}
