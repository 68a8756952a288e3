package render

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// refuseUnsupported walks the kustomizations reachable from dir and refuses
// what would reach the network or run code: remote references in any field
// (render_failed, "remote content is not loaded"), helmCharts, and
// generators/transformers/validators that are not kustomize builtins (exec
// and container KRM functions, Go and exec plugins).
func refuseUnsupported(t tree, dir string, seen map[string]bool) *Error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	file := findKustomization(t, dir)
	if file == "" {
		return nil
	}
	var k map[string]any
	if err := yaml.Unmarshal(t[file], &k); err != nil {
		return failed("failed to unmarshal %s: %v", file, err)
	}
	for _, field := range []string{"helmCharts", "helmChartInflationGenerator", "helmGlobals"} {
		if v, ok := k[field]; ok && v != nil {
			return unsupported("kustomize %s in %s is not rendered (it needs Helm and chart downloads)", field, file)
		}
	}
	if err := refuseRemoteFiles(k, file); err != nil {
		return err
	}
	for _, field := range []string{"resources", "bases", "components"} {
		for i, entry := range stringsAt(k[field]) {
			p, inside := join(dir, entry)
			switch {
			case entry == "":
			case inside && t.isFile(p):
			case inside && t.isDir(p):
				if err := refuseUnsupported(t, p, seen); err != nil {
					return err
				}
			case looksRemote(entry):
				return remoteRefused(file, fmt.Sprintf("%s[%d]", field, i), redactRef(entry))
			}
		}
	}
	for _, field := range []string{"generators", "transformers", "validators"} {
		for i, entry := range stringsAt(k[field]) {
			p, inside := join(dir, entry)
			var docs []byte
			switch {
			case entry == "":
				continue
			case inside && t.isFile(p):
				docs = t[p]
			case inside && t.isDir(p):
				if err := refuseUnsupported(t, p, seen); err != nil {
					return err
				}
				continue
			case looksRemote(entry):
				return remoteRefused(file, fmt.Sprintf("%s[%d]", field, i), redactRef(entry))
			default:
				docs = []byte(entry)
			}
			if err := refusePlugins(docs, fmt.Sprintf("%s[%d]", field, i), file); err != nil {
				return err
			}
		}
	}
	return nil
}

func refusePlugins(docs []byte, field, file string) *Error {
	objs, _ := splitYAML(docs)
	for _, obj := range objs {
		ann := obj.GetAnnotations()
		if ann["config.kubernetes.io/function"] != "" || ann["config.k8s.io/function"] != "" {
			return unsupported("kustomize KRM function %s %q in %s is not run", obj.GetKind(), obj.GetName(), file)
		}
		if group, _, _ := strings.Cut(obj.GetAPIVersion(), "/"); group != "builtin" {
			return unsupported("kustomize plugin %s (%s) in %s %s is not run; only builtin generators and transformers are", obj.GetKind(), obj.GetAPIVersion(), file, field)
		}
		if err := refuseRemoteInBuiltin(obj.Object, field, file); err != nil {
			return err
		}
	}
	return nil
}

// looksRemote reports whether a kustomize reference that is not in the tree
// names a URL kustomize would fetch (git or HTTP).
func looksRemote(ref string) bool {
	if strings.Contains(ref, "://") || strings.HasPrefix(ref, "git@") ||
		strings.Contains(ref, "?ref=") || strings.Contains(ref, "?version=") {
		return true
	}
	first, _, _ := strings.Cut(ref, "/")
	return strings.Contains(first, ".") && !strings.HasPrefix(first, ".")
}
