package main

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kukie/gitops-server/internal/testkit/gittest"
)

// repoName is the sandbox GitOps repository's name in its URLs.
const repoName = "kukie-gitops-sandbox.git"

// demoSecret is the value the repository's demo Secret and Helm values
// hold: the repo tab masks it, so it never appears in an answer.
const demoSecret = "sandbox-demo-password"

// gitWorld is the sandbox GitOps repository, served over HTTPS smart HTTP on
// loopback twice: anonymously (public) and behind a token (private).
type gitWorld struct {
	publicURL, privateURL, token string
	// commits are the repository's commits, oldest first.
	commits []string
	stops   []func()
}

// startGitWorld writes the repository under dir (anew at every start) with
// two commits, so per-commit caching is visible, and serves it with tlsCfg.
func startGitWorld(dir string, tlsCfg *tls.Config) (*gitWorld, error) {
	path := filepath.Join(dir, "git", repoName)
	if err := os.RemoveAll(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	repo, err := gittest.Init(path)
	if err != nil {
		return nil, err
	}
	g := &gitWorld{}
	for i, image := range []string{"nginx:1.26", "nginx:1.27"} {
		id, err := repo.CommitFiles(sandboxFiles(image), fmt.Sprintf("sandbox apps, web on %s (%d)", image, i+1))
		if err != nil {
			return nil, err
		}
		g.commits = append(g.commits, id)
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	g.token = "sandbox-" + hex.EncodeToString(token)
	public, stop, err := repo.Serve(gittest.HTTPOptions{TLS: tlsCfg})
	if err != nil {
		return nil, err
	}
	g.stops = append(g.stops, stop)
	private, stop, err := repo.Serve(gittest.HTTPOptions{TLS: tlsCfg, Token: g.token})
	if err != nil {
		g.stop()
		return nil, err
	}
	g.stops = append(g.stops, stop)
	g.publicURL, g.privateURL = public.URL, private.URL
	return g, nil
}

func (g *gitWorld) stop() {
	for _, s := range g.stops {
		s()
	}
}

// head is the newest commit: what the sandbox Applications are synced to.
func (g *gitWorld) head() string { return g.commits[len(g.commits)-1] }

// sandboxFiles is the repository's tree: the plain, kustomize and Helm apps
// the sandbox Applications describe (the objects the sandbox cluster holds),
// with web's image as given, and a demo Secret that the repo tab masks.
func sandboxFiles(webImage string) map[string]string {
	return map[string]string{
		"README.md": "# kukie-gitops-sandbox\n\nThe GitOps repository of `make run`'s sandbox: three Argo CD apps.\n",
		"apps/plain/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: sandbox-plain
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: web
          image: ` + webImage + `
`,
		"apps/plain/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: sandbox-plain
spec:
  selector: { app: web }
  ports: [{ port: 80 }]
`,
		"apps/plain/secret.yaml": `# A demo Secret: the repo tab shows its keys, never its values.
apiVersion: v1
kind: Secret
metadata:
  name: web-db
  namespace: sandbox-plain
stringData:
  password: ` + demoSecret + `
`,
		"apps/kustomize/kustomization.yaml": "resources:\n  - deployment.yaml\n  - service.yaml\nnamespace: sandbox-kustomize\n",
		"apps/kustomize/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 2
  selector: { matchLabels: { app: api } }
  template:
    metadata: { labels: { app: api } }
    spec:
      containers:
        - name: api
          image: nginx:1.27
`,
		"apps/kustomize/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  selector: { app: api }\n  ports: [{ port: 80 }]\n",
		"apps/helm/Chart.yaml":        "apiVersion: v2\nname: worker\nversion: 0.1.0\n",
		"apps/helm/values.yaml": `replicas: 2
image: busybox:1.36
mode: fast
# The worker's database. The repo tab masks the value below, and a patch
# whose context would show it is not written.
database:
  password: ` + demoSecret + `
`,
		"apps/helm/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  replicas: {{ .Values.replicas }}
  selector: { matchLabels: { app: worker } }
  template:
    metadata: { labels: { app: worker } }
    spec:
      containers:
        - name: worker
          image: {{ .Values.image }}
`,
		"apps/helm/templates/service.yaml":   "apiVersion: v1\nkind: Service\nmetadata:\n  name: worker\nspec:\n  selector: { app: worker }\n  ports: [{ port: 80 }]\n",
		"apps/helm/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: worker-config\ndata:\n  mode: {{ .Values.mode | quote }}\n",
	}
}
