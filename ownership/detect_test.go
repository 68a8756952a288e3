package ownership

import (
	"context"
	"testing"
	"time"

	"github.com/kukie/gitops-server/service"
)

// stubObjects answers from a map; names in block never answer.
type stubObjects struct {
	objects map[string]service.ObjectInfo
	block   map[string]bool
}

func (s stubObjects) ReadObject(ctx context.Context, _ service.Cluster, ref service.ResourceRef) (service.ObjectInfo, error) {
	if s.block[ref.Name] {
		select {} // a read that ignores its context, as discovery does
	}
	info, ok := s.objects[ref.Name]
	if !ok {
		return service.ObjectInfo{Kind: "Deployment", Group: "apps", Namespace: ref.Namespace, Name: ref.Name, Namespaced: true}, nil
	}
	return info, nil
}

func TestBudgetHoldsWhenReadsHang(t *testing.T) {
	d := &Detector{Objects: stubObjects{block: map[string]bool{"a": true, "b": true}}, Budget: 100 * time.Millisecond, Now: time.Now}
	start := time.Now()
	o := d.Detect(context.Background(), service.Cluster{AccessLevel: service.AccessLimited},
		[]service.ResourceRef{{Kind: "deploy", Name: "a"}, {Kind: "deploy", Name: "b"}}, "ko")
	if time.Since(start) > 5*time.Second {
		t.Fatalf("detection waited %s for reads that never return", time.Since(start))
	}
	if o.Skipped == nil || o.Skipped.Reason != "cluster_unreachable" || o.Checked != 0 {
		t.Errorf("nothing answered: %+v", o)
	}

	// One read answers, one hangs: the hanging one ran out of budget.
	d = &Detector{Objects: stubObjects{block: map[string]bool{"b": true}}, Budget: 100 * time.Millisecond, Now: time.Now}
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
	if o.ArgoCD.Warning != Warning(service.LevelUnknown, "en") {
		t.Errorf("warning = %q", o.ArgoCD.Warning)
	}
}
