package gitpreview

import (
	"encoding/json"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kukie/gitops-server/service"
)

// appKustomize is the Application's spec.source.kustomize, nil when it
// sets nothing.
func appKustomize(spec json.RawMessage) *yaml.Node {
	var doc yaml.Node
	if len(spec) == 0 || yaml.Unmarshal(spec, &doc) != nil || len(doc.Content) != 1 {
		return nil
	}
	k := value(doc.Content[0], "kustomize")
	if k == nil || k.Kind != yaml.MappingNode || len(k.Content) == 0 {
		return nil
	}
	return k
}

// appPatches are the Application's kustomize.patches, read as the
// kustomization's own (a path is the app path's).
func appPatches(files map[string][]byte, dir string, app *yaml.Node) []kpatch {
	list := value(app, "patches")
	if list == nil {
		return nil
	}
	only := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "patches"}, list}}
	patches := kustomizePatches(files, dir, "", only)
	for i := range patches {
		patches[i].layer.override = "spec.source.kustomize.patches"
	}
	return patches
}

// appTransformers adds the Application's kustomize.replicas (by name) and
// kustomize.images to the objects, after the kustomization's own.
func appTransformers(app *yaml.Node, objs []*kobj) {
	if list := value(app, "replicas"); list != nil && list.Kind == yaml.SequenceNode {
		for _, e := range list.Content {
			name := scalar(e, "name")
			for _, o := range objs {
				if name == o.key.name {
					o.layers = append(o.layers, klayer{kind: "replicas", node: e, doc: newDocMask(e),
						override: "spec.source.kustomize.replicas[name=" + name + "]"})
				}
			}
		}
	}
	if list := value(app, "images"); list != nil && list.Kind == yaml.SequenceNode {
		entries := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range list.Content {
			entries.Content = append(entries.Content, imageEntry(e.Value))
		}
		doc := newDocMask(entries)
		for _, o := range objs {
			o.layers = append(o.layers, klayer{kind: "images", node: entries, doc: doc, override: "spec.source.kustomize.images"})
		}
	}
}

// imageEntry reads one of Argo CD's kustomize image overrides
// ("nginx=registry/nginx:1.29", "nginx:1.29", "nginx@sha256:…") as a
// kustomization's images entry.
func imageEntry(override string) *yaml.Node {
	name, image, found := strings.Cut(override, "=")
	if !found {
		image = override
		name, _ = splitImage(override)
	}
	newName, rest := splitImage(image)
	fields := []string{"name", name}
	if newName != name {
		fields = append(fields, "newName", newName)
	}
	switch {
	case strings.HasPrefix(rest, "@"):
		fields = append(fields, "digest", rest[1:])
	case strings.HasPrefix(rest, ":"):
		fields = append(fields, "newTag", rest[1:])
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range fields {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f})
	}
	return m
}

// overridden is the Application's value of key when it sets one.
func overridden(app *yaml.Node, key, current string) string {
	if v := scalar(app, key); v != "" {
		return v
	}
	return current
}

// appOverrideSource is where an Application's override sets a field: no
// file, the entry named (an images entry by its index).
func appOverrideSource(l klayer, s setting, commit string) service.GitSource {
	override := l.override
	if l.kind == "images" && len(s.tokens) == 1 {
		override += "[" + s.tokens[0] + "]"
	}
	return service.GitSource{Revision: commit, Via: ViaApplicationOverride, Override: override}
}
