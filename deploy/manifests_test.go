package deploy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

// kustomizations are the directories the manifests tests render.
var kustomizations = []string{"base", "overlays/production"}

// secretVariables must come from the Secret, never from the ConfigMap or a
// literal value.
var secretVariables = []string{
	"KUKIE_DATABASE_URL", "KUKIE_AUTH_JWKS_URL", "KUKIE_AUTH_HS256_SECRET",
	"KUKIE_AUTH_ISSUER", "KUKIE_AUTH_AUDIENCE", "KUKIE_SECRET_KEYS",
}

// serverVariables returns the KUKIE_* names the server's configuration
// reads: the string literals of its configuration table,
// cmd/kukie-server/configvars.go (digits too: KUKIE_AUTH_HS256_SECRET).
func serverVariables(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cmd", "kukie-server", "configvars.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(KUKIE_[A-Z0-9_]+)"`).FindAllSubmatch(b, -1) {
		names[string(m[1])] = true
	}
	if len(names) < 10 {
		t.Fatalf("found only %d KUKIE_* names in configvars.go; has the configuration table moved?", len(names))
	}
	return names
}

func TestComposeVariables(t *testing.T) {
	known := serverVariables(t)
	b, err := os.ReadFile("docker-compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yaml (environment must be a map): %v", err)
	}
	if _, ok := compose.Services["kukie-server"]; !ok {
		t.Fatal("docker-compose.yaml has no kukie-server service")
	}
	seen := 0
	for name, svc := range compose.Services {
		for v := range svc.Environment {
			if !strings.HasPrefix(v, "KUKIE_") {
				continue
			}
			seen++
			if !known[v] {
				t.Errorf("service %s sets %s, which the server does not read", name, v)
			}
		}
	}
	if env := compose.Services["kukie-server"].Environment; env["KUKIE_DATABASE_URL"] == "" {
		t.Error("kukie-server sets no KUKIE_DATABASE_URL")
	}
	if seen == 0 {
		t.Error("no KUKIE_* variables found in docker-compose.yaml")
	}
}

// renderKustomization builds a kustomization with kustomize's library, as
// `kubectl kustomize` would.
func renderKustomization(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// oneOfKind returns the one object of a kind.
func oneOfKind(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == kind {
			found = append(found, u)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(found))
	}
	return found[0]
}

// typedOfKind returns the one object of a kind, converted to its Go type.
func typedOfKind[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) *T {
	t.Helper()
	v := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(oneOfKind(t, objs, kind).Object, v); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	return v
}

func TestManifestsStructure(t *testing.T) {
	known := serverVariables(t)
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			objs := renderKustomization(t, dir)
			dep := typedOfKind[appsv1.Deployment](t, objs, "Deployment")
			svc := typedOfKind[corev1.Service](t, objs, "Service")
			cm := typedOfKind[corev1.ConfigMap](t, objs, "ConfigMap")
			pod := dep.Spec.Template.Spec
			server := podContainer(t, pod.Containers, "server")

			t.Run("NoSecretValues", func(t *testing.T) {
				for _, u := range objs {
					if u.GetKind() == "Secret" {
						t.Errorf("Secret %s is rendered; secrets are referenced, never shipped", u.GetName())
					}
				}
				for _, name := range secretVariables {
					if _, ok := cm.Data[name]; ok {
						t.Errorf("ConfigMap sets %s; it belongs in the Secret", name)
					}
				}
				for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
					for _, e := range c.Env {
						if slices.Contains(secretVariables, e.Name) && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
							t.Errorf("container %s: %s is not a Secret reference", c.Name, e.Name)
						}
					}
				}
				for _, name := range []string{"KUKIE_DATABASE_URL", "KUKIE_SECRET_KEYS", "KUKIE_AUTH_JWKS_URL", "KUKIE_AUTH_HS256_SECRET"} {
					if e := envVar(server, name); e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("server has no Secret reference for %s", name)
					}
				}
			})

			t.Run("OnlyRealVariables", func(t *testing.T) {
				for k := range cm.Data {
					if !known[k] {
						t.Errorf("ConfigMap sets %s, which the server does not read", k)
					}
				}
				for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
					for _, e := range c.Env {
						if strings.HasPrefix(e.Name, "KUKIE_") && !known[e.Name] {
							t.Errorf("container %s sets %s, which the server does not read", c.Name, e.Name)
						}
					}
				}
			})

			t.Run("InitContainerMigrates", func(t *testing.T) {
				if len(pod.InitContainers) != 1 {
					t.Fatalf("want one initContainer, got %d", len(pod.InitContainers))
				}
				m := pod.InitContainers[0]
				if len(m.Command) != 0 || !slices.Equal(m.Args, []string{"migrate", "up"}) {
					t.Errorf("initContainer runs command %q args %q; want the image's kukie-server with args [migrate up]", m.Command, m.Args)
				}
				if m.Image != server.Image {
					t.Errorf("initContainer image %s differs from the server's %s", m.Image, server.Image)
				}
				if e := envVar(&m, "KUKIE_DATABASE_URL"); e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Error("initContainer has no KUKIE_DATABASE_URL from the Secret")
				}
				if !slices.Equal(server.Args, []string{"serve"}) || cm.Data["KUKIE_MIGRATE_ON_START"] == "true" {
					t.Errorf("server args %q, KUKIE_MIGRATE_ON_START %q; want [serve] and migrations left to the initContainer", server.Args, cm.Data["KUKIE_MIGRATE_ON_START"])
				}
			})

			t.Run("NobodyRunsAsRoot", func(t *testing.T) {
				psc := pod.SecurityContext
				if psc == nil {
					psc = &corev1.PodSecurityContext{}
				}
				for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
					sc := c.SecurityContext
					if sc == nil {
						sc = &corev1.SecurityContext{}
					}
					nonRoot := firstBool(sc.RunAsNonRoot, psc.RunAsNonRoot)
					uid := sc.RunAsUser
					if uid == nil {
						uid = psc.RunAsUser
					}
					if !nonRoot || uid == nil || *uid == 0 {
						t.Errorf("container %s: runAsNonRoot %v, runAsUser %v; want non-root with a non-zero uid", c.Name, nonRoot, valueOf(uid))
					}
					if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
						t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
					}
					if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
						t.Errorf("container %s: root filesystem is not read-only", c.Name)
					}
					if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
						t.Errorf("container %s: capabilities %+v; want drop [ALL] and nothing added", c.Name, sc.Capabilities)
					}
					seccomp := sc.SeccompProfile
					if seccomp == nil {
						seccomp = psc.SeccompProfile
					}
					if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
						t.Errorf("container %s: seccomp profile %+v; want RuntimeDefault", c.Name, seccomp)
					}
					if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
						t.Errorf("container %s: resources %+v; want cpu and memory requests and a memory limit", c.Name, c.Resources)
					}
				}
			})

			t.Run("Probes", func(t *testing.T) {
				for _, p := range []struct {
					name  string
					probe *corev1.Probe
					path  string
				}{{"liveness", server.LivenessProbe, "/healthz"}, {"readiness", server.ReadinessProbe, "/readyz"}} {
					if p.probe == nil || p.probe.HTTPGet == nil {
						t.Errorf("%s probe is not an HTTP GET", p.name)
						continue
					}
					port := containerPort(server, p.probe.HTTPGet.Port)
					if p.probe.HTTPGet.Path != p.path || port != 9090 {
						t.Errorf("%s probe GET %s on port %d; want %s on the admin port 9090", p.name, p.probe.HTTPGet.Path, port, p.path)
					}
				}
			})

			t.Run("ShutdownAndScale", func(t *testing.T) {
				drain := configDuration(t, cm.Data, "KUKIE_SHUTDOWN_DELAY", 5*time.Second) + configDuration(t, cm.Data, "KUKIE_SHUTDOWN_TIMEOUT", 30*time.Second)
				grace := time.Duration(valueOf(pod.TerminationGracePeriodSeconds)) * time.Second
				if grace <= drain {
					t.Errorf("terminationGracePeriodSeconds %v is not above the drain %v", grace, drain)
				}
				if len(pod.TopologySpreadConstraints) == 0 {
					t.Error("no topologySpreadConstraints")
				}
				hpa := typedOfKind[autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler")
				if valueOf(hpa.Spec.MinReplicas) < 2 || hpa.Spec.ScaleTargetRef.Name != dep.Name {
					t.Errorf("HPA minReplicas %d target %s; want 2 or more on %s", valueOf(hpa.Spec.MinReplicas), hpa.Spec.ScaleTargetRef.Name, dep.Name)
				}
				// The HPA owns the count: replicas in the manifest would
				// reset its scale on every apply or sync.
				if hpa.Spec.ScaleTargetRef.Kind == "Deployment" && hpa.Spec.ScaleTargetRef.Name == dep.Name && dep.Spec.Replicas != nil {
					t.Errorf("Deployment %s sets replicas %d, but the HPA scales it", dep.Name, *dep.Spec.Replicas)
				}
				oneOfKind(t, objs, "PodDisruptionBudget")
			})

			t.Run("WritableDirsAreBoundedEmptyDirs", func(t *testing.T) {
				cacheBytes, err := strconv.ParseInt(cm.Data["KUKIE_REPO_CACHE_BYTES"], 10, 64)
				if err != nil {
					t.Fatalf("KUKIE_REPO_CACHE_BYTES: %v", err)
				}
				tmp := envVar(server, "TMPDIR")
				if tmp == nil {
					t.Fatal("server sets no TMPDIR")
				}
				for _, d := range []struct {
					dir string
					min int64
				}{{cm.Data["KUKIE_REPO_CACHE_DIR"], cacheBytes}, {tmp.Value, 1}} {
					size := emptyDirAt(t, pod, server, d.dir)
					if size == nil || size.Value() < d.min {
						t.Errorf("%q: emptyDir sizeLimit %v; want one of at least %d bytes", d.dir, size, d.min)
					}
				}
			})

			t.Run("EphemeralStorageCoversEmptyDirs", func(t *testing.T) {
				// The kubelet counts disk-backed emptyDirs against the
				// pod's ephemeral-storage; the server's request and limit
				// must hold them all (plus its logs).
				var sum resource.Quantity
				for _, v := range pod.Volumes {
					if v.EmptyDir == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory {
						continue
					}
					if v.EmptyDir.SizeLimit == nil {
						t.Errorf("emptyDir %s has no sizeLimit", v.Name)
						continue
					}
					sum.Add(*v.EmptyDir.SizeLimit)
				}
				for _, q := range []struct {
					what string
					list corev1.ResourceList
				}{{"request", server.Resources.Requests}, {"limit", server.Resources.Limits}} {
					got, ok := q.list[corev1.ResourceEphemeralStorage]
					if !ok || got.Cmp(sum) < 0 {
						t.Errorf("server ephemeral-storage %s %v; want at least the emptyDirs' %v", q.what, got.String(), sum.String())
					}
				}
			})

			t.Run("IngressRoutesOnlyThePublicPort", func(t *testing.T) {
				ing := typedOfKind[networkingv1.Ingress](t, objs, "Ingress")
				var backends []networkingv1.IngressBackend
				if ing.Spec.DefaultBackend != nil {
					backends = append(backends, *ing.Spec.DefaultBackend)
				}
				sns := false
				for _, r := range ing.Spec.Rules {
					if r.HTTP == nil {
						continue
					}
					if !tlsCovers(ing.Spec.TLS, r.Host) {
						t.Errorf("host %q has no TLS", r.Host)
					}
					for _, p := range r.HTTP.Paths {
						backends = append(backends, p.Backend)
						if pathMatches(p, "/webhooks/aws/sns") {
							sns = true
						}
					}
				}
				if len(backends) == 0 || len(ing.Spec.TLS) == 0 {
					t.Fatalf("Ingress has %d backends and %d TLS entries", len(backends), len(ing.Spec.TLS))
				}
				if !sns {
					t.Error("no Ingress path reaches /webhooks/aws/sns")
				}
				for _, b := range backends {
					if b.Service == nil || b.Service.Name != svc.Name {
						t.Errorf("backend %+v is not the Service %s", b, svc.Name)
						continue
					}
					if port := servicePort(t, svc, b.Service.Port); containerPort(server, port.TargetPort) != 8080 {
						t.Errorf("backend port %+v reaches container port %v; want only the public 8080", b.Service.Port, port.TargetPort)
					}
				}
				for _, want := range []struct {
					name string
					port int32
				}{{"http", 8080}, {"admin", 9090}} {
					p := servicePort(t, svc, networkingv1.ServiceBackendPort{Name: want.name})
					if p.Port != want.port || containerPort(server, p.TargetPort) != want.port {
						t.Errorf("Service port %s: %d → %v; want %d", want.name, p.Port, p.TargetPort, want.port)
					}
				}
			})

			t.Run("NetworkPolicy", func(t *testing.T) {
				np := typedOfKind[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
				if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
					t.Errorf("policy types %v; want Ingress and Egress", np.Spec.PolicyTypes)
				}
				podIdentity := false
				for _, r := range np.Spec.Egress {
					for _, to := range r.To {
						if to.IPBlock != nil && to.IPBlock.CIDR == "169.254.170.23/32" {
							for _, p := range r.Ports {
								podIdentity = podIdentity || (p.Port != nil && p.Port.IntValue() == 80)
							}
						}
					}
				}
				if !podIdentity {
					t.Error("egress to the EKS Pod Identity agent 169.254.170.23:80 is not allowed")
				}
			})

			sa := typedOfKind[corev1.ServiceAccount](t, objs, "ServiceAccount")
			if _, ok := sa.Annotations["eks.amazonaws.com/role-arn"]; !ok || pod.ServiceAccountName != sa.Name {
				t.Errorf("pod runs as %q; want the ServiceAccount %s with the IRSA annotation", pod.ServiceAccountName, sa.Name)
			}
		})
	}

	t.Run("ProductionDatabaseEgressNarrowed", func(t *testing.T) {
		np := typedOfKind[networkingv1.NetworkPolicy](t, renderKustomization(t, "overlays/production"), "NetworkPolicy")
		rules := 0
		for _, r := range np.Spec.Egress {
			if !slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.IntValue() == 5432 }) {
				continue
			}
			rules++
			if len(r.To) == 0 {
				t.Error("egress on 5432 has no `to`: it is open to every address")
			}
			for _, to := range r.To {
				switch {
				case to.IPBlock == nil:
					t.Errorf("egress on 5432 to %+v; want only ipBlocks (the database's CIDR)", to)
				case to.IPBlock.CIDR == "0.0.0.0/0" || to.IPBlock.CIDR == "::/0":
					t.Errorf("egress on 5432 to %s; want the database's CIDR", to.IPBlock.CIDR)
				}
			}
		}
		if rules == 0 {
			t.Error("no egress rule on 5432: the server cannot reach PostgreSQL")
		}
	})

	t.Run("ProductionServiceMonitorScrapesAdmin", func(t *testing.T) {
		sm := oneOfKind(t, renderKustomization(t, "overlays/production"), "ServiceMonitor")
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) != 1 || eps[0].(map[string]any)["port"] != "admin" {
			t.Errorf("ServiceMonitor endpoints %v; want the admin port", eps)
		}
	})
}

func podContainer(t *testing.T, cs []corev1.Container, name string) *corev1.Container {
	t.Helper()
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

func envVar(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// containerPort resolves a named or numbered port of c; 0 when unknown.
func containerPort(c *corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

func servicePort(t *testing.T, svc *corev1.Service, p networkingv1.ServiceBackendPort) corev1.ServicePort {
	t.Helper()
	for _, sp := range svc.Spec.Ports {
		if (p.Name != "" && sp.Name == p.Name) || (p.Name == "" && sp.Port == p.Number) {
			return sp
		}
	}
	t.Fatalf("Service %s has no port %+v", svc.Name, p)
	return corev1.ServicePort{}
}

// emptyDirAt returns the sizeLimit of the emptyDir c mounts at dir (nil when
// none is, or it has no limit).
func emptyDirAt(t *testing.T, pod corev1.PodSpec, c *corev1.Container, dir string) *resource.Quantity {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) != filepath.Clean(dir) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				return v.EmptyDir.SizeLimit
			}
		}
	}
	return nil
}

func pathMatches(p networkingv1.HTTPIngressPath, path string) bool {
	if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
		return p.Path == path
	}
	prefix := strings.TrimSuffix(p.Path, "/")
	return prefix == "" || path == prefix || strings.HasPrefix(path, prefix+"/")
}

func tlsCovers(tls []networkingv1.IngressTLS, host string) bool {
	for _, t := range tls {
		if t.SecretName != "" && slices.Contains(t.Hosts, host) {
			return true
		}
	}
	return false
}

func configDuration(t *testing.T, data map[string]string, name string, def time.Duration) time.Duration {
	t.Helper()
	s, ok := data[name]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

func firstBool(vs ...*bool) bool {
	for _, v := range vs {
		if v != nil {
			return *v
		}
	}
	return false
}

func valueOf[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// serviceMonitorCRD is the smallest ServiceMonitor CRD (of the Prometheus
// Operator's monitoring.coreos.com/v1) with a structural schema of just the
// fields the overlay uses, so a misspelt field still fails strict validation.
const serviceMonitorCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            spec:
              type: object
              required: [selector, endpoints]
              properties:
                selector:
                  type: object
                  properties:
                    matchLabels: {type: object, additionalProperties: {type: string}}
                namespaceSelector:
                  type: object
                  properties:
                    matchNames: {type: array, items: {type: string}}
                endpoints:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: string}
                      path: {type: string}
                      interval: {type: string}
                      scheme: {type: string}
`

// warningLog collects the API server's warning headers (Pod Security's
// warn-level findings on Deployments arrive as warnings, not errors).
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// dryRunServer is a started test kube-apiserver with the clients the test
// uses.
type dryRunServer struct {
	dyn      dynamic.Interface
	mapper   meta.ResettableRESTMapper
	warnings *warningLog
}

func mustDryRunServer(t *testing.T) *dryRunServer {
	t.Helper()
	k8stest.QuietClientGo()
	c, err := k8stest.Start(k8stest.Options{})
	if err != nil {
		t.Fatalf("a Kubernetes API server is needed: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
	})
	cfg := c.Config(k8stest.UserAdmin)
	w := &warningLog{}
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &dryRunServer{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), warnings: w}
}

// client returns the resource client of u's kind, in its namespace when
// namespaced.
func (s *dryRunServer) client(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return s.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return s.dyn.Resource(m.Resource), nil
}

var dryRunStrict = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}

// installServiceMonitorCRD creates the CRD and waits until its kind is
// served; the deadline only catches a hang.
func (s *dryRunServer) installServiceMonitorCRD(t *testing.T, ctx context.Context) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(serviceMonitorCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	crds := s.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("create ServiceMonitor CRD: %v", err)
	}
	gk := schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}
	deadline := time.Now().Add(time.Minute)
	for {
		s.mapper.Reset()
		_, err := s.mapper.RESTMapping(gk, "v1")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceMonitor CRD not served after a minute: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ensureNamespace creates a rendered Namespace for real (strictly
// validated) so Pod Security admission applies to what follows; when it
// exists already (another kustomization rendered it), its labels must match.
func (s *dryRunServer) ensureNamespace(t *testing.T, ctx context.Context, ns *unstructured.Unstructured) {
	t.Helper()
	if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("Namespace %s: pod-security.kubernetes.io/enforce is %q; want restricted", ns.GetName(), got)
	}
	c, err := s.client(ns)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx, ns, metav1.CreateOptions{FieldValidation: "Strict"})
	if apierrors.IsAlreadyExists(err) {
		live, err := c.Get(ctx, ns.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range ns.GetLabels() {
			if live.GetLabels()[k] != v {
				t.Errorf("Namespace %s label %s: live %q, rendered %q", ns.GetName(), k, live.GetLabels()[k], v)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("create Namespace %s: %v", ns.GetName(), err)
	}
}

// dryRun creates u with server-side dry-run and strict field validation,
// failing on an error or a warning.
func (s *dryRunServer) dryRun(t *testing.T, ctx context.Context, u *unstructured.Unstructured) {
	t.Helper()
	s.warnings.take()
	c, err := s.client(u)
	if err == nil {
		_, err = c.Create(ctx, u, dryRunStrict)
	}
	if err != nil {
		t.Errorf("%s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	for _, w := range s.warnings.take() {
		t.Errorf("%s %s/%s: warning: %s", u.GetKind(), u.GetNamespace(), u.GetName(), w)
	}
}

// podOf returns the Pod a Deployment's template makes, so Pod Security's
// enforce level (which admits Pods, not Deployments) judges it.
func podOf(t *testing.T, dep *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, d); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       d.Spec.Template.Spec,
	}
	pod.Name, pod.Namespace = d.Name+"-pod", d.Namespace
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestManifestsServerDryRun(t *testing.T) {
	ctx := t.Context()
	s := mustDryRunServer(t)
	s.installServiceMonitorCRD(t, ctx)

	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			objs := renderKustomization(t, dir)
			namespaces := 0
			for _, u := range objs {
				if u.GetKind() == "Namespace" {
					s.ensureNamespace(t, ctx, u)
					namespaces++
				}
			}
			if namespaces == 0 {
				t.Fatal("no Namespace rendered: Pod Security would not be checked")
			}
			for _, u := range objs {
				if u.GetKind() == "Namespace" {
					continue
				}
				if u.GetNamespace() == "" {
					if m, err := s.mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version); err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
						t.Errorf("%s %s has no namespace", u.GetKind(), u.GetName())
					}
				}
				s.dryRun(t, ctx, u)
				if u.GetKind() == "Deployment" {
					s.dryRun(t, ctx, podOf(t, u))
				}
			}
		})
	}

	// The checks above prove something only if the server does refuse:
	// Pod Security rejects a root pod in that namespace, and strict
	// validation an unknown field.
	t.Run("ServerRefusesViolations", func(t *testing.T) {
		rootPod := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "root", "namespace": "kukie"},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "c", "image": "busybox", "securityContext": map[string]any{"runAsUser": int64(0)},
			}}},
		}}
		typo := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "typo", "namespace": "kukie"},
			"dta":      map[string]any{"a": "b"},
		}}
		for _, u := range []*unstructured.Unstructured{rootPod, typo} {
			c, err := s.client(u)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Create(ctx, u, dryRunStrict)
			var status apierrors.APIStatus
			if !errors.As(err, &status) || !(apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)) {
				t.Errorf("%s %s: got %v; want the server to refuse it", u.GetKind(), u.GetName(), err)
			}
		}
		s.warnings.take()
	})
}
