package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// TestPlanChangesStored checks planned values (issue 22): they are stored
// with the plan's resources and read back compacted; a value the masker
// would mask (a Secret's data) is dropped at input, its field kept as
// changed, and appears nowhere in the answer or the stored plan.
func TestPlanChangesStored(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	const secret = "c3VwZXItc2VjcmV0LWRiLXBhc3N3b3Jk"
	body := planBody("shared")
	body["resources"] = []map[string]any{
		{"group": "apps", "kind": "Deployment", "namespace": "web", "name": "api",
			"changes": []map[string]any{{"field": "/spec/replicas", "value": 3},
				{"field": "/spec/template/spec/containers/0/image", "value": "nginx:1.28"}}},
		{"kind": "Secret", "namespace": "web", "name": "db", "changed_fields": []string{"/metadata/labels/x"},
			"changes": []map[string]any{{"field": "/data/password", "value": secret}}},
	}
	res := a.do("POST", "/v1/plans", f.agent, body, nil)
	if res.status != 201 || strings.Contains(string(res.body), secret) {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	var p service.Plan
	res.decode(t, &p)
	got := a.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil)
	if strings.Contains(string(got.body), secret) {
		t.Fatalf("the masked planned value is stored: %s", got.body)
	}
	got.decode(t, &p)
	if len(p.Resources) != 2 {
		t.Fatalf("resources %+v", p.Resources)
	}
	deploy, sec := p.Resources[0], p.Resources[1]
	if len(deploy.Changes) != 2 || deploy.Changes[0].Field != "/spec/replicas" || string(deploy.Changes[0].Value) != "3" ||
		string(deploy.Changes[1].Value) != `"nginx:1.28"` {
		t.Errorf("deployment changes %s", mustJSON(t, deploy.Changes))
	}
	if len(sec.Changes) != 0 || !slices.Equal(sec.ChangedFields, []string{"/metadata/labels/x", "/data/password"}) {
		t.Errorf("secret: changes %s, changed_fields %v; want none, and the field kept as changed", mustJSON(t, sec.Changes), sec.ChangedFields)
	}
	// Approval takes no body: its re-detection reads them from the store.
	a.do("POST", "/v1/plans/"+p.ID+"/approve", f.member, nil, nil).decode(t, &p)
	if len(p.Resources[0].Changes) != 2 {
		t.Errorf("changes after approval %s", mustJSON(t, p.Resources[0].Changes))
	}
}

// TestPlanChangesRefused checks the validation of planned values.
func TestPlanChangesRefused(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	for name, c := range map[string]struct {
		changes any
		field   string
	}{
		"NotAPointer":    {[]map[string]any{{"field": "spec/replicas", "value": 3}}, "resources[0].changes[0].field"},
		"NoValue":        {[]map[string]any{{"field": "/spec/replicas"}}, "resources[0].changes[0].value"},
		"SameFieldTwice": {[]map[string]any{{"field": "/spec/replicas", "value": 3}, {"field": "/spec/replicas", "value": 4}}, "resources[0].changes[1].field"},
		"TooLarge":       {[]map[string]any{{"field": "/data/x", "value": strings.Repeat("x", 5000)}}, "resources[0].changes[0].value"},
	} {
		t.Run(name, func(t *testing.T) {
			body := planBody("shared")
			body["resources"] = []map[string]any{{"kind": "ConfigMap", "name": "x", "changes": c.changes}}
			p := a.do("POST", "/v1/plans", f.agent, body, nil).wantProblem(t, 422, "validation_failed")
			if !strings.Contains(mustJSON(t, p), c.field) {
				t.Errorf("problem %s does not name %s", mustJSON(t, p), c.field)
			}
		})
	}
}

// TestOwnershipChangesCount checks that a field named only in changes
// counts as changed: web's replicas are in its app's ignoreDifferences
// (RespectIgnoreDifferences=true), so scaling it is not reverted.
func TestOwnershipChangesCount(t *testing.T) {
	a := newArgoAPI(t)
	o := a.ownership(t, "prod-eks", nil, ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web",
		"changes": []map[string]any{{"field": "/spec/replicas", "value": 3}}})
	if o.ArgoCD == nil || o.ArgoCD.Level != service.LevelNotReverted {
		t.Fatalf("argocd = %s; want not_reverted", mustJSON(t, o.ArgoCD))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOwnershipFieldPreviews checks each changed field's live and planned
// values on the real API server's web Deployment: replicas and image read
// from the cluster, a field that does not exist has no live value, a field
// named without a value has no planned one.
func TestOwnershipFieldPreviews(t *testing.T) {
	a := newArgoAPI(t)
	o := a.ownership(t, "prod-eks", nil, ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web",
		"changed_fields": []string{"/spec/paused"},
		"changes": []map[string]any{{"field": "/spec/replicas", "value": 3},
			{"field": "/spec/template/spec/containers/0/image", "value": "nginx:1.28"}}})
	if o.ArgoCD == nil || len(o.ArgoCD.Resources) != 1 {
		t.Fatalf("argocd = %s", mustJSON(t, o.ArgoCD))
	}
	got := mustJSON(t, o.ArgoCD.Resources[0].Fields)
	want := `[{"field":"/spec/paused"},{"field":"/spec/replicas","live":1,"planned":3},` +
		`{"field":"/spec/template/spec/containers/0/image","live":"nginx:1.27","planned":"nginx:1.28"}]`
	if got != want {
		t.Errorf("fields\n got %s\nwant %s", got, want)
	}
}
