package argocd

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestRuleApplies(t *testing.T) {
	cases := map[string]struct {
		rule                         service.IgnoreRule
		group, kind, namespace, name string
		want                         bool
	}{
		"Exact":                     {service.IgnoreRule{Group: "apps", Kind: "Deployment"}, "apps", "Deployment", "ns", "web", true},
		"OtherKind":                 {service.IgnoreRule{Group: "apps", Kind: "Deployment"}, "apps", "StatefulSet", "ns", "web", false},
		"StarGroupStarKind":         {service.IgnoreRule{Group: "*", Kind: "*"}, "apps", "Deployment", "ns", "web", true},
		"StarGroupMatchesCoreGroup": {service.IgnoreRule{Group: "*", Kind: "Service"}, "", "Service", "ns", "web", true},
		"EmptyGroupIsCoreOnly":      {service.IgnoreRule{Kind: "Deployment"}, "apps", "Deployment", "ns", "web", false},
		"EmptyGroupMatchesCore":     {service.IgnoreRule{Kind: "ConfigMap"}, "", "ConfigMap", "ns", "c", true},
		"SuffixGlob":                {service.IgnoreRule{Group: "*.k8s.io", Kind: "*Webhook*"}, "admissionregistration.k8s.io", "MutatingWebhookConfiguration", "", "w", true},
		"QuestionMark":              {service.IgnoreRule{Group: "app?", Kind: "Deployment"}, "apps", "Deployment", "ns", "web", true},
		"Alternatives":              {service.IgnoreRule{Group: "{apps,batch}", Kind: "*"}, "batch", "Job", "ns", "j", true},
		"CharClass":                 {service.IgnoreRule{Group: "", Kind: "[CS]ecret"}, "", "Secret", "ns", "s", true},
		"GlobIsWholeText":           {service.IgnoreRule{Group: "app", Kind: "*"}, "apps", "Deployment", "ns", "web", false},
		"Malformed":                 {service.IgnoreRule{Group: "[", Kind: "*"}, "[", "Deployment", "ns", "web", false},
		"NameExact":                 {service.IgnoreRule{Group: "*", Kind: "*", Name: "web"}, "apps", "Deployment", "ns", "web", true},
		"NameIsNotAGlob":            {service.IgnoreRule{Group: "*", Kind: "*", Name: "w*"}, "apps", "Deployment", "ns", "web", false},
		"NamespaceExact":            {service.IgnoreRule{Group: "*", Kind: "*", Namespace: "ns"}, "apps", "Deployment", "ns", "web", true},
		"NamespaceOther":            {service.IgnoreRule{Group: "*", Kind: "*", Namespace: "other"}, "apps", "Deployment", "ns", "web", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := RuleApplies(c.rule, c.group, c.kind, c.namespace, c.name); got != c.want {
				t.Errorf("RuleApplies = %v, want %v", got, c.want)
			}
		})
	}
}

func TestIgnoresWithGlobRules(t *testing.T) {
	app := service.Application{Name: "a", IgnoreDifferences: []service.IgnoreRule{
		{Group: "*", Kind: "*", JSONPointers: []string{"/metadata/labels"}}}}
	if v, _ := ignores(app.IgnoreDifferences, app.RespectIgnoreDifferences, "apps", "Deployment", "ns", "web", []string{"/metadata/labels/team"}); v != Ignored {
		t.Errorf("'*' rule: %v", v)
	}
}

// FuzzGlobMatch: no pattern panics or stalls, a pattern without glob
// syntax matches only itself, "*" matches everything, and a pattern past
// the bounds matches nothing.
func FuzzGlobMatch(f *testing.F) {
	for _, p := range []string{"*", "", "apps", "[", "{a,b", "\\", "a[!b]c", "*.k8s.io", "[]", "{}", "?*?"} {
		f.Add(p, "apps")
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern)+len(text) > maxFuzzInput {
			return
		}
		got := globMatch(pattern, text)
		if pattern == "*" && !got {
			t.Fatalf("* did not match %q", text)
		}
		literal := !strings.ContainsAny(pattern, `*?[]{}\!`)
		if literal && got != (pattern == text) {
			t.Fatalf("literal %q matched %q: %v", pattern, text, got)
		}
		if !literal && got && pattern != "*" && (len(pattern) > maxGlobPatternBytes || globChoices(pattern) > maxGlobChoices || len(text) > maxGlobText) {
			t.Fatalf("%q, past the bounds, matched %q", pattern, text)
		}
	})
}
