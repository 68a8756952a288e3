package api

import (
	"strings"
	"testing"
)

// TestPathParameterRules: every path parameter of the surface has an
// identifier rule, and a value breaking it answers the route's own 404
// code before any lookup.
func TestPathParameterRules(t *testing.T) {
	for _, e := range Surface() {
		for part := range strings.SplitSeq(e.Pattern, "/") {
			if strings.HasPrefix(part, "{") {
				if _, ok := paramRules[strings.Trim(part, "{}")]; !ok {
					t.Errorf("%s %s: path parameter %s has no rule in paramRules", e.Method, e.Pattern, part)
				}
			}
		}
	}
	a := newTestAPI(t)
	member := token(t, "alice", "team-a", "member")
	long := strings.Repeat("a", 129)
	cases := []struct {
		path, code string
	}{
		{"/v1/clusters/" + long + "/argocd/applications", "cluster_not_found"},
		{"/v1/clusters/-lead/argocd/applications", "cluster_not_found"},
		{"/v1/clusters/bad%20id/argocd/applications", "cluster_not_found"},
		{"/v1/clusters/bad%00id/argocd/applications", "cluster_not_found"},
		{"/v1/clusters/prod-eks/argocd/applications/Upper", "app_not_found"},
		{"/v1/clusters/prod-eks/argocd/applications/ns_", "app_not_found"},
		{"/v1/clusters/prod-eks/argocd/applications/_name", "app_not_found"},
		{"/v1/clusters/prod-eks/argocd/applications/" + strings.Repeat("a", 64) + "_web", "app_not_found"},
		{"/v1/clusters/prod-eks/argocd/applications/team_a_b", "app_not_found"},
		{"/v1/plans/not-a-uuid", "not_found"},
		{"/v1/plans/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b6", "not_found"},
	}
	for _, c := range cases {
		a.do("GET", c.path, member, nil, nil).wantProblem(t, 404, c.code)
	}
	// Good shapes still reach the lookup: another team's cluster is not found
	// by the lookup, a namespaced app id by the app lookup.
	a.do("GET", "/v1/clusters/no-such.cluster_1/argocd/applications", member, nil, nil).wantProblem(t, 404, "cluster_not_found")
	if !strings.Contains(string(a.do("GET", "/v1/aws/accounts/x", token(t, "carol", "team-a", "admin"), nil, nil).body), "account_not_found") {
		t.Error("a malformed account id is not answered account_not_found")
	}
}

// TestCheckDepth: brackets count only outside strings (escaped quotes
// included); exactly the limit passes.
func TestCheckDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{nest(64), true},
		{nest(65), false},
		{`{"a":"` + strings.Repeat("[", 200) + `"}`, true},
		{`{"a":"\"` + strings.Repeat("{", 200) + `\\"}`, true},
		{`{"a":"\\"}` + nest(70), false},
	} {
		if err := checkDepth([]byte(c.body), 64); (err == nil) != c.ok {
			t.Errorf("checkDepth(%.40q...) = %v, want ok %v", c.body, err, c.ok)
		}
	}
}
