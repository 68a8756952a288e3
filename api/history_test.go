package api

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
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
	// Only the server writes payload.argocd: a client's (here malformed)
	// is dropped on a plan detection does not run on.
	if w := h.Items[1].ArgoCD; w != nil {
		t.Errorf("a client's payload.argocd stood: %+v", w)
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
	// An app that is not in the cluster still has a (here empty) history.
	if h := a.history(t, "prod-eks", "nope"); !h.Partial || len(h.Items) != 0 {
		t.Errorf("unknown app: %+v", h)
	}
}

// planFor is a plan on cluster touching resources.
func planFor(cluster, tool string, resources ...ref) map[string]any {
	p := planOn(tool, "shared", resources...)
	p["cluster_id"] = cluster
	return p
}

func (a *argoAPI) history(t *testing.T, cluster, appID string) service.History {
	t.Helper()
	var h service.History
	a.do("GET", "/v1/clusters/"+cluster+"/argocd/applications/"+appID+"/kukie-history",
		token(t, "alice", "team-a", "member"), nil, nil).decode(t, &h)
	return h
}

// TestKukieHistoryWhenTheAppCannotBeRead: history is database data, so a
// dead cluster, a forbidden read or a deleted app answer 200 from the
// stored app join, marked partial with the reason.
func TestKukieHistoryWhenTheAppCannotBeRead(t *testing.T) {
	a := newArgoAPI(t)
	agent := token(t, "alice", "team-a", "agent")
	// forbidden-cl's user reads the object but not Applications: detection
	// stores the app the annotation names.
	forbidden := a.createPlan(agent, planFor("forbidden-cl", "apply_manifest",
		ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web"}))
	// edge's annotation names remote-app, which is not in the cluster (deleted,
	// or Argo CD runs elsewhere).
	remote := a.createPlan(agent, planFor("prod-eks", "apply_manifest",
		ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "edge"}))

	cases := []struct {
		name, cluster, app string
		reason             service.Reason
		want               []string
	}{
		{"ArgoCDForbidden", "forbidden-cl", "sandbox-plain", "argocd_forbidden", []string{forbidden.ID}},
		{"AppDeleted", "prod-eks", "remote-app", "app_not_found", []string{remote.ID}},
		{"ClusterUnreachable", "down-cl", "sandbox-plain", "cluster_unreachable", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := a.history(t, c.cluster, c.app)
			if !h.Partial || h.PartialReason == nil || *h.PartialReason != c.reason {
				t.Fatalf("partial %v reason %v, want %s", h.Partial, h.PartialReason, c.reason)
			}
			var got []string
			for _, it := range h.Items {
				got = append(got, it.PlanID)
				if len(it.OutOfSyncResources) != 0 || it.ConversationID != "c1" {
					t.Errorf("item %s: out_of_sync %v conversation %q", it.PlanID, it.OutOfSyncResources, it.ConversationID)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("items %v, want %v", got, c.want)
			}
		})
	}
	// A readable app is not partial; LIMITED and foreign clusters keep their problems.
	if h := a.history(t, "prod-eks", "sandbox-plain"); h.Partial || h.PartialReason != nil {
		t.Errorf("readable app answered partial: %+v", h)
	}
	member := token(t, "alice", "team-a", "member")
	a.do("GET", "/v1/clusters/limited-cl/argocd/applications/sandbox-plain/kukie-history", member, nil, nil).
		wantProblem(t, 403, "limited_access")
	a.do("GET", "/v1/clusters/down-cl/argocd/applications/sandbox-plain/kukie-history", token(t, "eve", "team-b", "member"), nil, nil).
		wantProblem(t, 404, "cluster_not_found")
}

// TestKukieHistoryOutOfSyncNow: each item says which of its resources the
// app reports OutOfSync now, and carries its conversation.
func TestKukieHistoryOutOfSyncNow(t *testing.T) {
	a := newArgoAPI(t)
	agent := token(t, "alice", "team-a", "agent")
	body := planFor("prod-eks", "scale_resource", ref{"kind": "deploy", "namespace": "sandbox-helm", "name": "worker"},
		ref{"kind": "svc", "namespace": "sandbox-helm", "name": "worker"})
	body["conversation_id"] = "conv-42"
	p := a.createPlan(agent, body)
	h := a.history(t, "prod-eks", "sandbox-helm")
	if len(h.Items) != 1 || h.Items[0].PlanID != p.ID || h.Items[0].ConversationID != "conv-42" {
		t.Fatalf("history = %+v", h.Items)
	}
	want := []service.ObjectRef{{Group: "apps", Kind: "Deployment", Namespace: "sandbox-helm", Name: "worker"}}
	if got := h.Items[0].OutOfSyncResources; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("out_of_sync_resources = %+v, want %+v (the Service is Synced)", got, want)
	}
}

// TestHistoryAndPlanLimits: both lists answer a malformed limit with 400
// and an out-of-range one with 422 naming limit.
func TestHistoryAndPlanLimits(t *testing.T) {
	a := newArgoAPI(t)
	member := token(t, "alice", "team-a", "member")
	for _, path := range []string{"/v1/plans", appsPath + "/sandbox-plain/kukie-history"} {
		a.do("GET", path+"?limit=ten", member, nil, nil).wantProblem(t, 400, "invalid_request")
		for _, bad := range []string{"0", "-1", "201"} {
			p := a.do("GET", path+"?limit="+bad, member, nil, nil).wantProblem(t, 422, "validation_failed")
			if len(p.Errors) != 1 || p.Errors[0].Field != "limit" {
				t.Errorf("%s?limit=%s: errors %+v", path, bad, p.Errors)
			}
		}
		if res := a.do("GET", path+"?limit=200", member, nil, nil); res.status != 200 {
			t.Errorf("%s?limit=200: %d", path, res.status)
		}
	}
}

// flakyObjects is the real reader whose object reads fail while failing is set.
type flakyObjects struct {
	*kube.Reader
	failing atomic.Bool
}

func (f *flakyObjects) ReadObject(ctx context.Context, c service.Cluster, ref service.ResourceRef) (service.ObjectInfo, error) {
	if f.failing.Load() {
		return service.ObjectInfo{}, service.ReasonError(service.EUPSTREAM, "cluster_unreachable", "The cluster cannot be reached.")
	}
	return f.Reader.ReadObject(ctx, c, ref)
}

// mustApplyApp creates an Application in argocd and a ConfigMap in
// sandbox-plain annotated as its resource (not listed in its status, so
// only the detected-app join can find plans on it); both are removed when
// the test ends.
func mustApplyApp(t *testing.T, k *k8stest.Cluster, app string, selfHeal bool) {
	t.Helper()
	ctx := context.Background()
	if err := k.Apply(ctx, []byte(fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %[1]s, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/example-org/kukie-gitops-sandbox.git", path: apps/%[1]s, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: sandbox-plain}
  syncPolicy: {automated: {selfHeal: %[2]v}}
`, app, selfHeal))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), "Application", "argocd", app) })
}

func mustApplyConfigMap(t *testing.T, k *k8stest.Cluster, name, app string) {
	t.Helper()
	if err := k.Apply(context.Background(), []byte(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s
  namespace: sandbox-plain
  annotations: {argocd.argoproj.io/tracking-id: "%[2]s:/ConfigMap:sandbox-plain/%[1]s"}
data: {k: v}
`, name, app))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), "ConfigMap", "sandbox-plain", name) })
}

// TestApprovalRecheckJoinsHistory: detection skipped when the plan was
// made, and complete at approval, puts the plan into the app's history.
func TestApprovalRecheckJoinsHistory(t *testing.T) {
	k := mustSandbox(t)
	mustApplyApp(t, k, "recheck-app", true)
	mustApplyConfigMap(t, k, "recheck-cm", "recheck-app")
	var flaky *flakyObjects
	a := newArgoAPIWith(t, func(r *kube.Reader) service.ApplicationReader {
		flaky = &flakyObjects{Reader: r}
		return flaky
	})
	flaky.failing.Store(true)
	p := a.createPlan(token(t, "alice", "team-a", "agent"), planOn("apply_manifest", "shared",
		ref{"kind": "configmap", "namespace": "sandbox-plain", "name": "recheck-cm"}))
	if service.ArgoCDFromPayload(p.Payload) != nil {
		t.Fatalf("detection could not read the object, yet: %s", p.Payload)
	}
	if h := a.history(t, "prod-eks", "recheck-app"); len(h.Items) != 0 {
		t.Fatalf("history before approval = %+v", h.Items)
	}
	flaky.failing.Store(false)
	var approved service.Plan
	a.do("POST", "/v1/plans/"+p.ID+"/approve", token(t, "bob", "team-a", "member"), nil, nil).decode(t, &approved)
	if w := service.ArgoCDFromPayload(approved.Payload); w == nil || w.Level != service.LevelSelfHeal || w.RecheckSkipped != nil {
		t.Fatalf("approval's recheck: %s", approved.Payload)
	}
	if h := a.history(t, "prod-eks", "recheck-app"); len(h.Items) != 1 || h.Items[0].PlanID != p.ID {
		t.Errorf("history after approval = %+v, want the plan", h.Items)
	}
}

// TestApprovalRecheckReadsAfresh: a user who pauses self-heal as the
// warning advises and approves gets the new level, not the cached one —
// as soon as the refresh floor allows a new read.
func TestApprovalRecheckReadsAfresh(t *testing.T) {
	k := mustSandbox(t)
	mustApplyApp(t, k, "pausable", true)
	mustApplyConfigMap(t, k, "pausable-cm", "pausable")
	a := newArgoAPI(t)
	p := a.createPlan(token(t, "alice", "team-a", "agent"), planOn("apply_manifest", "shared",
		ref{"kind": "configmap", "namespace": "sandbox-plain", "name": "pausable-cm"}))
	if w := service.ArgoCDFromPayload(p.Payload); w == nil || w.Level != service.LevelSelfHeal {
		t.Fatalf("payload.argocd = %s", p.Payload)
	}
	// The user turns self-heal off (here: the app is replaced without it).
	if err := k.Delete(context.Background(), "Application", "argocd", "pausable"); err != nil {
		t.Fatal(err)
	}
	mustApplyApp(t, k, "pausable", false)
	a.clock.Advance(2 * time.Second) // the refresh floor; the 10 s TTL has not run out
	var approved service.Plan
	a.do("POST", "/v1/plans/"+p.ID+"/approve", token(t, "bob", "team-a", "member"), nil, nil).decode(t, &approved)
	w := service.ArgoCDFromPayload(approved.Payload)
	if w == nil || w.Level != service.LevelAutoSync || w.RecheckSkipped != nil {
		t.Errorf("recheck after pausing self-heal: %s", approved.Payload)
	}
	if o := approved.ArgoCDOverride; o == nil || o.Level != service.LevelAutoSync {
		t.Errorf("argocd_override = %+v", approved.ArgoCDOverride)
	}
}
