package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// TestRenderSandboxEndToEnd is the attack through the built server:
// an app whose kustomization generates a ConfigMap from the server's own
// admin listener (/debug/pprof/cmdline) answers render_failed naming the
// field, and the server's command line is nowhere in the answer. The server
// logged once which sandbox layers its renders get (all three here: the
// tests run as root).
func TestRenderSandboxEndToEnd(t *testing.T) {
	k, kubeconfig := startArgoCluster(t)
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE":      clustersFile(t, kubeconfig, [3]string{"demo", "team-e2e", "demo"}),
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
	})
	cmdline := s.admin + "/debug/pprof/cmdline"
	repo := gittest.NewRepo(t)
	commit := repo.Commit(t, map[string]string{
		"leak/kustomization.yaml": "configMapGenerator:\n  - name: leak\n    files:\n      - " + cmdline + "\n",
	}, "leak")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: { name: leak, namespace: argocd }
spec:
  project: default
  source: { repoURL: %[1]q, targetRevision: main, path: leak }
  destination: { server: "https://kubernetes.default.svc", namespace: demo }
status:
  sync: { status: Synced, revision: %[2]s }
`, git.URL, commit)
	if err := k.Apply(t.Context(), []byte(app)); err != nil {
		t.Fatal(err)
	}
	admin := e2eToken(t, "admin")
	if status, body := call(t, "PUT", s.public+"/v1/clusters/demo/gitops-repo", admin,
		fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.URL)); status != 200 {
		t.Fatalf("connect: %d %s", status, body)
	}
	// One source that fails is the answer's problem (422, the source's code).
	status, body := call(t, "GET", s.public+"/v1/clusters/demo/argocd/applications/leak/manifests", admin, "")
	var p struct{ Code, Detail string }
	if status != 422 || json.Unmarshal([]byte(body), &p) != nil || p.Code != "render_failed" ||
		!strings.Contains(p.Detail, "configMapGenerator[0].files[0]: remote content is not loaded") {
		t.Errorf("manifests: %d %s", status, body)
	}
	if strings.Contains(body, "test.") {
		t.Errorf("the server's command line is in the answer: %s", body)
	}

	var lines []string
	for _, line := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"render sandbox"`) {
			lines = append(lines, line)
		}
	}
	t.Logf("start-up line: %q", lines)
	if len(lines) != 1 || !strings.Contains(lines[0], `"layers":["transport","seccomp","namespace:network"]`) {
		t.Errorf("render sandbox log lines: %q", lines)
	}
}
