package service

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
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
	// Parent is the app-of-apps parent paused first (its self-heal would
	// put the child's policy back); Note is the card's text about it.
	Parent *SyncPause `json:"parent,omitempty"`
	Note   string     `json:"note,omitempty"`
	// ApplicationSet generates the app; ApplicationSetRule says the plan
	// adds an ignoreApplicationDifferences rule to it first.
	ApplicationSet     string `json:"applicationset,omitempty"`
	ApplicationSetRule bool   `json:"applicationset_rule,omitempty"`
}

// SyncPlanRequest is the body of the pause-plan and resume-plan routes.
type SyncPlanRequest struct {
	PausePlanID    string     `json:"pause_plan_id,omitempty"`
	ConversationID string     `json:"conversation_id"`
	Visibility     Visibility `json:"visibility"`
	// Lang is the card notes' language (Accept-Language: "en", else Korean).
	Lang string `json:"-"`
}

// SyncPauses builds the Action Plans that stop an app's automated sync
// and put it back: ordinary plans, approved on the card like any other.
type SyncPauses struct {
	ArgoCD  *ArgoCD
	Objects ObjectReader
	Schema  SyncSchema
	Plans   *Plans
	// Detector finds a parent app-of-apps managing the Application (nil:
	// none is looked for).
	Detector OwnershipDetector
}

// PausePlan creates the plan that stops app's automated sync the way the
// installed Argo CD understands. When a parent app-of-apps manages the
// Application with self-heal, the parent is paused first (its self-heal
// would put the child's policy back) and the note names its other
// children, whose specs stop following Git while it is paused.
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
	pause, step, err := pauseStep(ns, name, automated, enabled)
	if err != nil {
		return Plan{}, err
	}
	steps := []syncStep{step}
	parentID, note := s.parent(ctx, p, c, ns, name, in.Lang)
	pause.Note = note
	if parentID != "" {
		_, pns, pname, pautomated, err := s.application(ctx, p, clusterID, parentID)
		if err == nil && pautomated != nil {
			if pp, pstep, err := pauseStep(pns, pname, pautomated, enabled); err == nil {
				pause.Parent = &pp
				steps = []syncStep{pstep, step}
			}
		}
	}
	if setStep, set, note := s.applicationSetStep(ctx, c, ns, name, in.Lang); set != "" {
		pause.ApplicationSet = set
		pause.Note = strings.TrimSpace(note + " " + pause.Note)
		if setStep != nil {
			pause.ApplicationSetRule = true
			steps = append([]syncStep{*setStep}, steps...)
		}
	}
	plan, _, err := s.Plans.Create(ctx, p, syncPlan(clusterID, in, steps, "argocd_pause", pause), "")
	return plan, err
}

// syncStep is one kubectl patch of an Application.
type syncStep struct {
	namespace, name, kind, patch string
	// resource is the kubectl resource ("" for applications.argoproj.io).
	resource string
}

// pauseStep is how one app's automated sync is stopped: enabled false
// where the schema has it, else the policy removed.
func pauseStep(ns, name string, automated json.RawMessage, enabled bool) (SyncPause, syncStep, error) {
	pause := SyncPause{App: name, Namespace: ns, Method: PauseByRemoval, Previous: automated}
	step := syncStep{namespace: ns, name: name, kind: "json", patch: `[{"op":"remove","path":"/spec/syncPolicy/automated"}]`}
	if enabled {
		var prev map[string]any
		if json.Unmarshal(automated, &prev) == nil && prev["enabled"] == false {
			return pause, step, ReasonError(ECONFLICT, ReasonNotAutomated, "The app's automated sync is already off (enabled: false).")
		}
		pause.Method = PauseByEnabled
		step.kind, step.patch = "merge", `{"spec":{"syncPolicy":{"automated":{"enabled":false}}}}`
	}
	return pause, step, nil
}

// ResumePlan creates the plan that puts back exactly what the pause plan
// changed (the child, then its parent): 409 pause_not_executed when it has
// no successful result, 409 policy_changed when a policy was changed since
// in another way.
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
	steps := []syncStep{{namespace: ns, name: name, kind: "json", patch: resumePatch(*pause)}}
	if pp := pause.Parent; pp != nil {
		_, _, _, pautomated, err := s.application(ctx, p, clusterID, s.appID(ctx, p, clusterID, pp.Namespace, pp.App))
		if err != nil {
			return Plan{}, err
		}
		if !stillPaused(*pp, pautomated) {
			return Plan{}, ReasonError(ECONFLICT, ReasonPolicyChanged,
				"The parent app's sync policy was changed since the pause in another way; resuming would overwrite that change.")
		}
		steps = append(steps, syncStep{namespace: pp.Namespace, name: pp.App, kind: "json", patch: resumePatch(*pp)})
	}
	record := map[string]string{"app": name, "namespace": ns, "pause_plan_id": pausePlan.ID}
	if pause.ApplicationSetRule {
		// Last: once the rule is gone the ApplicationSet owns the policy again.
		step, note := s.removeRuleStep(ctx, c, ns, pause.ApplicationSet, name, in.Lang)
		if step != nil {
			steps = append(steps, *step)
		}
		if note != "" {
			record["note"] = note
		}
	}
	plan, _, err := s.Plans.Create(ctx, p, syncPlan(clusterID, in, steps, "argocd_resume", record), "")
	return plan, err
}

// resumePatch puts back the policy a pause changed.
func resumePatch(pause SyncPause) string {
	op := "add"
	if pause.Method == PauseByEnabled {
		op = "replace"
	}
	// The record comes back from jsonb with spaces: the command shows it compact.
	var value bytes.Buffer
	if json.Compact(&value, pause.Previous) != nil {
		value.Reset()
		value.Write(pause.Previous)
	}
	return `[{"op":"` + op + `","path":"/spec/syncPolicy/automated","value":` + value.String() + `}]`
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

// syncPlan is the patch_resource plan of kubectl patches on
// Applications, one command line each in order, with the server's record
// of what it changes.
func syncPlan(clusterID string, in SyncPlanRequest, steps []syncStep, key string, record any) PlanInput {
	var commands []string
	var resources []ResourceRef
	for _, st := range steps {
		resource, ref := "applications.argoproj.io", ResourceRef{Group: "argoproj.io", Kind: "Application", Namespace: st.namespace,
			Name: st.name, ChangedFields: []string{"/spec/syncPolicy/automated"}}
		if st.resource != "" {
			resource, ref = st.resource, ResourceRef{Group: "argoproj.io", Kind: "ApplicationSet", Namespace: st.namespace, Name: st.name,
				ChangedFields: []string{"/spec/ignoreApplicationDifferences"}}
		}
		commands = append(commands, "kubectl -n "+st.namespace+" patch "+resource+" "+st.name+" --type "+st.kind+" -p "+shellQuote(st.patch))
		resources = append(resources, ref)
	}
	return PlanInput{ClusterID: clusterID, ConversationID: in.ConversationID, Visibility: in.Visibility,
		Tool: "patch_resource", Command: strings.Join(commands, "\n"), Payload: json.RawMessage(`{}`),
		Resources: resources, server: map[string]any{key: record}}
}
