package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// TestPausePlanPausesTheParentFirst checks app-of-apps against a real
// kube-apiserver: the child Application is managed, with self-heal, by a
// parent app in the same cluster, so the stop-sync plan pauses the parent
// first (one command line per object, in order) and names the parent's
// other children (they stop following Git meanwhile), keeping both
// policies for the resume; an app an ApplicationSet generates gets a
// warning when the ApplicationSet cannot be read.
func TestPausePlanPausesTheParentFirst(t *testing.T) {
	k, kubeconfig := startArgoCluster(t)
	apps := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: { name: root, namespace: argocd }
spec:
  project: default
  source: { repoURL: "https://git.example.com/org/apps.git", targetRevision: main, path: apps }
  destination: { server: "https://kubernetes.default.svc", namespace: argocd }
  syncPolicy: { automated: { prune: true, selfHeal: true } }
status:
  sync: { status: Synced, revision: abc }
  resources:
    - { group: argoproj.io, version: v1alpha1, kind: Application, namespace: argocd, name: web, status: Synced }
    - { group: argoproj.io, version: v1alpha1, kind: Application, namespace: argocd, name: api, status: Synced }
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
  annotations: { argocd.argoproj.io/tracking-id: "root:argoproj.io/Application:argocd/web" }
spec:
  project: default
  source: { repoURL: "https://git.example.com/org/web.git", targetRevision: main, path: deploy }
  destination: { server: "https://kubernetes.default.svc", namespace: web }
  syncPolicy: { automated: { selfHeal: true } }
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: gen
  namespace: argocd
  ownerReferences: [{ apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: gone-apps, uid: 6d1c2a9e-0b7f-4f0e-9a51-2f7c3a1d9e10 }]
spec:
  project: default
  source: { repoURL: "https://git.example.com/org/gen.git", targetRevision: main, path: deploy }
  destination: { server: "https://kubernetes.default.svc", namespace: gen }
  syncPolicy: { automated: { prune: true } }
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: gen2
  namespace: argocd
  ownerReferences: [{ apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: team-apps, uid: 0b6f2c8e-7d3a-4c11-8f2e-5a9d4e3c2b71 }]
spec:
  project: default
  source: { repoURL: "https://git.example.com/org/gen.git", targetRevision: main, path: deploy2 }
  destination: { server: "https://kubernetes.default.svc", namespace: gen2 }
  syncPolicy: { automated: { prune: true } }
`
	if err := k.Apply(t.Context(), []byte(apps+applicationSetCRD)); err != nil {
		t.Fatal(err)
	}
	// The ApplicationSet of gen2, once its CRD serves (it ignores nothing).
	set := "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: { name: team-apps, namespace: argocd }\n" +
		"spec: { generators: [], template: {} }\n"
	waitUntil(t, "the ApplicationSet CRD to serve", func() bool { return k.Apply(t.Context(), []byte(set)) == nil })
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE": clustersFile(t, kubeconfig, [3]string{"demo", "team-e2e", "demo"}),
	})
	agent := e2eToken(t, "agent")
	status, body := call(t, "POST", s.public+"/v1/clusters/demo/argocd/applications/web/pause-plan", agent,
		`{"conversation_id":"c1","visibility":"shared"}`)
	var plan struct {
		ID        string
		Command   string
		Resources []struct{ Name string }
		Payload   struct {
			Pause struct {
				App, Note string
				Previous  json.RawMessage
				Parent    *struct {
					App      string
					Previous json.RawMessage
				}
			} `json:"argocd_pause"`
		}
	}
	if status != 201 || json.Unmarshal([]byte(body), &plan) != nil {
		t.Fatalf("pause-plan: %d %s", status, body)
	}
	lines := strings.Split(plan.Command, "\n")
	pause := plan.Payload.Pause
	if len(lines) != 2 || !strings.Contains(lines[0], "patch applications.argoproj.io root ") || !strings.Contains(lines[1], "patch applications.argoproj.io web ") ||
		len(plan.Resources) != 2 || plan.Resources[0].Name != "root" || plan.Resources[1].Name != "web" {
		t.Errorf("command %q, resources %+v", plan.Command, plan.Resources)
	}
	// An app an ApplicationSet generates, on a cluster that cannot show
	// the ApplicationSet: the plan says so, never a silent pause.
	status, body = callWith(t, "POST", s.public+"/v1/clusters/demo/argocd/applications/gen/pause-plan", agent,
		`{"conversation_id":"c1","visibility":"shared"}`, http.Header{"Accept-Language": {"en"}})
	if status != 201 || !strings.Contains(body, `"applicationset":"gone-apps"`) || !strings.Contains(body, "cannot be read here") {
		t.Errorf("ApplicationSet app: %d %s", status, body)
	}
	// An ApplicationSet that would undo the pause: its ignore rule first.
	status, body = call(t, "POST", s.public+"/v1/clusters/demo/argocd/applications/gen2/pause-plan", agent,
		`{"conversation_id":"c1","visibility":"shared"}`)
	var gen2 struct{ Command string }
	if status != 201 || json.Unmarshal([]byte(body), &gen2) != nil {
		t.Fatalf("gen2: %d %s", status, body)
	}
	want := `kubectl -n argocd patch applicationsets.argoproj.io team-apps --type json -p '[{"op":"add","path":"/spec/ignoreApplicationDifferences",` +
		`"value":[{"jsonPointers":["/spec/syncPolicy"],"name":"gen2"}]}]'` + "\n" +
		`kubectl -n argocd patch applications.argoproj.io gen2 --type json -p '[{"op":"remove","path":"/spec/syncPolicy/automated"}]'`
	if gen2.Command != want || !strings.Contains(body, `"applicationset_rule":true`) {
		t.Errorf("gen2 command:\n%s\nwant:\n%s\n%s", gen2.Command, want, body)
	}
	resumeRemovesTheRule(t, s.public, kubeconfig, body)
	if pause.Parent == nil || pause.Parent.App != "root" || string(pause.Parent.Previous) != `{"prune":true,"selfHeal":true}` ||
		string(pause.Previous) != `{"selfHeal":true}` || !strings.Contains(pause.Note, "self-heal로 관리하는 앱 root") || !strings.HasSuffix(pause.Note, ": api.") {
		t.Errorf("argocd_pause = %+v (parent %+v)", pause, pause.Parent)
	}
}

// applicationSetCRD serves ApplicationSets (any content) on the test's API server.
const applicationSetCRD = `
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: applicationsets.argoproj.io }
spec:
  group: argoproj.io
  names: { kind: ApplicationSet, listKind: ApplicationSetList, plural: applicationsets, singular: applicationset }
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } }
`

// resumeRemovesTheRule runs the gen2 pause plan's commands with the real
// kubectl, records the plan executed, and checks that the resume puts the
// policy back and then takes the ApplicationSet's ignore rule out again
// (tested at its index); its commands run too.
func resumeRemovesTheRule(t *testing.T, public, kubeconfig, pauseBody string) {
	t.Helper()
	var pause struct{ ID, Command string }
	if err := json.Unmarshal([]byte(pauseBody), &pause); err != nil {
		t.Fatal(err)
	}
	runKubectl(t, kubeconfig, pause.Command)
	agent, member := e2eToken(t, "agent"), e2eToken(t, "member")
	if status, body := call(t, "POST", public+"/v1/plans/"+pause.ID+"/approve", member, ""); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	if status, body := call(t, "POST", public+"/v1/plans/"+pause.ID+"/result", agent, `{"outcome":"executed","output":"patched"}`); status != 200 {
		t.Fatalf("result: %d %s", status, body)
	}
	status, body := call(t, "POST", public+"/v1/clusters/demo/argocd/applications/gen2/resume-plan", agent,
		`{"pause_plan_id":"`+pause.ID+`","conversation_id":"c1","visibility":"shared"}`)
	var resume struct{ Command string }
	if status != 201 || json.Unmarshal([]byte(body), &resume) != nil {
		t.Fatalf("resume-plan: %d %s", status, body)
	}
	want := `kubectl -n argocd patch applications.argoproj.io gen2 --type json -p '[{"op":"add","path":"/spec/syncPolicy/automated","value":{"prune":true}}]'` + "\n" +
		`kubectl -n argocd patch applicationsets.argoproj.io team-apps --type json -p '[{"op":"test","path":"/spec/ignoreApplicationDifferences/0",` +
		`"value":{"jsonPointers":["/spec/syncPolicy"],"name":"gen2"}},{"op":"remove","path":"/spec/ignoreApplicationDifferences/0"}]'`
	if resume.Command != want {
		t.Fatalf("resume command:\n%s\nwant:\n%s", resume.Command, want)
	}
	runKubectl(t, kubeconfig, resume.Command)
	got := runKubectl(t, kubeconfig, "kubectl -n argocd get applicationsets.argoproj.io team-apps -o jsonpath='{.spec.ignoreApplicationDifferences}'")
	if strings.Contains(got, "gen2") {
		t.Errorf("the ignore rule stayed: %s", got)
	}
	if got := runKubectl(t, kubeconfig, "kubectl -n argocd get applications.argoproj.io gen2 -o jsonpath='{.spec.syncPolicy.automated}'"); got != `{"prune":true}` {
		t.Errorf("gen2 automated after the resume = %s", got)
	}
}

// runKubectl runs a plan's command lines, in order, with the kubectl
// `make tools` builds, against kubeconfig; it returns their output.
func runKubectl(t *testing.T, kubeconfig, command string) string {
	t.Helper()
	assets, err := k8stest.AssetsDir()
	if err != nil {
		t.Fatalf("kubectl is needed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(assets, "kubectl")); err != nil {
		t.Fatalf("kubectl is needed: run `make tools` (it builds kubectl into %s): %v", assets, err)
	}
	var out strings.Builder
	for _, line := range strings.Split(command, "\n") {
		cmd := exec.CommandContext(t.Context(), "sh", "-c", line)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+assets+string(os.PathListSeparator)+os.Getenv("PATH"))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, b)
		}
		out.Write(b)
	}
	return out.String()
}
