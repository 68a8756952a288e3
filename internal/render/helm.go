package render

import (
	"bytes"
	"io/fs"
	"path"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/ignore"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderHelm does what `helm template <path> --name-template <release>
// --namespace <ns> --kube-version <v> --api-versions ... --values ...
// --set ... --set-string ... [--include-crds]` does for upstream's
// helmTemplate (reposerver/repository/repository.go, util/helm/cmd.go), with
// Helm's rendering packages only: the chart is loaded from the in-memory tree,
// the engine has no cluster client (lookup returns nothing), and the output is
// CRDs, then manifests in install order, then hooks.
func renderHelm(req Request, t tree, appPath string, opts *Helm) ([]*unstructured.Unstructured, []string, *Error) {
	h, rerr := prepareHelm(req, t, appPath, opts)
	if rerr != nil {
		return nil, h.notes, rerr
	}
	docs, rerr := h.render(h.vals, true)
	if rerr != nil {
		return nil, h.notes, rerr
	}
	objs := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		objs[i] = d.obj
	}
	return objs, h.notes, nil
}

// helmRun is a chart ready to render: loaded, its dependencies processed,
// its user values merged, its release and capabilities set.
type helmRun struct {
	ch      *chart.Chart
	vals    map[string]any
	options chartutil.ReleaseOptions
	caps    *chartutil.Capabilities
	opts    *Helm
	notes   []string
}

// prepareHelm loads the chart at appPath and everything its render needs.
func prepareHelm(req Request, t tree, appPath string, opts *Helm) (helmRun, *Error) {
	if opts == nil {
		opts = &Helm{}
	}
	h := helmRun{opts: opts}
	ch, rerr := loadChart(t, appPath)
	if rerr != nil {
		return h, rerr
	}
	if ch.Metadata.Type != "" && ch.Metadata.Type != "application" {
		return h, failed("%s charts are not installable", ch.Metadata.Type)
	}
	if rerr := checkDependencies(ch); rerr != nil {
		return h, rerr
	}
	vals, more, rerr := helmValues(req, t, appPath, opts)
	h.notes = append(h.notes, more...)
	if rerr != nil {
		return h, rerr
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return h, failed("%v", err)
	}
	caps, more, rerr := helmCapabilities(req, opts, ch)
	h.notes = append(h.notes, more...)
	if rerr != nil {
		return h, rerr
	}
	namespace := req.Namespace
	if opts.Namespace != "" {
		namespace = opts.Namespace
	}
	h.ch, h.vals, h.caps = ch, vals, caps
	h.options = chartutil.ReleaseOptions{
		Name:      releaseName(req.AppName, opts.ReleaseName),
		Namespace: namespace,
		Revision:  1,
		IsInstall: true,
	}
	return h, nil
}

// render renders the chart with vals (schema validated when validate) into
// its objects in Helm's output order, each with its template.
func (h helmRun) render(vals map[string]any, validate bool) ([]helmDoc, *Error) {
	hooks, manifests, rerr := renderTemplates(h.ch, vals, h.options, h.caps, validate)
	if rerr != nil {
		return nil, rerr
	}
	return chartObjects(h.ch, hooks, manifests, h.opts)
}

// helmCapabilities are Helm's default capabilities with the Kubernetes
// version and API versions of the source (else of the request), as
// --kube-version and --api-versions set them; an unparsable version keeps
// Helm's default and makes a note. A chart whose kubeVersion excludes the
// version is an error.
func helmCapabilities(req Request, opts *Helm, ch *chart.Chart) (*chartutil.Capabilities, []string, *Error) {
	var notes []string
	caps := chartutil.DefaultCapabilities.Copy()
	kubeVersion := req.KubeVersion
	if opts.KubeVersion != "" {
		kubeVersion = opts.KubeVersion
	}
	if kubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(kubeVersion)
		if err != nil {
			notes = append(notes, "Kubernetes version "+kubeVersion+" is not a semantic version; Helm's default "+caps.KubeVersion.Version+" was used")
		} else {
			caps.KubeVersion = *kv
		}
	}
	apiVersions := req.APIVersions
	if len(opts.APIVersions) > 0 {
		apiVersions = opts.APIVersions
	}
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), apiVersions...)
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, notes, failed("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	return caps, notes, nil
}

// renderTemplates renders the chart's templates with vals (schema
// validated) and sorts what they make, less NOTES.txt, into hooks and
// manifests in install order.
func renderTemplates(ch *chart.Chart, vals map[string]any, options chartutil.ReleaseOptions, caps *chartutil.Capabilities,
	validate bool) ([]*release.Hook, []releaseutil.Manifest, *Error) {
	renderVals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, options, caps, !validate)
	if err != nil {
		return nil, nil, failed("%v", err)
	}
	var e engine.Engine
	files, err := e.Render(ch, renderVals)
	if err != nil {
		return nil, nil, failed("%v", err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, nil, failed("%v", err)
	}
	return hooks, manifests, nil
}

// helmDoc is one rendered object and the chart file it came from.
type helmDoc struct {
	template string // the chart's path of the file: "<chart>/templates/x.yaml"
	obj      *unstructured.Unstructured
}

// chartObjects are the rendered objects in Helm's output order: the
// chart's CRDs (unless SkipCrds), the manifests, then the hooks (less test
// hooks with SkipTests).
func chartObjects(ch *chart.Chart, hooks []*release.Hook, manifests []releaseutil.Manifest, opts *Helm) ([]helmDoc, *Error) {
	type source struct {
		name string
		data []byte
	}
	var sources []source
	if !opts.SkipCrds {
		for _, crd := range ch.CRDObjects() {
			sources = append(sources, source{crd.Filename, crd.File.Data})
		}
	}
	for _, m := range manifests {
		sources = append(sources, source{m.Name, []byte(m.Content)})
	}
	for _, h := range hooks {
		if opts.SkipTests && isTestHook(h.Events) {
			continue
		}
		sources = append(sources, source{h.Path, []byte(h.Manifest)})
	}
	var docs []helmDoc
	for _, s := range sources {
		found, err := splitYAML(s.data)
		if err != nil {
			return nil, failed("%v", err)
		}
		for _, obj := range found {
			docs = append(docs, helmDoc{template: s.name, obj: obj})
		}
	}
	return docs, nil
}

func isTestHook[E ~string](events []E) bool {
	for _, e := range events {
		if e == "test" {
			return true
		}
	}
	return false
}

// releaseName is Helm's release name: the source's releaseName, else the
// name part of the app's "<namespace>_<name>" instance name, as upstream's
// helmTemplate takes it from argo.ParseInstanceName.
func releaseName(appName, override string) string {
	if override != "" {
		return override
	}
	if _, name, ok := strings.Cut(appName, "_"); ok && !strings.Contains(name, "_") {
		return name
	}
	return appName
}

// loadChart loads the chart at appPath from the tree, honouring .helmignore
// the way loader.LoadDir does.
func loadChart(t tree, appPath string) (*chart.Chart, *Error) {
	prefix := ""
	if appPath != "" {
		prefix = appPath + "/"
	}
	rules := ignore.Empty()
	if data, ok := t[prefix+ignore.HelmIgnore]; ok {
		r, err := ignore.Parse(bytes.NewReader(data))
		if err != nil {
			return nil, failed("%s: %v", ignore.HelmIgnore, err)
		}
		rules = r
	}
	rules.AddDefaults()
	var files []*loader.BufferedFile
	ignoredDirs := map[string]bool{}
	for _, rel := range t.under(appPath) {
		if ignoredByDir(rules, rel, ignoredDirs) || rules.Ignore(rel, fileInfo{name: path.Base(rel)}) {
			continue
		}
		files = append(files, &loader.BufferedFile{Name: rel, Data: bytes.TrimPrefix(t[prefix+rel], []byte("\xEF\xBB\xBF"))})
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, failed("%v", err)
	}
	return ch, nil
}

// ignoredByDir reports whether a directory containing rel is ignored, which
// makes LoadDir skip the whole directory.
func ignoredByDir(rules *ignore.Rules, rel string, cache map[string]bool) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		ignored, ok := cache[dir]
		if !ok {
			ignored = rules.Ignore(dir, fileInfo{name: parts[i-1], dir: true})
			cache[dir] = ignored
		}
		if ignored {
			return true
		}
	}
	return false
}

// checkDependencies is `helm template`'s action.CheckDependencies: every
// dependency in Chart.yaml must be present under charts/.
func checkDependencies(ch *chart.Chart) *Error {
	var missing []string
	for _, dep := range ch.Metadata.Dependencies {
		found := false
		for _, sub := range ch.Dependencies() {
			if sub.Name() == dep.Name {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, dep.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &Error{
		Code:    CodeRenderFailed,
		Reason:  ReasonHelmDependenciesMissing,
		Message: "found in Chart.yaml, but missing in charts/ directory: " + strings.Join(missing, ", ") + " (dependencies must be vendored under charts/; they are not downloaded)",
	}
}

// fileInfo is the little of fs.FileInfo that ignore.Rules reads.
type fileInfo struct {
	name string
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return 0 }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir
	}
	return 0
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }
