// Package gitpreview finds, before a change, where Git sets each changed
// field of a resource Argo CD manages (issue 22's revert preview): the
// desired manifest at the revision Argo CD compares against
// (status.sync.revision), the value Argo CD would put back, and the file
// and 1-based line of the key that sets it. Plain manifests (directory
// sources) are located; kustomize and Helm sources, and apps with several
// sources, answer unavailable with a reason for now.
package gitpreview

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	yaml "go.yaml.in/yaml/v3"

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
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonSourceTypeUnsupported})
	}
	ix := l.objects(c, src, app, commit, files)
	if ix.tooLarge {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonRepoTooLarge})
	}
	file, doc, found := ix.find(obj)
	if !found {
		return withGit(fields, service.GitValue{State: service.GitUnavailable, Reason: service.ReasonObjectNotRendered})
	}
	out := slices.Clone(fields)
	for i, f := range out {
		out[i] = l.field(f, obj, doc, service.GitSource{Revision: commit, Path: file, Via: ViaManifest})
	}
	return out
}

// source is the app's one Git source in the connected repository and the
// revision Argo CD compares against, or why the preview cannot trace it.
func source(c service.Cluster, app service.Application) (service.AppSource, string, service.Reason) {
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
	objs, err := kustomizeObjects(files, dir, 0)
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
	out := slices.Clone(fields)
	for i, f := range out {
		tokens, ok := service.SplitPointer(f.Field)
		s, set := kustomizeField(o, tokens, obj.Object, commit)
		if !ok || !set {
			out[i].Git = &service.GitValue{State: service.GitUnset,
				Source: &service.GitSource{Revision: commit, Path: o.file, Line: o.node.Line, Via: ViaKustomizeResource}}
			continue
		}
		out[i] = l.fill(f, s)
	}
	return out
}

// objectKey names a manifest by group, kind and name.
type objectKey struct{ group, kind, name string }

// placed is one manifest: its file, its namespace (the app's destination
// namespace when it names none) and its mapping node.
type placed struct {
	file, namespace string
	node            *yaml.Node
}

// index is where each object of a source's manifests is: parsed once per
// commit and read, never changed, by every preview of that commit after.
// bytes is the YAML it was parsed from (what the cache bound counts); a
// source over MaxSourceBytes is not parsed (tooLarge).
type index struct {
	objects  map[objectKey][]placed
	bytes    int64
	tooLarge bool
}

// Bounds of what the preview parses and keeps: parsed YAML holds about a
// dozen times its text.
const (
	// MaxSourceBytes is the most YAML of one source the preview parses.
	MaxSourceBytes = 4 << 20
	// MaxCachedBytes is the most YAML the cached indexes were parsed from.
	MaxCachedBytes = 16 << 20
)

// find returns obj's manifest: the first with its group, kind and name,
// and its namespace for a namespaced object.
func (ix *index) find(obj service.ObjectInfo) (string, *yaml.Node, bool) {
	for _, p := range ix.objects[objectKey{obj.Group, obj.Kind, obj.Name}] {
		if !obj.Namespaced || p.namespace == obj.Namespace {
			return p.file, p.node, true
		}
	}
	return "", nil, false
}

// objects is the source's index at commit, from the cache when it was
// built before (keyed by team too: a team-only host's trees are the team's).
func (l *Locator) objects(c service.Cluster, src service.AppSource, app service.Application, commit string,
	files map[string][]byte) *index {
	key := strings.Join([]string{c.TeamID, service.NormalizeRepoURL(src.RepoURL), commit, path.Clean(src.Path),
		strconv.FormatBool(recursive(src.Spec)), app.Destination.Namespace}, "\x00")
	cache := l.cache()
	if ix, ok := cache.Get(key); ok {
		return ix
	}
	ix := buildIndex(files, src, app)
	l.mu.Lock()
	defer l.mu.Unlock()
	cache.Add(key, ix)
	l.cachedBytes += ix.bytes
	for l.cachedBytes > MaxCachedBytes && cache.Len() > 1 {
		cache.RemoveOldest() // the eviction callback lowers cachedBytes
	}
	return ix
}

// DefaultIndexCacheSize bounds the indexes a Locator keeps (one per app
// source and commit).
const DefaultIndexCacheSize = 256

func (l *Locator) cache() *lru.Cache[string, *index] {
	l.once.Do(func() {
		size := l.IndexCacheSize
		if size <= 0 {
			size = DefaultIndexCacheSize
		}
		// The callback runs within Add and RemoveOldest, under l.mu.
		l.indexes, _ = lru.NewWithEvict(size, func(_ string, ix *index) { l.cachedBytes -= ix.bytes }) // size > 0: never fails
	})
	return l.indexes
}

// buildIndex reads the source's YAML files (the folder's own; every level
// below when directory.recurse is set) in file order.
func buildIndex(files map[string][]byte, src service.AppSource, app service.Application) *index {
	dir := path.Clean(src.Path)
	recurse := recursive(src.Spec)
	names := make([]string, 0, len(files))
	for name := range files {
		inside := path.Dir(name) == dir || (recurse && (dir == "." || strings.HasPrefix(name, dir+"/")))
		if ext := strings.ToLower(path.Ext(name)); inside && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	ix := &index{objects: map[objectKey][]placed{}}
	for _, name := range names {
		ix.bytes += int64(len(files[name]))
	}
	if ix.bytes > MaxSourceBytes {
		return &index{tooLarge: true}
	}
	for _, name := range names {
		dec := yaml.NewDecoder(strings.NewReader(string(files[name])))
		for {
			var doc yaml.Node
			if dec.Decode(&doc) != nil {
				break // the end, or a document that does not parse: Argo CD would fail the render
			}
			if len(doc.Content) != 1 {
				continue
			}
			m := doc.Content[0]
			key, ns, ok := identity(m, app)
			if ok {
				ix.objects[key] = append(ix.objects[key], placed{file: name, namespace: ns, node: m})
			}
		}
	}
	return ix
}

// identity is a manifest's group, kind, name and namespace (the app's
// destination namespace when it names none).
func identity(m *yaml.Node, app service.Application) (objectKey, string, bool) {
	meta := value(m, "metadata")
	kind, name := scalar(m, "kind"), scalar(meta, "name")
	if kind == "" || name == "" {
		return objectKey{}, "", false
	}
	group := ""
	if g, _, ok := strings.Cut(scalar(m, "apiVersion"), "/"); ok {
		group = g
	}
	ns := scalar(meta, "namespace")
	if ns == "" {
		ns = app.Destination.Namespace
	}
	return objectKey{group, kind, name}, ns, true
}

func recursive(spec json.RawMessage) bool {
	var s struct {
		Directory struct {
			Recurse bool `json:"recurse"`
		} `json:"directory"`
	}
	return json.Unmarshal(spec, &s) == nil && s.Directory.Recurse
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
