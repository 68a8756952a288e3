package api

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

// fidelityFixtures are issue 10's fixture files, on an API server of their
// own (their apps would change what the standard fixtures' tests count),
// written as Argo CD, Helm and server-side apply write objects.
var fidelityFixtures = []k8stest.FixtureFile{
	{Name: "fidelity.yaml"},
	{Name: "fidelity-argocd-controller.yaml", Apply: k8stest.ApplyOptions{FieldManager: "argocd-controller"}},
	{Name: "fidelity-ssa.yaml", Apply: k8stest.ApplyOptions{FieldManager: "argocd-controller", ServerSide: true}},
	{Name: "fidelity-helm.yaml", Apply: k8stest.ApplyOptions{FieldManager: "helm"}},
}

// mustOwnCluster starts an API server for one test and stops it when the test
// ends.
func mustOwnCluster(t *testing.T, opts k8stest.Options) *k8stest.Cluster {
	t.Helper()
	k, err := k8stest.Start(opts)
	if err != nil {
		t.Fatalf("a Kubernetes API server is needed: %v", err)
	}
	t.Cleanup(func() { _ = k.Stop() })
	return k
}

// newAPIOver is the API with a real reader over k, its clusters of
// team-a described by entries (static clusters YAML lines, with %[1]s for
// the admin's kubeconfig and %[2]s for the limited user's).
func newAPIOver(t *testing.T, k *k8stest.Cluster, entries ...string) *argoAPI {
	t.Helper()
	dir := t.TempDir()
	kubeconfigs := make([]any, 0, 2)
	for _, user := range []string{k8stest.UserAdmin, k8stest.UserLimited} {
		b, err := k.Kubeconfig(user)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, user+".kubeconfig")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		kubeconfigs = append(kubeconfigs, path)
	}
	file := filepath.Join(dir, "clusters.yaml")
	yaml := "clusters:\n  - " + fmt.Sprintf(strings.Join(entries, "\n  - "), kubeconfigs...) + "\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	clusters, conn, err := kube.LoadStaticClusters(file)
	if err != nil {
		t.Fatal(err)
	}
	lists := &listCounter{}
	reader, err := kube.NewReader(conn, kube.ReaderOptions{Timeout: 20 * time.Second, Observer: lists})
	if err != nil {
		t.Fatal(err)
	}
	srv, clock := mustServeWith(t, reader, clusters...)
	doc, router := mustSpec(t)
	return &argoAPI{testAPI: &testAPI{t: t, srv: srv, router: router, doc: doc}, lists: lists, clock: clock}
}

// ownershipBy asks who owns target on cluster, for a change made by tool.
func (a *argoAPI) ownershipBy(t *testing.T, cluster, tool string, target ref) service.Ownership {
	t.Helper()
	var o service.Ownership
	res := a.do("POST", "/v1/clusters/"+cluster+"/argocd/ownership", token(t, "alice", "team-a", "agent"),
		map[string]any{"resources": []ref{target}, "tool": tool}, nil)
	if res.status != 200 {
		t.Fatalf("ownership: %d %s", res.status, res.body)
	}
	res.decode(t, &o)
	return o
}

// detailRow is the row of the app's detail for the object, failing the
// test when there is none.
func (a *argoAPI) detailRow(t *testing.T, cluster, appID string, r service.OwnershipResource) service.DetailResource {
	t.Helper()
	var d struct {
		Sources   []service.AppSource      `json:"sources"`
		Resources []service.DetailResource `json:"resources"`
	}
	a.do("GET", "/v1/clusters/"+cluster+"/argocd/applications/"+appID, token(t, "alice", "team-a", "member"), nil, nil).decode(t, &d)
	for _, row := range d.Resources {
		if row.Group == r.Group && row.Kind == r.Kind && row.Namespace == r.Namespace && row.Name == r.Name {
			return row
		}
	}
	t.Fatalf("app %s has no row for %s/%s %s/%s: %+v", appID, r.Group, r.Kind, r.Namespace, r.Name, d.Resources)
	return service.DetailResource{}
}

// fidelityCase is one fixture object and the answer Argo CD's behaviour
// calls for.
type fidelityCase struct {
	name, cluster string
	target        ref
	tool          string // the tool making the change: scale_resource narrows, apply_manifest never
	// app "" means unmanaged, with level as the reason.
	app, basis, level, cause string
	skipped                  string // the expected skipped reason, "" for none
	row                      string // the app id whose detail row must agree ("" when it cannot be read)
}

// fidelityClusters are the fixture server seen five ways: default
// settings (argocd), argocd-alt's and argocd-annot's argocd-cm, a LIMITED
// role, and a user who may not read Applications.
var fidelityClusters = []string{
	"{id: fid, team: team-a, name: fid, kubeconfig: %[1]s, access_level: full}",
	"{id: fid-alt, team: team-a, name: fid-alt, kubeconfig: %[1]s, access_level: full, argocd_namespace: argocd-alt}",
	"{id: fid-annot, team: team-a, name: fid-annot, kubeconfig: %[1]s, access_level: full, argocd_namespace: argocd-annot}",
	"{id: fid-limited, team: team-a, name: fid-limited, kubeconfig: %[2]s, access_level: limited, namespaces: [sandbox-plain]}",
	"{id: fid-forbidden, team: team-a, name: fid-forbidden, kubeconfig: %[2]s, access_level: full}",
}

// fidTarget is a target; changed are its changed fields (none: unknown).
func fidTarget(kind, ns, name string, changed ...string) ref {
	r := ref{"kind": kind, "namespace": ns, "name": name}
	if changed != nil {
		r["changed_fields"] = changed
	}
	return r
}

func fidDeploy(ns, name string, changed ...string) ref {
	return fidTarget("deployment", ns, name, changed...)
}

func fidConfigMap(name string, changed ...string) ref {
	return fidTarget("configmap", "fidelity", name, changed...)
}

var fidelityCases = []fidelityCase{
	// §1: objects Argo CD manages without tracking metadata.
	{name: "CRDListedByApp", cluster: "fid", target: ref{"kind": "customresourcedefinition", "name": "widgets.example.com"},
		app: "platform-crds", basis: "status_resources", level: "self_heal", cause: "policy", row: "platform-crds"},
	{name: "CRDListedNowhere", cluster: "fid", target: ref{"kind": "crd", "name": "gadgets.example.com"}, level: "not_tracked"},
	// §2: label-only objects where Applications cannot be read.
	{name: "LabelWithArgoCDManagerLimited", cluster: "fid-limited", target: fidTarget("cm", "sandbox-plain", "argo-labelled"),
		app: "labelled", basis: "label_unconfirmed", level: "unknown", cause: "policy_unreadable"},
	{name: "LabelWithArgoCDManagerForbidden", cluster: "fid-forbidden", target: fidTarget("cm", "sandbox-plain", "argo-labelled"),
		app: "labelled", basis: "label_unconfirmed", level: "unknown", cause: "policy_unreadable", skipped: "argocd_forbidden"},
	{name: "HelmLabelLimited", cluster: "fid-limited", target: fidTarget("cm", "sandbox-plain", "helm-labelled"), level: "label_not_confirmed"},
	{name: "HelmLabelForbidden", cluster: "fid-forbidden", target: fidTarget("cm", "sandbox-plain", "helm-labelled"),
		level: "label_not_confirmed", skipped: "argocd_forbidden"},
	{name: "ArgoCDLabelNotListed", cluster: "fid", target: fidTarget("cm", "sandbox-plain", "argo-labelled"), level: "label_not_confirmed"},
	// §3: self-heal paused after a failed sync to the current revision.
	{name: "SelfHealPaused", cluster: "fid", target: fidDeploy("fidelity", "heal"),
		app: "heal", basis: "annotation", level: "auto_sync", cause: "self_heal_paused", row: "heal"},
	// §4: fields Git does not set.
	{name: "LastAppliedOmitsReplicas", cluster: "fid", target: fidDeploy("fidelity", "scaled-omit", "/spec/replicas"), tool: "scale_resource",
		app: "narrow", basis: "annotation", level: "not_reverted", cause: "not_in_git"},
	{name: "LastAppliedSetsReplicas", cluster: "fid", target: fidDeploy("fidelity", "scaled-set", "/spec/replicas"), tool: "scale_resource",
		app: "narrow", basis: "annotation", level: "self_heal", cause: "policy"},
	{name: "ServerSideOmitsReplicas", cluster: "fid", target: fidDeploy("fidelity", "ssa-omit", "/spec/replicas"), tool: "scale_resource",
		app: "narrow", basis: "annotation", level: "not_reverted", cause: "not_in_git"},
	{name: "ServerSideSetsReplicas", cluster: "fid", target: fidDeploy("fidelity", "ssa-set", "/spec/replicas"), tool: "scale_resource",
		app: "narrow", basis: "annotation", level: "self_heal", cause: "policy"},
	{name: "PointerThroughList", cluster: "fid", target: fidDeploy("fidelity", "scaled-omit", "/spec/template/spec/containers/1/image"), tool: "scale_resource",
		app: "narrow", basis: "annotation", level: "self_heal", cause: "policy"},
	{name: "ServerSidePointerThroughList", cluster: "fid", target: fidDeploy("fidelity", "ssa-omit", "/spec/template/spec/containers/0/image"), tool: "scale_resource",
		app: "narrow", basis: "annotation", level: "self_heal", cause: "policy"},
	{name: "ApplyManifestNeverNarrowed", cluster: "fid", target: fidDeploy("fidelity", "scaled-omit", "/spec/replicas"), tool: "apply_manifest",
		app: "narrow", basis: "annotation", level: "self_heal", cause: "policy"},
	{name: "NarrowAppRows", cluster: "fid", target: fidDeploy("fidelity", "ssa-omit"),
		app: "narrow", basis: "annotation", level: "self_heal", cause: "policy", row: "narrow"},
	// §5: argocd-cm.
	{name: "InstallationIDMismatch", cluster: "fid-alt", target: fidDeploy("fidelity", "inst-other"), level: "other_installation"},
	{name: "InstallationIDMissing", cluster: "fid-alt", target: fidDeploy("fidelity", "inst-missing"), level: "other_installation"},
	{name: "InstallationIDMatches", cluster: "fid-alt", target: fidDeploy("fidelity", "inst-match"),
		app: "alt-app", basis: "annotation", level: "self_heal", cause: "policy", row: "alt-app"},
	{name: "CustomInstanceLabelKey", cluster: "fid-alt", target: fidConfigMap("custom-label"),
		app: "alt-app", basis: "label", level: "self_heal", cause: "policy", row: "alt-app"},
	{name: "SystemWideDeploymentRule", cluster: "fid-alt", target: fidDeploy("fidelity", "inst-match", "/spec/replicas"), tool: "scale_resource",
		app: "alt-app", basis: "annotation", level: "auto_sync", cause: "ignore_differences"},
	{name: "SystemWideAllRule", cluster: "fid-alt", target: fidConfigMap("custom-label", "/metadata/annotations/note"), tool: "scale_resource",
		app: "alt-app", basis: "label", level: "auto_sync", cause: "ignore_differences"},
	{name: "SystemWideRuleNotCovering", cluster: "fid-alt", target: fidConfigMap("custom-label", "/data/mode"), tool: "scale_resource",
		app: "alt-app", basis: "label", level: "self_heal", cause: "policy"},
	{name: "DefaultLabelKeyIgnored", cluster: "fid-alt", target: fidConfigMap("lone-label"), level: "not_tracked"},
	{name: "AnnotationTrackingLoneLabel", cluster: "fid-annot", target: fidConfigMap("lone-label"), level: "not_tracked"},
	{name: "AnnotationTrackingListed", cluster: "fid-annot", target: fidConfigMap("lone-listed"),
		app: "annot-app", basis: "status_resources", level: "self_heal", cause: "policy", row: "annot-app"},
	{name: "LabelTrackingLoneLabel", cluster: "fid", target: fidConfigMap("lone-label"), level: "label_not_confirmed"},
	// '*' group and kind in an app's ignoreDifferences.
	{name: "StarGroupCoreKind", cluster: "fid", target: fidTarget("service", "fidelity", "glob-svc", "/metadata/labels/tier"),
		tool: "scale_resource", app: "glob-app", basis: "annotation", level: "not_reverted", cause: "ignore_differences"},
	{name: "GlobGroupAndKind", cluster: "fid", target: fidDeploy("fidelity", "glob-web", "/spec/paused"), tool: "scale_resource",
		app: "glob-app", basis: "annotation", level: "not_reverted", cause: "ignore_differences"},
	{name: "GlobNotCovering", cluster: "fid", target: fidDeploy("fidelity", "glob-web", "/spec/template/metadata/labels/tier"), tool: "scale_resource",
		app: "glob-app", basis: "annotation", level: "self_heal", cause: "policy"},
	{name: "GlobAppRows", cluster: "fid", target: fidTarget("svc", "fidelity", "glob-svc"),
		app: "glob-app", basis: "annotation", level: "self_heal", cause: "policy", row: "glob-app"},
	// §6: skip-reconcile, and the detail's special rows.
	{name: "SkipReconcile", cluster: "fid", target: fidDeploy("fidelity", "skipped", "/spec/replicas"), tool: "scale_resource",
		app: "skipped", basis: "annotation", level: "not_reverted", cause: "skip_reconcile"},
	{name: "SkipReconcileRows", cluster: "fid", target: fidDeploy("fidelity", "skipped"),
		app: "skipped", basis: "annotation", level: "not_reverted", cause: "skip_reconcile", row: "skipped"},
	{name: "HookRow", cluster: "fid", target: fidTarget("job", "fidelity", "migrate"),
		app: "rows", basis: "annotation", level: "not_reverted", cause: "policy", row: "rows"},
	// Automated prune with selfHeal deletes it soon: lost as surely as a revert.
	{name: "PruneRow", cluster: "fid", target: fidConfigMap("leftover"),
		app: "rows", basis: "annotation", level: "self_heal", cause: "not_in_git", row: "rows"},
	{name: "RowWithoutHealth", cluster: "fid", target: fidDeploy("fidelity", "rows-web"),
		app: "rows", basis: "annotation", level: "self_heal", cause: "policy", row: "rows"},
}

// TestOwnershipFidelity: for every issue-10 fixture, the ownership answer,
// the plan's payload.argocd and the app detail's row say the same.
func TestOwnershipFidelity(t *testing.T) {
	k := mustOwnCluster(t, k8stest.Options{ArgoCD: true, Extra: fidelityFixtures})
	a := newAPIOver(t, k, fidelityClusters...)
	for _, c := range fidelityCases {
		t.Run(c.name, func(t *testing.T) { a.checkFidelity(t, c) })
	}
	t.Run("DetailRows", func(t *testing.T) {
		var d struct {
			Sources   []service.AppSource      `json:"sources"`
			Resources []service.DetailResource `json:"resources"`
		}
		a.do("GET", "/v1/clusters/fid/argocd/applications/rows", token(t, "alice", "team-a", "member"), nil, nil).decode(t, &d)
		if len(d.Resources) != 3 {
			t.Fatalf("rows = %+v", d.Resources)
		}
		hook, prune, plain := d.Resources[0], d.Resources[1], d.Resources[2]
		if !hook.Hook || hook.Level != service.LevelNotReverted || hook.Health == nil || *hook.Health != "Healthy" {
			t.Errorf("hook row = %+v", hook)
		}
		if !prune.RequiresPruning || !strings.Contains(prune.Reason, "delete") || prune.Health != nil {
			t.Errorf("prune row = %+v (reason %q)", prune, prune.Reason)
		}
		if plain.Health != nil {
			t.Errorf("a row without health reads as %q, want null", *plain.Health)
		}
		a.do("GET", "/v1/clusters/fid/argocd/applications/hydrated", token(t, "alice", "team-a", "member"), nil, nil).decode(t, &d)
		if len(d.Sources) != 1 || d.Sources[0].RepoURL != "https://github.com/example-org/dry.git" || d.Sources[0].Path != "apps/hydrated" {
			t.Errorf("hydrated app's sources = %+v, want its drySource", d.Sources)
		}
	})
	// The same app after a successful sync to the same revision: self-heal
	// is back. Runs last: it changes the fixture.
	t.Run("SelfHealAfterSuccessfulSync", func(t *testing.T) {
		if err := k.ApplyWith(context.Background(), []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: heal, namespace: argocd}
status:
  sync: {status: Synced, revision: 9c0ffee}
  operationState: {phase: Succeeded, message: successfully synced (all tasks run)}
`), k8stest.ApplyOptions{FieldManager: "kukie-test", ServerSide: true}); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(10 * time.Second) // past the snapshot's TTL
		a.checkFidelity(t, fidelityCase{cluster: "fid", target: fidDeploy("fidelity", "heal"),
			app: "heal", basis: "annotation", level: "self_heal", cause: "policy", row: "heal"})
	})
}

// checkFidelity checks one case's ownership answer, then that a plan's
// payload.argocd and, where the app can be read, its detail row agree.
func (a *argoAPI) checkFidelity(t *testing.T, c fidelityCase) {
	t.Helper()
	o := a.ownershipBy(t, c.cluster, c.tool, c.target)
	skipped := ""
	if o.Skipped != nil {
		skipped = string(o.Skipped.Reason)
	}
	if o.Checked != 1 || skipped != c.skipped {
		t.Fatalf("checked %d, skipped %+v, want skipped %q", o.Checked, o.Skipped, c.skipped)
	}
	tool := c.tool
	if tool == "" {
		tool = "scale_resource"
	}
	p := a.createPlan(token(t, "alice", "team-a", "agent"), planFor(c.cluster, tool, c.target))
	payload := service.ArgoCDFromPayload(p.Payload)
	if c.app == "" {
		if o.ArgoCD != nil || len(o.Unmanaged) != 1 || o.Unmanaged[0].Reason != c.level {
			t.Fatalf("argocd = %+v, unmanaged = %+v, want unmanaged %s", o.ArgoCD, o.Unmanaged, c.level)
		}
		if payload != nil {
			t.Errorf("payload.argocd of an unmanaged object: %s", p.Payload)
		}
		return
	}
	if o.ArgoCD == nil || len(o.ArgoCD.Resources) != 1 {
		t.Fatalf("argocd = %+v, unmanaged = %+v", o.ArgoCD, o.Unmanaged)
	}
	r := o.ArgoCD.Resources[0]
	if r.Application != c.app || r.Basis != c.basis || string(r.Level) != c.level || r.LevelCause != c.cause ||
		string(o.ArgoCD.Level) != c.level {
		t.Errorf("resource = %+v (warning level %s), want app %s basis %s level %s cause %s",
			r, o.ArgoCD.Level, c.app, c.basis, c.level, c.cause)
	}
	if strings.Contains(r.Reason, "last-applied-configuration\":") || strings.Contains(r.Reason, "{\"apiVersion") {
		t.Errorf("reason quotes the last-applied-configuration: %q", r.Reason)
	}
	if payload == nil || len(payload.Resources) != 1 {
		t.Fatalf("payload.argocd = %s", p.Payload)
	}
	if got := payload.Resources[0]; got.Level != r.Level || got.LevelCause != r.LevelCause || got.Basis != r.Basis ||
		got.Application != r.Application {
		t.Errorf("payload.argocd resource = %+v, ownership answer = %+v", got, r)
	}
	if c.row == "" {
		return
	}
	if _, changed := c.target["changed_fields"]; changed {
		t.Fatalf("case %s: detail rows have no changed fields; compare them on a target without", c.name)
	}
	if row := a.detailRow(t, c.cluster, c.row, r); row.Level != r.Level || row.LevelCause != r.LevelCause {
		t.Errorf("detail row = %s/%s (%s), ownership answer = %s/%s (%s)",
			row.Level, row.LevelCause, row.Reason, r.Level, r.LevelCause, r.Reason)
	}
}

// TestOwnershipWithoutArgoCD: a cluster without the Application CRD is an
// answer (a note, no skip), remembered for 60 s.
func TestOwnershipWithoutArgoCD(t *testing.T) {
	k := mustOwnCluster(t, k8stest.Options{})
	a := newAPIOver(t, k, "{id: bare, team: team-a, name: bare, kubeconfig: %[1]s, access_level: full}")
	o := a.ownershipBy(t, "bare", "", ref{"kind": "namespace", "name": "sandbox-plain"})
	if o.Skipped != nil || o.Checked != 1 || o.ArgoCD != nil || len(o.Unmanaged) != 1 || o.Unmanaged[0].Reason != "not_tracked" {
		t.Fatalf("untracked object: %+v (skipped %+v)", o, o.Skipped)
	}
	if len(o.Notes) != 1 || o.Notes[0] == "" {
		t.Errorf("notes = %q, want the not-installed note", o.Notes)
	}
	// Only the bare cluster finds no Argo CD: the team's other clusters,
	// looked at as hubs for the annotated object, answer otherwise.
	lists := a.lists.notInstalled.Load()
	// A tracking annotation there names an app of another cluster's Argo CD.
	a.clock.Advance(59 * time.Second)
	o = a.ownershipBy(t, "bare", "", ref{"kind": "namespace", "name": "sandbox-extra"})
	if o.Skipped != nil || o.ArgoCD == nil || o.ArgoCD.Level != service.LevelUnknown ||
		o.ArgoCD.Resources[0].Basis != service.BasisAnnotationUnconfirmed || o.ArgoCD.Resources[0].Application != "sandbox-plain" {
		t.Errorf("annotated object: %+v (skipped %+v)", o.ArgoCD, o.Skipped)
	}
	if n := a.lists.notInstalled.Load(); n != lists {
		t.Errorf("%d LIST calls within 60 s of finding no Argo CD, want none", n-lists)
	}
	a.clock.Advance(time.Second)
	a.ownershipBy(t, "bare", "", ref{"kind": "namespace", "name": "sandbox-plain"})
	if n := a.lists.notInstalled.Load(); n != lists+1 {
		t.Errorf("%d LIST calls after 60 s, want 1", n-lists)
	}
}
