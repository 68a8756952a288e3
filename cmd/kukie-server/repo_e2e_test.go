package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// Planted secrets of the fixture repository (and, last, of a Secret's
// last-applied-configuration read by ownership detection): none may appear
// in any answer or log line.
var planted = []string{"hunter2-db-password", "c3VwZXItc2VjcmV0LXZhbHVl", "tok-repo-3f9a1c", "lastapplied-pw-9d2e71"}

// TestRepoTabEndToEnd drives the built server with only an operator's
// configuration (KUKIE_GIT_ALLOWED_PRIVATE_HOSTS, KUKIE_SECRET_KEYS, the
// standard CA variable) against a real Git server: connecting with a token
// (a wrong one refused, nothing stored), the folder tree, masked files,
// the read tools, SSRF refusals, and the unconnected answers.
func TestRepoTabEndToEnd(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Commit(t, map[string]string{
		"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
		"apps/web/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: " + planted[1] + "\n",
		"apps/web/values.yaml": "database:\n  password: " + planted[0] + "\n",
		"docs/readme.md":       "# gitops\n",
	}, "first")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{Token: planted[2]})
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
		"KUKIE_SECRET_KEYS":               "k1:" + base64.StdEncoding.EncodeToString(key),
	})
	admin, agent := e2eToken(t, "admin"), e2eToken(t, "agent")
	// Every answer is checked for the planted secrets.
	call := func(t *testing.T, method, u, tok, body string) (int, string) {
		t.Helper()
		status, out := call(t, method, u, tok, body)
		for _, secret := range planted {
			if strings.Contains(out, secret) {
				t.Errorf("%s %s: a planted secret is in the answer", method, u)
			}
		}
		return status, out
	}
	put := func(body string) (int, string) {
		return call(t, "PUT", s.public+"/v1/clusters/c1/gitops-repo", admin, body)
	}
	tool := func(name, body string) string {
		t.Helper()
		status, out := call(t, "POST", s.public+"/v1/tools/"+name, agent, body)
		var a struct {
			Text string `json:"text"`
		}
		if status != 200 || json.Unmarshal([]byte(out), &a) != nil {
			t.Fatalf("tool %s: %d %s", name, status, out)
		}
		return a.Text
	}

	// Not connected yet: the tools say so; the routes answer 409.
	if text := tool("repo_tree", `{"cluster_id":"c1"}`); text != "레포를 연결하면 볼 수 있어요." {
		t.Errorf("unconnected tool text %q", text)
	}
	if status, body := call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/tree", admin, ""); status != 409 ||
		!strings.Contains(body, "repo_not_connected") {
		t.Errorf("unconnected tree: %d %s", status, body)
	}

	// A wrong token is refused at once and nothing is stored.
	status, body := put(fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"https_token","token":"wrong-token-123"}}`, git.URL))
	if status != 422 || !strings.Contains(body, "repo_auth_failed") {
		t.Fatalf("wrong token: %d %s", status, body)
	}
	if status, _ := call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/tree", admin, ""); status != 409 {
		t.Errorf("a refused connection was stored: tree answers %d", status)
	}
	// SSRF: a loopback address that is not listed, and a metadata
	// address, are refused before any request.
	for _, u := range []string{strings.Replace(git.URL, "127.0.0.1", "127.0.0.2", 1), "https://169.254.169.254/latest/repo.git"} {
		if status, body := put(fmt.Sprintf(`{"repo_url":%q}`, u)); status != 502 || !strings.Contains(body, "repo_unreachable") {
			t.Errorf("PUT %s: %d %s", u, status, body)
		}
	}

	status, body = put(fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"https_token","token":%q}}`, git.URL, planted[2]))
	if status != 200 || !strings.Contains(body, `"type":"https_token"`) || !strings.Contains(body, `"fingerprint"`) {
		t.Fatalf("connect: %d %s", status, body)
	}
	status, body = call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/tree", admin, "")
	if status != 200 || !strings.Contains(body, `"path":"apps/web"`) || !strings.Contains(body, `"commit":"`) {
		t.Errorf("tree: %d %s", status, body)
	}
	for _, f := range []string{"apps/web/secret.yaml", "apps/web/values.yaml"} {
		status, body := call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/file?path="+f, admin, "")
		var file struct{ Content string }
		if status != 200 || json.Unmarshal([]byte(body), &file) != nil || !strings.Contains(file.Content, "<masked>") {
			t.Errorf("file %s: %d %s", f, status, body)
		}
	}
	if status, body := call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/file?path=nope.yaml", admin, ""); status != 404 ||
		!strings.Contains(body, "path_not_found") {
		t.Errorf("missing file: %d %s", status, body)
	}
	text := tool("repo_file", `{"cluster_id":"c1","path":"apps/web/values.yaml"}`)
	if !strings.Contains(text, "<masked>") {
		t.Errorf("repo_file text %q", text)
	}
	if text := tool("repo_tree", `{"cluster_id":"c1"}`); !strings.Contains(text, "apps/web/") {
		t.Errorf("repo_tree text %q", text)
	}
	// Another team's cluster is not found, for the routes and the tools.
	otherAdmin := authtest.MustHS256(t, []byte(e2eSecret), authtest.Claims{Sub: "eve", Team: "team-other", Roles: []string{"admin"}})
	otherAgent := authtest.MustHS256(t, []byte(e2eSecret), authtest.Claims{Sub: "eve", Team: "team-other", Roles: []string{"agent"}})
	if status, _ := call(t, "GET", s.public+"/v1/clusters/c1/gitops-repo/file?path=apps/web/values.yaml", otherAdmin, ""); status != 404 {
		t.Errorf("another team's file: %d", status)
	}
	if status, _ := call(t, "POST", s.public+"/v1/tools/repo_file", otherAgent, `{"cluster_id":"c1","path":"apps/web/values.yaml"}`); status != 404 {
		t.Errorf("another team's repo_file tool: %d", status)
	}
	for _, secret := range planted {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("a planted secret is in the logs")
		}
	}
}

// TestRepoTabManifestsEndToEnd renders an app's Helm chart through the
// server — a child process of its own binary — at the revision the
// Application says Argo CD compared, masked; the same commit is not
// fetched or rendered again.
func TestRepoTabManifestsEndToEnd(t *testing.T) {
	repo := gittest.NewRepo(t)
	commit := repo.Commit(t, map[string]string{
		"chart/Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 1.0.0\n",
		"chart/values.yaml": "password: " + planted[0] + "\nreplicas: 1\n",
		"chart/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\n" +
			"stringData:\n  password: {{ .Values.password }}\n",
		"chart/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"spec:\n  replicas: {{ .Values.replicas }}\n",
	}, "chart")
	git := repo.ServeHTTP(t, gittest.HTTPOptions{AllowAnyCommit: true})
	k, kubeconfig := startArgoCluster(t)
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: { name: demo, namespace: argocd }
spec:
  project: default
  source: { repoURL: %[1]q, targetRevision: main, path: chart, helm: { parameters: [{ name: replicas, value: "3" }] } }
  destination: { server: "https://kubernetes.default.svc", namespace: demo }
status:
  sync:
    status: Synced
    revision: %[2]s
    comparedTo:
      source: { repoURL: %[1]q, targetRevision: main, path: chart, helm: { parameters: [{ name: replicas, value: "3" }] } }
`, git.URL, commit)
	if err := k.Apply(t.Context(), []byte(app)); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE":      clustersFile(t, kubeconfig, [3]string{"demo", "team-e2e", "demo"}),
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
	})
	admin := e2eToken(t, "admin")
	if status, body := call(t, "PUT", s.public+"/v1/clusters/demo/gitops-repo", admin,
		fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.URL)); status != 200 {
		t.Fatalf("connect: %d %s", status, body)
	}
	get := func() (int, string) {
		return call(t, "GET", s.public+"/v1/clusters/demo/argocd/applications/demo/manifests", admin, "")
	}
	status, body := get()
	var m struct {
		RevisionSource string `json:"revision_source"`
		Sources        []struct {
			Commit     string
			SourceType string `json:"source_type"`
			Manifests  string
			Error      *struct{ Code, Message string }
		} `json:"sources"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &m) != nil || len(m.Sources) != 1 || m.Sources[0].Error != nil {
		t.Fatalf("manifests: %d %s", status, body)
	}
	src := m.Sources[0]
	if m.RevisionSource != "compared" || src.Commit != commit || src.SourceType != "helm" ||
		!strings.Contains(src.Manifests, "replicas: 3") || !strings.Contains(src.Manifests, "<masked>") ||
		strings.Contains(src.Manifests, planted[0]) {
		t.Errorf("manifests = %+v", m)
	}
	packs := git.Counts().Packs
	if status, _ := get(); status != 200 || git.Counts().Packs != packs {
		t.Errorf("the same commit was fetched again: %d → %d packs", packs, git.Counts().Packs)
	}
	if strings.Contains(s.logs.String(), planted[0]) {
		t.Error("a planted secret is in the logs")
	}
}
