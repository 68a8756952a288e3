package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// planBody is a valid create request.
func planBody(visibility string) map[string]any {
	return map[string]any{
		"cluster_id":      "prod-eks",
		"conversation_id": "conv-42",
		"visibility":      visibility,
		"tool":            "apply_manifest",
		"command":         "kubectl -n web scale deploy api --replicas=3",
		"resources": []map[string]any{
			{"group": "apps", "kind": "Deployment", "namespace": "web", "name": "api"},
		},
		"payload": map[string]any{"argocd": map[string]any{"level": "self_heal", "applications": "not-an-array"},
			"dry_run": map[string]any{"replicas": 3}},
	}
}

// fixture is one team with the people and tokens the tests act as.
type fixture struct {
	agent, member, admin, other, outsider, noRoles string
}

func newFixture(t *testing.T) fixture {
	return fixture{
		agent:    token(t, "alice", "team-a", "agent"),
		member:   token(t, "alice", "team-a", "member"),
		admin:    token(t, "carol", "team-a", "admin"),
		other:    token(t, "bob", "team-a", "member"),
		outsider: token(t, "alice", "team-b", "member", "admin"),
		noRoles:  token(t, "alice", "team-a"),
	}
}

func (a *testAPI) createPlan(tok string, body any) service.Plan {
	a.t.Helper()
	res := a.do("POST", "/v1/plans", tok, body, nil)
	if res.status != http.StatusCreated {
		a.t.Fatalf("create: %d %s", res.status, res.body)
	}
	var p service.Plan
	res.decode(a.t, &p)
	return p
}

func TestPlanCreateAndRead(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	p := a.createPlan(f.agent, planBody("shared"))
	if p.Status != service.PlanPending || p.CreatedBy != "alice" || p.ID == "" {
		t.Fatalf("created plan = %+v", p)
	}
	var payload map[string]any
	if err := json.Unmarshal(p.Payload, &payload); err != nil || payload["dry_run"] == nil {
		t.Errorf("payload not returned as stored: %s", p.Payload)
	}
	// apply_manifest is a mutating tool: the server's detection (here: the
	// cluster cannot be read, nothing found) replaces the client's argocd.
	if _, ok := payload["argocd"]; ok {
		t.Errorf("the client's payload.argocd was kept: %s", p.Payload)
	}
	var got service.Plan
	a.do("GET", "/v1/plans/"+p.ID, f.other, nil, nil).decode(t, &got)
	if got.ID != p.ID || got.Resources[0].Kind != "Deployment" {
		t.Errorf("GET = %+v", got)
	}
	var page service.PlanPage
	a.do("GET", "/v1/plans?kind=deployment&namespace=web&name=api&cluster_id=prod-eks&status=pending&conversation_id=conv-42",
		f.other, nil, nil).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].ID != p.ID {
		t.Errorf("filtered list = %+v", page)
	}
	a.do("GET", "/v1/plans/00000000-0000-7000-8000-000000000000", f.member, nil, nil).wantProblem(t, 404, "not_found")
	a.do("GET", "/v1/plans/not-a-uuid", f.member, nil, nil).wantProblem(t, 404, "not_found")
}

func TestPlanLifecycle(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	result := func(outcome, output string) map[string]any {
		return map[string]any{"outcome": outcome, "output": output}
	}
	// act performs one step on a plan; want is the expected status.
	type step struct {
		action string // approve, reject, executed, failed
		want   int
	}
	act := func(id string, s step) response {
		t.Helper()
		var res response
		switch s.action {
		case "approve", "reject":
			res = a.do("POST", "/v1/plans/"+id+"/"+s.action, f.member, nil, nil)
		default:
			res = a.do("POST", "/v1/plans/"+id+"/result", f.agent, result(s.action, "done: "+s.action), nil)
		}
		if res.status != s.want {
			t.Fatalf("%s on plan: status %d, want %d: %s", s.action, res.status, s.want, res.body)
		}
		if s.want == http.StatusConflict {
			res.wantProblem(t, 409, "conflict")
		}
		return res
	}
	// Every state reached by a legal path, then every action tried on it.
	paths := map[service.PlanStatus][]step{
		service.PlanPending:  nil,
		service.PlanApproved: {{"approve", 200}},
		service.PlanRejected: {{"reject", 200}},
		service.PlanExecuted: {{"approve", 200}, {"executed", 200}},
		service.PlanFailed:   {{"approve", 200}, {"failed", 200}},
	}
	legal := map[service.PlanStatus]map[string]bool{
		service.PlanPending:  {"approve": true, "reject": true},
		service.PlanApproved: {"executed": true, "failed": true},
		service.PlanExecuted: {"executed": true}, // an identical retry
		service.PlanFailed:   {"failed": true},   // an identical retry
	}
	for state, path := range paths {
		for _, action := range []string{"approve", "reject", "executed", "failed"} {
			t.Run(fmt.Sprintf("%s_%s", state, action), func(t *testing.T) {
				p := a.createPlan(f.agent, planBody("shared"))
				for _, s := range path {
					act(p.ID, s)
				}
				want := http.StatusConflict
				if legal[state][action] {
					want = http.StatusOK
				}
				res := act(p.ID, step{action, want})
				var after service.Plan
				a.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &after)
				if want == http.StatusConflict && after.Status != state {
					t.Errorf("a refused %s changed the plan from %s to %s", action, state, after.Status)
				}
				if want == http.StatusOK {
					var got service.Plan
					res.decode(t, &got)
					if got.Status != after.Status {
						t.Errorf("response says %s, stored %s", got.Status, after.Status)
					}
				}
			})
		}
	}

	t.Run("RecordsWhoAndWhen", func(t *testing.T) {
		p := a.createPlan(f.agent, planBody("shared"))
		var approved, done service.Plan
		a.do("POST", "/v1/plans/"+p.ID+"/approve", f.other, nil, nil).decode(t, &approved)
		if approved.ApprovedBy == nil || *approved.ApprovedBy != "bob" || approved.ApprovedAt == nil {
			t.Errorf("approval not recorded: %+v", approved)
		}
		a.do("POST", "/v1/plans/"+p.ID+"/result", f.agent, result("executed", "scaled"), nil).decode(t, &done)
		if done.CompletedBy == nil || *done.CompletedBy != "alice" || done.CompletedAt == nil ||
			done.Output == nil || *done.Output != "scaled" || done.Status != service.PlanExecuted {
			t.Errorf("result not recorded: %+v", done)
		}
		// A retry with a different output after completion is a conflict.
		a.do("POST", "/v1/plans/"+p.ID+"/result", f.agent, result("executed", "other"), nil).wantProblem(t, 409, "conflict")
		// The identical retry answers the stored plan.
		var again service.Plan
		res := a.do("POST", "/v1/plans/"+p.ID+"/result", f.agent, result("executed", "scaled"), nil)
		res.decode(t, &again)
		if res.status != 200 || !again.CompletedAt.Equal(*done.CompletedAt) {
			t.Errorf("identical retry: %d, completed_at %v then %v", res.status, done.CompletedAt, again.CompletedAt)
		}
	})

	t.Run("OutputTruncated", func(t *testing.T) {
		p := a.createPlan(f.agent, planBody("shared"))
		act(p.ID, step{"approve", 200})
		long := strings.Repeat("가", service.MaxOutputBytes) // 3 bytes each: 3x the cap
		var done service.Plan
		a.do("POST", "/v1/plans/"+p.ID+"/result", f.agent, result("failed", long), nil).decode(t, &done)
		if !done.OutputTruncated || done.Output == nil || len(*done.Output) > service.MaxOutputBytes ||
			!strings.HasPrefix(long, *done.Output) || len(*done.Output) < service.MaxOutputBytes-3 {
			t.Errorf("output not truncated at a character boundary: truncated=%v len=%d", done.OutputTruncated, len(*done.Output))
		}
		// Retrying the same long output is still the identical result.
		res := a.do("POST", "/v1/plans/"+p.ID+"/result", f.agent, result("failed", long), nil)
		if res.status != 200 {
			t.Errorf("identical retry of a truncated result: %d %s", res.status, res.body)
		}
	})
}

func TestIdempotentCreate(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	key := header{"Idempotency-Key": "retry-7f3a"}
	first := a.do("POST", "/v1/plans", f.agent, planBody("shared"), key)
	second := a.do("POST", "/v1/plans", f.agent, planBody("shared"), key)
	var p1, p2 service.Plan
	first.decode(t, &p1)
	second.decode(t, &p2)
	if first.status != 201 || second.status != 201 || p1.ID != p2.ID {
		t.Fatalf("retry made a second plan: %d %s / %d %s", first.status, p1.ID, second.status, p2.ID)
	}
	if second.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("Idempotent-Replayed headers: first %q, second %q",
			first.header.Get("Idempotent-Replayed"), second.header.Get("Idempotent-Replayed"))
	}
	changed := planBody("shared")
	changed["command"] = "kubectl delete ns web"
	a.do("POST", "/v1/plans", f.agent, changed, key).wantProblem(t, 409, "conflict")

	// Another user's agent may use the same key for its own plan.
	var p3 service.Plan
	a.do("POST", "/v1/plans", token(t, "bob", "team-a", "agent"), planBody("shared"), key).decode(t, &p3)
	if p3.ID == p1.ID {
		t.Error("an idempotency key leaked across users")
	}
	var page service.PlanPage
	a.do("GET", "/v1/plans", f.member, nil, nil).decode(t, &page)
	if len(page.Items) != 2 {
		t.Errorf("%d plans stored, want 2", len(page.Items))
	}
	a.do("POST", "/v1/plans", f.agent, planBody("shared"), header{"Idempotency-Key": "bad key with spaces"}).
		wantProblem(t, 422, "validation_failed")
}

func TestPlanVisibility(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	private := a.createPlan(f.agent, planBody("private"))
	shared := a.createPlan(f.agent, planBody("shared"))

	a.do("GET", "/v1/plans/"+private.ID, f.member, nil, nil).decode(t, &service.Plan{})
	for name, tok := range map[string]string{"OtherMember": f.other, "Admin": f.admin} {
		t.Run(name, func(t *testing.T) {
			a.do("GET", "/v1/plans/"+private.ID, tok, nil, nil).wantProblem(t, 404, "not_found")
			a.do("POST", "/v1/plans/"+private.ID+"/approve", tok, nil, nil).wantProblem(t, 404, "not_found")
			a.do("POST", "/v1/plans/"+private.ID+"/reject", tok, nil, nil).wantProblem(t, 404, "not_found")
			var page service.PlanPage
			a.do("GET", "/v1/plans", tok, nil, nil).decode(t, &page)
			if len(page.Items) != 1 || page.Items[0].ID != shared.ID {
				t.Errorf("list shows %d plans, want only the shared one", len(page.Items))
			}
		})
	}
	var page service.PlanPage
	a.do("GET", "/v1/plans", f.member, nil, nil).decode(t, &page)
	if len(page.Items) != 2 {
		t.Errorf("the creator sees %d plans, want 2", len(page.Items))
	}
	a.do("POST", "/v1/plans/"+private.ID+"/approve", f.member, nil, nil).decode(t, &service.Plan{})
}

func TestOtherTeamSeesNothing(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	p := a.createPlan(f.agent, planBody("shared"))
	outsiderAgent := token(t, "alice", "team-b", "agent")
	for _, r := range []struct{ method, path, tok string }{
		{"GET", "/v1/plans/" + p.ID, f.outsider},
		{"POST", "/v1/plans/" + p.ID + "/approve", f.outsider},
		{"POST", "/v1/plans/" + p.ID + "/reject", f.outsider},
		{"POST", "/v1/plans/" + p.ID + "/result", outsiderAgent},
	} {
		t.Run(r.method+" "+strings.ReplaceAll(r.path, p.ID, "{id}"), func(t *testing.T) {
			var body any
			if strings.HasSuffix(r.path, "/result") {
				body = map[string]any{"outcome": "executed"}
			}
			a.do(r.method, r.path, r.tok, body, nil).wantProblem(t, 404, "not_found")
		})
	}
	var page service.PlanPage
	a.do("GET", "/v1/plans", f.outsider, nil, nil).decode(t, &page)
	if len(page.Items) != 0 {
		t.Errorf("another team lists %d plans", len(page.Items))
	}
	var after service.Plan
	a.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &after)
	if after.Status != service.PlanPending {
		t.Errorf("another team changed the plan to %s", after.Status)
	}
}

func TestRoleTable(t *testing.T) {
	a := newTestAPI(t)
	f := newFixture(t)
	p := a.createPlan(f.agent, planBody("shared"))
	agentAndMember := token(t, "alice", "team-a", "agent", "member", "admin")
	forbidden := []struct {
		name, method, path, tok string
		body                    any
	}{
		{"AgentApproves", "POST", "/v1/plans/" + p.ID + "/approve", f.agent, nil},
		{"AgentWithMemberApproves", "POST", "/v1/plans/" + p.ID + "/approve", agentAndMember, nil},
		{"AgentRejects", "POST", "/v1/plans/" + p.ID + "/reject", f.agent, nil},
		{"AgentWithMemberRejects", "POST", "/v1/plans/" + p.ID + "/reject", agentAndMember, nil},
		{"MemberCreates", "POST", "/v1/plans", f.member, planBody("shared")},
		{"AdminCreates", "POST", "/v1/plans", f.admin, planBody("shared")},
		{"MemberRecordsResult", "POST", "/v1/plans/" + p.ID + "/result", f.member, map[string]any{"outcome": "executed"}},
		{"NoRolesApproves", "POST", "/v1/plans/" + p.ID + "/approve", f.noRoles, nil},
	}
	for _, c := range forbidden {
		t.Run(c.name, func(t *testing.T) {
			a.do(c.method, c.path, c.tok, c.body, nil).wantProblem(t, 403, "forbidden")
		})
	}
	// Reads need no particular role.
	for _, tok := range []string{f.noRoles, f.agent} {
		if res := a.do("GET", "/v1/plans/"+p.ID, tok, nil, nil); res.status != 200 {
			t.Errorf("GET with roles: %d", res.status)
		}
	}
	var after service.Plan
	a.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &after)
	if after.Status != service.PlanPending {
		t.Errorf("a forbidden call changed the plan to %s", after.Status)
	}

	// Only the agent acting for the plan's creator records its result.
	a.do("POST", "/v1/plans/"+p.ID+"/approve", f.other, nil, nil).decode(t, &after)
	bobsAgent := token(t, "bob", "team-a", "agent")
	a.do("POST", "/v1/plans/"+p.ID+"/result", bobsAgent, map[string]any{"outcome": "executed"}, nil).
		wantProblem(t, 403, "forbidden")
	a.do("GET", "/v1/plans/"+p.ID, f.member, nil, nil).decode(t, &after)
	if after.Status != service.PlanApproved {
		t.Errorf("another user's agent recorded a result: %s", after.Status)
	}
}
