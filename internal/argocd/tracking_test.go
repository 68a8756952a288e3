package argocd

import (
	"strings"
	"testing"
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

// FuzzParseTrackingID: the parser never panics, and what it accepts
// re-assembles to its input.
func FuzzParseTrackingID(f *testing.F) {
	for _, s := range []string{"web:apps/Deployment:sandbox/web", "a_b:/Service:ns/x", "x:/Namespace:/n", ":::", "a:b/c:d/e:f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			return
		}
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
