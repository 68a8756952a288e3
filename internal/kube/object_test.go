package kube_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/service"
)

// interceptingAdmin connects to a real cluster as the admin; each request
// goes through intercept, which may answer it or pass it on to next.
type interceptingAdmin struct {
	cluster   *k8stest.Cluster
	intercept func(req *http.Request, next http.RoundTripper) (*http.Response, error)
}

func (a interceptingAdmin) RESTConfig(context.Context, service.Cluster) (*rest.Config, error) {
	cfg := a.cluster.Config(k8stest.UserAdmin)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) { return a.intercept(req, next) })
	})
	return cfg, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestRediscoveryAtMostOncePerWindow(t *testing.T) {
	ctx := context.Background()
	// Count discovery rounds: each reads GET /apis once (aggregated or not).
	var rounds atomic.Int64
	counter := interceptingAdmin{cluster: withArgo, intercept: func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodGet && req.URL.Path == "/apis" {
			rounds.Add(1)
		}
		return next.RoundTrip(req)
	}}
	clock := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	r, err := kube.NewReader(counter, kube.ReaderOptions{Timeout: 10 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c := service.Cluster{ID: "c", TeamID: "t"}
	group := "t" + randomHex(t) + ".kukie.example" // a new group on every run (-count)
	widget := service.ResourceRef{Group: group, Kind: "Widget", Namespace: "default", Name: "w"}
	read := func(ref service.ResourceRef) error {
		t.Helper()
		_, err := r.ReadObject(ctx, c, ref)
		return err
	}
	wantRounds := func(step string, want int64) {
		t.Helper()
		if got := rounds.Load(); got != want {
			t.Fatalf("%s: %d discovery rounds, want %d", step, got, want)
		}
	}

	if err := read(service.ResourceRef{Kind: "deploy", Namespace: "sandbox-plain", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	wantRounds("first read", 1)

	// Unknown kinds, again and again: one rediscovery, then none in the window.
	for range 5 {
		if err := read(widget); service.ErrorReason(err) != kube.ReasonKindUnknown {
			t.Fatalf("unknown kind: %v, want %s", err, kube.ReasonKindUnknown)
		}
		if err := read(service.ResourceRef{Kind: "gizmos", Name: "g"}); service.ErrorReason(err) != kube.ReasonKindUnknown {
			t.Fatalf("unknown kind: %v, want %s", err, kube.ReasonKindUnknown)
		}
	}
	wantRounds("ten unknown-kind reads", 2)

	// The CRD appears; inside the window the cached discovery still stands.
	mustInstallCRD(t, withArgo, group, "widgets", "Widget")
	clock.Advance(29 * time.Second)
	if err := read(widget); service.ErrorReason(err) != kube.ReasonKindUnknown {
		t.Fatalf("inside the window: %v, want %s", err, kube.ReasonKindUnknown)
	}
	wantRounds("inside the window", 2)

	// Past the window the next miss rediscovers and finds the new kind.
	clock.Advance(2 * time.Second)
	info, err := r.ReadObject(ctx, c, widget)
	if err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if info.Group != group || info.Kind != "Widget" || info.Found {
		t.Errorf("after the window: %+v", info)
	}
	wantRounds("after the window", 3)

	// That rediscovery opened a new window.
	for range 3 {
		if err := read(service.ResourceRef{Kind: "gizmos", Name: "g"}); service.ErrorReason(err) != kube.ReasonKindUnknown {
			t.Fatalf("unknown kind: %v", err)
		}
	}
	wantRounds("unknown kinds in the new window", 3)
	clock.Advance(31 * time.Second)
	if err := read(service.ResourceRef{Kind: "gizmos", Name: "g"}); service.ErrorReason(err) != kube.ReasonKindUnknown {
		t.Fatalf("unknown kind: %v", err)
	}
	wantRounds("an unknown kind past the new window", 4)
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// mustInstallCRD creates a namespaced CRD, waits until the API server's
// discovery serves it, and deletes it when the test ends.
func mustInstallCRD(t *testing.T, c *k8stest.Cluster, group, plural, kind string) {
	t.Helper()
	cfg := c.Config(k8stest.UserAdmin)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	ctx := context.Background()
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(crdGVR).Delete(ctx, plural+"."+group, metav1.DeleteOptions{}) })
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second) // only catches a hang
	for {
		// The same calls the reader's discovery makes (/api and /apis).
		_, lists, err := disc.ServerGroupsAndResources()
		if err == nil && slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool {
			return l.GroupVersion == group+"/v1" &&
				slices.ContainsFunc(l.APIResources, func(a metav1.APIResource) bool { return a.Name == plural })
		}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s.%s not served after 60 s: %v", plural, group, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestReadObjectManagedFields: an object's metadata.managedFields come back
// with manager, operation and the raw fieldsV1 tree, for Argo CD's
// server-side apply and for an update after a client-side apply.
func TestReadObjectManagedFields(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(withArgo.Config(k8stest.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	cms := dyn.Resource(configMapGVR).Namespace("sandbox-plain")
	suffix := randomHex(t) // new names on every run (-count)
	configMap := func(name, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "sandbox-plain"},
			"data":     map[string]any{"mode": value},
		}}
	}
	ssa, csa := "ssa-"+suffix, "csa-"+suffix
	if _, err := cms.Apply(ctx, ssa, configMap(ssa, "a"), metav1.ApplyOptions{FieldManager: "argocd-controller", Force: true}); err != nil {
		t.Fatal(err)
	}
	// Client-side apply: kubectl creates with its own manager; Argo CD's
	// later client-side sync is an update by argocd-controller.
	created, err := cms.Create(ctx, configMap(csa, "a"), metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["data"] = map[string]any{"mode": "a", "level": "b"}
	if _, err := cms.Update(ctx, created, metav1.UpdateOptions{FieldManager: "argocd-controller"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cms.Delete(ctx, ssa, metav1.DeleteOptions{})
		_ = cms.Delete(ctx, csa, metav1.DeleteOptions{})
	})

	r, clusters, _ := mustReader(t, 10*time.Second, kubeconfig(t, withArgo, k8stest.UserAdmin))
	read := func(name string) service.ObjectInfo {
		t.Helper()
		info, err := r.ReadObject(ctx, clusters[0], service.ResourceRef{Kind: "cm", Namespace: "sandbox-plain", Name: name})
		if err != nil || !info.Found {
			t.Fatalf("read %s: %+v, %v", name, info, err)
		}
		return info
	}
	type entry struct{ manager, operation, field string }
	cases := []struct {
		name string
		want []entry
	}{
		{ssa, []entry{{"argocd-controller", "Apply", `"f:mode"`}}},
		{csa, []entry{{"kubectl-client-side-apply", "Update", `"f:mode"`}, {"argocd-controller", "Update", `"f:level"`}}},
	}
	for _, c := range cases {
		t.Run(c.name[:3], func(t *testing.T) {
			got := read(c.name).ManagedFields
			if len(got) != len(c.want) {
				t.Fatalf("managedFields = %+v, want %d entries", got, len(c.want))
			}
			for _, w := range c.want { // the API server orders entries as it likes
				i := slices.IndexFunc(got, func(e service.ManagedFieldsEntry) bool { return e.Manager == w.manager })
				if i < 0 {
					t.Errorf("no entry of %s in %+v", w.manager, got)
					continue
				}
				if g := got[i]; g.Operation != w.operation || !strings.Contains(string(g.FieldsV1), w.field) {
					t.Errorf("%s: {%s %s}, want %s with %s", w.manager, g.Operation, g.FieldsV1, w.operation, w.field)
				}
			}
		})
	}
}
