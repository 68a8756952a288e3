package render

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/gobwas/glob"
	"sigs.k8s.io/yaml"
)

// helmValues merges the user-supplied values in Argo CD's order (upstream
// helmTemplate and util/helm/cmd.go): value files, then values/valuesObject
// (passed as one more --values file), then parameters (Helm applies --set
// before --set-string, whatever their order in the Application).
func helmValues(req Request, t tree, appPath string, opts *Helm) (map[string]any, []string, *Error) {
	base := map[string]any{}
	var notes []string
	files, rerr := resolveValueFiles(req, t, appPath, opts)
	if rerr != nil {
		return nil, nil, rerr
	}
	for _, f := range files {
		current := map[string]any{}
		if err := yaml.Unmarshal(f.data, &current); err != nil {
			return nil, nil, failed("failed to parse %s: %v", f.name, err)
		}
		base = mergeMaps(base, current)
	}
	inline, err := inlineValues(opts)
	if err != nil {
		return nil, nil, failed("helm values: %v", err)
	}
	if len(inline) > 0 {
		current := map[string]any{}
		if err := yaml.Unmarshal(inline, &current); err != nil {
			return nil, nil, failed("failed to parse helm values: %v", err)
		}
		base = mergeMaps(base, current)
	}
	// Upstream collects parameters in two maps keyed by name, so the last
	// parameter of a name wins within --set and within --set-string.
	for _, forceString := range []bool{false, true} {
		last := map[string]int{}
		for i, p := range opts.Parameters {
			if p.ForceString == forceString {
				last[p.Name] = i
			}
		}
		for i, p := range opts.Parameters {
			if p.ForceString != forceString || last[p.Name] != i {
				continue
			}
			if err := setParameter(base, p.Name, p.Value, forceString); err != nil {
				return nil, nil, failed("failed parsing helm parameter %s: %v", p.Name, err)
			}
		}
	}
	return base, notes, nil
}

// inlineValues is upstream's ValuesYAML: valuesObject when set, else values.
func inlineValues(opts *Helm) ([]byte, error) {
	if len(opts.ValuesObject) > 0 && string(opts.ValuesObject) != "null" {
		return yaml.JSONToYAML(opts.ValuesObject)
	}
	return []byte(opts.Values), nil
}

type valueFile struct {
	name string
	path string // in the repository, "$ref/"-prefixed in a ref source's tree
	data []byte
}

// resolveValueFiles follows upstream's getResolvedValueFiles: a path is
// relative to the app path ("/..." to the repository root) and may not leave
// the repository; "$ref/..." reads the ref source's tree; a glob expands to
// the matching files in lexical order, skipping those listed explicitly; a
// missing file fails unless ignoreMissingValueFiles. Remote URLs are
// refused (render_failed, "remote content is not loaded").
func resolveValueFiles(req Request, t tree, appPath string, opts *Helm) ([]valueFile, *Error) {
	type resolved struct {
		t    tree
		ref  string
		path string
	}
	resolve := func(raw string) (resolved, *Error) {
		if strings.HasPrefix(raw, "$") {
			ref, rest, _ := strings.Cut(raw, "/")
			if refTree, ok := req.RefFiles[strings.TrimPrefix(ref, "$")]; ok {
				p, inside := cleanPath(rest)
				if !inside {
					return resolved{}, failed("value file %s resolved to outside repository root", raw)
				}
				return resolved{t: refTree, ref: ref, path: p}, nil
			}
		}
		p, inside := join(appPath, raw)
		if !inside {
			return resolved{}, failed("value file '%s' resolved to outside repository root", raw)
		}
		return resolved{t: t, path: p}, nil
	}
	if rerr := refuseRemoteValueFiles(opts.ValueFiles); rerr != nil {
		return nil, rerr
	}
	explicit := map[string]bool{}
	for _, raw := range opts.ValueFiles {
		if r, err := resolve(raw); err == nil && !isGlobPath(r.path) {
			explicit[r.ref+"/"+r.path] = true
		}
	}
	var out []valueFile
	seen := map[string]bool{}
	add := func(r resolved, name string) {
		key := r.ref + "/" + r.path
		if !seen[key] {
			seen[key] = true
			out = append(out, valueFile{name: name, path: strings.TrimPrefix(r.ref+"/", "/") + r.path, data: r.t[r.path]})
		}
	}
	for _, raw := range opts.ValueFiles {
		r, rerr := resolve(raw)
		if rerr != nil {
			return nil, rerr
		}
		if isGlobPath(r.path) {
			g, err := glob.Compile(r.path, '/')
			if err != nil {
				return nil, failed("error expanding glob pattern %q: %v", raw, err)
			}
			var matches []string
			for name := range r.t {
				if g.Match(name) {
					matches = append(matches, name)
				}
			}
			sort.Strings(matches)
			if len(matches) == 0 && !opts.IgnoreMissingValueFiles {
				return nil, failed("values file glob %q matched no files", raw)
			}
			for _, m := range matches {
				if !explicit[r.ref+"/"+m] {
					add(resolved{t: r.t, ref: r.ref, path: m}, m)
				}
			}
			continue
		}
		if !r.t.isFile(r.path) {
			if opts.IgnoreMissingValueFiles {
				continue
			}
			return nil, failed("values file %s does not exist", raw)
		}
		add(r, raw)
	}
	return out, nil
}

func isGlobPath(p string) bool { return strings.ContainsAny(p, "*?[") }

// mergeMaps merges b into a, recursing into maps, as Helm's values options do.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bm, ok := bv.(map[string]any); ok {
					out[k] = mergeMaps(bm, vm)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// setParameter applies one parameter with --set (typed) or --set-string
// semantics: name is a dotted path with [i] list indexes and "\." for a
// literal dot; upstream escapes commas in the value (cleanSetParameters in
// util/helm/cmd.go) unless it is a {a,b} list.
func setParameter(base map[string]any, name, value string, forceString bool) error {
	keys, err := parseSetPath(name)
	if err != nil {
		return err
	}
	var v any
	if strings.HasPrefix(value, "{") && strings.HasSuffix(value, "}") {
		var list []any
		inner := value[1 : len(value)-1]
		if inner != "" {
			for _, item := range splitUnescaped(inner, ',') {
				list = append(list, typedValue(item, forceString))
			}
		}
		if list == nil {
			list = []any{}
		}
		v = list
	} else {
		v = typedValue(strings.ReplaceAll(value, `\,`, ","), forceString)
	}
	var cur any = base
	setIn(&cur, keys, v)
	return nil
}

// setKey is one step of a --set path: a map key, or a list index when index >= 0.
type setKey struct {
	name  string
	index int
}

func parseSetPath(name string) ([]setKey, error) {
	var keys []setKey
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			keys = append(keys, setKey{name: b.String(), index: -1})
			b.Reset()
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '\\' && i+1 < len(name):
			i++
			b.WriteByte(name[i])
		case c == '.':
			flush()
		case c == '[':
			flush()
			end := strings.IndexByte(name[i:], ']')
			if end < 0 {
				return nil, errUnclosedIndex
			}
			n, err := strconv.Atoi(name[i+1 : i+end])
			if err != nil || n < 0 {
				return nil, errBadIndex
			}
			keys = append(keys, setKey{index: n})
			i += end
		default:
			b.WriteByte(c)
		}
	}
	flush()
	if len(keys) == 0 || keys[0].index >= 0 {
		return nil, errBadKey
	}
	return keys, nil
}

// setIn stores v at keys below *cur, creating maps and growing lists.
func setIn(cur *any, keys []setKey, v any) {
	if len(keys) == 0 {
		*cur = v
		return
	}
	k := keys[0]
	if k.index >= 0 {
		list, _ := (*cur).([]any)
		for len(list) <= k.index {
			list = append(list, nil)
		}
		elem := list[k.index]
		setIn(&elem, keys[1:], v)
		list[k.index] = elem
		*cur = list
		return
	}
	m, ok := (*cur).(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	elem := m[k.name]
	if len(keys) > 1 && keys[1].index < 0 {
		if _, isMap := elem.(map[string]any); !isMap {
			elem = map[string]any{}
		}
	}
	setIn(&elem, keys[1:], v)
	m[k.name] = elem
	*cur = m
}

// typedValue converts a --set value as Helm does: booleans, null, and
// integers without a leading zero are typed; everything else is a string.
func typedValue(s string, forceString bool) any {
	if forceString {
		return s
	}
	switch {
	case strings.EqualFold(s, "true"):
		return true
	case strings.EqualFold(s, "false"):
		return false
	case strings.EqualFold(s, "null"):
		return nil
	case s == "0":
		return int64(0)
	}
	if s != "" && s[0] != '0' {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

func splitUnescaped(s string, sep byte) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case s[i] == sep:
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	return append(out, b.String())
}

var (
	errUnclosedIndex = errors.New("unclosed [ in parameter name")
	errBadIndex      = errors.New("list index must be a non-negative integer")
	errBadKey        = errors.New("parameter name must start with a key")
)
