package service

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
)

// Reasons of the stop-sync and resume plans.
const (
	ReasonAccessLimited    Reason = "access_limited"     // Kukie may not patch the Application on this LIMITED cluster
	ReasonNotAutomated     Reason = "sync_not_automated" // the app has no automated sync to stop
	ReasonPolicyChanged    Reason = "policy_changed"     // the sync policy changed since the pause in another way
	ReasonPauseNotExecuted Reason = "pause_not_executed" // the pause plan has no successful result
)

// How a pause stops automated sync (SyncPause.Method).
const (
	PauseByEnabled = "enabled" // spec.syncPolicy.automated.enabled: false (Argo CD 3.1 and later)
	PauseByRemoval = "remove"  // spec.syncPolicy.automated removed
)

// SyncSchema tells whether a cluster's Application schema has
// spec.syncPolicy.automated.enabled.
type SyncSchema interface {
	AutomatedEnabled(ctx context.Context, c Cluster) (bool, error)
}

// SyncPause is what a stop-sync plan changes (payload.argocd_pause):
// the app, how, and the exact JSON of spec.syncPolicy.automated before.
type SyncPause struct {
	App       string          `json:"app"`
	Namespace string          `json:"namespace"`
	Method    string          `json:"method"`
	Previous  json.RawMessage `json:"previous,omitempty"`
}

// SyncPlanRequest is the body of the pause-plan and resume-plan routes.
type SyncPlanRequest struct {
	PausePlanID    string     `json:"pause_plan_id,omitempty"`
	ConversationID string     `json:"conversation_id"`
	Visibility     Visibility `json:"visibility"`
}

// SyncPauses builds the Action Plans that stop an app's automated sync
// and put it back: ordinary plans, approved on the card like any other.
type SyncPauses struct {
	ArgoCD  *ArgoCD
	Objects ObjectReader
	Schema  SyncSchema
	Plans   *Plans
}

// PausePlan creates the plan that stops app's automated sync the way the
// installed Argo CD understands.
func (s *SyncPauses) PausePlan(ctx context.Context, p Principal, clusterID, appID string, in SyncPlanRequest) (Plan, error) {
	c, ns, name, automated, err := s.application(ctx, p, clusterID, appID)
	if err != nil {
		return Plan{}, err
	}
	if automated == nil {
		return Plan{}, ReasonError(ECONFLICT, ReasonNotAutomated, "The app has no automated sync to stop.")
	}
	enabled, err := s.Schema.AutomatedEnabled(ctx, c)
	if err != nil {
		return Plan{}, err
	}
	pause := SyncPause{App: name, Namespace: ns, Method: PauseByRemoval, Previous: automated}
	patch := `[{"op":"remove","path":"/spec/syncPolicy/automated"}]`
	kind := "json"
	if enabled {
		var prev map[string]any
		if json.Unmarshal(automated, &prev) == nil && prev["enabled"] == false {
			return Plan{}, ReasonError(ECONFLICT, ReasonNotAutomated, "The app's automated sync is already off (enabled: false).")
		}
		pause.Method, kind, patch = PauseByEnabled, "merge", `{"spec":{"syncPolicy":{"automated":{"enabled":false}}}}`
	}
	plan, _, err := s.Plans.Create(ctx, p, syncPlan(clusterID, in, ns, name, kind, patch, "argocd_pause", pause), "")
	return plan, err
}

// ResumePlan creates the plan that puts back exactly what the pause plan
// changed: 409 pause_not_executed when it has no successful result, 409
// policy_changed when the sync policy was changed since in another way.
func (s *SyncPauses) ResumePlan(ctx context.Context, p Principal, clusterID, appID string, in SyncPlanRequest) (Plan, error) {
	if !validPlanID(in.PausePlanID) {
		return Plan{}, &Error{Code: EVALIDATION, Message: "The request is invalid.",
			Fields: []FieldError{{Field: "pause_plan_id", Message: "must be the id of the pause plan"}}}
	}
	c, ns, name, automated, err := s.application(ctx, p, clusterID, appID)
	if err != nil {
		return Plan{}, err
	}
	pausePlan, err := s.Plans.Get(ctx, p, in.PausePlanID)
	if err != nil {
		return Plan{}, err
	}
	var payload struct {
		Pause *SyncPause `json:"argocd_pause"`
	}
	_ = json.Unmarshal(pausePlan.Payload, &payload)
	pause := payload.Pause
	if pausePlan.ClusterID != c.ID || pause == nil || pause.App != name || pause.Namespace != ns {
		return Plan{}, &Error{Code: EVALIDATION, Message: "The plan is not a pause of this app.",
			Fields: []FieldError{{Field: "pause_plan_id", Message: "must be a pause plan of this app"}}}
	}
	if pausePlan.Status != PlanExecuted {
		return Plan{}, ReasonError(ECONFLICT, ReasonPauseNotExecuted, "The pause plan has not run successfully, so there is nothing to resume.")
	}
	if !stillPaused(*pause, automated) {
		return Plan{}, ReasonError(ECONFLICT, ReasonPolicyChanged,
			"The app's sync policy was changed since the pause in another way; resuming would overwrite that change.")
	}
	op := "add"
	if pause.Method == PauseByEnabled {
		op = "replace"
	}
	patch := `[{"op":"` + op + `","path":"/spec/syncPolicy/automated","value":` + string(pause.Previous) + `}]`
	plan, _, err := s.Plans.Create(ctx, p, syncPlan(clusterID, in, ns, name, "json", patch, "argocd_resume",
		map[string]string{"app": name, "namespace": ns, "pause_plan_id": pausePlan.ID}), "")
	return plan, err
}

// application finds the app (a FULL cluster's snapshot, or a LIMITED
// cluster whose Applications' namespace Kukie may edit) and reads its
// spec.syncPolicy.automated as it is now (nil when absent).
func (s *SyncPauses) application(ctx context.Context, p Principal, clusterID, appID string) (Cluster, string, string, json.RawMessage, error) {
	c, err := s.ArgoCD.Clusters.GetCluster(ctx, p.TeamID, clusterID)
	if err != nil {
		return Cluster{}, "", "", nil, err
	}
	ns, name := c.ArgoCDNamespace, appID
	if c.AccessLevel == AccessLimited {
		if ns == "" || !slices.Contains(c.Namespaces, ns) {
			return Cluster{}, "", "", nil, ReasonError(EVALIDATION, ReasonAccessLimited,
				"Kukie cannot patch this cluster's Applications: they live in namespace "+ns+", outside the namespaces it may change.")
		}
	} else {
		_, snap, err := s.ArgoCD.snapshot(ctx, p, clusterID, false)
		if err != nil {
			return Cluster{}, "", "", nil, err
		}
		app, ok := snap.App(appID)
		if !ok {
			return Cluster{}, "", "", nil, ErrAppNotFound()
		}
		ns, name = app.Namespace, app.Name
	}
	info, err := s.Objects.ReadObject(ctx, c, ResourceRef{Group: "argoproj.io", Kind: "Application", Namespace: ns, Name: name})
	if err != nil {
		return Cluster{}, "", "", nil, err
	}
	if !info.Found {
		return Cluster{}, "", "", nil, ErrAppNotFound()
	}
	v, found := LookupPointer(info.Object, []string{"spec", "syncPolicy", "automated"})
	if !found || v == nil {
		return c, ns, name, nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Cluster{}, "", "", nil, WrapError(EINTERNAL, "encode automated", err)
	}
	return c, ns, name, b, nil
}

// stillPaused reports whether the app's automated policy is what the
// pause left: absent after a removal, the previous one with enabled false.
func stillPaused(pause SyncPause, current json.RawMessage) bool {
	if pause.Method == PauseByRemoval {
		return current == nil
	}
	var prev, now map[string]any
	if json.Unmarshal(pause.Previous, &prev) != nil || json.Unmarshal(current, &now) != nil || prev == nil {
		return false
	}
	prev["enabled"] = false
	return reflect.DeepEqual(prev, now)
}

// syncPlan is the patch_resource plan of one kubectl patch on the
// Application, with the server's record of what it changes.
func syncPlan(clusterID string, in SyncPlanRequest, ns, name, kind, patch, key string, record any) PlanInput {
	command := "kubectl -n " + ns + " patch applications.argoproj.io " + name + " --type " + kind + " -p " + shellQuote(patch)
	return PlanInput{ClusterID: clusterID, ConversationID: in.ConversationID, Visibility: in.Visibility,
		Tool: "patch_resource", Command: command, Payload: json.RawMessage(`{}`),
		Resources: []ResourceRef{{Group: "argoproj.io", Kind: "Application", Namespace: ns, Name: name,
			ChangedFields: []string{"/spec/syncPolicy/automated"}}},
		server: map[string]any{key: record}}
}
