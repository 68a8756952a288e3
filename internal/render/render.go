package render

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/service"
)

// Render renders req in this process. It has no limits of its own: callers
// that render untrusted trees use RunChild.
func Render(req Request) Result {
	t := tree(req.Files)
	appPath, ok := cleanPath(req.Source.Path)
	if !ok {
		return Result{Error: failed("source path %q is outside the repository", req.Source.Path)}
	}
	if appPath != "" && !t.isDir(appPath) {
		return Result{Error: failed("app path %q does not exist", req.Source.Path)}
	}
	src := req.Source
	var notes []string
	if merged, err := mergeSourceOverrides(t, appPath, req.AppName, src); err != nil {
		return Result{Error: failed("error while parsing source parameters: %v", err)}
	} else if merged != nil {
		src = *merged
		notes = append(notes, "source parameters merged from .argocd-source files in the app path")
	}
	sourceType, rerr := detectSourceType(t, appPath, src)
	if rerr != nil {
		return Result{Error: rerr}
	}

	var objs []*unstructured.Unstructured
	var more []string
	switch sourceType {
	case SourceTypeDirectory:
		dir := Directory{}
		if src.Directory != nil {
			dir = *src.Directory
		}
		objs, more, rerr = renderDirectory(t, appPath, dir)
	case SourceTypeKustomize:
		objs, more, rerr = renderKustomize(t, appPath, src.Kustomize, req.KustomizeBuildOptions)
	case SourceTypeHelm:
		objs, more, rerr = renderHelm(req, t, appPath, src.Helm)
	}
	notes = append(notes, more...)
	if rerr != nil {
		return Result{SourceType: sourceType, Notes: notes, Error: rerr}
	}
	out, err := encode(objs)
	if err != nil {
		return Result{SourceType: sourceType, Notes: notes, Error: failed("%v", err)}
	}
	return Result{Manifests: out, SourceType: sourceType, Notes: notes}
}

// detectSourceType follows upstream's GetAppSourceType
// (reposerver/repository/repository.go) and discovery.AppType
// (util/app/discovery/discovery.go): an explicit type wins; otherwise a
// kustomization file directly in the app path means kustomize, a file whose
// name ends in Chart.yaml means Helm (kustomize wins when both exist, as the
// later of the two in the walk), anything else is a directory.
func detectSourceType(t tree, appPath string, src Source) (string, *Error) {
	var explicit []string
	if src.Kustomize != nil {
		explicit = append(explicit, SourceTypeKustomize)
	}
	if src.Helm != nil {
		explicit = append(explicit, SourceTypeHelm)
	}
	if src.Directory != nil {
		explicit = append(explicit, SourceTypeDirectory)
	}
	if len(src.Plugin) > 0 && string(src.Plugin) != "null" {
		explicit = append(explicit, "plugin")
	}
	if len(explicit) > 1 {
		return "", failed("multiple application sources defined: %s", strings.Join(explicit, ","))
	}
	if len(explicit) == 1 {
		if explicit[0] == "plugin" {
			return "", unsupported("config management plugins are not rendered here; only Argo CD can run them")
		}
		return explicit[0], nil
	}
	sourceType := SourceTypeDirectory
	for _, rel := range t.under(appPath) {
		if strings.Contains(rel, "/") {
			continue
		}
		if strings.HasSuffix(rel, "Chart.yaml") {
			sourceType = SourceTypeHelm
		}
		if isKustomization(rel) {
			sourceType = SourceTypeKustomize
		}
	}
	return sourceType, nil
}

func isKustomization(name string) bool {
	return slices.Contains(service.KustomizationNames(), name)
}

// mergeSourceOverrides applies .argocd-source.yaml and
// .argocd-source-<app>.yaml from the app path as JSON merge patches, keeping
// the path, as upstream's mergeSourceParameters does. It returns nil when
// neither file exists.
func mergeSourceOverrides(t tree, appPath, appName string, src Source) (*Source, error) {
	names := []string{".argocd-source.yaml"}
	if appName != "" {
		names = append(names, fmt.Sprintf(".argocd-source-%s.yaml", appName))
	}
	var merged any
	found := false
	for _, name := range names {
		data, ok := t[path.Join(appPath, name)]
		if !ok {
			continue
		}
		if !found {
			raw, err := json.Marshal(src)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(raw, &merged); err != nil {
				return nil, err
			}
			found = true
		}
		patchJSON, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var patch any
		if err := json.Unmarshal(patchJSON, &patch); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		merged = mergePatch(merged, patch)
	}
	if !found {
		return nil, nil
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	var out Source
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	out.Path = src.Path
	return &out, nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
