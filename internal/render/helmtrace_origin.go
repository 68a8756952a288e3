package render

import (
	"path"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/kukie/gitops-server/service"
)

// originLayer tells whether one layer of the values sets a leaf, and where.
type originLayer func(leafPath []string) (service.HelmOrigin, bool)

// leafOrigins names, for each leaf, the layer of highest precedence that
// sets it, in Argo CD's and Helm's order: --set-string parameters, --set
// parameters, values/valuesObject, the value files (the last first), the
// chart's values.yaml, its subcharts' values.yaml.
func leafOrigins(req Request, t tree, appPath string, h helmRun, leaves []leaf) []service.HelmOrigin {
	layers := parameterLayers(h.opts)
	if inline, err := inlineValues(h.opts); err == nil && len(inline) > 0 {
		kind := service.HelmOriginValues
		if len(h.opts.ValuesObject) > 0 && string(h.opts.ValuesObject) != "null" {
			kind = service.HelmOriginValuesObject
		}
		layers = append(layers, yamlLayer(inline, nil, service.HelmOrigin{Kind: kind}))
	}
	if files, rerr := resolveValueFiles(req, t, appPath, h.opts); rerr == nil {
		for i := len(files) - 1; i >= 0; i-- {
			layers = append(layers, yamlLayer(files[i].data, nil, service.HelmOrigin{Kind: service.HelmOriginFile, File: files[i].path}))
		}
	}
	layers = append(layers, chartLayers(t, h.ch, appPath, nil, 0)...)
	out := make([]service.HelmOrigin, len(leaves))
	for i, l := range leaves {
		for _, layer := range layers {
			if o, ok := layer(l.path); ok {
				out[i] = o
				break
			}
		}
	}
	return out
}

// parameterLayers are the parameters, --set-string before --set and the
// last of a list first: one whose path leads to the leaf sets it.
func parameterLayers(opts *Helm) []originLayer {
	var layers []originLayer
	for _, forceString := range []bool{true, false} {
		for i := len(opts.Parameters) - 1; i >= 0; i-- {
			p := opts.Parameters[i]
			keys, err := parseSetPath(p.Name)
			if p.ForceString != forceString || err != nil {
				continue
			}
			tokens := make([]string, len(keys))
			for j, k := range keys {
				tokens[j] = k.name
				if k.index >= 0 {
					tokens[j] = strconv.Itoa(k.index)
				}
			}
			name := p.Name
			layers = append(layers, func(leafPath []string) (service.HelmOrigin, bool) {
				if len(tokens) > len(leafPath) {
					return service.HelmOrigin{}, false
				}
				for j, tok := range tokens {
					if leafPath[j] != tok {
						return service.HelmOrigin{}, false
					}
				}
				return service.HelmOrigin{Kind: service.HelmOriginParameter, Parameter: name}, true
			})
		}
	}
	return layers
}

// yamlLayer is a YAML document that sets the leaves it holds (below
// prefix, which the leaf's path starts with), the line of the key found.
// The document's keys are indexed once (a lookup per leaf would be
// quadratic in a large values file).
func yamlLayer(data []byte, prefix []string, at service.HelmOrigin) originLayer {
	var doc yaml.Node
	lines := map[string]lineAt{}
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
		indexLines(doc.Content[0], nil, lineAt{line: doc.Content[0].Line}, lines, 0)
	}
	return func(leafPath []string) (service.HelmOrigin, bool) {
		if len(leafPath) < len(prefix) || strings.Join(leafPath[:len(prefix)], "\x00") != strings.Join(prefix, "\x00") {
			return service.HelmOrigin{}, false
		}
		l, ok := lines[strings.Join(leafPath[len(prefix):], "\x00")]
		if !ok {
			return service.HelmOrigin{}, false
		}
		o := at
		if o.File != "" {
			o.Line, o.Shared = l.line, l.shared
		}
		return o, true
	}
}

// lineAt is where a values path is set: the line of its key (or list
// item), and whether its value comes through an alias or a << merge (the
// anchor's line is shared with every place that uses it).
type lineAt struct {
	line   int
	shared bool
}

// maxIndexedPaths bounds one values document's index (aliases repeat
// what they name; a document of nested aliases would never end).
const maxIndexedPaths = 200_000

// indexLines records every path below n with where it is set, direct keys
// before those a << merge brings in, as YAML's merge gives them.
func indexLines(n *yaml.Node, path []string, at lineAt, out map[string]lineAt, depth int) {
	if depth > 64 || len(out) >= maxIndexedPaths {
		return
	}
	for n != nil && n.Kind == yaml.AliasNode {
		n, at.shared = n.Alias, true
	}
	if n == nil {
		return
	}
	out[strings.Join(path, "\x00")] = at
	child := func(tok string) []string { return append(path[:len(path):len(path)], tok) }
	switch n.Kind {
	case yaml.MappingNode:
		direct := map[string]bool{}
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Value == "<<" {
				merges = append(merges, k, n.Content[i+1])
				continue
			}
			direct[k.Value] = true
			indexLines(n.Content[i+1], child(k.Value), lineAt{line: k.Line, shared: at.shared}, out, depth+1)
		}
		for i := 0; i+1 < len(merges); i += 2 {
			src := merges[i+1]
			for src != nil && src.Kind == yaml.AliasNode {
				src = src.Alias
			}
			sources := []*yaml.Node{src}
			if src != nil && src.Kind == yaml.SequenceNode {
				sources = src.Content
			}
			for _, m := range sources {
				for m != nil && m.Kind == yaml.AliasNode {
					m = m.Alias
				}
				if m == nil || m.Kind != yaml.MappingNode {
					continue
				}
				for j := 0; j+1 < len(m.Content); j += 2 {
					if k := m.Content[j].Value; !direct[k] && k != "<<" {
						direct[k] = true
						indexLines(m.Content[j+1], child(k), lineAt{line: merges[i].Line, shared: true}, out, depth+1)
					}
				}
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			indexLines(item, child(strconv.Itoa(i)), lineAt{line: item.Line, shared: at.shared}, out, depth+1)
		}
	}
}

// chartLayers are a chart's values.yaml (at dir in the tree, its values
// under prefix) and, recursively, its unpacked subcharts'.
func chartLayers(t tree, ch *chart.Chart, dir string, prefix []string, depth int) []originLayer {
	file := path.Join(dir, "values.yaml")
	if dir == "" {
		file = "values.yaml"
	}
	var layers []originLayer
	if data, ok := t[file]; ok {
		layers = append(layers, yamlLayer(data, prefix, service.HelmOrigin{Kind: service.HelmOriginFile, File: file}))
	}
	if depth > 4 {
		return layers
	}
	// A subchart's folder under charts/ holds a Chart.yaml naming it; an
	// alias renames its values key.
	dirs := map[string]string{}
	for _, rel := range t.under(path.Join(dir, "charts")) {
		sub, rest, ok := strings.Cut(rel, "/")
		if !ok || rest != "Chart.yaml" {
			continue
		}
		var meta struct {
			Name string `yaml:"name"`
		}
		if yaml.Unmarshal(t[path.Join(dir, "charts", rel)], &meta) == nil && meta.Name != "" {
			dirs[meta.Name] = path.Join(dir, "charts", sub)
		}
	}
	for _, dep := range ch.Dependencies() {
		name := dep.Name()
		original := name
		for _, d := range ch.Metadata.Dependencies {
			if d.Alias == name {
				original = d.Name
			}
		}
		if subDir, ok := dirs[original]; ok {
			layers = append(layers, chartLayers(t, dep, subDir, append(prefix[:len(prefix):len(prefix)], name), depth+1)...)
		}
	}
	return layers
}
