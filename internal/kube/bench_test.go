package kube_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/argocdtest"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

// benchApps is how many fixture Applications (3 status.resources rows
// each) the list benchmark's cluster holds besides the standard fixtures:
// a large Argo CD, one page.
const benchApps = 488

var applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// bench is an API server of its own for benchmarks, so the tests' exact
// app counts stay as they are; TestMain stops it.
var bench struct {
	once    sync.Once
	cluster *k8stest.Cluster
	err     error
}

func benchCluster(b *testing.B) *k8stest.Cluster {
	b.Helper()
	bench.once.Do(func() {
		if bench.cluster, bench.err = k8stest.Start(k8stest.Options{ArgoCD: true}); bench.err != nil {
			return
		}
		dyn, err := dynamic.NewForConfig(bench.cluster.Config(k8stest.UserAdmin))
		if err != nil {
			bench.err = err
			return
		}
		for i := range benchApps {
			obj := argocdtest.Application(i, 3)
			meta := obj["metadata"].(map[string]any)
			for _, server := range []string{"uid", "resourceVersion", "generation", "creationTimestamp"} {
				delete(meta, server)
			}
			_, err := dyn.Resource(applications).Namespace("argocd").Create(context.Background(),
				&unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			if err != nil {
				bench.err = fmt.Errorf("create fixture app %d: %w", i, err)
				return
			}
		}
	})
	if bench.err != nil {
		b.Fatal("benchmarks need a Kubernetes API server:", bench.err)
	}
	return bench.cluster
}

// BenchmarkColdList compares a cold read of 500 Applications — no
// snapshot, the cluster's clients already connected — through
// Reader.ListApplications (paged raw LIST decoded item by item, plus the
// argocd-cm GET it makes within the same call) with a plain GET of the
// same list URL whose body is read to the end, and with the dynamic
// client's List (unstructured objects, before any parsing), which the
// reader used before. The three alternate within each iteration, so
// machine noise hits them alike; "ratio" is list-ms over raw-ms.
func BenchmarkColdList(b *testing.B) {
	c := benchCluster(b)
	ctx := context.Background()
	cfg := c.Config(k8stest.UserAdmin)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	url := strings.TrimSuffix(cfg.Host, "/") + "/apis/argoproj.io/v1alpha1/applications?limit=500"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r, clusters, _ := mustReader(b, time.Minute, kubeconfig(b, c, k8stest.UserAdmin))
	var raw, list, unstructuredList time.Duration
	var size int64
	var apps int
	for b.Loop() {
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		size, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status, err)
		}
		raw += time.Since(start)

		start = time.Now()
		read, err := r.ListApplications(ctx, clusters[0])
		if err != nil {
			b.Fatal(err)
		}
		apps = len(read.Apps)
		list += time.Since(start)

		start = time.Now()
		if _, err := dyn.Resource(applications).List(ctx, metav1.ListOptions{Limit: 500}); err != nil {
			b.Fatal(err)
		}
		unstructuredList += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(raw.Seconds()*1e3/n, "raw-ms")
	b.ReportMetric(list.Seconds()*1e3/n, "list-ms")
	b.ReportMetric(unstructuredList.Seconds()*1e3/n, "dynamic-ms")
	b.ReportMetric(float64(list)/float64(raw), "ratio")
	b.ReportMetric(float64(apps), "apps")
	b.ReportMetric(float64(size)/float64(apps), "json-B/app")
}

// distinctClusters connects every cluster to the same API server, each
// through its own transport as distinct clusters get (a custom dialer
// keeps client-go from sharing a cached transport).
type distinctClusters struct{ cfg *rest.Config }

func (d distinctClusters) RESTConfig(context.Context, service.Cluster) (*rest.Config, error) {
	cfg := rest.CopyConfig(d.cfg)
	cfg.Dial = (&net.Dialer{}).DialContext
	return cfg, nil
}

// BenchmarkClusterClientCost reports the heap one cluster's client set
// (REST, dynamic and discovery clients, memory cache, RESTMapper, its
// transport with the idle HTTP/2 connection it keeps) holds once the reader
// has listed the cluster's Applications ("B/cluster-idle"), and once an
// object read has also filled the discovery cache ("B/cluster-discovered"; the test API server serves only
// the built-in groups, a real cluster with many CRDs holds more).
// MaxClients' default follows from it.
func BenchmarkClusterClientCost(b *testing.B) {
	const clusters = 100
	ctx := context.Background()
	var idle, discovered float64
	for b.Loop() {
		var before, listed, objects runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, err := kube.NewReader(distinctClusters{withArgo.Config(k8stest.UserAdmin)}, kube.ReaderOptions{Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		all := make([]service.Cluster, clusters)
		for i := range all {
			all[i] = service.Cluster{ID: fmt.Sprint(i), TeamID: "t", ArgoCDNamespace: "argocd"}
			if _, err := r.ListApplications(ctx, all[i]); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&listed)
		for _, c := range all {
			if _, err := r.ReadObject(ctx, c, service.ResourceRef{Kind: "deploy", Namespace: "sandbox-plain", Name: "web"}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&objects)
		idle = float64(listed.HeapAlloc-before.HeapAlloc) / clusters
		discovered = float64(objects.HeapAlloc-before.HeapAlloc) / clusters
		runtime.KeepAlive(r)
	}
	b.ReportMetric(idle, "B/cluster-idle")
	b.ReportMetric(discovered, "B/cluster-discovered")
}
