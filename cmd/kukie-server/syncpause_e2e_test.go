package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// TestPausePlanPausesTheParentFirst checks app-of-apps against a real
// kube-apiserver: the child Application is managed, with self-heal, by a
// parent app in the same cluster, so the stop-sync plan pauses the parent
// first (one command line per object, in order) and names the parent's
// other children (they stop following Git meanwhile), keeping both
// policies for the resume.
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
`
	if err := k.Apply(t.Context(), []byte(apps)); err != nil {
		t.Fatal(err)
	}
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
	if pause.Parent == nil || pause.Parent.App != "root" || string(pause.Parent.Previous) != `{"prune":true,"selfHeal":true}` ||
		string(pause.Previous) != `{"selfHeal":true}` || !strings.Contains(pause.Note, "self-heal") || !strings.HasSuffix(pause.Note, ": api.") {
		t.Errorf("argocd_pause = %+v (parent %+v)", pause, pause.Parent)
	}
}
