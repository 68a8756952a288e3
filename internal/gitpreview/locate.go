// Package gitpreview finds, before a change, where Git sets each changed
// field of a resource Argo CD manages (issue 22's revert preview): the
// desired manifest at the revision Argo CD compares against
// (status.sync.revision), the value Argo CD would put back, and the file
// and 1-based line of the key that sets it. Plain manifests (directory
// sources, index.go) and kustomizations (kustomize.go) are traced; Helm
// sources and apps with several sources answer unavailable with a reason.
package gitpreview

import (
	"context"
	"path"
	"slices"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	yaml "go.yaml.in/yaml/v3"
	"golang.org/x/sync/singleflight"

	"github.com/kukie/gitops-server/service"
)

// ViaManifest: a plain YAML file of a directory source sets the field.
const ViaManifest = "manifest"

// Locator finds fields in the connected repository.
type Locator struct {
	Fetcher service.RepoFetcher
	// Masker judges Git values as it judges live ones; nil shows no value.
	Masker service.ValueMasker
	// Observe is told each field's Git state (kukie_preview_total); nil: not counted.
	Observe func(state string)
	// IndexCacheSize bounds the indexes kept (default DefaultIndexCacheSize).
	IndexCacheSize int
	// Tracer renders Helm sources with traced values in Queue's slots
	// (the repo tab's), with the cluster's Versions; nil Tracer: Helm
	// sources are unavailable.
	Tracer   service.HelmTracer
	Queue    *service.RenderQueue
	Versions service.ClusterVersions

	flight      singleflight.Group
	once        sync.Once
	indexes     *lru.Cache[string, *index]
	mu          sync.Mutex // cachedBytes, and adding to indexes
	cachedBytes int64
}

var _ service.GitLocator = (*Locator)(nil)

// Locate fills each field's Git part for obj, managed by app on cluster c.
// A fetch the context ends (the detection budget) is pending.
func (l *Locator) Locate(ctx context.Context, c service.Cluster, app service.Application, obj service.ObjectInfo,
	fields []service.FieldPreview) []service.FieldPreview {
	out := l.locate(ctx, c, app, obj, fields)
	if l.Observe != nil {
		for _, f := range out {
			l.Observe(f.Git.State)
		}
	}
	return out
}

func (l *Locator) locate(ctx context.Context, c service.Cluster, app service.Application, obj service.ObjectInfo,
	fields []service.FieldPreview) []service.FieldPreview {
	src, revision, reason := source(c, app)
	if reason != "" {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: reason})
	}
	files, commit, err := l.tree(ctx, c, src, revision)
	switch {
	case err != nil && ctx.Err() != nil:
		return withGit(fields, service.GitValue{State: service.GitPending})
	case err != nil:
		reason := service.ErrorReason(err)
		if reason == "" {
			reason = service.ReasonRepoUnreachable
		}
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: reason})
	}
	switch sourceType(files, src.Path) {
	case "kustomize":
		return l.kustomize(files, src, app, obj, commit, fields)
	case "helm":
		return l.helm(ctx, c, app, src, commit, files, obj, fields)
	}
	ix := l.objects(c, src, app, commit, files)
	if ix.tooLarge {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonRepoTooLarge})
	}
	file, doc, found := ix.find(obj)
	if !found && ix.skipped {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonRepoTooLarge})
	}
	if !found {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonObjectNotRendered})
	}
	settings, set := make([]setting, len(fields)), make([]bool, len(fields))
	for i, f := range fields {
		settings[i], set[i] = field(f, obj, doc, service.GitSource{Revision: commit, Path: file, Via: ViaManifest})
	}
	return l.fillAll(fields, settings, set)
}

// source is the app's one Git source in the connected repository and the
// revision Argo CD compares against, or why the preview cannot trace it.
func source(c service.Cluster, app service.Application) (service.AppSource, string, service.Reason) {
	if app.HydratedSource != nil {
		// A source hydrator's app applies its hydrated branch.
		app.Sources = []service.AppSource{*app.HydratedSource}
	}
	switch {
	case len(app.Sources) != 1:
		return service.AppSource{}, "", service.ReasonMultiSourceUnsupported
	case app.Sources[0].Chart != "":
		return service.AppSource{}, "", service.ReasonSourceTypeUnsupported
	case c.GitOpsRepo == "":
		return service.AppSource{}, "", service.ReasonRepoNotConnected
	case service.NormalizeRepoURL(app.Sources[0].RepoURL) != service.NormalizeRepoURL(c.GitOpsRepo):
		return service.AppSource{}, "", service.ReasonRepoMismatch
	}
	return app.Sources[0], app.Sync.Revision, ""
}

// tree reads the source's tree at revision (its target revision resolved
// now when Argo CD has compared none yet).
func (l *Locator) tree(ctx context.Context, c service.Cluster, src service.AppSource, revision string) (map[string][]byte, string, error) {
	if revision == "" {
		var err error
		if revision, err = l.Fetcher.Resolve(ctx, c, src.TargetRevision); err != nil {
			return nil, "", err
		}
	}
	files, err := l.Fetcher.Tree(ctx, c, src.TargetRevision, revision)
	return files, revision, err
}

// sourceType is how Argo CD's repo server reads the source's folder:
// kustomize (a kustomization), helm (a Chart.yaml) or directory.
func sourceType(files map[string][]byte, dir string) string {
	for _, name := range service.KustomizationNames() {
		if _, ok := files[path.Join(dir, name)]; ok {
			return "kustomize"
		}
	}
	if _, ok := files[path.Join(dir, "Chart.yaml")]; ok {
		return "helm"
	}
	return "directory"
}

// kustomize fills the fields from a kustomize source's trace: the
// resource, the last patch, or the transformer that sets each field.
func (l *Locator) kustomize(files map[string][]byte, src service.AppSource, app service.Application, obj service.ObjectInfo,
	commit string, fields []service.FieldPreview) []service.FieldPreview {
	dir := path.Clean(src.Path)
	var size int64
	for name, b := range files {
		if strings.HasPrefix(name, dir+"/") || dir == "." {
			size += int64(len(b))
		}
	}
	if size > MaxSourceBytes {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonRepoTooLarge})
	}
	objs, err := kustomizeObjects(files, dir, 0, appKustomize(src.Spec))
	if err != nil {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonSourceTypeUnsupported})
	}
	var o *kobj
	for _, cand := range objs {
		ns := cand.ns
		if ns == "" {
			ns = app.Destination.Namespace
		}
		if cand.key == (objectKey{obj.Group, obj.Kind, obj.Name}) && (!obj.Namespaced || ns == obj.Namespace) {
			o = cand
			break
		}
	}
	if o == nil {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonObjectNotRendered})
	}
	settings, set := make([]setting, len(fields)), make([]bool, len(fields))
	for i, f := range fields {
		tokens, ok := service.SplitPointer(f.Field)
		settings[i], set[i] = kustomizeField(o, tokens, obj.Object, commit)
		if !ok || !set[i] {
			settings[i] = setting{source: service.GitSource{Revision: commit, Path: o.file, Line: o.doc.node.Line, Via: ViaKustomizeResource}}
			set[i] = false
		}
	}
	return l.fillAll(fields, settings, set)
}

// value is a mapping's value for key (aliases followed), nil when absent.
func value(m *yaml.Node, key string) *yaml.Node {
	_, v := entry(m, key)
	return v
}

func entry(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], resolve(m.Content[i+1])
		}
	}
	return nil, nil
}

func scalar(m *yaml.Node, key string) string {
	if v := value(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// withGit gives every field the same Git part.
func withGit(fields []service.FieldPreview, g service.GitValue) []service.FieldPreview {
	out := slices.Clone(fields)
	for i := range out {
		g := g
		out[i].Git = &g
	}
	return out
}
