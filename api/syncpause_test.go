package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// TestSyncPausePlans drives the stop-sync and resume plans against the
// real API server, whose Application CRD has no automated.enabled in its
// schema: the pause removes spec.syncPolicy.automated and records it; a
// resume needs the pause executed, and refuses when the policy is not what
// the pause left; a limited cluster and an app without automated sync are
// refused.
func TestSyncPausePlans(t *testing.T) {
	a := newArgoAPI(t)
	agent, member := token(t, "alice", "team-a", "agent"), token(t, "alice", "team-a", "member")
	base := "/v1/clusters/prod-eks/argocd/applications/"
	body := json.RawMessage(`{"conversation_id":"c1","visibility":"shared"}`)
	var pause service.Plan
	a.do("POST", base+"sandbox-plain/pause-plan", agent, body, nil).decode(t, &pause)
	var payload struct {
		Pause service.SyncPause `json:"argocd_pause"`
	}
	if err := json.Unmarshal(pause.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	want := `kubectl -n argocd patch applications.argoproj.io sandbox-plain --type json -p '[{"op":"remove","path":"/spec/syncPolicy/automated"}]'`
	if pause.Command != want || pause.Tool != "patch_resource" || payload.Pause.Method != service.PauseByRemoval ||
		string(payload.Pause.Previous) != `{"prune":true,"selfHeal":true}` || pause.Status != service.PlanPending {
		t.Errorf("pause plan: %q %+v", pause.Command, payload.Pause)
	}
	resume := json.RawMessage(`{"pause_plan_id":"` + pause.ID + `","conversation_id":"c1","visibility":"shared"}`)
	a.do("POST", base+"sandbox-plain/resume-plan", agent, resume, nil).wantProblem(t, 409, "pause_not_executed")
	a.do("POST", "/v1/plans/"+pause.ID+"/approve", member, nil, nil)
	a.do("POST", "/v1/plans/"+pause.ID+"/result", agent, json.RawMessage(`{"outcome":"executed","output":"patched"}`), nil)
	// The cluster still holds automated (nothing ran the patch here): not
	// what the pause left, so resuming would overwrite someone's change.
	a.do("POST", base+"sandbox-plain/resume-plan", agent, resume, nil).wantProblem(t, 409, "policy_changed")
	a.do("POST", base+"sandbox-kustomize/resume-plan", agent, resume, nil).wantProblem(t, 422, "validation_failed")
	a.do("POST", base+"billing/pause-plan", agent, body, nil).wantProblem(t, 409, "sync_not_automated")
	a.do("POST", "/v1/clusters/limited-cl/argocd/applications/sandbox-plain/pause-plan", agent, body, nil).
		wantProblem(t, 422, "access_limited")
	a.do("POST", base+"sandbox-plain/pause-plan", member, body, nil).wantProblem(t, 403, "forbidden")
	if strings.Contains(pause.Command, "\n") {
		t.Error("one object, one command line")
	}
	// The card offers the pause where the level reverts the change.
	o := a.ownership(t, "prod-eks", nil, ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"})
	if o.ArgoCD == nil || len(o.ArgoCD.Actions) != 1 || o.ArgoCD.Actions[0] != (service.WarningAction{Kind: "pause_sync", App: "sandbox-plain"}) {
		t.Errorf("actions = %+v", o.ArgoCD)
	}
	if o := a.ownership(t, "prod-eks", nil, ref{"kind": "cm", "namespace": "sandbox-helm", "name": "cache-settings"}); o.ArgoCD == nil || len(o.ArgoCD.Actions) != 0 {
		t.Errorf("a manual app offers no pause: %+v", o.ArgoCD)
	}
}
