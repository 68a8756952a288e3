package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"regexp"
	"strings"

	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// manifestFile is the extension filter of Argo CD's findManifests
// (reposerver/repository/repository.go).
var manifestFile = regexp.MustCompile(`^.*\.(yaml|yml|json|jsonnet)$`)

// skipMarker excludes a file from a directory source, as upstream's
// skipFileRenderingMarker does.
const skipMarker = "+argocd:skip-file-rendering"

// renderDirectory reads the manifests of a plain directory source the way
// upstream's getPotentiallyValidManifests and getObjsFromYAMLOrJSON do: files
// in lexical walk order, include/exclude matched against the path relative to
// the source path with gobwas globs compiled without separators (so "*"
// crosses "/", util/glob upstream), YAML files that are not manifests skipped.
func renderDirectory(t tree, appPath string, dir Directory) ([]*unstructured.Unstructured, []string, *Error) {
	include, notes := compileGlob("include", dir.Include)
	exclude, more := compileGlob("exclude", dir.Exclude)
	notes = append(notes, more...)
	prefix := ""
	if appPath != "" {
		prefix = appPath + "/"
	}
	var objs []*unstructured.Unstructured
	for _, rel := range t.under(appPath) {
		if !dir.Recurse && strings.Contains(rel, "/") {
			continue
		}
		name := path.Base(rel)
		if !manifestFile.MatchString(name) {
			continue
		}
		// A pattern that does not compile matches nothing, as util/glob's Match.
		if exclude != nil && exclude.Match(rel) {
			continue
		}
		if dir.Include != "" && (include == nil || !include.Match(rel)) {
			continue
		}
		data := t[prefix+rel]
		if bytes.Contains(data, []byte(skipMarker)) {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".jsonnet"):
			return nil, notes, unsupported("jsonnet is not rendered (%s)", rel)
		case strings.HasSuffix(name, ".json"):
			obj, err := decodeJSONObject(data)
			if err != nil {
				return nil, notes, failed("failed to unmarshal %q: %v", rel, err)
			}
			objs = append(objs, obj)
		default:
			found, err := splitYAML(data)
			if err != nil {
				if len(found) > 0 || looksLikeManifest(data) {
					return nil, notes, failed("failed to unmarshal %q: %v", rel, err)
				}
				// An unrelated YAML file, ignored as upstream does.
				continue
			}
			objs = append(objs, found...)
		}
	}
	return objs, notes, nil
}

var errMultipleJSON = errors.New("found multiple objects; only single objects are allowed in JSON files")

func compileGlob(field, pattern string) (glob.Glob, []string) {
	if pattern == "" {
		return nil, nil
	}
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, []string{"directory." + field + " " + pattern + " is not a valid glob: " + err.Error()}
	}
	return g, nil
}

func decodeJSONObject(data []byte) (*unstructured.Unstructured, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	var obj unstructured.Unstructured
	if err := d.Decode(&obj); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errMultipleJSON
	}
	return &obj, nil
}

func looksLikeManifest(data []byte) bool {
	return bytes.Contains(data, []byte("apiVersion:")) &&
		bytes.Contains(data, []byte("kind:")) &&
		bytes.Contains(data, []byte("metadata:"))
}
