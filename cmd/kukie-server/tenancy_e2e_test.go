package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/api"
	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

// teamToken is a token of user in team with roles, signed as the server
// expects (mutate adjusts the claims, for the broken tokens).
func teamToken(t *testing.T, team string, mutate func(*authtest.Claims), roles ...string) string {
	t.Helper()
	c := authtest.Claims{Sub: team + "-user", Team: team, Roles: roles}
	if mutate != nil {
		mutate(&c)
	}
	return authtest.MustHS256(t, []byte(e2eSecret), c)
}

// tenancyCase says how team B's request to a route is built and what it
// must get: object-scoped routes name team A's objects and get the
// route's 404; collections answer 2xx with B's own data only; creates that
// name A's objects are refused with a 4xx.
type tenancyCase struct {
	kind  string // "object", "collection" or "create"
	query string
	body  string
	code  string // the 404's problem code, for object-scoped routes and creates answering 404
}

// TestTenancyMatrix walks every route of api.Surface against the real
// server (team A's cluster, AWS account, plan and connected repo exist):
// team B, with whichever role each route asks for, never reaches or sees
// A's data; and every route that needs a token refuses missing, expired,
// foreign-key, alg:none and exp-less tokens. A route the table below does
// not classify fails the test.
func TestTenancyMatrix(t *testing.T) {
	const region = "ap-northeast-2"
	f := awsfake.Start(t, awsfake.WithRegion(region))
	f.Setenv(t)
	repo := gittest.NewRepo(t)
	repo.Commit(t, map[string]string{"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"}, "first")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{})
	k, kubeconfig := startArgoCluster(t)
	// Both teams have a cluster "prod" (ids are per team); only A has "a-only".
	clusters := clustersFile(t, kubeconfig, [3]string{"a-only", "team-a", "a-only"}, [3]string{"prod", "team-a", "prod-a"},
		[3]string{"prod", "team-b", "prod-b"})
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE": clusters, "KUKIE_AWS_REGION": region,
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
	})

	// Team A's data.
	aAdmin, aAgent := teamToken(t, "team-a", nil, "admin"), teamToken(t, "team-a", nil, "agent")
	mustCall := func(method, path, tok, body string, want int) string {
		t.Helper()
		status, out := call(t, method, s.public+path, tok, body)
		if status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, out, want)
		}
		return out
	}
	var onboarding struct {
		ExternalID string `json:"external_id"`
	}
	decodeJSON(t, mustCall("GET", "/v1/aws/onboarding", aAdmin, "", 200), &onboarding)
	role := "arn:aws:iam::777788889999:role/kukie/kukie-access"
	stack := "arn:aws:cloudformation:" + region + ":777788889999:stack/kukie-access/0a1b2c3d"
	f.AddStack(awsfake.Stack{ARN: stack, Parameters: map[string]string{"AccessLevel": "FULL", "AllowedNamespaces": "sandbox-*"},
		Outputs: map[string]string{"KukieTemplateVersion": "5"}})
	f.AddRole(awsfake.Role{ARN: role, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: onboarding.ExternalID},
		Level: awsfake.LevelFull, AllowedNamespaces: []string{"sandbox-*"}, StackARN: stack})
	var account struct{ ID string }
	decodeJSON(t, mustCall("POST", "/v1/aws/accounts", aAdmin, fmt.Sprintf(`{"role_arn":%q,"stack_arn":%q}`, role, stack), 201), &account)
	mustCall("PUT", "/v1/clusters/a-only/gitops-repo", aAdmin, fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.URL), 200)
	var plan struct{ ID string }
	decodeJSON(t, mustCall("POST", "/v1/plans", aAgent, strings.ReplaceAll(planJSON, `"c1"`, `"a-only"`), 201), &plan)
	// Nothing of these may reach team B.
	aData := []string{"a-only", "team-a", "prod-a", account.ID, plan.ID, role, stack, git.URL, onboarding.ExternalID}

	cases := map[string]tenancyCase{
		"GET /v1/team":                                                             {kind: "collection"},
		"GET /v1/clusters":                                                         {kind: "collection"},
		"POST /v1/clusters":                                                        {kind: "create", code: "account_not_found", body: fmt.Sprintf(`{"account_id":%q,"region":%q,"name":"x","namespaces":["web"]}`, account.ID, region)},
		"GET /v1/clusters/{cluster_id}":                                            {kind: "object", code: "cluster_not_found"},
		"DELETE /v1/clusters/{cluster_id}":                                         {kind: "object", code: "cluster_not_found"},
		"POST /v1/clusters/{cluster_id}/access/reconcile":                          {kind: "object", code: "cluster_not_found"},
		"POST /v1/clusters/{cluster_id}/access/can-i":                              {kind: "object", code: "cluster_not_found", body: `{"verb":"get","resource":"pods","namespace":"web"}`},
		"PUT /v1/clusters/{cluster_id}/gitops-repo":                                {kind: "object", code: "cluster_not_found", body: fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.URL)},
		"GET /v1/clusters/{cluster_id}/gitops-repo/tree":                           {kind: "object", code: "cluster_not_found"},
		"GET /v1/clusters/{cluster_id}/gitops-repo/file":                           {kind: "object", code: "cluster_not_found", query: "?path=apps/web/deploy.yaml"},
		"GET /v1/aws/onboarding":                                                   {kind: "collection"},
		"POST /v1/aws/accounts":                                                    {kind: "create", body: fmt.Sprintf(`{"role_arn":%q,"stack_arn":%q}`, role, stack)},
		"GET /v1/aws/accounts":                                                     {kind: "collection"},
		"GET /v1/aws/accounts/{account_id}":                                        {kind: "object", code: "account_not_found"},
		"DELETE /v1/aws/accounts/{account_id}":                                     {kind: "object", code: "account_not_found"},
		"PUT /v1/aws/accounts/{account_id}/access-level":                           {kind: "object", code: "account_not_found", body: `{"access_level":"limited"}`},
		"GET /v1/aws/accounts/{account_id}/access-changes":                         {kind: "object", code: "account_not_found"},
		"GET /v1/argocd/clusters":                                                  {kind: "collection"},
		"GET /v1/clusters/{cluster_id}/argocd/applications":                        {kind: "object", code: "cluster_not_found"},
		"GET /v1/clusters/{cluster_id}/argocd/applications/{app_id}":               {kind: "object", code: "cluster_not_found"},
		"GET /v1/clusters/{cluster_id}/argocd/applications/{app_id}/kukie-history": {kind: "object", code: "cluster_not_found"},
		"POST /v1/clusters/{cluster_id}/argocd/ownership":                          {kind: "object", code: "cluster_not_found", body: `{"resources":[{"kind":"ConfigMap","namespace":"web","name":"cfg"}]}`},
		"GET /v1/clusters/{cluster_id}/argocd/applications/{app_id}/manifests":     {kind: "object", code: "cluster_not_found"},
		"POST /v1/clusters/{cluster_id}/argocd/applications/{app_id}/pause-plan":   {kind: "object", code: "cluster_not_found", body: `{"conversation_id":"c1","visibility":"shared"}`},
		"POST /v1/clusters/{cluster_id}/argocd/applications/{app_id}/resume-plan":  {kind: "object", code: "cluster_not_found", body: fmt.Sprintf(`{"pause_plan_id":%q,"conversation_id":"c1","visibility":"shared"}`, plan.ID)},
		"POST /v1/tools/repo_tree":                                                 {kind: "create", code: "cluster_not_found", body: `{"cluster_id":"a-only"}`},
		"POST /v1/tools/repo_file":                                                 {kind: "create", code: "cluster_not_found", body: `{"cluster_id":"a-only","path":"apps/web/deploy.yaml"}`},
		"POST /v1/tools/app_manifests":                                             {kind: "create", code: "cluster_not_found", body: `{"cluster_id":"a-only","app_id":"sandbox-plain"}`},
		"POST /v1/plans":                                                           {kind: "create", code: "cluster_not_found", body: strings.ReplaceAll(planJSON, `"c1"`, `"a-only"`)},
		"GET /v1/plans":                                                            {kind: "collection"},
		"GET /v1/plans/{id}":                                                       {kind: "object", code: "not_found"},
		"GET /v1/plans/{id}/git-change":                                            {kind: "object", code: "not_found"},
		"POST /v1/tools/git_change":                                                {kind: "create", code: "not_found", body: fmt.Sprintf(`{"cluster_id":"a-only","plan_id":%q}`, plan.ID)},
		"POST /v1/plans/{id}/approve":                                              {kind: "object", code: "not_found"},
		"POST /v1/plans/{id}/reject":                                               {kind: "object", code: "not_found"},
		"POST /v1/plans/{id}/result":                                               {kind: "object", code: "not_found", body: `{"outcome":"executed","output":"ok"}`},
	}
	params := strings.NewReplacer("{cluster_id}", "a-only", "{account_id}", account.ID, "{id}", plan.ID, "{app_id}", "sandbox-plain")
	// B tokens: one per role, so each route's role check passes and the
	// tenancy check is what answers.
	bToken := func(e api.Endpoint) string {
		role := "member"
		for _, r := range e.Roles {
			switch r {
			case service.RoleAgent:
				role = "agent"
			case service.RoleAdmin:
				if role != "agent" {
					role = "admin"
				}
			}
		}
		if len(e.Roles) > 0 && !containsRole(e.Roles, service.RoleMember) && role == "member" {
			t.Fatalf("%s %s: no B token for roles %v", e.Method, e.Pattern, e.Roles)
		}
		return teamToken(t, "team-b", nil, role)
	}
	seen := map[string]bool{}
	for _, e := range api.Surface() {
		if e.Public {
			continue // the documentation and the SNS webhook (authenticated by signature)
		}
		key := e.Method + " " + e.Pattern
		seen[key] = true
		c, ok := cases[key]
		if !ok {
			t.Errorf("route %s is not in the tenancy matrix: classify it", key)
			continue
		}
		t.Run(strings.ReplaceAll(key, "/", "_"), func(t *testing.T) {
			path := params.Replace(e.Pattern) + c.query
			status, body := call(t, e.Method, s.public+path, bToken(e), c.body)
			for _, secret := range aData {
				if secret != "" && strings.Contains(body, secret) {
					t.Errorf("team B's answer holds team A's %q: %d %.300s", secret, status, body)
				}
			}
			switch c.kind {
			case "object":
				if status != 404 || problemCode(body) != c.code {
					t.Errorf("%d %.300s, want 404 %s", status, body, c.code)
				}
			case "collection":
				if status/100 != 2 {
					t.Errorf("%d %.300s, want 2xx", status, body)
				}
			case "create":
				if status/100 != 4 || (c.code != "" && (status != 404 || problemCode(body) != c.code)) {
					t.Errorf("%d %.300s, want 4xx %s", status, body, c.code)
				}
			}
		})
	}
	for key := range cases {
		if !seen[key] {
			t.Errorf("the matrix lists %s, which is not a route", key)
		}
	}

	// Ownership detection reads a Secret applied with kubectl: its
	// last-applied-configuration holds the value, which must reach no
	// answer (and no log line: startServer's check knows the value).
	secret := planted[len(planted)-1]
	if err := k.Apply(t.Context(), []byte(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: default
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"default"},"stringData":{"password":%q}}'
stringData: {password: %q}
`, secret, secret))); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/clusters/a-only/argocd/ownership", "/v1/clusters/prod/argocd/ownership"} {
		status, body := call(t, "POST", s.public+path, teamToken(t, "team-a", nil, "member"),
			`{"resources":[{"kind":"Secret","namespace":"default","name":"db"}]}`)
		if status != 200 || strings.Contains(body, secret) {
			t.Errorf("ownership of a Secret: %d %.300s (must answer without its values)", status, body)
		}
	}

	// B sees its own: its cluster "prod" (not A's of the same id).
	_, body := call(t, "GET", s.public+"/v1/clusters", teamToken(t, "team-b", nil, "member"), "")
	if !strings.Contains(body, "prod-b") {
		t.Errorf("team B's cluster list lacks its own cluster: %.300s", body)
	}

	// Broken tokens on every route that needs one.
	other := authtest.MustHS256(t, []byte("another-key-another-key-another-key!!"), authtest.Claims{Sub: "x", Team: "team-a", Roles: []string{"admin"}})
	broken := map[string]string{
		"none":     "",
		"expired":  teamToken(t, "team-a", func(c *authtest.Claims) { c.Exp = time.Now().Add(-time.Hour) }, "admin"),
		"otherKey": other,
		"algNone":  authtest.Unsigned(t, authtest.Claims{Sub: "x", Team: "team-a", Roles: []string{"admin"}}),
		"noExp":    teamToken(t, "team-a", func(c *authtest.Claims) { c.NoExp = true }, "admin"),
	}
	for _, e := range api.Surface() {
		if e.Public {
			continue
		}
		c := cases[e.Method+" "+e.Pattern]
		for name, tok := range broken {
			status, body := call(t, e.Method, s.public+params.Replace(e.Pattern)+c.query, tok, c.body)
			if status != 401 || problemCode(body) != "unauthenticated" {
				t.Errorf("%s %s with a %s token: %d %.200s, want 401 unauthenticated", e.Method, e.Pattern, name, status, body)
			}
		}
	}
}

func containsRole(roles []service.Role, r service.Role) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// problemCode is the code of a problem document ("" for anything else).
func problemCode(body string) string {
	var p struct{ Code string }
	_ = json.Unmarshal([]byte(body), &p)
	return p.Code
}
