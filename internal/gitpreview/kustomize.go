package gitpreview

import (
	"errors"
	"path"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// How a kustomize source sets a field.
const (
	ViaKustomizeResource    = "kustomize_resource"    // the resource file's own manifest
	ViaKustomizePatch       = "kustomize_patch"       // the last patch that sets it (strategic merge or JSON 6902)
	ViaKustomizeTransformer = "kustomize_transformer" // the kustomization's replicas: or images:
)

// maxKustomizeDepth bounds nested kustomizations (resources that are
// folders with their own kustomization).
const maxKustomizeDepth = 8

var errKustomizeUnsupported = errors.New("kustomization not traced")

// kobj is one object of a kustomization's output: its manifest, its name
// as the kustomization's patches name it, and the patches and transformers
// that apply to it, in the order kustomize applies them.
type kobj struct {
	key    objectKey
	ns     string
	file   string
	doc    *docMask
	layers []klayer
}

// klayer is one patch or transformer entry applied to an object.
type klayer struct {
	kind string // smp, json6902, replicas, images
	file string
	// lineOffset is added to node lines for patches inline in the
	// kustomization (their YAML was parsed from a block scalar).
	lineOffset int
	node       *yaml.Node
	doc        *docMask // node, for the masker
	// override names the Application's entry the layer comes from
	// (spec.source.kustomize...); "" for the repository's own.
	override string
}

// kustomizeObjects traces the kustomization in dir: its resources (files,
// and folders with their own kustomization), then its patches (patches,
// then patchesStrategicMerge, then patchesJson6902, as kustomize's
// FixKustomization orders them — api/types/fix.go upstream), then its
// replicas and images transformers, then namePrefix, nameSuffix and
// namespace. Remote resources, components and generators' outputs are not
// traced (errKustomizeUnsupported).
//
// app is the Application's spec.source.kustomize (nil: none), applied to
// this kustomization as Argo CD's `kustomize edit` does: its patches after
// the kustomization's, its replicas and images after its transformers (the
// last that sets a field wins), its namePrefix, nameSuffix and namespace
// in place of the kustomization's.
func kustomizeObjects(files map[string][]byte, dir string, depth int, app *yaml.Node) ([]*kobj, error) {
	if depth > maxKustomizeDepth {
		return nil, errKustomizeUnsupported
	}
	kfile, k := kustomizationIn(files, dir)
	if k == nil {
		return nil, errKustomizeUnsupported
	}
	if value(k, "components") != nil {
		return nil, errKustomizeUnsupported
	}
	var objs []*kobj
	for _, entry := range scalars(value(k, "resources")) {
		more, err := kustomizeResource(files, path.Join(dir, entry), entry, depth)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	patches := kustomizePatches(files, dir, kfile, k)
	if app != nil {
		patches = append(patches, appPatches(files, dir, app)...)
	}
	for _, p := range patches {
		for _, o := range objs {
			if p.targets(o) {
				o.layers = append(o.layers, p.layer)
			}
		}
	}
	kustomizeTransformers(kfile, k, objs)
	prefix, suffix, ns := scalar(k, "namePrefix"), scalar(k, "nameSuffix"), scalar(k, "namespace")
	if app != nil {
		appTransformers(app, objs)
		prefix, suffix, ns = overridden(app, "namePrefix", prefix), overridden(app, "nameSuffix", suffix), overridden(app, "namespace", ns)
	}
	for _, o := range objs {
		o.key.name = prefix + o.key.name + suffix
		if ns != "" {
			o.ns = ns
		}
	}
	return objs, nil
}

// kustomizationIn is the kustomization file of dir and its mapping.
func kustomizationIn(files map[string][]byte, dir string) (string, *yaml.Node) {
	for _, name := range service.KustomizationNames() {
		p := path.Join(dir, name)
		if b, ok := files[p]; ok {
			var doc yaml.Node
			if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
				return p, nil
			}
			return p, doc.Content[0]
		}
	}
	return "", nil
}

// kustomizeResource reads one resources entry: a manifest file, or a folder
// with its own kustomization.
func kustomizeResource(files map[string][]byte, p, entry string, depth int) ([]*kobj, error) {
	if strings.Contains(entry, "://") || strings.HasPrefix(entry, "github.com/") {
		return nil, errKustomizeUnsupported
	}
	b, ok := files[p]
	if !ok {
		return kustomizeObjects(files, p, depth+1, nil)
	}
	var objs []*kobj
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	for {
		var doc yaml.Node
		if dec.Decode(&doc) != nil {
			return objs, nil
		}
		if len(doc.Content) != 1 {
			continue
		}
		m := doc.Content[0]
		if tooComplex(m) {
			return nil, errKustomizeUnsupported
		}
		key, _, ok := identity(m, service.Application{})
		if ok {
			objs = append(objs, &kobj{key: key, ns: scalar(value(m, "metadata"), "namespace"), file: p, doc: newDocMask(m)})
		}
	}
}

func scalars(n *yaml.Node) []string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, item := range n.Content {
		if item = resolve(item); item.Kind == yaml.ScalarNode {
			out = append(out, item.Value)
		}
	}
	return out
}

// kpatch is one patch of a kustomization with what it applies to.
type kpatch struct {
	layer  klayer
	target *yaml.Node // the target selector; nil: the patch's own kind and name (strategic merge)
}

// targets reports whether the patch applies to o: its target selector's
// group, kind, name (a regular expression, as kustomize reads it) and
// namespace, or a strategic merge patch's own kind and name.
func (p kpatch) targets(o *kobj) bool {
	if p.target == nil {
		if p.layer.kind != "smp" {
			return false
		}
		key, _, ok := identity(p.layer.node, service.Application{})
		return ok && key.kind == o.key.kind && key.name == o.key.name
	}
	if scalar(p.target, "labelSelector") != "" || scalar(p.target, "annotationSelector") != "" {
		return false // not traced: such a patch is missed, never misattributed
	}
	if g := scalar(p.target, "group"); value(p.target, "group") != nil && g != o.key.group {
		return false
	}
	if k := scalar(p.target, "kind"); k != "" && k != o.key.kind {
		return false
	}
	if ns := scalar(p.target, "namespace"); ns != "" && ns != o.ns {
		return false
	}
	if name := scalar(p.target, "name"); name != "" {
		re, err := regexp.Compile("^(?:" + name + ")$")
		if err != nil || !re.MatchString(o.key.name) {
			return false
		}
	}
	return true
}

// kustomizePatches reads the kustomization's patches in the order
// kustomize applies them.
func kustomizePatches(files map[string][]byte, dir, kfile string, k *yaml.Node) []kpatch {
	var out []kpatch
	read := func(entry *yaml.Node, targetKey string) {
		entry = resolve(entry)
		if entry == nil {
			return
		}
		var body *yaml.Node
		file, offset := kfile, 0
		switch {
		case entry.Kind == yaml.ScalarNode && !strings.Contains(entry.Value, "\n"):
			file = path.Join(dir, entry.Value) // patchesStrategicMerge: a file
		case entry.Kind == yaml.ScalarNode:
			body, offset = parsePatch(entry.Value), entry.Line
		case value(entry, "path") != nil:
			file = path.Join(dir, scalar(entry, "path"))
		case value(entry, "patch") != nil:
			v := value(entry, "patch")
			body, offset = parsePatch(v.Value), v.Line
		}
		if body == nil {
			var doc yaml.Node
			if b, ok := files[file]; !ok || yaml.Unmarshal(b, &doc) != nil || len(doc.Content) != 1 {
				return
			}
			body = doc.Content[0]
		}
		kind := "smp"
		if body.Kind == yaml.SequenceNode {
			kind = "json6902"
		}
		var target *yaml.Node
		if targetKey != "" {
			target = value(entry, targetKey)
		}
		if tooComplex(body) {
			return
		}
		out = append(out, kpatch{layer: klayer{kind: kind, file: file, lineOffset: offset, node: body, doc: newDocMask(body)}, target: target})
	}
	for _, field := range []string{"patches", "patchesStrategicMerge", "patchesJson6902"} {
		list := resolve(value(k, field))
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		for _, entry := range list.Content {
			targetKey := "target"
			if field == "patchesStrategicMerge" {
				targetKey = ""
			}
			read(entry, targetKey)
		}
	}
	return out
}

// parsePatch parses a patch written inline in the kustomization.
func parsePatch(text string) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) != 1 {
		return nil
	}
	return doc.Content[0]
}

// kustomizeTransformers adds the kustomization's replicas and images
// entries to the objects they apply to (replicas by name; images to every
// object, matched per container when a field is traced).
func kustomizeTransformers(kfile string, k *yaml.Node, objs []*kobj) {
	if list := resolve(value(k, "replicas")); list != nil && list.Kind == yaml.SequenceNode {
		for _, entry := range list.Content {
			for _, o := range objs {
				if scalar(entry, "name") == o.key.name {
					o.layers = append(o.layers, klayer{kind: "replicas", file: kfile, node: resolve(entry), doc: newDocMask(resolve(entry))})
				}
			}
		}
	}
	if list := resolve(value(k, "images")); list != nil && list.Kind == yaml.SequenceNode {
		doc := newDocMask(list)
		for _, o := range objs {
			o.layers = append(o.layers, klayer{kind: "images", file: kfile, node: list, doc: doc})
		}
	}
}
