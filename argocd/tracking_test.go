package argocd

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestParseTrackingID(t *testing.T) {
	cases := map[string]struct {
		in   string
		want TrackingID
		ok   bool
	}{
		"NamedGroup":    {"web:apps/Deployment:sandbox/web", TrackingID{AppName: "web", Group: "apps", Kind: "Deployment", Namespace: "sandbox", Name: "web"}, true},
		"CoreGroup":     {"web:/Service:sandbox/web", TrackingID{AppName: "web", Kind: "Service", Namespace: "sandbox", Name: "web"}, true},
		"ClusterScoped": {"web:/Namespace:/sandbox", TrackingID{AppName: "web", Kind: "Namespace", Name: "sandbox"}, true},
		"AnyNamespace":  {"team_pay:apps/Deployment:pay/api", TrackingID{AppNamespace: "team", AppName: "pay", Group: "apps", Kind: "Deployment", Namespace: "pay", Name: "api"}, true},
		"NameWithColon": {"a:rbac.authorization.k8s.io/ClusterRole:/system:viewer", TrackingID{AppName: "a", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:viewer"}, true},
		"TooFewParts":   {"web:apps/Deployment", TrackingID{}, false},
		"NoSlashInGK":   {"web:Deployment:ns/web", TrackingID{}, false},
		"ThreePiecesGK": {"web:a/b/c:ns/web", TrackingID{}, false},
		"NoSlashInNN":   {"web:apps/Deployment:web", TrackingID{}, false},
		"EmptyApp":      {":apps/Deployment:ns/web", TrackingID{}, false},
		"SlashInName":   {"web:apps/Deployment:ns/a/b", TrackingID{}, false},
		"Empty":         {"", TrackingID{}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseTrackingID(c.in)
			if ok != c.ok || got != c.want {
				t.Errorf("ParseTrackingID(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestRefersTo(t *testing.T) {
	id, _ := ParseTrackingID("web:apps/Deployment:sandbox/web")
	if !id.RefersTo("apps", "Deployment", "sandbox", "web", true) {
		t.Error("the object itself is not recognised")
	}
	for _, other := range [][4]string{{"apps", "Deployment", "other", "web"}, {"apps", "Deployment", "sandbox", "web-copy"},
		{"", "Deployment", "sandbox", "web"}, {"apps", "StatefulSet", "sandbox", "web"}} {
		if id.RefersTo(other[0], other[1], other[2], other[3], true) {
			t.Errorf("copied annotation counted on %v", other)
		}
	}
	ns, _ := ParseTrackingID("web:/Namespace:anything/sandbox")
	if !ns.RefersTo("", "Namespace", "", "sandbox", false) {
		t.Error("cluster-scoped object: the namespace part must not be compared")
	}
}

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
		if got := Ignores(app, "apps", "Deployment", "ns", c.name, c.changed); got != c.want {
			t.Errorf("Ignores(%v on %s) = %v, want %v", c.changed, c.name, got, c.want)
		}
	}
	app.RespectIgnoreDifferences = true
	if Ignores(app, "apps", "Deployment", "ns", "web", []string{"/spec/replicas"}) != IgnoredAndRespected {
		t.Error("RespectIgnoreDifferences not honoured")
	}
	strongest := []service.Level{service.LevelSelfHeal, service.LevelUnknown, service.LevelAutoSync, service.LevelManual, service.LevelNotReverted}
	for i := 0; i+1 < len(strongest); i++ {
		if !strongest[i].Stronger(strongest[i+1]) || service.Weaker(strongest[i], strongest[i+1]) != strongest[i+1] {
			t.Errorf("%s should be stronger than %s", strongest[i], strongest[i+1])
		}
	}
}

// FuzzParseTrackingID: the parser never panics, and what it accepts
// re-assembles to its input.
func FuzzParseTrackingID(f *testing.F) {
	for _, s := range []string{"web:apps/Deployment:sandbox/web", "a_b:/Service:ns/x", "x:/Namespace:/n", ":::", "a:b/c:d/e:f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := ParseTrackingID(s)
		if !ok {
			return
		}
		app := id.AppName
		if id.AppNamespace != "" || strings.HasPrefix(strings.SplitN(s, ":", 2)[0], "_") {
			app = id.AppNamespace + "_" + id.AppName
		}
		if back := app + ":" + id.Group + "/" + id.Kind + ":" + id.Namespace + "/" + id.Name; back != s {
			t.Fatalf("ParseTrackingID(%q) = %+v, which re-assembles to %q", s, id, back)
		}
	})
}
