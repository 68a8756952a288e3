package render

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener is a real HTTP server on loopback that counts the TCP
// connections it accepts and answers every request with secret.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// mustServeCounting starts a countingListener on 127.0.0.1 whose every
// answer is body.
func mustServeCounting(tb testing.TB, body string) *countingListener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listening on loopback: %v", err)
	}
	cl := &countingListener{Listener: ln}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
	})}
	go func() { _ = srv.Serve(cl) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return cl
}

// TestRemoteReferencesNeverConnect renders, through the real child process,
// kustomizations and a Helm source that reference a loopback listener (and
// one standing for the admin port, serving its /debug/pprof/cmdline) in every
// field kustomize or Helm would load a URL from: each source answers
// render_failed naming the field, and no connection reaches either listener.
func TestRemoteReferencesNeverConnect(t *testing.T) {
	const leaked = "kukie-admin-cmdline-secret"
	svc := mustServeCounting(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\ndata: {k: "+leaked+"}\n")
	admin := mustServeCounting(t, leaked)
	url := "http://" + svc.Addr().String()
	cmdline := "http://" + admin.Addr().String() + "/debug/pprof/cmdline"
	cm := "cm.yaml"
	cmFile := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\n"

	tests := []struct {
		name, kustomization, field string
		extra                      map[string]string // more files of the app
	}{
		{name: "Resources", kustomization: "resources: [" + url + "/cm.yaml]", field: "resources[0]"},
		{name: "RemoteGitBase", kustomization: "resources: [" + cm + ", '" + url + "/org/repo.git//base?ref=main']", field: "resources[1]"},
		{name: "RemoteGitBaseWithoutScheme", kustomization: "resources: ['" + svc.Addr().String() + "/org/repo//base?ref=v1']", field: "resources[0]"},
		{name: "Bases", kustomization: "bases: [" + url + "/base]", field: "bases[0]"},
		{name: "Components", kustomization: "resources: [" + cm + "]\ncomponents: [" + url + "/component]", field: "components[0]"},
		{name: "ConfigMapGeneratorFiles", kustomization: "configMapGenerator: [{name: c, files: [" + cmdline + "]}]", field: "configMapGenerator[0].files[0]"},
		{name: "ConfigMapGeneratorKeyedFile", kustomization: "configMapGenerator: [{name: c, files: [cmdline=" + cmdline + "]}]", field: "configMapGenerator[0].files[0]"},
		{name: "ConfigMapGeneratorEnvs", kustomization: "configMapGenerator: [{name: c, envs: [" + cmdline + "]}]", field: "configMapGenerator[0].envs[0]"},
		{name: "ConfigMapGeneratorEnv", kustomization: "configMapGenerator: [{name: c, env: " + cmdline + "}]", field: "configMapGenerator[0].env"},
		{name: "SecretGeneratorFiles", kustomization: "secretGenerator: [{name: s, files: [" + cmdline + "]}]", field: "secretGenerator[0].files[0]"},
		{name: "SecretGeneratorEnvs", kustomization: "secretGenerator: [{name: s, envs: [" + cmdline + "]}]", field: "secretGenerator[0].envs[0]"},
		{name: "PatchesPath", kustomization: "resources: [" + cm + "]\npatches: [{path: " + url + "/patch.yaml}]", field: "patches[0].path"},
		{name: "PatchesJson6902Path", kustomization: "resources: [" + cm + "]\npatchesJson6902: [{target: {version: v1, kind: ConfigMap, name: local}, path: " + url + "/p.json}]", field: "patchesJson6902[0].path"},
		{name: "PatchesStrategicMerge", kustomization: "resources: [" + cm + "]\npatchesStrategicMerge: [" + url + "/p.yaml]", field: "patchesStrategicMerge[0]"},
		{name: "Crds", kustomization: "resources: [" + cm + "]\ncrds: [" + url + "/crd.json]", field: "crds[0]"},
		{name: "Configurations", kustomization: "resources: [" + cm + "]\nconfigurations: [" + url + "/conf.yaml]", field: "configurations[0]"},
		{name: "OpenAPIPath", kustomization: "resources: [" + cm + "]\nopenapi: {path: " + url + "/schema.json}", field: "openapi.path"},
		{name: "ReplacementsPath", kustomization: "resources: [" + cm + "]\nreplacements: [{path: " + url + "/r.yaml}]", field: "replacements[0].path"},
		{name: "RemoteTransformer", kustomization: "resources: [" + cm + "]\ntransformers: [" + url + "/t.yaml]", field: "transformers[0]"},
		{name: "BuiltinPatchTransformerPath", kustomization: "resources: [" + cm + "]\ntransformers: [t.yaml]", field: "transformers[0] PatchTransformer.path",
			extra: map[string]string{"t.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + url + "/p.yaml\n"}},
		{name: "BuiltinConfigMapGeneratorFiles", kustomization: "generators: [g.yaml]", field: "generators[0] ConfigMapGenerator.files[0]",
			extra: map[string]string{"g.yaml": "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nfiles: [" + cmdline + "]\n"}},
		{name: "ThroughLocalBase", kustomization: "resources: [base]", field: "app/base/kustomization.yaml: configMapGenerator[0].files[0]",
			extra: map[string]string{"base/kustomization.yaml": "configMapGenerator: [{name: c, files: [" + cmdline + "]}]\n"}},
		{name: "ThroughLocalComponent", kustomization: "resources: [" + cm + "]\ncomponents: [comp]", field: "app/comp/kustomization.yaml: patches[0].path",
			extra: map[string]string{"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches: [{path: " + url + "/p.yaml}]\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{"app/kustomization.yaml": []byte(tt.kustomization + "\n"), "app/" + cm: []byte(cmFile)}
			for name, data := range tt.extra {
				files["app/"+name] = []byte(data)
			}
			res := runInChild(t, Request{Files: files, Source: Source{Path: "app"}}, Limits{Timeout: time.Minute})
			assertErrorCode(t, res, CodeRenderFailed, "")
			assertContains(t, res.Error.Message, tt.field+": remote content is not loaded")
			assertNotContains(t, string(res.Manifests), leaked)
		})
	}
	t.Run("AppComponent", func(t *testing.T) {
		files := map[string][]byte{"app/kustomization.yaml": []byte("resources: [" + cm + "]\n"), "app/" + cm: []byte(cmFile)}
		res := runInChild(t, Request{Files: files, Source: Source{Path: "app", Kustomize: &Kustomize{Components: []string{url + "/component"}}}}, Limits{Timeout: time.Minute})
		assertErrorCode(t, res, CodeRenderFailed, "")
		assertContains(t, res.Error.Message, "kustomize.components[0]: remote content is not loaded")
	})
	t.Run("AppPatchPath", func(t *testing.T) {
		files := map[string][]byte{"app/kustomization.yaml": []byte("resources: [" + cm + "]\n"), "app/" + cm: []byte(cmFile)}
		patch := json.RawMessage(`{"path":"` + url + `/patch.yaml"}`)
		res := runInChild(t, Request{Files: files, Source: Source{Path: "app", Kustomize: &Kustomize{Patches: []json.RawMessage{patch}}}}, Limits{Timeout: time.Minute})
		assertErrorCode(t, res, CodeRenderFailed, "")
		assertContains(t, res.Error.Message, "patches[0].path: remote content is not loaded")
	})
	t.Run("HelmValueFile", func(t *testing.T) {
		req := Request{Files: MustLoadRepo(t, "helm"), AppName: "shop",
			Source: Source{Path: "charts/web", Helm: &Helm{ValueFiles: []string{"values.yaml", cmdline}}}}
		res := runInChild(t, req, Limits{Timeout: time.Minute})
		assertErrorCode(t, res, CodeRenderFailed, "")
		assertContains(t, res.Error.Message, "helm.valueFiles[1]: remote content is not loaded")
	})
	if n, m := svc.accepted.Load(), admin.accepted.Load(); n != 0 || m != 0 {
		t.Errorf("the renders opened %d connections to the loopback listener and %d to the admin port's", n, m)
	}
}

// A URL-looking text that kustomize reads as an inline patch or a local
// file is not taken for a remote reference.
func TestRemoteURL(t *testing.T) {
	for ref, want := range map[string]bool{
		"https://example.com/a.yaml":          true,
		"http://127.0.0.1:9090/debug/pprof":   true,
		"git::https://example.com/repo.git":   false, // kustomize's loader reads it as a local path
		"ssh://git@example.com/repo.git":      true,
		"file.yaml":                           false,
		"C:values.yaml":                       false,
		"apiVersion: v1\nkind: ConfigMap\n":   false,
		"key=https://example.com/x":           false, // the generators split the key first
		"https://user:pw@example.com/a.yaml":  true,
		"":                                    false,
		"../base/kustomization.yaml":          false,
		"/abs/path.yaml":                      false,
		"https:/missing-slash.example/a.yaml": true,
	} {
		if _, got := remoteURL(ref); got != want {
			t.Errorf("remoteURL(%q) = %v, want %v", ref, got, want)
		}
	}
	if u, _ := remoteURL("https://user:pw@example.com/a.yaml"); strings.Contains(u, "pw") {
		t.Errorf("the password is in %q", u)
	}
}
