package render

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/service"
)

// renderKustomize builds the kustomization in appPath over an in-memory copy
// of the tree (never the disk). The app's overrides are written into the
// kustomization first, as upstream's kustomize.Build (util/kustomize/kustomize.go)
// does with `kustomize edit`. Remote resources, plugins, helmCharts and KRM
// functions are refused before the build.
func renderKustomize(t tree, appPath string, opts *Kustomize, buildOptions string) ([]*unstructured.Unstructured, []string, *Error) {
	kustFile := findKustomization(t, appPath)
	if kustFile == "" {
		return nil, nil, failed("kustomization file not found in the path")
	}
	fs := filesys.MakeFsInMemory()
	for name, data := range t {
		if err := fs.WriteFile("/"+name, data); err != nil {
			return nil, nil, failed("loading %s: %v", name, err)
		}
	}
	if opts != nil {
		edited, rerr := editKustomization(t, appPath, t[kustFile], opts)
		if rerr != nil {
			return nil, nil, rerr
		}
		if err := fs.WriteFile("/"+kustFile, edited); err != nil {
			return nil, nil, failed("writing %s: %v", kustFile, err)
		}
		t = withFile(t, kustFile, edited)
	}
	if rerr := refuseUnsupported(t, appPath, map[string]bool{}); rerr != nil {
		return nil, nil, rerr
	}
	kopts, notes, rerr := kustomizeOptions(buildOptions)
	if rerr != nil {
		return nil, notes, rerr
	}
	resMap, err := krusty.MakeKustomizer(kopts).Run(fs, "/"+appPath)
	if err != nil {
		return nil, notes, failed("kustomize build %s: %v", displayPath(appPath), err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, notes, failed("kustomize build %s: %v", displayPath(appPath), err)
	}
	objs, err := splitYAML(out)
	if err != nil {
		return nil, notes, failed("%v", err)
	}
	return objs, notes, nil
}

func displayPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func withFile(t tree, name string, data []byte) tree {
	c := make(tree, len(t))
	for k, v := range t {
		c[k] = v
	}
	c[name] = data
	return c
}

func findKustomization(t tree, dir string) string {
	for _, name := range service.KustomizationNames() {
		if p := path.Join(dir, name); t.isFile(p) {
			return p
		}
	}
	return ""
}

// kustomizeOptions maps argocd-cm's kustomize.buildOptions onto krusty's
// options. Flags that would run code or reach the network
// (--enable-alpha-plugins, --enable-exec, --network, --mount, ...) are
// ignored with a note; the sort order default is the CLI's ("unspecified":
// the kustomization's sortOptions, else legacy).
func kustomizeOptions(buildOptions string) (*krusty.Options, []string, *Error) {
	o := krusty.MakeDefaultOptions()
	o.Reorder = krusty.ReorderOptionUnspecified
	var notes []string
	args := strings.Fields(buildOptions)
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		next := func() string {
			if hasValue {
				return value
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch name {
		case "--load-restrictor", "--load_restrictor":
			switch v := next(); v {
			case "LoadRestrictionsNone", "none":
				o.LoadRestrictions = types.LoadRestrictionsNone
			case "LoadRestrictionsRootOnly", "rootOnly":
				o.LoadRestrictions = types.LoadRestrictionsRootOnly
			default:
				return nil, notes, failed("kustomize.buildOptions: unknown load restrictor %q", v)
			}
		case "--reorder":
			switch v := next(); v {
			case "legacy":
				o.Reorder = krusty.ReorderOptionLegacy
			case "none":
				o.Reorder = krusty.ReorderOptionNone
			default:
				return nil, notes, failed("kustomize.buildOptions: unknown reorder %q", v)
			}
		case "--enable-managedby-label":
			o.AddManagedbyLabel = value != "false"
		case "--enable-helm":
			// helmCharts are refused before the build; the flag alone changes nothing.
		case "--helm-command", "--helm-kube-version", "--helm-api-versions", "--mount", "--env", "-e", "--network-name", "--output", "-o":
			next()
			notes = append(notes, "kustomize.buildOptions: "+name+" ignored")
		default:
			notes = append(notes, "kustomize.buildOptions: "+name+" ignored")
		}
	}
	return o, notes, nil
}

// editKustomization applies the Application's kustomize overrides to the
// kustomization, as the `kustomize edit` commands upstream's Build runs
// (util/kustomize/kustomize.go) would: set nameprefix/namesuffix, set image,
// set replicas, add label/annotation (failing on an existing key without
// force), set namespace, patches appended, add component.
func editKustomization(t tree, appPath string, data []byte, opts *Kustomize) ([]byte, *Error) {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, failed("failed to unmarshal kustomization: %v", err)
	}
	if k == nil {
		k = map[string]any{}
	}
	if opts.NamePrefix != "" {
		k["namePrefix"] = opts.NamePrefix
	}
	if opts.NameSuffix != "" {
		k["nameSuffix"] = opts.NameSuffix
	}
	for _, image := range opts.Images {
		setImage(k, image)
	}
	for _, r := range opts.Replicas {
		count := r.Count.IntValue()
		if r.Count.Type == intstr.String {
			n, err := strconv.Atoi(r.Count.StrVal)
			if err != nil {
				return nil, failed("expected integer value for count. Received: %s", r.Count.StrVal)
			}
			count = n
		}
		setReplicas(k, r.Name, count)
	}
	if len(opts.CommonLabels) > 0 {
		if opts.LabelWithoutSelector {
			addLabelsWithoutSelector(k, opts.CommonLabels, opts.LabelIncludeTemplates)
		} else if err := addToMap(k, "commonLabels", "label", opts.CommonLabels, opts.ForceCommonLabels); err != nil {
			return nil, err
		}
	}
	if len(opts.CommonAnnotations) > 0 {
		if err := addToMap(k, "commonAnnotations", "annotation", opts.CommonAnnotations, opts.ForceCommonAnnotations); err != nil {
			return nil, err
		}
	}
	if opts.Namespace != "" {
		k["namespace"] = opts.Namespace
	}
	if len(opts.Patches) > 0 {
		patches, _ := k["patches"].([]any)
		if existing, ok := k["patches"]; ok && existing != nil && patches == nil {
			return nil, failed("expected 'patches' field in kustomization.yaml to be a list")
		}
		for _, raw := range opts.Patches {
			var p any
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, failed("kustomize.patches: %v", err)
			}
			patches = append(patches, p)
		}
		k["patches"] = patches
	}
	if len(opts.Components) > 0 {
		components, _ := k["components"].([]any)
		for i, c := range opts.Components {
			if looksRemote(c) {
				return nil, remoteRefused("", fmt.Sprintf("kustomize.components[%d]", i), redactRef(c))
			}
			p, ok := join(appPath, c)
			if !ok || !(t.isDir(p) || t.isFile(p)) {
				return nil, failed("kustomize component %s does not exist", c)
			}
			if !slices.Contains(components, any(c)) {
				components = append(components, c)
			}
		}
		k["components"] = components
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		return nil, failed("%v", err)
	}
	return out, nil
}

// setImage follows `kustomize edit set image`: "name=newName:tag",
// "name=newName@digest", "name:tag", "name@digest" or "name=newName"; an
// existing entry for the name keeps the fields the argument does not set.
func setImage(k map[string]any, arg string) {
	name, replacement, renamed := strings.Cut(arg, "=")
	if !renamed {
		replacement = arg
	}
	newName, tag, digest := splitImage(replacement)
	if !renamed {
		name, newName = newName, ""
	}
	images, _ := k["images"].([]any)
	for _, im := range images {
		m, ok := im.(map[string]any)
		if !ok || m["name"] != name {
			continue
		}
		applyImage(m, newName, tag, digest)
		return
	}
	m := map[string]any{"name": name}
	applyImage(m, newName, tag, digest)
	k["images"] = append(images, m)
}

func applyImage(m map[string]any, newName, tag, digest string) {
	if newName != "" {
		m["newName"] = newName
	}
	if tag != "" {
		m["newTag"] = tag
		delete(m, "digest")
	}
	if digest != "" {
		m["digest"] = digest
		delete(m, "newTag")
	}
}

func splitImage(s string) (name, tag, digest string) {
	if n, d, ok := strings.Cut(s, "@"); ok {
		return n, "", d
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		return s[:i], s[i+1:], ""
	}
	return s, "", ""
}

func setReplicas(k map[string]any, name string, count int) {
	replicas, _ := k["replicas"].([]any)
	for _, r := range replicas {
		if m, ok := r.(map[string]any); ok && m["name"] == name {
			m["count"] = count
			return
		}
	}
	k["replicas"] = append(replicas, map[string]any{"name": name, "count": count})
}

func addToMap(k map[string]any, field, what string, pairs map[string]string, force bool) *Error {
	m, _ := k[field].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	for key, v := range pairs {
		if _, exists := m[key]; exists && !force {
			return failed("%s %s already in kustomization file. Use --force to override.", what, key)
		}
		m[key] = v
	}
	k[field] = m
	return nil
}

func addLabelsWithoutSelector(k map[string]any, pairs map[string]string, includeTemplates bool) {
	labels, _ := k["labels"].([]any)
	entry := map[string]any{"pairs": map[string]any{}}
	if includeTemplates {
		entry["includeTemplates"] = true
	}
	for key, v := range pairs {
		entry["pairs"].(map[string]any)[key] = v
	}
	k["labels"] = append(labels, entry)
}
