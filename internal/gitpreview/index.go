package gitpreview

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// objectKey names a manifest by group, kind and name.
type objectKey struct{ group, kind, name string }

// placed is one manifest: its file, its namespace (the app's destination
// namespace when it names none) and its mapping node.
type placed struct {
	file, namespace string
	doc             *docMask
}

// index is where each object of a source's manifests is: parsed once per
// commit and read, never changed, by every preview of that commit after.
// bytes is the YAML it was parsed from (what the cache bound counts); a
// source over MaxSourceBytes is not parsed (tooLarge).
type index struct {
	objects  map[objectKey][]placed
	bytes    int64
	tooLarge bool
	skipped  bool // a document past the per-document bounds was left out
	// helm is a Helm source's traced render (helm.go), in place of objects.
	helm *helmIndex
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
func (ix *index) find(obj service.ObjectInfo) (string, *docMask, bool) {
	for _, p := range ix.objects[objectKey{obj.Group, obj.Kind, obj.Name}] {
		if !obj.Namespaced || p.namespace == obj.Namespace {
			return p.file, p.doc, true
		}
	}
	return "", nil, false
}

// objects is the source's index at commit, from the cache when it was
// built before (keyed by team too: a team-only host's trees are the team's).
func (l *Locator) objects(c service.Cluster, src service.AppSource, app service.Application, commit string,
	files map[string][]byte) *index {
	key := strings.Join([]string{c.TeamID, service.NormalizeRepoURL(src.RepoURL), commit, path.Clean(src.Path),
		fmt.Sprintf("%+v", directory(src.Spec)), app.Destination.Namespace}, "\x00")
	cache := l.cache()
	if ix, ok := cache.Get(key); ok {
		return ix
	}
	ix := buildIndex(files, src, app)
	l.add(key, ix)
	return ix
}

// add keeps ix under key, evicting the least recently used indexes past
// MaxCachedBytes.
func (l *Locator) add(key string, ix *index) {
	cache := l.cache()
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := cache.Peek(key); ok {
		l.cachedBytes -= old.bytes // Add replaces it without the callback
	}
	cache.Add(key, ix)
	l.cachedBytes += ix.bytes
	for l.cachedBytes > MaxCachedBytes && cache.Len() > 1 {
		cache.RemoveOldest() // the eviction callback lowers cachedBytes
	}
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
	d := directory(src.Spec)
	names := make([]string, 0, len(files))
	for name := range files {
		inside := path.Dir(name) == dir || (d.Recurse && (dir == "." || strings.HasPrefix(name, dir+"/")))
		if ext := strings.ToLower(path.Ext(name)); inside && (ext == ".yaml" || ext == ".yml" || ext == ".json") && d.selects(name, dir) {
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
			if tooComplex(m) {
				ix.skipped = true
				continue
			}
			key, ns, ok := identity(m, app)
			if ok {
				ix.objects[key] = append(ix.objects[key], placed{file: name, namespace: ns, doc: newDocMask(m)})
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

// directorySpec is a directory source's spec.source.directory.
type directorySpec struct {
	Recurse bool   `json:"recurse"`
	Include string `json:"include"`
	Exclude string `json:"exclude"`
}

func directory(spec json.RawMessage) directorySpec {
	var s struct {
		Directory directorySpec `json:"directory"`
	}
	_ = json.Unmarshal(spec, &s)
	return s.Directory
}

// selects applies include and exclude as Argo CD's repo server does: glob
// patterns (with {a,b} alternatives) on the file's path in the source
// folder.
func (d directorySpec) selects(name, dir string) bool {
	rel := name
	if dir != "." {
		rel = strings.TrimPrefix(name, dir+"/")
	}
	if d.Include != "" && !globMatch(d.Include, rel) {
		return false
	}
	return d.Exclude == "" || !globMatch(d.Exclude, rel)
}

// globMatch matches a glob with one level of {a,b} alternatives.
func globMatch(pattern, name string) bool {
	alternatives := []string{pattern}
	if strings.HasPrefix(pattern, "{") && strings.HasSuffix(pattern, "}") {
		alternatives = strings.Split(pattern[1:len(pattern)-1], ",")
	}
	for _, p := range alternatives {
		if ok, _ := path.Match(strings.TrimSpace(p), name); ok {
			return true
		}
	}
	return false
}
