package kube_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/discovery"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/service"
)

func TestClusterVersion(t *testing.T) {
	ctx := context.Background()
	var requests atomic.Int64 // every request the reader makes
	counting := interceptingAdmin{cluster: withArgo, intercept: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		requests.Add(1)
		return next.RoundTrip(req)
	}}
	clock := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	r, err := kube.NewReader(counting, kube.ReaderOptions{Timeout: 20 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c := service.Cluster{ID: "c", TeamID: "t"}

	version, apiVersions, err := r.ClusterVersion(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustServerVersion(t, withArgo); version != want {
		t.Errorf("version %q, want the API server's %q", version, want)
	}
	for _, want := range []string{"v1", "v1/ConfigMap", "apps/v1", "apps/v1/Deployment", "argoproj.io/v1alpha1/Application"} {
		if !slices.Contains(apiVersions, want) {
			t.Errorf("API versions lack %q: %v", want, apiVersions)
		}
	}
	// As Argo CD: only kinds that can be listed and watched, so no
	// subresource kinds and no group version of create-only reviews.
	for _, unwanted := range []string{"apps/v1/Scale", "v1/Binding", "authorization.k8s.io/v1"} {
		if slices.Contains(apiVersions, unwanted) {
			t.Errorf("API versions hold %q, which Argo CD leaves out", unwanted)
		}
	}
	if !slices.IsSorted(apiVersions) || len(slices.Compact(slices.Clone(apiVersions))) != len(apiVersions) {
		t.Errorf("API versions not sorted and unique: %v", apiVersions)
	}
	if requests.Load() == 0 {
		t.Fatal("the first call made no request")
	}

	// Within the window: the same answer and not one request, even with
	// a kind installed meanwhile.
	group := "v" + randomHex(t) + ".kukie.example"
	mustInstallCRD(t, withArgo, group, "gadgets", "Gadget")
	requests.Store(0)
	clock.Advance(10*time.Minute - time.Second)
	for range 3 {
		v2, a2, err := r.ClusterVersion(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if v2 != version {
			t.Errorf("cached version %q, want %q", v2, version)
		}
		if diff := cmp.Diff(apiVersions, a2); diff != "" {
			t.Errorf("cached API versions differ (-first +cached):\n%s", diff)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests within the cache window, want 0", n)
	}

	// Past the window both are read again, and the new kind shows.
	clock.Advance(time.Second)
	_, a3, err := r.ClusterVersion(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if requests.Load() == 0 {
		t.Error("no request past the cache window")
	}
	if want := group + "/v1/Gadget"; !slices.Contains(a3, want) {
		t.Errorf("API versions past the window lack %q", want)
	}
}

// mustServerVersion asks the API server its version directly.
func mustServerVersion(t *testing.T, c *k8stest.Cluster) string {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config(k8stest.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	info, err := disc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return info.GitVersion
}

func TestClusterVersionFailures(t *testing.T) {
	forbid := func(path string) kube.ClusterConnector {
		return interceptingAdmin{cluster: withArgo, intercept: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
			if req.URL.Path != path {
				return next.RoundTrip(req)
			}
			body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"}`
			return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Request: req,
				Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
		}}
	}
	withConnector := func(conn kube.ClusterConnector) func(t *testing.T) (*kube.Reader, service.Cluster) {
		return func(t *testing.T) (*kube.Reader, service.Cluster) {
			r, err := kube.NewReader(conn, kube.ReaderOptions{Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return r, service.Cluster{ID: "c", TeamID: "t"}
		}
	}
	withKubeconfig := func(kubeconfig func(t *testing.T) []byte) func(t *testing.T) (*kube.Reader, service.Cluster) {
		return func(t *testing.T) (*kube.Reader, service.Cluster) {
			r, clusters, _ := mustReader(t, 20*time.Second, kubeconfig(t))
			return r, clusters[0]
		}
	}
	cases := []struct {
		name   string
		reader func(t *testing.T) (*kube.Reader, service.Cluster)
		reason service.Reason
		code   string
	}{
		{"VersionForbidden", withConnector(forbid("/version")), kube.ReasonDiscoveryForbidden, service.EFORBIDDEN},
		{"DiscoveryForbidden", withConnector(forbid("/api")), kube.ReasonDiscoveryForbidden, service.EFORBIDDEN},
		{"ClosedPort", withKubeconfig(closedPortKubeconfig), kube.ReasonUnreachable, service.EUPSTREAM},
		{"BadCredentials", withKubeconfig(badTokenKubeconfig), kube.ReasonUnreachable, service.EUPSTREAM},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, cluster := c.reader(t)
			_, _, err := r.ClusterVersion(context.Background(), cluster)
			if service.ErrorReason(err) != c.reason || service.ErrorCode(err) != c.code {
				t.Fatalf("reason %q code %q (%v), want %q %q", service.ErrorReason(err), service.ErrorCode(err), err, c.reason, c.code)
			}
		})
	}
}
