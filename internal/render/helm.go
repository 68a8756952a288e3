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
	if opts == nil {
		opts = &Helm{}
	}
	var notes []string
	ch, rerr := loadChart(t, appPath)
	if rerr != nil {
		return nil, nil, rerr
	}
	if ch.Metadata.Type != "" && ch.Metadata.Type != "application" {
		return nil, nil, failed("%s charts are not installable", ch.Metadata.Type)
	}
	if rerr := checkDependencies(ch); rerr != nil {
		return nil, nil, rerr
	}
	vals, more, rerr := helmValues(req, t, appPath, opts)
	notes = append(notes, more...)
	if rerr != nil {
		return nil, notes, rerr
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, notes, failed("%v", err)
	}
	caps, more, rerr := helmCapabilities(req, opts, ch)
	notes = append(notes, more...)
	if rerr != nil {
		return nil, notes, rerr
	}
	namespace := req.Namespace
	if opts.Namespace != "" {
		namespace = opts.Namespace
	}
	options := chartutil.ReleaseOptions{
		Name:      releaseName(req.AppName, opts.ReleaseName),
		Namespace: namespace,
		Revision:  1,
		IsInstall: true,
	}
	hooks, manifests, rerr := renderTemplates(ch, vals, options, caps)
	if rerr != nil {
		return nil, notes, rerr
	}
	objs, rerr := chartObjects(ch, hooks, manifests, opts)
	if rerr != nil {
		return nil, notes, rerr
	}
	return objs, notes, nil
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
func renderTemplates(ch *chart.Chart, vals map[string]any, options chartutil.ReleaseOptions, caps *chartutil.Capabilities) ([]*release.Hook, []releaseutil.Manifest, *Error) {
	renderVals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, options, caps, false)
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

// chartObjects are the rendered objects in Helm's output order: the
// chart's CRDs (unless SkipCrds), the manifests, then the hooks (less test
// hooks with SkipTests).
func chartObjects(ch *chart.Chart, hooks []*release.Hook, manifests []releaseutil.Manifest, opts *Helm) ([]*unstructured.Unstructured, *Error) {
	var docs [][]byte
	if !opts.SkipCrds {
		for _, crd := range ch.CRDObjects() {
			docs = append(docs, crd.File.Data)
		}
	}
	for _, m := range manifests {
		docs = append(docs, []byte(m.Content))
	}
	for _, h := range hooks {
		if opts.SkipTests && isTestHook(h.Events) {
			continue
		}
		docs = append(docs, []byte(h.Manifest))
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		found, err := splitYAML(d)
		if err != nil {
			return nil, failed("%v", err)
		}
		objs = append(objs, found...)
	}
	return objs, nil
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
