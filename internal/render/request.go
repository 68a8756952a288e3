package render

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kukie/gitops-server/service"
)

// Source types, as Argo CD names them in status.sourceType (lower case here).
const (
	SourceTypeDirectory = "directory"
	SourceTypeKustomize = "kustomize"
	SourceTypeHelm      = "helm"
)

// Error codes a render can fail with.
const (
	CodeRenderFailed          = string(service.ReasonRenderFailed)
	CodeSourceTypeUnsupported = string(service.ReasonSourceTypeUnsupported)
)

// ReasonHelmDependenciesMissing is the Error.Reason of a chart whose
// dependencies are declared but not vendored under charts/.
const ReasonHelmDependenciesMissing = "helm_dependencies_missing"

// Error.Reasons of a render the parent stopped or lost, which depend on the
// replica's load and limits rather than on the source alone, so a caller
// does not remember them for the commit: the timeout killed the child, the
// child died without a result under a memory limit (most likely the limit),
// or it died without one with no memory limit set.
const (
	ReasonTimeout       = string(service.ReasonRenderTimeout)
	ReasonMemoryLimit   = string(service.ReasonRenderMemory)
	ReasonProcessFailed = string(service.ReasonRenderProcessFailed)
)

// Request is one source to render from one commit's tree. It is JSON-encoded on
// the child's stdin.
type Request struct {
	// Files is the repository tree: paths relative to the root, "/"-separated.
	// Symlinks are resolved inside the tree (or dropped) by the caller.
	Files map[string][]byte `json:"files"`
	// RefFiles holds the trees of multi-source "ref" sources, by ref name
	// without the "$" ("values" for "$values/...").
	RefFiles map[string]map[string][]byte `json:"refFiles,omitempty"`
	Source   Source                       `json:"source"`
	// AppName is the Application's name: Helm's default release name.
	AppName string `json:"appName"`
	// Namespace is the destination namespace.
	Namespace string `json:"namespace"`
	// KubeVersion is the cluster's version, such as "v1.37.2".
	KubeVersion string `json:"kubeVersion,omitempty"`
	// APIVersions are the cluster's API versions ("apps/v1", "apps/v1/Deployment").
	APIVersions []string `json:"apiVersions,omitempty"`
	// KustomizeBuildOptions is argocd-cm's kustomize.buildOptions.
	KustomizeBuildOptions string `json:"kustomizeBuildOptions,omitempty"`
	// Mask asks the child to mask what it returns (ChildMain): the
	// manifests, its error message and notes, so masking a tenant's output
	// runs under the child's limits rather than in the server's heap.
	Mask bool `json:"mask,omitempty"`
	// Trace asks for a Helm source's traced render (TraceHelm) in
	// Result.Trace instead of Manifests; it is never masked (the revert
	// preview masks the values it shows).
	Trace bool `json:"trace,omitempty"`
}

// Source is the subset of Argo CD's ApplicationSource that rendering reads.
type Source struct {
	Path      string          `json:"path,omitempty"`
	Directory *Directory      `json:"directory,omitempty"`
	Kustomize *Kustomize      `json:"kustomize,omitempty"`
	Helm      *Helm           `json:"helm,omitempty"`
	Plugin    json.RawMessage `json:"plugin,omitempty"`
}

// Directory is Argo CD's ApplicationSourceDirectory.
type Directory struct {
	Recurse bool            `json:"recurse,omitempty"`
	Include string          `json:"include,omitempty"`
	Exclude string          `json:"exclude,omitempty"`
	Jsonnet json.RawMessage `json:"jsonnet,omitempty"`
}

// Kustomize is Argo CD's ApplicationSourceKustomize.
type Kustomize struct {
	NamePrefix             string             `json:"namePrefix,omitempty"`
	NameSuffix             string             `json:"nameSuffix,omitempty"`
	Images                 []string           `json:"images,omitempty"`
	CommonLabels           map[string]string  `json:"commonLabels,omitempty"`
	CommonAnnotations      map[string]string  `json:"commonAnnotations,omitempty"`
	ForceCommonLabels      bool               `json:"forceCommonLabels,omitempty"`
	ForceCommonAnnotations bool               `json:"forceCommonAnnotations,omitempty"`
	LabelWithoutSelector   bool               `json:"labelWithoutSelector,omitempty"`
	LabelIncludeTemplates  bool               `json:"labelIncludeTemplates,omitempty"`
	Namespace              string             `json:"namespace,omitempty"`
	Replicas               []KustomizeReplica `json:"replicas,omitempty"`
	Patches                []json.RawMessage  `json:"patches,omitempty"`
	Components             []string           `json:"components,omitempty"`
}

// KustomizeReplica is one replicas override.
type KustomizeReplica struct {
	Name  string             `json:"name"`
	Count intstr.IntOrString `json:"count"`
}

// Helm is Argo CD's ApplicationSourceHelm.
type Helm struct {
	ReleaseName             string          `json:"releaseName,omitempty"`
	Namespace               string          `json:"namespace,omitempty"`
	ValueFiles              []string        `json:"valueFiles,omitempty"`
	IgnoreMissingValueFiles bool            `json:"ignoreMissingValueFiles,omitempty"`
	Values                  string          `json:"values,omitempty"`
	ValuesObject            json.RawMessage `json:"valuesObject,omitempty"`
	Parameters              []HelmParameter `json:"parameters,omitempty"`
	SkipCrds                bool            `json:"skipCrds,omitempty"`
	SkipTests               bool            `json:"skipTests,omitempty"`
	PassCredentials         bool            `json:"passCredentials,omitempty"`
	KubeVersion             string          `json:"kubeVersion,omitempty"`
	APIVersions             []string        `json:"apiVersions,omitempty"`
}

// HelmParameter is one --set (or --set-string when ForceString) override.
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
}

// Result is a render's outcome, JSON-encoded on the child's stdout.
type Result struct {
	// Manifests is multi-document YAML, one object per document, in the order
	// the tool emits them (Helm's install order, kustomize's build order, the
	// directory's file order).
	Manifests  []byte   `json:"manifests,omitempty"`
	SourceType string   `json:"sourceType,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	Error      *Error   `json:"error,omitempty"`
	// Masked reports that Manifests, Notes and Error's message are masked
	// (Request.Mask), and Secrets are the values masking replaced
	// (mask.Redactions.Bounded: past the bounds of a compiled set, a set
	// that still overflows), for the caller to cut from its other texts.
	Masked  bool     `json:"masked,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// Trace is a traced render's outcome (Request.Trace).
	Trace *service.HelmTrace `json:"trace,omitempty"`
}

// Error is why a render failed.
type Error struct {
	Code    string `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func failed(format string, args ...any) *Error {
	return &Error{Code: CodeRenderFailed, Message: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) *Error {
	return &Error{Code: CodeSourceTypeUnsupported, Message: fmt.Sprintf(format, args...)}
}
