package argocd

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestLevelsAndIgnores(t *testing.T) {
	app := service.Application{Name: "a", AutoSync: true, SelfHeal: true,
		IgnoreDifferences: []service.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
			{Group: "apps", Kind: "Deployment", Name: "other", JSONPointers: []string{"/spec/template"}}}}
	if PolicyLevel(app) != service.LevelSelfHeal {
		t.Error("policy level")
	}
	cases := []struct {
		changed []string
		name    string
		want    IgnoreVerdict
	}{
		{[]string{"/spec/replicas"}, "web", Ignored},
		{[]string{"/spec/replicas/x"}, "web", Ignored},
		{[]string{"/spec/replicasX"}, "web", NotIgnored},
		{[]string{"/spec/replicas", "/spec/template"}, "web", NotIgnored},
		{[]string{"/spec/template/spec"}, "other", Ignored},
		{nil, "web", NotIgnored},
	}
	for _, c := range cases {
		if got, _ := ignores(app.IgnoreDifferences, app.RespectIgnoreDifferences, "apps", "Deployment", "ns", c.name, c.changed); got != c.want {
			t.Errorf("Ignores(%v on %s) = %v, want %v", c.changed, c.name, got, c.want)
		}
	}
	app.RespectIgnoreDifferences = true
	if v, _ := ignores(app.IgnoreDifferences, app.RespectIgnoreDifferences, "apps", "Deployment", "ns", "web", []string{"/spec/replicas"}); v != IgnoredAndRespected {
		t.Error("RespectIgnoreDifferences not honoured")
	}
	strongest := []service.Level{service.LevelSelfHeal, service.LevelUnknown, service.LevelAutoSync, service.LevelManual, service.LevelNotReverted}
	for i := 0; i+1 < len(strongest); i++ {
		if !Stronger(strongest[i], strongest[i+1]) || weaker(strongest[i], strongest[i+1]) != strongest[i+1] {
			t.Errorf("%s should be stronger than %s", strongest[i], strongest[i+1])
		}
	}
	if got := Strongest(service.LevelManual, service.LevelSelfHeal, service.LevelAutoSync); got != service.LevelSelfHeal {
		t.Errorf("Strongest = %s", got)
	}
	if got := Strongest(); got != "" {
		t.Errorf("Strongest() = %q", got)
	}
}

// TestDecideNamesUnevaluatedRules: a jq or managedFields rule that
// applies to the object cannot be evaluated here, and the reason says so;
// one for another object is not mentioned.
func TestDecideNamesUnevaluatedRules(t *testing.T) {
	app := service.Application{Name: "a", AutoSync: true, SelfHeal: true,
		IgnoreDifferences: []service.IgnoreRule{{Group: "apps", Kind: "Deployment", HasUnevaluated: true},
			{Group: "", Kind: "ConfigMap", HasUnevaluated: true, JSONPointers: []string{"/data"}}}}
	level, reason := objectLevel(app, "apps", "Deployment", "ns", "web", []string{"/spec/replicas"}, "tracking annotation")
	if level != service.LevelSelfHeal || !strings.Contains(reason, "could not be evaluated") {
		t.Errorf("deployment: %s, %q", level, reason)
	}
	level, reason = objectLevel(app, "", "Secret", "ns", "s", []string{"/data"}, "tracking annotation")
	if level != service.LevelSelfHeal || strings.Contains(reason, "could not be evaluated") {
		t.Errorf("secret (no rule applies): %s, %q", level, reason)
	}
	level, reason = objectLevel(app, "", "ConfigMap", "ns", "c", []string{"/data/x"}, "tracking annotation")
	if level != service.LevelAutoSync || !strings.Contains(reason, "could not be evaluated") {
		t.Errorf("configmap (pointer covers, jq part unevaluated): %s, %q", level, reason)
	}
}

func TestParsedAppCarriesPolicyLevel(t *testing.T) {
	a, ok := ParseApplication(map[string]any{"metadata": map[string]any{"name": "x", "namespace": "argocd"},
		"spec": map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"selfHeal": true}}}}, "argocd")
	if !ok || a.Level != service.LevelSelfHeal || a.LevelReason != "app x: auto-sync with selfHeal" {
		t.Errorf("parsed level %q reason %q", a.Level, a.LevelReason)
	}
}

// objectLevel is Decide's level and reason without argocd-cm settings or
// the not_in_git narrowing.
func objectLevel(a service.Application, group, kind, namespace, name string, changed []string, how string) (service.Level, string) {
	d := Decide(a, service.ArgoCDSettings{}, Target{Group: group, Kind: kind, Namespace: namespace, Name: name, Changed: changed}, how)
	return d.Level, d.Reason
}
