package argocd

import (
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
