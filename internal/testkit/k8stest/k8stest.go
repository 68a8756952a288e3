// Package k8stest runs a real Kubernetes API server (kube-apiserver and
// etcd, built by `make tools`) for tests and the local sandbox, through
// controller-runtime's envtest. It installs Kukie's own Application CRD and
// fixture objects, and creates users with different rights, so 403s and
// "no such resource type" come from the real server.
package k8stest

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

//go:embed testdata/*.yaml
var fixtures embed.FS

// User names of the cluster's users.
const (
	UserAdmin        = "kukie-admin"         // system:masters
	UserLimited      = "kukie-limited"       // edit in the sandbox namespaces only
	UserArgoCDReader = "kukie-argocd-reader" // may list Applications in argocd only
	UserNobody       = "kukie-nobody"        // no rights at all
)

// Options choose what a cluster holds.
type Options struct {
	// ArgoCD installs the Application CRD and the fixture apps and workloads.
	ArgoCD bool
	// AutomatedEnabled lists spec.syncPolicy.automated.enabled in the
	// Application CRD's schema, as Argo CD 3.1 and later do.
	AutomatedEnabled bool
	// Extra are further fixture files of testdata, applied in order after
	// the standard ones, each as its field manager asks.
	Extra []FixtureFile
	// TokenWebhookURL, when set, makes the API server authenticate bearer
	// tokens it does not know through a TokenReview webhook
	// (authentication.k8s.io/v1) at this URL (http:// allowed), with the
	// success cache off; the EKS simulation in awsfake/ekssim uses it.
	TokenWebhookURL string
}

// FixtureFile is a fixture file of testdata and how its objects are
// written (managedFields record the manager and whether it applied
// server-side, which ownership detection reads).
type FixtureFile struct {
	Name  string
	Apply ApplyOptions
}

// ApplyOptions say who writes fixture objects: FieldManager ("" is
// client-go's default) and, with ServerSide, a server-side apply (operation
// Apply) instead of a create (operation Update).
type ApplyOptions struct {
	FieldManager string
	ServerSide   bool
}

// Cluster is a running API server with its users.
type Cluster struct {
	env        *envtest.Environment
	users      map[string]*envtest.AuthenticatedUser
	dyn        dynamic.Interface
	webhookDir string // holds the token webhook's kubeconfig, removed by Stop
}

// AssetsDir returns the directory holding kube-apiserver and etcd:
// KUKIE_K8S_ASSETS, or the cache `make tools` builds into.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUKIE_K8S_ASSETS")
	if dir == "" {
		versions, err := findVersionsFile()
		if err != nil {
			return "", err
		}
		vars, err := readEnvFile(versions)
		if err != nil {
			return "", err
		}
		root := os.Getenv("KUKIE_TOOLS_CACHE")
		if root == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				return "", err
			}
			root = filepath.Join(cache, "kukie-tools")
		}
		dir = filepath.Join(root, "k8s-"+vars["KUBERNETES_VERSION"]+"-etcd-"+vars["ETCD_VERSION"])
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("no %s in %s: run `make tools` (builds the test Kubernetes control plane, ~10 min cold) or set KUKIE_K8S_ASSETS", bin, dir)
		}
	}
	return dir, nil
}

// findVersionsFile walks up from the working directory to tools/versions.env.
func findVersionsFile() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "tools", "versions.env")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("tools/versions.env not found above the working directory; set KUKIE_K8S_ASSETS")
		}
		dir = parent
	}
}

func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = v
		}
	}
	return vars, sc.Err()
}

// Start runs a control plane in a temporary directory on free loopback
// ports, with users and, if asked, the Argo CD fixtures.
func Start(opts Options) (*Cluster, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: time.Minute}
	if opts.ArgoCD {
		crd, err := applicationCRD(opts.AutomatedEnabled)
		if err != nil {
			return nil, err
		}
		env.CRDs = []*apiextv1.CustomResourceDefinition{crd}
	}
	var webhookDir string
	if opts.TokenWebhookURL != "" {
		if webhookDir, err = tokenWebhook(env, opts.TokenWebhookURL); err != nil {
			return nil, err
		}
	}
	if _, err := env.Start(); err != nil {
		_ = os.RemoveAll(webhookDir)
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	c := &Cluster{env: env, users: map[string]*envtest.AuthenticatedUser{}, webhookDir: webhookDir}
	for name, groups := range map[string][]string{
		UserAdmin: {"system:masters"}, UserLimited: nil, UserArgoCDReader: nil, UserNobody: nil,
	} {
		u, err := env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
		if err != nil {
			_ = env.Stop()
			return nil, fmt.Errorf("add user %s: %w", name, err)
		}
		c.users[name] = u
	}
	if c.dyn, err = dynamic.NewForConfig(c.Config(UserAdmin)); err != nil {
		_ = env.Stop()
		return nil, err
	}
	files := []string{"namespaces.yaml", "rbac.yaml"}
	if opts.ArgoCD {
		files = append(files, "workloads.yaml", "applications.yaml")
	}
	all := make([]FixtureFile, 0, len(files)+len(opts.Extra))
	for _, f := range files {
		all = append(all, FixtureFile{Name: f})
	}
	for _, f := range append(all, opts.Extra...) {
		b, err := fixtures.ReadFile("testdata/" + f.Name)
		if err == nil {
			err = c.ApplyWith(context.Background(), b, f.Apply)
		}
		if err != nil {
			_ = env.Stop()
			return nil, fmt.Errorf("fixtures %s: %w", f.Name, err)
		}
	}
	return c, nil
}

func applicationCRD(automatedEnabled bool) (*apiextv1.CustomResourceDefinition, error) {
	b, err := fixtures.ReadFile("testdata/crd-application.yaml")
	if err != nil {
		return nil, err
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		return nil, err
	}
	if automatedEnabled {
		// spec.syncPolicy.automated.enabled, the rest of spec kept as given
		// (untyped nodes: fixtures hold odd shapes real clusters hold).
		object := func(props map[string]apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
			return apiextv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true), Properties: props}
		}
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties = map[string]apiextv1.JSONSchemaProps{"syncPolicy": object(map[string]apiextv1.JSONSchemaProps{
			"automated": object(map[string]apiextv1.JSONSchemaProps{"enabled": {Type: "boolean"}}),
		})}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	return crd, nil
}

func ptr[T any](v T) *T { return &v }

// tokenWebhook writes the webhook's kubeconfig into a new directory and
// points the API server at it.
func tokenWebhook(env *envtest.Environment, url string) (string, error) {
	dir, err := os.MkdirTemp("", "k8stest-webhook-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "token-webhook.kubeconfig")
	kubeconfig := fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: webhook, cluster: {server: %q}}]
users: [{name: apiserver, user: {}}]
contexts: [{name: webhook, context: {cluster: webhook, user: apiserver}}]
current-context: webhook
`, url)
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("authentication-token-webhook-config-file", path).
		Set("authentication-token-webhook-version", "v1").
		Set("authentication-token-webhook-cache-ttl", "0s")
	return dir, nil
}

// Stop stops the control plane and removes its files.
func (c *Cluster) Stop() error {
	err := c.env.Stop()
	if c.webhookDir != "" {
		_ = os.RemoveAll(c.webhookDir)
	}
	return err
}

// Config returns a client configuration for one of the cluster's users.
func (c *Cluster) Config(user string) *rest.Config { return rest.CopyConfig(c.users[user].Config()) }

// Kubeconfig returns a kubeconfig file's content for a user.
func (c *Cluster) Kubeconfig(user string) ([]byte, error) { return c.users[user].KubeConfig() }

// Host is the API server's URL.
func (c *Cluster) Host() string { return c.env.Config.Host }

// resources maps the kinds fixtures use to their API resources.
var resources = map[string]schema.GroupVersionResource{
	"Namespace":                {Version: "v1", Resource: "namespaces"},
	"Service":                  {Version: "v1", Resource: "services"},
	"ConfigMap":                {Version: "v1", Resource: "configmaps"},
	"Secret":                   {Version: "v1", Resource: "secrets"},
	"Deployment":               {Group: "apps", Version: "v1", Resource: "deployments"},
	"Role":                     {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":              {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Application":              {Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
	"ApplicationSet":           {Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"},
	"Job":                      {Group: "batch", Version: "v1", Resource: "jobs"},
	"CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
}

// Apply creates the objects of a multi-document YAML stream as the admin.
func (c *Cluster) Apply(ctx context.Context, docs []byte) error {
	return c.ApplyWith(ctx, docs, ApplyOptions{})
}

// ApplyWith writes the objects of a multi-document YAML stream as the
// admin: created, or applied server-side (forcing conflicts, so an object
// can be re-applied changed) when opts.ServerSide is set.
func (c *Cluster) ApplyWith(ctx context.Context, docs []byte, opts ApplyOptions) error {
	for _, doc := range bytes.Split(docs, []byte("\n---")) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return err
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		gvr, ok := resources[u.GetKind()]
		if !ok {
			return fmt.Errorf("k8stest: no resource known for kind %q", u.GetKind())
		}
		var client dynamic.ResourceInterface = c.dyn.Resource(gvr)
		if ns := u.GetNamespace(); ns != "" {
			client = c.dyn.Resource(gvr).Namespace(ns)
		}
		var err error
		if opts.ServerSide {
			_, err = client.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: opts.FieldManager, Force: true})
		} else {
			_, err = client.Create(ctx, u, metav1.CreateOptions{FieldManager: opts.FieldManager})
		}
		if err != nil {
			return fmt.Errorf("create %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// Delete removes one object as the admin.
func (c *Cluster) Delete(ctx context.Context, kind, namespace, name string) error {
	return c.dyn.Resource(resources[kind]).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}
