package ownership

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// stubObjects answers from a map; names in block never answer, names in
// fail fail at once.
type stubObjects struct {
	objects map[string]service.ObjectInfo
	block   map[string]bool
	fail    map[string]error
}

func (s stubObjects) ReadObject(ctx context.Context, _ service.Cluster, ref service.ResourceRef) (service.ObjectInfo, error) {
	if s.block[ref.Name] {
		select {} // a read that ignores its context, as discovery does
	}
	if err := s.fail[ref.Name]; err != nil {
		return service.ObjectInfo{}, err
	}
	info, ok := s.objects[ref.Name]
	if !ok {
		return service.ObjectInfo{Kind: "Deployment", Group: "apps", Namespace: ref.Namespace, Name: ref.Name, Namespaced: true}, nil
	}
	return info, nil
}

func TestBudgetHoldsWhenReadsHang(t *testing.T) {
	// Reads that never return: Detect itself returns when the budget runs
	// out (a hang would be caught by the test binary's deadline).
	d := &Detector{Objects: stubObjects{block: map[string]bool{"a": true, "b": true}}, Budget: 100 * time.Millisecond, Now: time.Now}
	o := d.Detect(context.Background(), service.Cluster{AccessLevel: service.AccessLimited},
		[]service.ResourceRef{{Kind: "deploy", Name: "a"}, {Kind: "deploy", Name: "b"}}, "ko")
	if o.Skipped == nil || o.Skipped.Reason != "cluster_unreachable" || o.Checked != 0 {
		t.Errorf("nothing answered: %+v", o)
	}

	// One read answers at once, one hangs: the hanging one ran out of
	// budget. The budget is generous so the answering read is always in.
	d = &Detector{Objects: stubObjects{block: map[string]bool{"b": true}}, Budget: 2 * time.Second, Now: time.Now}
	o = d.Detect(context.Background(), service.Cluster{AccessLevel: service.AccessLimited},
		[]service.ResourceRef{{Kind: "deploy", Name: "a"}, {Kind: "deploy", Name: "b"}}, "ko")
	if o.Skipped == nil || o.Skipped.Reason != "budget_exceeded" || o.Checked != 1 || len(o.Unmanaged) != 1 ||
		o.Unmanaged[0].Reason != "object_not_found" {
		t.Errorf("one of two answered: %+v (skipped %+v)", o, o.Skipped)
	}
}

func TestLimitedClusterUsesAnnotation(t *testing.T) {
	objects := stubObjects{objects: map[string]service.ObjectInfo{
		"web": {Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web", Namespaced: true, Found: true,
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:ns/web"}},
		"copy": {Group: "apps", Kind: "Deployment", Namespace: "other", Name: "copy", Namespaced: true, Found: true,
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:ns/web"}},
	}}
	d := &Detector{Objects: objects, Now: time.Now}
	o := d.Detect(context.Background(), service.Cluster{AccessLevel: service.AccessLimited, ArgoCDNamespace: "argocd"},
		[]service.ResourceRef{{Kind: "deploy", Namespace: "ns", Name: "web"}, {Kind: "deploy", Namespace: "other", Name: "copy"}}, "en")
	if o.ArgoCD == nil || o.ArgoCD.Level != service.LevelUnknown || len(o.ArgoCD.Resources) != 1 ||
		o.ArgoCD.Resources[0].Application != "shop" || len(o.ArgoCD.Applications) != 0 {
		t.Fatalf("argocd = %+v", o.ArgoCD)
	}
	if len(o.Unmanaged) != 1 || o.Unmanaged[0].Reason != "copied_annotation" {
		t.Errorf("unmanaged = %+v", o.Unmanaged)
	}
	if len(o.Resolved) != 2 || o.Resolved[0].AppName != "shop" || o.Resolved[0].AppNamespace != "argocd" || o.Resolved[1].AppName != "" {
		t.Errorf("resolved = %+v", o.Resolved)
	}
	if o.ArgoCD.Warning != argocd.Warning(service.LevelUnknown, "en") {
		t.Errorf("warning = %q", o.ArgoCD.Warning)
	}
}

// appsReader serves fixed Applications, read from one namespace only when
// onlyNamespace is set.
type appsReader struct {
	apps          []service.Application
	onlyNamespace string
}

func (r appsReader) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return service.AppRead{Apps: r.apps, OnlyNamespace: r.onlyNamespace}, nil
}

func mustSnapshots(t *testing.T, r service.ApplicationReader) *service.SnapshotCache {
	t.Helper()
	c, err := service.NewSnapshotCache(r, 8, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func annotated(kind, ns, name, app string) service.ObjectInfo {
	group := "apps"
	if kind == "ConfigMap" {
		group = ""
	}
	return service.ObjectInfo{Group: group, Kind: kind, Namespace: ns, Name: name, Namespaced: true, Found: true,
		Annotations: map[string]string{"argocd.argoproj.io/tracking-id": app + ":" + group + "/" + kind + ":" + ns + "/" + name}}
}

// TestNamespaceOnlyReadExplainsMissingApp: when only Argo CD's namespace
// could be read, an app elsewhere is unseen — not "in another cluster".
func TestNamespaceOnlyReadExplainsMissingApp(t *testing.T) {
	objects := stubObjects{objects: map[string]service.ObjectInfo{"api": annotated("Deployment", "payments", "api", "team-apps_payments")}}
	cl := service.Cluster{TeamID: "t", ID: "c", AccessLevel: service.AccessFull, ArgoCDNamespace: "argocd"}
	d := &Detector{Objects: objects, Snapshots: mustSnapshots(t, appsReader{onlyNamespace: "argocd"}), Now: time.Now}
	o := d.Detect(context.Background(), cl, []service.ResourceRef{{Kind: "deploy", Namespace: "payments", Name: "api"}}, "en")
	if o.ArgoCD == nil || o.ArgoCD.Level != service.LevelUnknown {
		t.Fatalf("argocd = %+v", o.ArgoCD)
	}
	reason := o.ArgoCD.Resources[0].Reason
	if !strings.Contains(reason, "only in namespace argocd") || strings.Contains(reason, "another cluster") {
		t.Errorf("reason = %q", reason)
	}
	d.Snapshots = mustSnapshots(t, appsReader{})
	o = d.Detect(context.Background(), cl, []service.ResourceRef{{Kind: "deploy", Namespace: "payments", Name: "api"}}, "en")
	if reason := o.ArgoCD.Resources[0].Reason; !strings.Contains(reason, "another cluster") {
		t.Errorf("cluster-wide read, app absent: reason = %q", reason)
	}
}

// TestRecheckKeepsStrongerFindings: a recheck that could not read every
// target keeps the earlier warning joined with what it found — the
// stronger level and both resources — marks recheck_skipped, and keeps the
// earlier checked_at; a complete recheck replaces the warning.
func TestRecheckKeepsStrongerFindings(t *testing.T) {
	apps := []service.Application{{ID: "shop", Name: "shop", Namespace: "argocd", AutoSync: true, SelfHeal: true,
		Level: service.LevelSelfHeal}}
	objects := stubObjects{
		objects: map[string]service.ObjectInfo{"web": annotated("Deployment", "ns", "web", "shop")},
		fail: map[string]error{"db": service.ReasonError(service.EFORBIDDEN, "argocd_forbidden",
			"Kukie's role may not read this object.")},
	}
	cl := service.Cluster{TeamID: "t", ID: "c", AccessLevel: service.AccessFull, ArgoCDNamespace: "argocd"}
	earlierAt := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	earlier := &service.ArgoCDWarning{Summary: "s", Level: service.LevelAutoSync, CheckedAt: earlierAt,
		Applications: []service.OwnershipApp{{Name: "db-app", Namespace: "argocd"}},
		Resources:    []service.OwnershipResource{{Group: "apps", Kind: "StatefulSet", Namespace: "ns", Name: "db", Application: "db-app", Level: service.LevelAutoSync}}}
	d := &Detector{Objects: objects, Snapshots: mustSnapshots(t, appsReader{apps: apps}), Budget: 2 * time.Second, Now: time.Now}
	targets := []service.ResourceRef{{Kind: "deploy", Namespace: "ns", Name: "web"}, {Kind: "sts", Namespace: "ns", Name: "db"}}
	o := d.Recheck(context.Background(), cl, targets, earlier, "en")
	w := o.ArgoCD
	if o.Skipped == nil || w == nil || w.RecheckSkipped == nil || w.RecheckSkipped.Reason != "argocd_forbidden" {
		t.Fatalf("partial recheck: skipped %+v argocd %+v", o.Skipped, w)
	}
	if w.Level != service.LevelSelfHeal || len(w.Resources) != 2 || len(w.Applications) != 2 || !w.CheckedAt.Equal(earlierAt) {
		t.Errorf("kept warning = %+v", w)
	}
	if w.Warning != argocd.Warning(service.LevelSelfHeal, "en") {
		t.Errorf("warning = %q", w.Warning)
	}
	if len(o.Resolved) != 2 || !o.Resolved[0].Checked || o.Resolved[0].AppName != "shop" || o.Resolved[1].Checked {
		t.Errorf("resolved = %+v", o.Resolved)
	}

	// Everything read: the fresh answer stands alone.
	d.Objects = stubObjects{objects: objects.objects}
	o = d.Recheck(context.Background(), cl, targets[:1], earlier, "en")
	if o.Skipped != nil || o.ArgoCD == nil || o.ArgoCD.RecheckSkipped != nil || len(o.ArgoCD.Resources) != 1 || o.ArgoCD.CheckedAt.Equal(earlierAt) {
		t.Errorf("complete recheck = %+v", o.ArgoCD)
	}
	// Nothing known before and nothing found now: no warning, even partial.
	d.Objects = objects
	if o = d.Recheck(context.Background(), cl, targets[1:], nil, "en"); o.ArgoCD != nil {
		t.Errorf("partial recheck with nothing to keep = %+v", o.ArgoCD)
	}
}
