package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// previewRepo is the synced commit of the revert preview's repository: a
// plain app, a kustomization (resource, strategic-merge patch, JSON 6902
// patch), a Helm chart (values file, a parameter, a literal in a
// template) and a chart whose render never ends (it holds the one render
// slot). The branch head moves on after it.
func previewRepo() map[string]string {
	return map[string]string{
		"apps/plain/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.27
          env:
            - name: DB_PASSWORD
              value: ` + planted[0] + `
`,
		"apps/kust/kustomization.yaml": `resources: [deploy.yaml]
patches:
  - path: replicas.yaml
  - target: { kind: Deployment, name: api }
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/image
        value: nginx:1.26
`,
		"apps/kust/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 1\n" +
			"  minReadySeconds: 5\n  template:\n    spec:\n      containers:\n        - name: api\n          image: nginx:1.25\n",
		"apps/kust/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 2\n",
		"apps/chart/Chart.yaml":   "apiVersion: v2\nname: worker\nversion: 0.1.0\n",
		"apps/chart/values.yaml":  "replicas: 2\nimage:\n  repository: busybox\n  tag: \"1.36\"\n",
		"apps/chart/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  replicas: {{ .Values.replicas }}
  revisionHistoryLimit: 4
  template:
    spec:
      containers:
        - name: worker
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
		"apps/slow/Chart.yaml":          "apiVersion: v2\nname: slow\nversion: 0.1.0\n",
		"apps/slow/templates/loop.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n",
	}
}

// previewWorld starts the Git server (the synced commit, then a newer
// head), the cluster with the apps and their live objects, and the server,
// connected to the repository.
func previewWorld(t *testing.T) (*server, map[string]string, string) {
	t.Helper()
	repo := gittest.NewRepo(t)
	files := previewRepo()
	synced := repo.Commit(t, files, "synced")
	head := map[string]string{}
	for k, v := range files {
		head[k] = strings.ReplaceAll(v, "replicas: 2", "replicas: 9")
	}
	repo.Commit(t, head, "head moves on")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	k, kubeconfig := startArgoCluster(t)
	var objs strings.Builder
	for _, a := range []struct{ name, path, extra string }{
		{"plain", "apps/plain", ""}, {"kust", "apps/kust", ""},
		{"chart", "apps/chart", `, helm: { parameters: [{ name: image.tag, value: "1.37" }] }`}, {"slow", "apps/slow", ""},
	} {
		fmt.Fprintf(&objs, `---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: { name: %[1]s, namespace: argocd }
spec:
  project: default
  source: { repoURL: %[2]q, targetRevision: main, path: %[3]s%[4]s }
  destination: { server: "https://kubernetes.default.svc", namespace: preview }
  syncPolicy: { automated: { selfHeal: true } }
status:
  sync: { status: Synced, revision: %[5]s }
`, a.name, git.URL, a.path, a.extra, synced)
	}
	objs.WriteString("---\napiVersion: v1\nkind: Namespace\nmetadata: { name: preview }\n")
	for _, d := range []struct{ app, name, image string }{{"plain", "web", "nginx:1.27"}, {"kust", "api", "nginx:1.26"}, {"chart", "worker", "busybox:1.37"}} {
		fmt.Fprintf(&objs, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: preview
  annotations: { argocd.argoproj.io/tracking-id: "%[1]s:apps/Deployment:preview/%[2]s" }
spec:
  replicas: 3
  selector: { matchLabels: { app: %[2]s } }
  template:
    metadata: { labels: { app: %[2]s } }
    spec: { containers: [{ name: %[2]s, image: %[3]q }] }
`, d.app, d.name, d.image)
	}
	if err := k.Apply(t.Context(), []byte(objs.String())); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE":      clustersFile(t, kubeconfig, [3]string{"demo", "team-e2e", "demo"}),
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
		// One render slot, a render that never ends stopped after 6 s,
		// and a detection budget shorter than that: a traced render that
		// waits for the slot leaves its fields pending.
		"KUKIE_RENDER_CONCURRENCY": "1",
		"KUKIE_RENDER_TIMEOUT":     "6s",
		"KUKIE_DETECTION_BUDGET":   "3s",
	})
	if status, body := call(t, "PUT", s.public+"/v1/clusters/demo/gitops-repo", e2eToken(t, "admin"),
		fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.URL)); status != 200 {
		t.Fatalf("connect: %d %s", status, body)
	}
	return s, files, synced
}

// ownershipOf asks the ownership check for one Deployment with changes and
// returns its resource row.
func ownershipOf(t *testing.T, s *server, name, changes string) string {
	t.Helper()
	status, body := call(t, "POST", s.public+"/v1/clusters/demo/argocd/ownership", e2eToken(t, "agent"),
		`{"resources":[{"group":"apps","kind":"Deployment","namespace":"preview","name":"`+name+`","changes":`+changes+`}]}`)
	if status != 200 {
		t.Fatalf("ownership %s: %d %s", name, status, body)
	}
	return body
}

func mustContain(t *testing.T, what, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("%s: no %s in %s", what, p, body)
		}
	}
}

// TestRevertPreviewEndToEnd drives the revert preview against a real Git
// server and a real kube-apiserver, the synced revision behind the
// branch head: each via with its value and line, matches_git, unset,
// masking, a Helm field pending while the render slot is busy and then
// filled in on the plan, and the patches applied with the git CLI and
// rendered again.
func TestRevertPreviewEndToEnd(t *testing.T) {
	s, files, synced := previewWorld(t)
	agent, member := e2eToken(t, "agent"), e2eToken(t, "member")
	src := func(path string, line int, via string) string {
		return fmt.Sprintf(`"revision":%q,"path":%q,"line":%d,"via":%q`, synced, path, line, via)
	}

	// Pending: the one render slot is held by a render that never ends, so
	// the chart's traced render waits past the detection budget.
	slow, err := http.NewRequestWithContext(t.Context(), "GET", s.public+"/v1/clusters/demo/argocd/applications/slow/manifests", nil)
	if err != nil {
		t.Fatal(err)
	}
	slow.Header.Set("Authorization", "Bearer "+member)
	go func() {
		if resp, err := http.DefaultClient.Do(slow); err == nil {
			_ = resp.Body.Close()
		}
	}()
	waitUntil(t, "the slow render to hold the slot", func() bool {
		_, m := call(t, "GET", s.admin+"/metrics", "", "")
		return strings.Contains(m, "\nkukie_renders_in_flight 1\n")
	})
	status, body := call(t, "POST", s.public+"/v1/plans", agent, `{"cluster_id":"demo","conversation_id":"c","visibility":"shared",`+
		`"tool":"patch_resource","command":"kubectl -n preview patch deploy/worker ...","payload":{},"resources":[{"group":"apps",`+
		`"kind":"Deployment","namespace":"preview","name":"worker","changes":[{"field":"/spec/replicas","value":5},`+
		`{"field":"/spec/revisionHistoryLimit","value":2},{"field":"/spec/template/spec/containers/0/image","value":"busybox:1.38"}]}]}`)
	var plan struct{ ID string }
	if status != 201 || json.Unmarshal([]byte(body), &plan) != nil {
		t.Fatalf("plan: %d %s", status, body)
	}
	mustContain(t, "plan while the slot is busy", body, `{"state":"pending"}`)
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the plan last read: %s", last)
		}
	})
	waitUntil(t, "the plan's Git fields to be filled in", func() bool {
		_, last = call(t, "GET", s.public+"/v1/plans/"+plan.ID, member, "")
		return !strings.Contains(last, `"state":"pending"`) && strings.Contains(last, `"helm_values"`)
	})

	// Helm: the values file, a literal in a template, the Application's parameter.
	body = ownershipOf(t, s, "worker", `[{"field":"/spec/replicas","value":5},{"field":"/spec/revisionHistoryLimit","value":2},`+
		`{"field":"/spec/template/spec/containers/0/image","value":"busybox:1.38"}]`)
	mustContain(t, "helm", body,
		`"git":{"state":"set","value":2,"source":{`+src("apps/chart/values.yaml", 1, "helm_values")+`,"key":"replicas","key_planned":5}}`,
		`"git":{"state":"set","value":4,"source":{`+src("apps/chart/templates/deploy.yaml", 7, "helm_template")+`}}`,
		`"git":{"state":"set","value":"busybox:1.37","source":{"revision":"`+synced+`","path":"","line":0,"via":"application_override",`+
			`"key":"image.tag","key_planned":"1.38","override":"spec.source.helm.parameters[name=image.tag]"}}`)
	// Plain: the manifest's lines, an unset field, a masked one.
	body = ownershipOf(t, s, "web", `[{"field":"/spec/replicas","value":4},{"field":"/spec/paused","value":true},`+
		`{"field":"/spec/template/spec/containers/0/env/0/value","value":"x"}]`)
	mustContain(t, "plain", body, `"git":{"state":"set","value":1,"source":{`+src("apps/plain/deploy.yaml", 6, "manifest")+`}}`,
		`"field":"/spec/paused","planned":true,"git":{"state":"unset"`, `"masked":true`)
	if strings.Contains(body, planted[0]) {
		t.Errorf("the Git secret shows: %s", body)
	}
	// Kustomize: the resource, the strategic-merge patch (synced: 2, head: 9), the JSON 6902 patch.
	body = ownershipOf(t, s, "api", `[{"field":"/spec/replicas","value":5},{"field":"/spec/minReadySeconds","value":9},`+
		`{"field":"/spec/template/spec/containers/0/image","value":"nginx:1.29"}]`)
	mustContain(t, "kustomize", body, `"value":2,"source":{`+src("apps/kust/replicas.yaml", 6, "kustomize_patch"),
		`"value":5,"source":{`+src("apps/kust/deploy.yaml", 7, "kustomize_resource"),
		`"value":"nginx:1.26","source":{`+src("apps/kust/kustomization.yaml", 8, "kustomize_patch"))
	// matches_git: the image Git already sets is no drift.
	body = ownershipOf(t, s, "api", `[{"field":"/spec/template/spec/containers/0/image","value":"nginx:1.26"}]`)
	mustContain(t, "matches_git", body, `"level_cause":"matches_git"`, `"level":"not_reverted"`)

	// The patches, applied with the git CLI and rendered again.
	after := applyChange(t, s, member, plan.ID, files)
	res := render.Render(render.Request{Files: after, AppName: "chart", Namespace: "preview", Source: render.Source{Path: "apps/chart",
		Helm: &render.Helm{Parameters: []render.HelmParameter{{Name: "image.tag", Value: "1.37"}}}}})
	mustContain(t, "the chart after the patch", string(res.Manifests), "replicas: 5\n", "revisionHistoryLimit: 2\n")
	status, body = call(t, "POST", s.public+"/v1/plans", agent, `{"cluster_id":"demo","conversation_id":"c","visibility":"shared",`+
		`"tool":"patch_resource","command":"kubectl -n preview patch deploy/api ...","payload":{},"resources":[{"group":"apps",`+
		`"kind":"Deployment","namespace":"preview","name":"api","changes":[{"field":"/spec/replicas","value":5},`+
		`{"field":"/spec/template/spec/containers/0/image","value":"nginx:1.29"}]}]}`)
	if status != 201 || json.Unmarshal([]byte(body), &plan) != nil {
		t.Fatalf("plan: %d %s", status, body)
	}
	after = applyChange(t, s, member, plan.ID, files)
	res = render.Render(render.Request{Files: after, Source: render.Source{Path: "apps/kust"}})
	mustContain(t, "the kustomization after the patch", string(res.Manifests), "replicas: 5\n", "image: nginx:1.29\n")
}

// applyChange fetches a plan's Git change, applies it with the git CLI to
// the synced tree and returns the tree after.
func applyChange(t *testing.T, s *server, tok, planID string, files map[string]string) map[string][]byte {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("this test applies patches with the git CLI: install git (e.g. apt-get install git)")
	}
	status, body := call(t, "GET", s.public+"/v1/plans/"+planID+"/git-change", tok, "")
	var ch struct {
		Files       []struct{ Path, Diff string }
		Unsupported []struct{ Field, Reason string }
	}
	if status != 200 || json.Unmarshal([]byte(body), &ch) != nil || len(ch.Files) == 0 {
		t.Fatalf("git-change: %d %s", status, body)
	}
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, data)
	}
	for _, f := range ch.Files {
		patch := filepath.Join(t.TempDir(), "change.patch")
		writeFile(t, patch, f.Diff)
		cmd := exec.Command(git, "apply", patch)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply: %v\n%s\n%s", err, out, f.Diff)
		}
	}
	after := map[string][]byte{}
	for name := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		after[name] = b
	}
	return after
}

// waitUntil polls cond; the deadline only catches hangs.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within two minutes", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
