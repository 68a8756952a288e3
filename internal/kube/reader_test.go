package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

// Two real API servers for the package: one with Argo CD's CRD and the
// fixtures, one without the CRD.
var withArgo, withoutArgo *k8stest.Cluster

func TestMain(m *testing.M) {
	k8stest.QuietClientGo()
	var err error
	if withArgo, err = k8stest.Start(k8stest.Options{ArgoCD: true}); err != nil {
		fmt.Fprintln(os.Stderr, "kube tests need a Kubernetes API server:", err)
		os.Exit(1)
	}
	if withoutArgo, err = k8stest.Start(k8stest.Options{}); err != nil {
		_ = withArgo.Stop()
		fmt.Fprintln(os.Stderr, "kube tests need a Kubernetes API server:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = withArgo.Stop()
	_ = withoutArgo.Stop()
	if bench.cluster != nil {
		_ = bench.cluster.Stop()
	}
	os.Exit(code)
}

// counter counts LIST calls by outcome.
type counter struct{ ok, failed atomic.Int64 }

func (c *counter) ObserveList(outcome string, _ time.Duration) {
	if outcome == "ok" {
		c.ok.Add(1)
	} else {
		c.failed.Add(1)
	}
}

// mustReader registers one static cluster per kubeconfig (ids in order) and
// returns a reader for them.
func mustReader(t testing.TB, timeout time.Duration, kubeconfigs ...[]byte) (*kube.Reader, []service.Cluster, *counter) {
	t.Helper()
	dir := t.TempDir()
	var file strings.Builder
	file.WriteString("clusters:\n")
	for i, kc := range kubeconfigs {
		path := filepath.Join(dir, fmt.Sprintf("kubeconfig-%d", i))
		if err := os.WriteFile(path, kc, 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&file, "  - {id: c%d, team: t1, kubeconfig: %s, access_level: full}\n", i, path)
	}
	clustersFile := filepath.Join(dir, "clusters.yaml")
	if err := os.WriteFile(clustersFile, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	clusters, conn, err := kube.LoadStaticClusters(clustersFile)
	if err != nil {
		t.Fatal(err)
	}
	obs := &counter{}
	r, err := kube.NewReader(conn, kube.ReaderOptions{Timeout: timeout, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return r, clusters, obs
}

func kubeconfig(t testing.TB, c *k8stest.Cluster, user string) []byte {
	t.Helper()
	b, err := c.Kubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestListApplications(t *testing.T) {
	r, clusters, obs := mustReader(t, 5*time.Second, kubeconfig(t, withArgo, k8stest.UserAdmin))
	read, err := r.ListApplications(context.Background(), clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	apps := read.Apps
	if read.OnlyNamespace != "" {
		t.Errorf("an admin's read was limited to namespace %q", read.OnlyNamespace)
	}
	ids := map[string]service.Application{}
	for _, a := range apps {
		ids[a.ID] = a
	}
	for _, id := range []string{"sandbox-plain", "sandbox-kustomize", "sandbox-helm", "billing", "checkout",
		"analytics", "cache", "team-apps_payments", "batch", "legacy", "broken-types", "broken-rows"} {
		if _, ok := ids[id]; !ok {
			t.Errorf("app %s missing from %d apps", id, len(apps))
		}
	}
	if len(apps) != 12 {
		t.Errorf("%d apps, want 12", len(apps))
	}
	if a := ids["sandbox-plain"]; !a.SelfHeal || !a.AutoSync || len(a.Resources) != 2 || len(a.History) != 2 {
		t.Errorf("sandbox-plain = %+v", a)
	}
	if a := ids["sandbox-helm"]; !a.AutoSync || a.SelfHeal || a.SyncStatus != "OutOfSync" {
		t.Errorf("sandbox-helm = %+v", a)
	}
	if a := ids["cache"]; len(a.Sources) != 2 || a.AutoSync {
		t.Errorf("multi-source cache (automated.enabled=false) = %+v", a)
	}
	if a := ids["broken-rows"]; len(a.Resources) != 1 || a.Resources[0].Name != "ok-row" {
		t.Errorf("broken-rows resources = %+v", a.Resources)
	}
	if obs.ok.Load() != 1 {
		t.Errorf("%d successful LIST calls observed, want 1", obs.ok.Load())
	}
}

func TestNamespaceFallback(t *testing.T) {
	// This user may list Applications in argocd only: the cluster-wide LIST
	// is forbidden, the namespaced one works, and apps elsewhere are not seen.
	r, clusters, _ := mustReader(t, 5*time.Second, kubeconfig(t, withArgo, k8stest.UserArgoCDReader))
	read, err := r.ListApplications(context.Background(), clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	apps := read.Apps
	if read.OnlyNamespace != "argocd" {
		t.Errorf("OnlyNamespace = %q after the namespace fallback, want argocd", read.OnlyNamespace)
	}
	if len(apps) != 11 {
		t.Errorf("%d apps through the namespace fallback, want the 11 in argocd", len(apps))
	}
	for _, a := range apps {
		if a.Namespace != "argocd" {
			t.Errorf("app %s from namespace %s", a.Name, a.Namespace)
		}
	}
}

func TestFailureClasses(t *testing.T) {
	closed := closedPortKubeconfig(t)
	silent := silentListenerKubeconfig(t)
	// Calls that get an answer have a generous per-call timeout (a real 403
	// plus discovery under -race on a busy machine); only the listener that
	// never answers needs a short one, and any length gives it the same class.
	const answers, silence = 20 * time.Second, 500 * time.Millisecond
	cases := []struct {
		name       string
		kubeconfig []byte
		timeout    time.Duration
		reason     service.Reason
		code       string
	}{
		{"LimitedUserOnArgoCluster", kubeconfig(t, withArgo, k8stest.UserLimited), answers, kube.ReasonForbidden, service.EFORBIDDEN},
		{"NobodyOnArgoCluster", kubeconfig(t, withArgo, k8stest.UserNobody), answers, kube.ReasonForbidden, service.EFORBIDDEN},
		{"AdminWithoutCRD", kubeconfig(t, withoutArgo, k8stest.UserAdmin), answers, kube.ReasonNotInstalled, service.ENOTFOUND},
		{"NobodyWithoutCRD", kubeconfig(t, withoutArgo, k8stest.UserNobody), answers, kube.ReasonNotInstalled, service.ENOTFOUND},
		{"ClosedPort", closed, answers, kube.ReasonUnreachable, service.EUPSTREAM},
		{"ListenerNeverAnswers", silent, silence, kube.ReasonUnreachable, service.EUPSTREAM},
		{"BadCredentials", badTokenKubeconfig(t), answers, kube.ReasonUnreachable, service.EUPSTREAM},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, clusters, obs := mustReader(t, c.timeout, c.kubeconfig)
			_, err := r.ListApplications(context.Background(), clusters[0])
			if got := service.ErrorReason(err); got != c.reason || service.ErrorCode(err) != c.code {
				t.Fatalf("reason %q code %q (%v), want %q %q", got, service.ErrorCode(err), err, c.reason, c.code)
			}
			if obs.failed.Load() != 1 {
				t.Errorf("%d failed LIST calls observed, want 1", obs.failed.Load())
			}
		})
	}
}

func TestUnreachableMessageHidesTheServer(t *testing.T) {
	// client-go's error text names the API server's URL: clients get the
	// code and a fixed sentence, the cause stays in the wrapped error for
	// the log.
	addr := k8stest.ClosedAddr(t)
	r, clusters, _ := mustReader(t, 2*time.Second, k8stest.TokenKubeconfig("https://"+addr, "x"))
	ctx := context.Background()
	_, listErr := r.ListApplications(ctx, clusters[0])
	_, objectErr := r.ReadObject(ctx, clusters[0], service.ResourceRef{Kind: "deploy", Namespace: "default", Name: "web"})
	for _, c := range []struct {
		name string
		err  error
	}{{"ListApplications", listErr}, {"ReadObject", objectErr}} {
		t.Run(c.name, func(t *testing.T) {
			if service.ErrorReason(c.err) != kube.ReasonUnreachable || service.ErrorCode(c.err) != service.EUPSTREAM {
				t.Fatalf("reason %q code %q (%v), want %s", service.ErrorReason(c.err), service.ErrorCode(c.err), c.err, kube.ReasonUnreachable)
			}
			if msg := service.ErrorMessage(c.err); strings.Contains(msg, addr) || strings.Contains(msg, "127.0.0.1") {
				t.Errorf("message %q shows the API server's address %s", msg, addr)
			}
			if cause := errors.Unwrap(c.err); cause == nil || !strings.Contains(cause.Error(), addr) {
				t.Errorf("the wrapped cause %v should carry the address for the log", cause)
			}
		})
	}
}

// closedPortKubeconfig points at a port nothing listens on.
func closedPortKubeconfig(t *testing.T) []byte {
	return k8stest.TokenKubeconfig("https://"+k8stest.ClosedAddr(t), "x")
}

// silentListenerKubeconfig points at a listener that accepts connections
// and never answers.
func silentListenerKubeconfig(t *testing.T) []byte {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return k8stest.TokenKubeconfig("https://"+ln.Addr().String(), "x")
}

// badTokenKubeconfig reaches the real server with a token it rejects (401).
func badTokenKubeconfig(t *testing.T) []byte {
	return k8stest.TokenKubeconfig(withArgo.Host(), "not-a-valid-token")
}
