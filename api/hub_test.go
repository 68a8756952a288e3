package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

// hubRuns numbers the runs of TestHubAndSpoke in this process.
var hubRuns atomic.Int64

// hubSecretToken is the bearer token in the hub's cluster secret: it must
// never leave the hub.
const hubSecretToken = "hub-secret-bearer-token-7f3a"

// TestHubAndSpoke runs hub-and-spoke Argo CD on two real API servers: the
// spoke (the shared sandbox, whose Application CRD has no
// automated.enabled) holds objects whose tracking annotations name apps
// that live in the hub (its own API server, whose CRD lists
// automated.enabled, as Argo CD 3.1 does). One app names the spoke by
// server (in another spelling), one by a cluster secret's name. Team A has
// both clusters; team B has the spoke only and must see nothing of the
// hub; team C has the hub three times, of which one detection reads at most
// two cold.
func TestHubAndSpoke(t *testing.T) {
	spoke := mustSandbox(t)
	hub, err := k8stest.Start(k8stest.Options{ArgoCD: true, AutomatedEnabled: true})
	if err != nil {
		t.Fatalf("a Kubernetes API server is needed: %v", err)
	}
	t.Cleanup(func() { _ = hub.Stop() })
	spokeServer := strings.ToUpper(spoke.Host()) + "/"
	// A namespace of this run's own: the sandbox outlives one run (-count).
	ns := fmt.Sprintf("hub-spoke-%d", hubRuns.Add(1))
	if err := spoke.Apply(t.Context(), []byte(strings.ReplaceAll(hubSpokeObjects, "hub-spoke", ns))); err != nil {
		t.Fatal(err)
	}
	secret := fmt.Sprintf(hubObjects, spokeServer, b64("spoke-by-name"), b64(spoke.Host()),
		b64(`{"bearerToken":"`+hubSecretToken+`"}`))
	if err := hub.Apply(t.Context(), []byte(secret)); err != nil {
		t.Fatal(err)
	}
	a := argoAPIFromFile(t, func(r *kube.Reader) service.ApplicationReader { return r }, hubClustersFile(t, spoke, hub))
	web := ref{"kind": "ConfigMap", "namespace": ns, "name": "web-config"}
	api := ref{"kind": "ConfigMap", "namespace": ns, "name": "api-config"}

	o := a.ownershipAs(t, "team-a", "spoke", web, api)
	if o.ArgoCD == nil || len(o.ArgoCD.Resources) != 2 {
		t.Fatalf("team A: %+v", o)
	}
	byName := map[string]service.OwnershipResource{}
	for _, r := range o.ArgoCD.Resources {
		byName[r.Name] = r
	}
	if r := byName["web-config"]; r.Level != service.LevelSelfHeal || r.Basis != service.BasisAnnotation ||
		!slices.Equal(r.HubClusterIDs, []string{"hub"}) || r.Application != "hub-web" {
		t.Errorf("by server: %+v", r)
	}
	if r := byName["api-config"]; r.Level != service.LevelAutoSync || !slices.Equal(r.HubClusterIDs, []string{"hub"}) {
		t.Errorf("by cluster secret name: %+v", r)
	}
	if !slices.Equal(o.ArgoCD.Actions, []service.WarningAction{{Kind: "pause_sync", App: "hub-web", ClusterID: "hub"},
		{Kind: "pause_sync", App: "hub-api", ClusterID: "hub"}}) {
		t.Errorf("actions = %+v", o.ArgoCD.Actions)
	}

	// Team B registered the spoke only: the hub is not its to read.
	o = a.ownershipAs(t, "team-b", "spoke", web)
	if o.ArgoCD == nil || o.ArgoCD.Resources[0].Level != service.LevelUnknown || o.ArgoCD.Resources[0].HubClusterIDs != nil ||
		o.ArgoCD.Resources[0].Basis != service.BasisAnnotationUnconfirmed {
		t.Errorf("team B sees the hub: %+v", o.ArgoCD)
	}

	// Team C: three hubs, all cold; one detection reads two of them.
	o = a.ownershipAs(t, "team-c", "spoke", web)
	if r := o.ArgoCD.Resources[0]; !slices.Equal(r.HubClusterIDs, []string{"hub-1", "hub-2"}) || !strings.Contains(r.Reason, "hub-3") {
		t.Errorf("cold hubs: %+v", r)
	}
	o = a.ownershipAs(t, "team-c", "spoke", web)
	if r := o.ArgoCD.Resources[0]; !slices.Equal(r.HubClusterIDs, []string{"hub-1", "hub-2", "hub-3"}) || strings.Contains(r.Reason, "not checked") {
		t.Errorf("warm hubs: %+v", r)
	}

	// The hub's app list names the spoke where the team has it.
	res := a.do("GET", "/v1/clusters/hub/argocd/applications", token(t, "alice", "team-a", "member"), nil, nil)
	var list appListResponse
	res.decode(t, &list)
	dest := map[string]string{}
	for _, app := range list.Applications {
		dest[app.Name] = app.Destination.ClusterID
	}
	if dest["hub-web"] != "spoke" || dest["hub-api"] != "spoke" || dest["sandbox-plain"] != "" {
		t.Errorf("destination cluster ids = %v", dest)
	}
	if strings.Contains(string(res.body), hubSecretToken) || strings.Contains(fmt.Sprint(o), hubSecretToken) {
		t.Error("the hub's cluster secret config leaked")
	}

	// Stop sync on the hub, whose schema lists automated.enabled: the pause
	// sets it false; once run, the spoke's object is no longer reverted.
	agent, member := token(t, "alice", "team-a", "agent"), token(t, "alice", "team-a", "member")
	var pause service.Plan
	a.do("POST", "/v1/clusters/hub/argocd/applications/hub-web/pause-plan", agent,
		json.RawMessage(`{"conversation_id":"c1","visibility":"shared"}`), nil).decode(t, &pause)
	want := `kubectl -n argocd patch applications.argoproj.io hub-web --type merge -p '{"spec":{"syncPolicy":{"automated":{"enabled":false}}}}'`
	if pause.Command != want {
		t.Fatalf("pause command %q, want %q", pause.Command, want)
	}
	patchApp(t, hub, "hub-web", `{"spec":{"syncPolicy":{"automated":{"enabled":false}}}}`)
	a.do("POST", "/v1/plans/"+pause.ID+"/approve", member, nil, nil)
	a.do("POST", "/v1/plans/"+pause.ID+"/result", agent, json.RawMessage(`{"outcome":"executed","output":"patched"}`), nil)
	a.clock.Advance(service.SnapshotTTL + time.Second)
	if r := a.ownershipAs(t, "team-a", "spoke", web).ArgoCD.Resources[0]; r.Level != service.LevelManual || !slices.Equal(r.HubClusterIDs, []string{"hub"}) {
		t.Errorf("after the pause: %+v", r)
	}
	var resume service.Plan
	a.do("POST", "/v1/clusters/hub/argocd/applications/hub-web/resume-plan", agent,
		json.RawMessage(`{"pause_plan_id":"`+pause.ID+`","conversation_id":"c1","visibility":"shared"}`), nil).decode(t, &resume)
	if want := `kubectl -n argocd patch applications.argoproj.io hub-web --type json -p '[{"op":"replace","path":"/spec/syncPolicy/automated","value":{"selfHeal":true}}]'`; resume.Command != want {
		t.Errorf("resume command %q, want %q", resume.Command, want)
	}
}

func (a *argoAPI) ownershipAs(t *testing.T, team, cluster string, resources ...ref) service.Ownership {
	t.Helper()
	var o service.Ownership
	res := a.do("POST", "/v1/clusters/"+cluster+"/argocd/ownership", token(t, "alice", team, "agent"),
		map[string]any{"resources": resources}, nil)
	if res.status != 200 {
		t.Fatalf("ownership: %d %s", res.status, res.body)
	}
	res.decode(t, &o)
	return o
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// patchApp merge-patches an Application of the cluster's argocd namespace.
func patchApp(t *testing.T, k *k8stest.Cluster, name, patch string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(k.Config(k8stest.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := dyn.Resource(gvr).Namespace("argocd").Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hubClustersFile registers the spoke and the hub for team A, the spoke
// alone for team B, and the spoke with the hub three times for team C.
func hubClustersFile(t *testing.T, spoke, hub *k8stest.Cluster) string {
	t.Helper()
	dir := t.TempDir()
	kc := func(k *k8stest.Cluster, name string) string {
		b, err := k.Kubeconfig(k8stest.UserAdmin)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	s, h := kc(spoke, "spoke.kubeconfig"), kc(hub, "hub.kubeconfig")
	var b strings.Builder
	b.WriteString("clusters:\n")
	for _, c := range [][3]string{{"spoke", "team-a", s}, {"hub", "team-a", h}, {"spoke", "team-b", s},
		{"spoke", "team-c", s}, {"hub-1", "team-c", h}, {"hub-2", "team-c", h}, {"hub-3", "team-c", h}} {
		fmt.Fprintf(&b, "  - {id: %s, team: %s, name: %s, kubeconfig: %s, access_level: full}\n", c[0], c[1], c[0], c[2])
	}
	path := filepath.Join(dir, "clusters.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hubSpokeObjects are the spoke's objects, tracked by apps of the hub.
const hubSpokeObjects = `apiVersion: v1
kind: Namespace
metadata: { name: hub-spoke }
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: hub-spoke
  annotations: { argocd.argoproj.io/tracking-id: "hub-web:/ConfigMap:hub-spoke/web-config" }
data: { mode: blue }
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: api-config
  namespace: hub-spoke
  annotations: { argocd.argoproj.io/tracking-id: "hub-api:/ConfigMap:hub-spoke/api-config" }
data: { mode: green }
`

// hubObjects are the hub's apps deploying to the spoke (by server %[1]s;
// by the name of the cluster secret whose base64 name, server and config
// are %[2]s, %[3]s, %[4]s).
const hubObjects = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: { name: hub-web, namespace: argocd }
spec:
  project: default
  source: { repoURL: "https://git.example.com/org/web.git", targetRevision: main, path: deploy }
  destination: { server: "%[1]s", namespace: hub-spoke }
  syncPolicy: { automated: { selfHeal: true } }
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: { name: hub-api, namespace: argocd }
spec:
  project: default
  source: { repoURL: "https://git.example.com/org/api.git", targetRevision: main, path: deploy }
  destination: { name: spoke-by-name, namespace: hub-spoke }
  syncPolicy: { automated: {} }
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-spoke
  namespace: argocd
  labels: { argocd.argoproj.io/secret-type: cluster }
data: { name: "%[2]s", server: "%[3]s", config: "%[4]s" }
`
