package api

import (
	"encoding/json"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func planOn(tool, visibility string, resources ...ref) map[string]any {
	return map[string]any{"cluster_id": "prod-eks", "conversation_id": "c1", "visibility": visibility,
		"tool": tool, "command": "kubectl ...", "resources": resources, "payload": map[string]any{}}
}

func TestPlanDetectionAndApproval(t *testing.T) {
	a := newArgoAPI(t)
	agent, member := token(t, "alice", "team-a", "agent"), token(t, "alice", "team-a", "member")
	p := a.createPlan(agent, planOn("scale_resource", "shared",
		ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web", "changed_fields": []string{"/spec/template"}}))
	w := service.ArgoCDFromPayload(p.Payload)
	if w == nil || w.Level != service.LevelSelfHeal || len(w.Resources) != 1 || w.Resources[0].Application != "sandbox-plain" {
		t.Fatalf("payload.argocd = %s", p.Payload)
	}
	if len(p.Resources[0].ChangedFields) != 1 {
		t.Errorf("changed_fields not stored: %+v", p.Resources)
	}
	var approved service.Plan
	a.do("POST", "/v1/plans/"+p.ID+"/approve", member, nil, nil).decode(t, &approved)
	again := service.ArgoCDFromPayload(approved.Payload)
	if again == nil || !again.CheckedAt.After(w.CheckedAt) {
		t.Errorf("approval did not re-detect: %s", approved.Payload)
	}
	if o := approved.ArgoCDOverride; o == nil || o.By != "alice" || o.Level != service.LevelSelfHeal {
		t.Errorf("argocd_override = %+v", approved.ArgoCDOverride)
	}
	// A change of something nobody manages gets no argocd field and no override.
	q := a.createPlan(agent, planOn("apply_manifest", "shared", ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "redis"}))
	if service.ArgoCDFromPayload(q.Payload) != nil {
		t.Errorf("unmanaged change got %s", q.Payload)
	}
	a.do("POST", "/v1/plans/"+q.ID+"/approve", member, nil, nil).decode(t, &approved)
	if approved.ArgoCDOverride != nil {
		t.Errorf("override recorded for an unmanaged change: %+v", approved.ArgoCDOverride)
	}
}

func TestKukieHistory(t *testing.T) {
	a := newArgoAPI(t)
	alice, bob := token(t, "alice", "team-a", "agent"), token(t, "bob", "team-a", "agent")
	// Detected as sandbox-plain's, though not in its status.resources: the app join.
	byApp := a.createPlan(alice, planOn("apply_manifest", "shared", ref{"kind": "ns", "name": "sandbox-extra"}))
	// Not detected (a read tool), but one of sandbox-plain's status.resources:
	// the resource join. Its payload.argocd is malformed.
	body := planOn("describe_resource", "shared", ref{"group": "apps", "kind": "Deployment", "namespace": "sandbox-plain", "name": "web"})
	body["payload"] = json.RawMessage(`{"argocd": {"level": ["x"], "applications": "nope",
		"resources": [1, {"kind": "Deployment"}, {"kind": "Deployment", "name": "web", "level": 5}, null]}}`)
	byResource := a.createPlan(alice, body)
	// A read tool with kubectl's short name: no detection, found through the
	// canonical kind (deploy → apps/deployment) matching status.resources.
	shortName := a.createPlan(alice, planOn("describe_resource", "shared", ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"}))
	private := a.createPlan(bob, planOn("apply_manifest", "private", ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web"}))
	a.createPlan(alice, planOn("apply_manifest", "shared", ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "worker"}))

	history := func(tok, query string) service.History {
		t.Helper()
		var h service.History
		a.do("GET", appsPath+"/sandbox-plain/kukie-history"+query, tok, nil, nil).decode(t, &h)
		return h
	}
	ids := func(h service.History) []string {
		var out []string
		for _, it := range h.Items {
			out = append(out, it.PlanID)
		}
		return out
	}
	h := history(token(t, "alice", "team-a", "member"), "")
	if h.Notice != "Kukie 로 한 변경만 보여요" {
		t.Errorf("notice = %q", h.Notice)
	}
	if got := ids(h); len(got) != 3 || got[0] != shortName.ID || got[1] != byResource.ID || got[2] != byApp.ID {
		t.Fatalf("alice's history = %v, want [%s %s %s] (newest first, without bob's private plan)", got, shortName.ID, byResource.ID, byApp.ID)
	}
	if w := h.Items[1].ArgoCD; w == nil || len(w.Resources) != 1 || w.Resources[0].Name != "web" || w.Level != "" || len(w.Applications) != 0 {
		t.Errorf("malformed argocd read back as %+v", h.Items[1].ArgoCD)
	}
	if got := ids(history(token(t, "bob", "team-a", "member"), "")); len(got) != 4 || got[0] != private.ID {
		t.Errorf("bob's history = %v, want his private plan first", got)
	}
	page := history(token(t, "alice", "team-a", "member"), "?limit=1")
	if len(page.Items) != 1 || page.NextCursor == "" {
		t.Fatalf("page 1 = %+v", page)
	}
	next := history(token(t, "alice", "team-a", "member"), "?limit=2&cursor="+page.NextCursor)
	if len(next.Items) != 2 || next.Items[1].PlanID != byApp.ID || next.NextCursor != "" {
		t.Errorf("page 2 = %+v", next)
	}
	if got := history(token(t, "eve", "team-a", "member"), ""); len(got.Items) != 3 {
		t.Errorf("another member sees %d plans, want the 3 shared ones", len(got.Items))
	}
	a.do("GET", "/v1/clusters/limited-cl/argocd/applications/sandbox-plain/kukie-history", token(t, "alice", "team-a", "member"), nil, nil).
		wantProblem(t, 403, "limited_access")
	a.do("GET", appsPath+"/nope/kukie-history", token(t, "alice", "team-a", "member"), nil, nil).
		wantProblem(t, 404, "app_not_found")
}
