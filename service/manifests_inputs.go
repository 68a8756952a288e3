package service

import (
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strings"
)

// maxInputScan bounds the bytes of a source's inputs masked to learn their
// secrets.
const maxInputScan = 2 << 20

// inputSecrets masks a source's inputs — the values files under its path
// (subcharts' included), the value files it names (in ref sources too), its
// own spec (inline values, parameters) — and returns the secrets found, for
// the request to cut from the texts it returns besides the masked files.
// What the templates and kustomizations produce is in the rendered output,
// whose secrets the masked output brings.
func (s *RepoView) inputSecrets(files map[string][]byte, refFiles map[string]map[string][]byte, spec json.RawMessage) []string {
	var src struct {
		Path string `json:"path"`
		Helm struct {
			ValueFiles []string `json:"valueFiles"`
		} `json:"helm"`
	}
	_ = json.Unmarshal(spec, &src) // an unreadable spec is still masked below
	secrets := s.Masker.File("source.json", spec).Secrets
	budget := maxInputScan
	scan := func(name string, body []byte) {
		if len(body) > budget || isBinary(body) {
			return
		}
		budget -= len(body)
		secrets = append(secrets, s.Masker.File(name, body).Secrets...)
	}
	dir := path.Clean(strings.Trim(src.Path, "/"))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if (dir == "." || strings.HasPrefix(name, dir+"/")) && isValuesFile(name) {
			scan(name, files[name])
		}
	}
	for _, vf := range src.Helm.ValueFiles {
		if ref, rest, ok := strings.Cut(strings.TrimPrefix(vf, "$"), "/"); ok && strings.HasPrefix(vf, "$") {
			if body, ok := refFiles[ref][path.Clean(rest)]; ok {
				scan(rest, body)
			}
		} else if name := path.Join(dir, vf); !isValuesFile(name) || dir != "." && !strings.HasPrefix(name, dir+"/") {
			if body, ok := files[name]; ok {
				scan(name, body) // not scanned above
			}
		}
	}
	return secrets
}

// isValuesFile reports a Helm values file by its name: values.yaml,
// values-prod.yaml, values.json.
func isValuesFile(name string) bool {
	base := strings.ToLower(path.Base(name))
	ext := path.Ext(base)
	return strings.HasPrefix(base, "values") && (ext == ".yaml" || ext == ".yml" || ext == ".json") && base != "values.schema.json"
}
