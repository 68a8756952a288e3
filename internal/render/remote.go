package render

import (
	"fmt"
	"net/url"
	"strings"
)

// remoteURL reports whether ref, written where kustomize or Helm would load
// a file, is a URL they would fetch themselves; it returns the URL without
// its password for the error.
func remoteURL(ref string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	return u.Redacted(), true
}

// remoteRefused is the per-source error of a remote reference: the file and
// field that hold it, and the URL.
func remoteRefused(file, field, target string) *Error {
	if file != "" {
		field = file + ": " + field
	}
	return failed("%s: remote content is not loaded (%s)", field, target)
}

// refuseRemoteFiles refuses the URLs in the fields of one kustomization (k,
// read from file) that kustomize's loader reads files from: generators'
// files and envs, patches' paths, crds, configurations, replacements and
// openapi. Remote resources, bases and components are refuseUnsupported's.
func refuseRemoteFiles(k map[string]any, file string) *Error {
	for _, field := range []string{"crds", "configurations", "patchesStrategicMerge"} {
		for i, entry := range stringsAt(k[field]) {
			if u, ok := remoteURL(entry); ok {
				return remoteRefused(file, fmt.Sprintf("%s[%d]", field, i), u)
			}
		}
	}
	for _, gen := range []string{"configMapGenerator", "secretGenerator"} {
		for i, g := range mapList(k[gen]) {
			if err := refuseRemoteSources(g, fmt.Sprintf("%s[%d].", gen, i), file); err != nil {
				return err
			}
		}
	}
	for _, field := range []string{"patches", "patchesJson6902", "replacements"} {
		for i, p := range mapList(k[field]) {
			if u, ok := remoteURL(stringField(p, "path")); ok {
				return remoteRefused(file, fmt.Sprintf("%s[%d].path", field, i), u)
			}
		}
	}
	if openapi, ok := k["openapi"].(map[string]any); ok {
		if u, ok := remoteURL(stringField(openapi, "path")); ok {
			return remoteRefused(file, "openapi.path", u)
		}
	}
	return nil
}

// refuseRemoteSources refuses URLs among a generator's files ("key=path" or
// a path), envs and env, for a kustomization's configMapGenerator and
// secretGenerator entries and for builtin generator configurations alike.
func refuseRemoteSources(g map[string]any, prefix, file string) *Error {
	for _, field := range []string{"files", "envs"} {
		for i, entry := range stringsAt(g[field]) {
			_, p, _ := strings.Cut(entry, "=")
			for _, ref := range []string{entry, p} {
				if u, ok := remoteURL(ref); ok {
					return remoteRefused(file, fmt.Sprintf("%s%s[%d]", prefix, field, i), u)
				}
			}
		}
	}
	if u, ok := remoteURL(stringField(g, "env")); ok {
		return remoteRefused(file, prefix+"env", u)
	}
	return nil
}

// refuseRemoteInBuiltin refuses URLs in the file fields of a builtin
// generator or transformer configuration (a PatchTransformer's path, a
// ConfigMapGenerator's files, a ReplacementTransformer's replacements).
func refuseRemoteInBuiltin(doc map[string]any, where, file string) *Error {
	prefix := where + " " + stringField(doc, "kind") + "."
	if u, ok := remoteURL(stringField(doc, "path")); ok {
		return remoteRefused(file, prefix+"path", u)
	}
	for i, p := range stringsAt(doc["paths"]) {
		if u, ok := remoteURL(p); ok {
			return remoteRefused(file, fmt.Sprintf("%spaths[%d]", prefix, i), u)
		}
	}
	for i, r := range mapList(doc["replacements"]) {
		if u, ok := remoteURL(stringField(r, "path")); ok {
			return remoteRefused(file, fmt.Sprintf("%sreplacements[%d].path", prefix, i), u)
		}
	}
	return refuseRemoteSources(doc, prefix, file)
}

// refuseRemoteValueFiles refuses Helm value files given as URLs (any
// scheme, as Argo CD reads them); $ref sources are fetched by the parent.
func refuseRemoteValueFiles(valueFiles []string) *Error {
	for i, raw := range valueFiles {
		if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
			return remoteRefused("", fmt.Sprintf("helm.valueFiles[%d]", i), u.Redacted())
		}
	}
	return nil
}

// mapList and stringsAt read a YAML list keeping each item's index (a nil
// map or "" for an item of another type), so errors name the right entry.
func mapList(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, len(list))
	for i, item := range list {
		out[i], _ = item.(map[string]any)
	}
	return out
}

func stringsAt(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, item := range list {
		out[i], _ = item.(string)
	}
	return out
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// redactRef is a remote reference without the password it may carry.
func redactRef(ref string) string {
	if u, err := url.Parse(ref); err == nil && u.User != nil {
		return u.Redacted()
	}
	return ref
}
