package api

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

type ref = map[string]any

func (a *argoAPI) ownership(t *testing.T, cluster string, h header, resources ...ref) service.Ownership {
	t.Helper()
	var o service.Ownership
	res := a.do("POST", "/v1/clusters/"+cluster+"/argocd/ownership", token(t, "alice", "team-a", "agent"),
		map[string]any{"resources": resources}, h)
	if res.status != 200 {
		t.Fatalf("ownership: %d %s", res.status, res.body)
	}
	res.decode(t, &o)
	return o
}

func TestOwnershipPaths(t *testing.T) {
	a := newArgoAPI(t)
	cases := []struct {
		name                 string
		target               ref
		app, tracking, level string // app "" = not managed
	}{
		{"AnnotationNamedGroup", ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"}, "sandbox-plain", "annotation", "self_heal"},
		{"AnnotationCoreGroup", ref{"kind": "svc", "namespace": "sandbox-plain", "name": "web"}, "sandbox-plain", "annotation", "self_heal"},
		{"ClusterScoped", ref{"kind": "namespace", "name": "sandbox-extra"}, "sandbox-plain", "annotation", "self_heal"},
		{"CopiedAnnotation", ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "web-copy"}, "", "", "copied_annotation"},
		{"HelmOnlyLabel", ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "redis"}, "", "", "label_not_confirmed"},
		{"LabelNotListedByApp", ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "sidecar"}, "", "", "label_not_confirmed"},
		{"LabelConfirmedByApp", ref{"kind": "cm", "namespace": "sandbox-helm", "name": "worker-config"}, "sandbox-helm", "label", "auto_sync"},
		{"AppInAnyNamespace", ref{"kind": "deployment", "namespace": "payments", "name": "api"}, "payments", "annotation", "auto_sync"},
		{"HubAndSpoke", ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "edge"}, "remote-app", "annotation", "unknown"},
		{"AutoSyncNoSelfHeal", ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "worker"}, "sandbox-helm", "annotation", "auto_sync"},
		{"EnabledFalse", ref{"kind": "configmap", "namespace": "sandbox-helm", "name": "cache-settings"}, "cache", "annotation", "manual"},
		{"MissingObject", ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "not-yet"}, "", "", "object_not_found"},
		{"NotTracked", ref{"kind": "namespace", "name": "sandbox-plain"}, "", "", "not_tracked"},
		{"IgnoreDiffNotCovered", ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web", "changed_fields": []string{"/spec/replicas", "/spec/template/spec/containers/0/image"}}, "sandbox-plain", "annotation", "self_heal"},
		{"IgnoreDiffCovered", ref{"kind": "deployment", "namespace": "sandbox-kustomize", "name": "api", "changed_fields": []string{"/spec/replicas"}}, "sandbox-kustomize", "annotation", "auto_sync"},
		{"IgnoreDiffRespected", ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web", "changed_fields": []string{"/spec/replicas"}}, "sandbox-plain", "annotation", "not_reverted"},
		{"JQRuleDoesNotCover", ref{"kind": "deployment", "namespace": "sandbox-kustomize", "name": "api", "changed_fields": []string{"/spec/template/spec/containers/0/image"}}, "sandbox-kustomize", "annotation", "self_heal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := a.ownership(t, "prod-eks", nil, c.target)
			if o.Checked != 1 || o.Skipped != nil {
				t.Fatalf("checked %d, skipped %+v", o.Checked, o.Skipped)
			}
			if c.app == "" {
				if o.ArgoCD != nil {
					t.Fatalf("not managed, but argocd = %+v", o.ArgoCD)
				}
				if len(o.Unmanaged) != 1 || o.Unmanaged[0].Reason != c.level {
					t.Errorf("unmanaged = %+v, want reason %s", o.Unmanaged, c.level)
				}
				return
			}
			if o.ArgoCD == nil || len(o.ArgoCD.Resources) != 1 {
				t.Fatalf("argocd = %+v", o.ArgoCD)
			}
			r := o.ArgoCD.Resources[0]
			if r.Application != c.app || r.Tracking != c.tracking || string(r.Level) != c.level || string(o.ArgoCD.Level) != c.level {
				t.Errorf("resource = %+v (level %s), want app %s tracking %s level %s", r, o.ArgoCD.Level, c.app, c.tracking, c.level)
			}
			// The fixture cluster has no argocd-cm: a note says the defaults were assumed.
			if r.Reason == "" || len(o.Notes) != 2 || !strings.Contains(o.Notes[0], "argocd-cm") ||
				!strings.Contains(o.Notes[1], c.app) || o.ArgoCD.Summary != "ArgoCD 관리 리소스 직접 변경" {
				t.Errorf("reason %q notes %v summary %q", r.Reason, o.Notes, o.ArgoCD.Summary)
			}
		})
	}
}

func TestOwnershipStrongestWinsAndApps(t *testing.T) {
	a := newArgoAPI(t)
	o := a.ownership(t, "prod-eks", nil,
		ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "worker"},
		ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web"},
		ref{"kind": "configmap", "namespace": "sandbox-helm", "name": "cache-settings"})
	w := o.ArgoCD
	if w == nil || w.Level != service.LevelSelfHeal || len(w.Resources) != 3 || len(w.Applications) != 3 {
		t.Fatalf("argocd = %+v", w)
	}
	if w.Warning != "곧 ArgoCD가 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요." {
		t.Errorf("warning = %q", w.Warning)
	}
	for _, app := range w.Applications {
		if app.Name == "cache" && (len(app.Paths) != 1 || app.Paths[0] != "values/cache" || app.RepoURL != "https://charts.bitnami.com/bitnami") {
			t.Errorf("multi-source app = %+v", app)
		}
		if app.Name == "sandbox-plain" && (!app.SelfHeal || app.Path != "apps/plain" || app.TargetRevision != "main") {
			t.Errorf("sandbox-plain = %+v", app)
		}
	}
	en := a.ownership(t, "prod-eks", header{"Accept-Language": "en-US,en;q=0.9"},
		ref{"kind": "deployment", "namespace": "sandbox-helm", "name": "worker"})
	if !strings.HasPrefix(en.ArgoCD.Warning, "Argo CD will revert this at the next Git change") {
		t.Errorf("English auto_sync warning = %q", en.ArgoCD.Warning)
	}
}

func TestOwnershipKindSpellings(t *testing.T) {
	a := newArgoAPI(t)
	for _, kind := range []string{"deployment", "deploy", "Deployment", "deployments", "deployments.apps", "deploy.apps"} {
		o := a.ownership(t, "prod-eks", nil, ref{"kind": kind, "namespace": "sandbox-plain", "name": "web"})
		if o.ArgoCD == nil || o.ArgoCD.Resources[0].Kind != "Deployment" || o.ArgoCD.Resources[0].Group != "apps" {
			t.Errorf("kind %q: %+v (skipped %+v)", kind, o.ArgoCD, o.Skipped)
		}
	}
	o := a.ownership(t, "prod-eks", nil, ref{"group": "apps", "kind": "Deployment", "namespace": "sandbox-plain", "name": "web"})
	if o.ArgoCD == nil {
		t.Errorf("group+kind: %+v", o.Skipped)
	}
	o = a.ownership(t, "prod-eks", nil, ref{"kind": "frobnicator", "name": "x"})
	if o.Skipped == nil || o.Skipped.Reason != "kind_unknown" || o.ArgoCD != nil {
		t.Errorf("unknown kind: %+v", o)
	}
}

func TestOwnershipTruncatesAtFive(t *testing.T) {
	a := newArgoAPI(t)
	var targets []ref
	for range 6 {
		targets = append(targets, ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web"})
	}
	o := a.ownership(t, "prod-eks", nil, targets...)
	if o.Checked != 5 || !o.Truncated {
		t.Errorf("checked %d truncated %v", o.Checked, o.Truncated)
	}
}

func TestOwnershipLimitedAndFailingClusters(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // accepts (through the backlog) and never answers
	a := newArgoAPI(t, [2]string{"silent-cl", "https://" + ln.Addr().String()})

	// The limited user's LIST would be refused: none is made (the team's
	// other clusters, looked at as hubs, answer otherwise).
	before := a.lists.forbidden.Load()
	o := a.ownership(t, "limited-cl", nil, ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web"})
	if o.ArgoCD == nil || o.ArgoCD.Level != service.LevelUnknown || o.ArgoCD.Resources[0].Application != "sandbox-plain" {
		t.Errorf("LIMITED cluster: %+v", o.ArgoCD)
	}
	if a.lists.forbidden.Load() != before {
		t.Error("detection on a LIMITED cluster listed Applications")
	}

	// A real 403: the limited user may not read objects outside its
	// namespaces, so the target is skipped, not guessed.
	o = a.ownership(t, "limited-cl", nil, ref{"kind": "deployment", "namespace": "payments", "name": "api"})
	if o.Skipped == nil || o.Skipped.Reason != "argocd_forbidden" || o.ArgoCD != nil || o.Checked != 0 {
		t.Errorf("LIMITED cluster, object outside its namespaces: %+v (skipped %+v)", o, o.Skipped)
	}

	// Nothing answers: whether the per-call timeout or the whole budget runs
	// out first depends on the machine, and both mean the cluster did not
	// answer. (A hang would be caught by the test binary's deadline.)
	o = a.ownership(t, "silent-cl", nil, ref{"kind": "deployment", "namespace": "x", "name": "y"})
	if o.Skipped == nil || o.Skipped.Reason != "cluster_unreachable" || o.ArgoCD != nil {
		t.Errorf("silent cluster: %+v", o)
	}
	o = a.ownership(t, "down-cl", nil, ref{"kind": "deployment", "namespace": "x", "name": "y"})
	if o.Skipped == nil || o.Skipped.Reason != "cluster_unreachable" {
		t.Errorf("closed port: %+v", o.Skipped)
	}
	o = a.ownership(t, "forbidden-cl", nil, ref{"kind": "deployment", "namespace": "sandbox-plain", "name": "web"})
	if o.ArgoCD == nil || o.ArgoCD.Level != service.LevelUnknown || o.Skipped == nil || o.Skipped.Reason != "argocd_forbidden" {
		t.Errorf("user who reads the object but not Applications: %+v skipped %+v", o.ArgoCD, o.Skipped)
	}
	a.do("POST", "/v1/clusters/nope/argocd/ownership", token(t, "alice", "team-a", "agent"),
		map[string]any{"resources": []ref{{"kind": "pod", "name": "x"}}}, nil).wantProblem(t, 404, "cluster_not_found")
	a.do("POST", "/v1/clusters/prod-eks/argocd/ownership", token(t, "alice", "team-a", "agent"),
		map[string]any{"resources": []ref{{"kind": "pod", "name": "x", "changed_fields": []string{"spec"}}}}, nil).
		wantProblem(t, 422, "validation_failed")
}

// TestWarningLanguage: Accept-Language is matched with its q-values;
// Korean, the product's language, when neither is preferred.
func TestWarningLanguage(t *testing.T) {
	for header, want := range map[string]string{
		"":                     "ko",
		"en":                   "en",
		"en-US,en;q=0.9":       "en",
		"ko;q=0.1, en":         "en",
		"ko, en;q=0.5":         "ko",
		"fr-FR, fr;q=0.9":      "ko",
		"fr, en;q=0.3":         "en",
		"de;q=0.9, ko-KR;q=1":  "ko",
		"*":                    "ko",
		"not a ;;; header ===": "ko",
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Language", header)
		if got := warningLanguage(r); got != want {
			t.Errorf("Accept-Language %q: %s, want %s", header, got, want)
		}
	}
}

// TestOwnershipAccessOnLimitedCluster asks the real API server, through
// the limited user's connection (edit and view bound in sandbox-plain only,
// since a bare API server's aggregated roles are empty), whether each
// change would be allowed — before the card: the verb the tool implies,
// a composed sentence when RBAC refuses, nothing on FULL clusters.
func TestOwnershipAccessOnLimitedCluster(t *testing.T) {
	a := newArgoAPI(t)
	ask := func(cluster, tool string, resources ...ref) service.Ownership {
		t.Helper()
		var o service.Ownership
		res := a.do("POST", "/v1/clusters/"+cluster+"/argocd/ownership", token(t, "alice", "team-a", "agent"),
			map[string]any{"tool": tool, "resources": resources}, header{"Accept-Language": "en"})
		if res.status != 200 {
			t.Fatalf("ownership: %d %s", res.status, res.body)
		}
		res.decode(t, &o)
		return o
	}
	o := ask("limited-cl", "scale_resource", ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"},
		ref{"kind": "deploy", "namespace": "payments", "name": "api"}, ref{"kind": "namespace", "name": "sandbox-extra"})
	if len(o.Access) != 3 {
		t.Fatalf("access = %+v", o.Access)
	}
	in, out, cluster := o.Access[0], o.Access[1], o.Access[2]
	if in.Allowed == nil || !*in.Allowed || in.Verb != "patch" || in.Resource != "deployments" || in.Subresource != "scale" || in.Reason != "" {
		t.Errorf("scale in an allowed namespace: %+v", in)
	}
	if out.Allowed == nil || *out.Allowed || !strings.Contains(out.Reason, "namespace payments is outside the allowed namespaces (sandbox-plain)") {
		t.Errorf("outside the allowed namespaces: %+v", out)
	}
	if cluster.Allowed == nil || *cluster.Allowed || cluster.Namespace != "" || !strings.Contains(cluster.Reason, "no cluster-wide rights") {
		t.Errorf("cluster-scoped: %+v", cluster)
	}
	// apply_manifest creates what does not exist, patches what does; delete deletes.
	o = ask("limited-cl", "apply_manifest", ref{"kind": "configmap", "namespace": "sandbox-plain", "name": "new-one"},
		ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"})
	if len(o.Access) != 2 || o.Access[0].Verb != "create" || o.Access[1].Verb != "patch" || o.Access[0].Allowed == nil || !*o.Access[0].Allowed {
		t.Errorf("apply_manifest: %+v", o.Access)
	}
	if o = ask("limited-cl", "delete_resource", ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"}); len(o.Access) != 1 || o.Access[0].Verb != "delete" {
		t.Errorf("delete_resource: %+v", o.Access)
	}
	// FULL clusters carry no access part.
	if o = ask("prod-eks", "scale_resource", ref{"kind": "deploy", "namespace": "sandbox-plain", "name": "web"}); o.Access != nil {
		t.Errorf("FULL cluster: %+v", o.Access)
	}
}

// A plan on a LIMITED cluster stores the per-target access as
// payload.access; a client's own payload.access never stands.
func TestPlanStoresAccessOnLimitedCluster(t *testing.T) {
	a := newArgoAPI(t)
	agent := token(t, "alice", "team-a", "agent")
	body := planOn("scale_resource", "shared", ref{"kind": "deploy", "namespace": "payments", "name": "api"})
	body["cluster_id"] = "limited-cl"
	body["payload"] = map[string]any{"access": []any{map[string]any{"allowed": true}}, "note": "kept"}
	p := a.createPlan(agent, body)
	var payload struct {
		Access []service.TargetAccess `json:"access"`
		Note   string                 `json:"note"`
	}
	if err := json.Unmarshal(p.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	if len(payload.Access) != 1 || payload.Access[0].Allowed == nil || *payload.Access[0].Allowed ||
		payload.Access[0].Subresource != "scale" || payload.Note != "kept" {
		t.Errorf("payload = %s", p.Payload)
	}
	// A read tool (no detection): the client's access is dropped.
	body = planOn("describe_resource", "shared", ref{"kind": "deploy", "namespace": "payments", "name": "api"})
	body["cluster_id"] = "limited-cl"
	body["payload"] = map[string]any{"access": []any{map[string]any{"allowed": true}}}
	if p = a.createPlan(agent, body); strings.Contains(string(p.Payload), "access") {
		t.Errorf("a client's payload.access stood: %s", p.Payload)
	}
}
