package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSnapshotListing(t *testing.T) {
	apps := []Application{
		{ID: "crds", Name: "crds", Resources: []AppResource{
			{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
			{Group: "", Version: "v1", Kind: "Namespace", Name: "shop"},
		}},
		{ID: "shop", Name: "shop", Resources: []AppResource{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			{Group: "apps", Version: "v1beta1", Kind: "Deployment", Namespace: "shop", Name: "web"}, // the same object twice
			{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
		}},
		{ID: "shared", Name: "shared", Resources: []AppResource{
			{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
		}},
		{ID: "empty", Name: "empty"},
	}
	s := newSnapshot(AppRead{Apps: apps}, nil, time.Now())
	names := func(apps []Application) []string {
		var out []string
		for _, a := range apps {
			out = append(out, a.Name)
		}
		return out
	}
	cases := []struct {
		scenario                     string
		group, kind, namespace, name string
		want                         []string
	}{
		{"ClusterScopedCRD", "apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com", []string{"crds"}},
		{"CoreGroupClusterScoped", "", "Namespace", "", "shop", []string{"crds"}},
		{"ListedTwiceByOneApp", "apps", "Deployment", "shop", "web", []string{"shop"}},
		{"ListedByTwoApps", "", "ConfigMap", "shop", "settings", []string{"shared", "shop"}},
		{"ClusterScopedAskedWithNamespace", "", "Namespace", "default", "shop", nil},
		{"OtherGroup", "extensions", "Deployment", "shop", "web", nil},
		{"OtherNamespace", "apps", "Deployment", "other", "web", nil},
		{"KindIsExact", "apps", "deployment", "shop", "web", nil},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			if diff := cmp.Diff(c.want, names(s.Listing(c.group, c.kind, c.namespace, c.name))); diff != "" {
				t.Errorf("Listing (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("ResultIsACopy", func(t *testing.T) {
		got := s.Listing("", "ConfigMap", "shop", "settings")
		got[0].Name = "changed"
		if again := s.Listing("", "ConfigMap", "shop", "settings"); again[0].Name == "changed" {
			t.Error("a caller's change to the result reached the snapshot")
		}
	})
	t.Run("FailedRead", func(t *testing.T) {
		failed := newSnapshot(AppRead{}, ReasonError(EFORBIDDEN, "argocd_forbidden", "no"), time.Now())
		if got := failed.Listing("", "ConfigMap", "shop", "settings"); got != nil {
			t.Errorf("a failed read lists %v", names(got))
		}
	})
}

// TestSnapshotKeepsSettings: the read's argocd-cm settings reach the
// snapshot, also when the Applications could not be read.
func TestSnapshotKeepsSettings(t *testing.T) {
	settings := ArgoCDSettings{Read: true, InstallationID: "prod", InstanceLabelKey: "example.com/app"}
	for _, err := range []error{nil, ReasonError(EFORBIDDEN, "argocd_forbidden", "no")} {
		s := newSnapshot(AppRead{Settings: settings}, err, time.Now())
		if diff := cmp.Diff(settings, s.Settings); diff != "" {
			t.Errorf("err %v: settings (-want +got):\n%s", err, diff)
		}
	}
}

// TestCacheRemembersNotInstalled: a cluster without Argo CD is read at
// most once a minute, refresh or not; other failures still expire after
// FailureTTL.
func TestCacheRemembersNotInstalled(t *testing.T) {
	r := &countingReader{err: ReasonError(ENOTFOUND, ReasonArgoCDNotInstalled, "no Argo CD")}
	c, clock := newTestCache(t, r, 8)
	runCacheSteps(t, c, clock, r, ReasonArgoCDNotInstalled, []cacheStep{
		{0, false, 1},
		{2 * time.Second, true, 1},  // past the refresh floor and FailureTTL: served
		{57 * time.Second, true, 1}, // 59 s old: served
		{999 * time.Millisecond, false, 1},
		{time.Millisecond, true, 2},  // 60 s old: read again
		{30 * time.Second, false, 2}, // the new answer is remembered as long
	})
	// Argo CD installed in the meantime: once the answer expires, the next
	// read is a normal snapshot again, with the normal TTLs.
	r.err = nil
	runCacheSteps(t, c, clock, r, "", []cacheStep{
		{30 * time.Second, false, 3},
		{2 * time.Second, true, 4}, // a refresh past the floor reads
	})
}

// benchmarkApps returns n apps of m namespaced resources each, every
// object listed by exactly one app.
func benchmarkApps(n, m int) []Application {
	apps := make([]Application, n)
	for i := range apps {
		res := make([]AppResource, m)
		for j := range res {
			res[j] = AppResource{Group: "apps", Version: "v1", Kind: "Deployment",
				Namespace: fmt.Sprintf("ns-%d", i), Name: fmt.Sprintf("web-%d", j), Status: "Synced"}
		}
		apps[i] = Application{ID: fmt.Sprintf("app-%d", i), Name: fmt.Sprintf("app-%d", i),
			SyncStatus: "Synced", HealthStatus: "Healthy", Problems: []AppProblem{}, Resources: res}
	}
	return apps
}

// BenchmarkSnapshotListing: one Listing lookup on a snapshot of 500 apps
// × 20 resources (hits and misses alternating).
func BenchmarkSnapshotListing(b *testing.B) {
	s := newSnapshot(AppRead{Apps: benchmarkApps(500, 20)}, nil, time.Now())
	type ref struct{ ns, name string }
	refs := make([]ref, 0, 1000)
	for i := range 500 {
		refs = append(refs, ref{fmt.Sprintf("ns-%d", i), fmt.Sprintf("web-%d", i%20)}, ref{fmt.Sprintf("ns-%d", i), "absent"})
	}
	b.ReportAllocs()
	hits := 0
	for i := 0; b.Loop(); i++ {
		r := refs[i%len(refs)]
		hits += len(s.Listing("apps", "Deployment", r.ns, r.name))
	}
	if hits == 0 {
		b.Fatal("no lookup hit")
	}
}

// BenchmarkSnapshotBuild: building a snapshot of 500 apps × 20 resources,
// the index included (once per cluster read).
func BenchmarkSnapshotBuild(b *testing.B) {
	apps := benchmarkApps(500, 20)
	b.ReportAllocs()
	for b.Loop() {
		newSnapshot(AppRead{Apps: apps}, nil, time.Now())
	}
}
