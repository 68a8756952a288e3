package argocd

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kukie/gitops-server/service"
)

type specDoc struct {
	project     string
	destination service.AppDestination
	policy      policyDoc
	ignore      []service.IgnoreRule
	source      *service.AppSource // spec.source, when an object
	sources     sourceList         // spec.sources
	// dry is the sourceHydrator's drySource as the app's source, and
	// hydrated its hydrated branch; both nil without a hydrator.
	dry, hydrated *service.AppSource
}

// chosenSources are the app's sources: with spec.sourceHydrator, its
// drySource (where people commit; see pkg/apis/application/v1alpha1/types.go
// SourceHydrator), else spec.sources, else spec.source. Always non-nil.
func (s specDoc) chosenSources() []service.AppSource {
	switch {
	case s.dry != nil:
		return []service.AppSource{*s.dry}
	case s.sources.n > 0:
		return s.sources.sources
	case s.source != nil:
		return []service.AppSource{*s.source}
	}
	return []service.AppSource{}
}

// policyDoc is spec.syncPolicy as far as reverting goes.
type policyDoc struct {
	respect bool // syncOptions holds RespectIgnoreDifferences=true
	// automated is set when spec.syncPolicy.automated is an object, enabled
	// unless its enabled member is anything but true.
	automated, enabled bool
	selfHeal, prune    bool
}

// levels: auto-sync is on when automated is present and enabled is absent
// or true (enabled exists since Argo CD 3.1); selfHeal and prune count only
// with auto-sync on. "automated: {}" is on; null or another type is off.
func (p policyDoc) levels() (autoSync, selfHeal, prune bool) {
	if !p.automated || !p.enabled {
		return false, false, false
	}
	return true, p.selfHeal, p.prune
}

func (d *ApplicationDecoder) spec() specDoc {
	w := &d.w
	var s specDoc
	w.object(func(name []byte) {
		switch string(name) {
		case "project":
			t, _ := w.text()
			s.project = d.in.shared(t)
		case "destination":
			s.destination = d.destination()
		case "syncPolicy":
			s.policy = d.syncPolicy()
		case "ignoreDifferences":
			s.ignore = d.ignoreDifferences()
		case "source":
			s.source = nil
			if src, ok := d.sourceValue(); ok {
				s.source = &src.AppSource
			}
		case "sources":
			s.sources = d.sourceList()
		case "sourceHydrator":
			s.dry, s.hydrated = d.hydrator()
		default:
			w.skip()
		}
	})
	return s
}

func (d *ApplicationDecoder) destination() service.AppDestination {
	w := &d.w
	var out service.AppDestination
	w.object(func(name []byte) {
		switch string(name) {
		case "server":
			t, _ := w.text()
			out.Server = d.in.shared(t)
		case "name":
			t, _ := w.text()
			out.Name = d.in.shared(t)
		case "namespace":
			t, _ := w.text()
			out.Namespace = d.in.shared(t)
		default:
			w.skip()
		}
	})
	return out
}

func (d *ApplicationDecoder) syncPolicy() policyDoc {
	w := &d.w
	var p policyDoc
	w.object(func(name []byte) {
		switch string(name) {
		case "syncOptions":
			p.respect = false
			w.array(func() {
				// Argo CD matches sync options exactly.
				if t, ok := w.text(); ok && string(t) == "RespectIgnoreDifferences=true" {
					p.respect = true
				}
			})
		case "automated":
			p.selfHeal, p.prune = false, false
			p.enabled = true
			p.automated = w.object(func(name []byte) {
				switch string(name) {
				case "enabled":
					p.enabled = w.boolean()
				case "selfHeal":
					p.selfHeal = w.boolean()
				case "prune":
					p.prune = w.boolean()
				default:
					w.skip()
				}
			})
		default:
			w.skip()
		}
	})
	return p
}

// ignoreDifferences reads spec.ignoreDifferences: rules without a kind are
// skipped; nil when there are none.
func (d *ApplicationDecoder) ignoreDifferences() []service.IgnoreRule {
	w := &d.w
	var out []service.IgnoreRule
	w.array(func() {
		var rule service.IgnoreRule
		var jq, managers int
		w.object(func(name []byte) {
			switch string(name) {
			case "group":
				t, _ := w.text()
				rule.Group = d.in.shared(t)
			case "kind":
				t, _ := w.text()
				rule.Kind = d.in.shared(t)
			case "name":
				t, _ := w.text()
				rule.Name = d.in.local(t)
			case "namespace":
				t, _ := w.text()
				rule.Namespace = d.in.shared(t)
			case "jsonPointers":
				rule.JSONPointers = nil
				w.array(func() {
					if t, ok := w.text(); ok {
						rule.JSONPointers = append(rule.JSONPointers, d.in.shared(t))
					}
				})
			case "jqPathExpressions":
				jq = w.count()
			case "managedFieldsManagers":
				managers = w.count()
			default:
				w.skip()
			}
		})
		rule.HasUnevaluated = jq > 0 || managers > 0
		if rule.Kind != "" {
			out = append(out, rule)
		}
	})
	return out
}

// sourceList is a list of source objects: n counts its elements of any
// type (an array of junk still replaces spec.source), sources the objects.
type sourceList struct {
	n       int
	sources []service.AppSource
}

func (d *ApplicationDecoder) sourceList() sourceList {
	w := &d.w
	out := sourceList{sources: []service.AppSource{}}
	w.array(func() {
		out.n++
		if src, ok := d.sourceValue(); ok {
			out.sources = append(out.sources, src.AppSource)
		}
	})
	return out
}

// parsedSource is a source and how many members its object has.
type parsedSource struct {
	service.AppSource
	members int
}

// sourceValue reads the next value as a source; false when it is not an
// object.
func (d *ApplicationDecoder) sourceValue() (parsedSource, bool) {
	w := &d.w
	if w.kind() != '{' {
		w.skip()
		return parsedSource{}, false
	}
	raw := w.value()
	if w.err != nil {
		return parsedSource{}, false
	}
	if src, ok := d.plainSource(raw); ok {
		return src, true
	}
	// The source's text is not what encoding/json writes, or its repoURL
	// changes: build the spec from the map, as the dynamic client's object
	// gave it.
	var m map[string]any
	_ = utiljson.Unmarshal(raw, &m)
	return parsedSource{AppSource: d.internSource(sourceFromMap(m)), members: len(m)}, true
}

// plainSource reads a source object whose text already is its spec: what
// encoding/json.Marshal writes for it (the API server writes objects so),
// with a repoURL that carries no credentials. Spec is then a copy of raw,
// identical to marshalling the object read as a map.
func (d *ApplicationDecoder) plainSource(raw []byte) (parsedSource, bool) {
	if !marshalledText(raw) {
		return parsedSource{}, false
	}
	s := &d.sub
	s.reset(raw)
	var out parsedSource
	ok := true
	var prev []byte
	s.object(func(name []byte) {
		if out.members > 0 && bytes.Compare(prev, name) >= 0 {
			ok = false // not in encoding/json's order, or repeated
		}
		out.members++
		prev = append(prev[:0], name...)
		if s.kind() != '"' {
			// A repoURL of another type becomes "" in the spec.
			plain := s.canonical()
			ok = ok && plain && string(prev) != "repoURL"
			return
		}
		t, _ := s.text()
		switch string(prev) {
		case "repoURL":
			out.RepoURL = d.in.shared(t)
			ok = ok && service.StripRepoCredentials(out.RepoURL) == out.RepoURL
		case "path":
			out.Path = d.in.local(t)
		case "chart":
			out.Chart = d.in.shared(t)
		case "targetRevision":
			out.TargetRevision = d.in.shared(t)
		case "ref":
			out.Ref = d.in.shared(t)
		}
	})
	if !ok || s.err != nil {
		return parsedSource{}, false
	}
	out.Spec = d.in.spec(raw)
	return out, true
}

// canonical reads the next value and reports whether encoding/json would
// write it as it is, given marshalledText: objects' names in its (byte)
// order without repeats, and numbers as int64s (the dynamic client reads
// other numbers as float64s, which may print differently).
func (w *walker) canonical() bool {
	switch w.kind() {
	case '{':
		ok := true
		var prev []byte
		first := true
		w.object(func(name []byte) {
			if !first && bytes.Compare(prev, name) >= 0 {
				ok = false
			}
			first = false
			prev = append(prev[:0], name...)
			ok = w.canonical() && ok
		})
		return ok
	case '[':
		ok := true
		w.array(func() { ok = w.canonical() && ok })
		return ok
	case '0':
		v := w.value()
		_, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil && string(v) != "-0"
	}
	w.skip()
	return true
}

var (
	lineSeparator      = []byte("\u2028")
	paragraphSeparator = []byte("\u2029")
)

// marshalledText reports whether raw's text is as encoding/json.Marshal
// writes it, as far as bytes go: no space between tokens, and strings
// without escapes or the characters Marshal escapes (<, > and & for HTML,
// U+2028, U+2029, invalid UTF-8). Names' order and numbers are left to
// canonical.
func marshalledText(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) ||
		bytes.Contains(raw, lineSeparator) || bytes.Contains(raw, paragraphSeparator) {
		return false
	}
	inString := false
	for _, c := range raw {
		switch {
		case c == '"':
			inString = !inString
		case inString:
			if c == '<' || c == '>' || c == '&' {
				return false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// internSource shares a source's strings and spec with the read's others.
func (d *ApplicationDecoder) internSource(src service.AppSource) service.AppSource {
	src.RepoURL = d.in.shared([]byte(src.RepoURL))
	src.Path = d.in.local([]byte(src.Path))
	src.Chart = d.in.shared([]byte(src.Chart))
	src.TargetRevision = d.in.shared([]byte(src.TargetRevision))
	src.Ref = d.in.shared([]byte(src.Ref))
	if src.Spec != nil {
		src.Spec = d.in.spec(src.Spec)
	}
	return src
}

// hydrator reads spec.sourceHydrator: the drySource as the app's source
// and the hydrated branch (syncSource.targetBranch and path, in the sync
// source's repository or else the dry source's), rendered as a plain
// directory. Both are nil unless sourceHydrator is an object; the dry
// source also needs drySource to be one. Hydrator apps are few, so the dry
// source is read as a map, exactly as before.
func (d *ApplicationDecoder) hydrator() (dry, hydrated *service.AppSource) {
	w := &d.w
	var drySource map[string]any
	var syncRepo, syncPath, syncBranch string
	isObject := w.object(func(name []byte) {
		switch string(name) {
		case "drySource":
			drySource = nil
			if w.kind() == '{' {
				_ = utiljson.Unmarshal(w.value(), &drySource)
			} else {
				w.skip()
			}
		case "syncSource":
			syncRepo, syncPath, syncBranch = "", "", ""
			w.object(func(name []byte) {
				switch string(name) {
				case "repoURL":
					t, _ := w.text()
					syncRepo = string(t)
				case "path":
					t, _ := w.text()
					syncPath = string(t)
				case "targetBranch":
					t, _ := w.text()
					syncBranch = string(t)
				default:
					w.skip()
				}
			})
		default:
			w.skip()
		}
	})
	if !isObject {
		return nil, nil
	}
	if drySource != nil {
		src := d.internSource(sourceFromMap(map[string]any{"repoURL": drySource["repoURL"], "path": drySource["path"],
			"targetRevision": drySource["targetRevision"]}))
		dry = &src
	}
	if syncRepo == "" {
		syncRepo = str(drySource, "repoURL")
	}
	src := d.internSource(sourceFromMap(map[string]any{"repoURL": syncRepo, "path": syncPath, "targetRevision": syncBranch,
		"directory": map[string]any{}}))
	return dry, &src
}
