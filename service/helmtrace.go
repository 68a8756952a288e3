package service

import "context"

// HelmTrace is a Helm source rendered with traced values (issue 22): the
// render as Argo CD makes it, and for each rendered field fed by a values
// leaf, which leaf and where that leaf is set. Each values leaf is replaced
// by a unique marker in a second render; a marker found in its output names
// the leaf behind the field.
type HelmTrace struct {
	// Manifests is the render (not masked: the locator masks what it shows),
	// one object per document; Templates are the chart files the documents
	// came from, as repository paths, in the same order.
	Manifests []byte      `json:"manifests,omitempty"`
	Templates []string    `json:"templates,omitempty"`
	Leaves    []HelmLeaf  `json:"leaves,omitempty"`
	Fields    []HelmField `json:"fields,omitempty"`
	// Probes are fields the render does not have that an empty values
	// key the template reads would set (Leaves[i-1] of their parts).
	Probes []HelmField `json:"probes,omitempty"`
	// Secrets are the leaves (Leaves[i-1]) a core Secret's data or
	// stringData holds: never shown, not even in a patch's context.
	Secrets []int `json:"secrets,omitempty"`
	// Code is "" when the chart rendered, else why not (as RenderOutput).
	Code    Reason `json:"code,omitempty"`
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// HelmLeaf is one leaf of the chart's merged values: its path (map keys,
// list indexes in decimal), its value and where that value is set.
type HelmLeaf struct {
	Path   []string   `json:"path"`
	Origin HelmOrigin `json:"origin"`
	// Text is the leaf's value as a template prints it; Number says it is
	// a number.
	Text   string `json:"text,omitempty"`
	Number bool   `json:"number,omitempty"`
}

// Kinds of HelmOrigin, in Argo CD's order of precedence (lowest first).
const (
	HelmOriginFile         = "file"         // a values file: the chart's, a subchart's, or one of helm.valueFiles
	HelmOriginValues       = "values"       // the Application's spec.source.helm.values
	HelmOriginValuesObject = "valuesObject" // the Application's spec.source.helm.valuesObject
	HelmOriginParameter    = "parameter"    // one of the Application's spec.source.helm.parameters
)

// HelmOrigin is where a values leaf is set: a file and the 1-based line of
// its key (or list item), or the Application's override (Parameter names
// the parameter). Kind is "" when no layer could be named (a vendored
// subchart archive, an import).
type HelmOrigin struct {
	Kind      string `json:"kind,omitempty"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	// Shared: the value comes through a YAML alias or << merge, so its
	// line is an anchor's that other places use too.
	Shared bool `json:"shared,omitempty"`
}

// HelmField is one rendered field that holds at least one marker: the
// document (an index into Manifests' documents), the field's pointer there,
// and its text as parts — literal text and values leaves. Verified says the
// parts, with each leaf's real value, give the rendered value; a field a
// template function transformed (upper, tpl, b64enc of a part) is not.
type HelmField struct {
	Doc      int        `json:"doc"`
	Pointer  string     `json:"pointer"`
	Parts    []HelmPart `json:"parts"`
	Verified bool       `json:"verified,omitempty"`
}

// HelmPart is literal text, or the leaf Leaves[Leaf-1] when Leaf > 0.
type HelmPart struct {
	Text string `json:"text,omitempty"`
	Leaf int    `json:"leaf,omitempty"`
}

// HelmTracer renders a Helm source with traced values (the render
// package, in a child process with the repo tab's limits).
type HelmTracer interface {
	TraceHelm(ctx context.Context, in RenderInput) (HelmTrace, error)
}
