package ownership

import (
	"fmt"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// BenchmarkDetect500Apps is one detection of five targets against a cached
// snapshot of 500 apps with 20 status.resources each: three targets carry
// no tracking metadata and are looked up in the status.resources index (one
// listed, two listed nowhere), one carries a tracking annotation, one an
// instance label. The objects come from a stub, so this measures the
// decision work, not the cluster.
func BenchmarkDetect500Apps(b *testing.B) {
	apps := make([]service.Application, 0, 500)
	for i := range 500 {
		rows := make([]map[string]any, 20)
		for j := range rows {
			rows[j] = map[string]any{"group": "apps", "kind": "Deployment", "namespace": fmt.Sprint("ns-", i), "name": fmt.Sprint("d-", j)}
		}
		apps = append(apps, app(b, fmt.Sprint("app-", i), map[string]any{"selfHeal": true}, nil, rows...))
	}
	objects := map[string]service.ObjectInfo{
		"listed":    {Group: "apps", Kind: "Deployment", Namespace: "ns-499", Name: "d-19", Namespaced: true, Found: true},
		"nowhere-1": {Group: "apps", Kind: "Deployment", Namespace: "ns-1", Name: "x", Namespaced: true, Found: true},
		"nowhere-2": {Group: "", Kind: "ConfigMap", Namespace: "ns-1", Name: "y", Namespaced: true, Found: true},
		"annotated": deployment("annotated", map[string]string{"argocd.argoproj.io/tracking-id": "app-7:apps/Deployment:ns/annotated"}, nil),
		"labelled":  {Group: "apps", Kind: "Deployment", Namespace: "ns-3", Name: "d-3", Namespaced: true, Found: true, Labels: map[string]string{service.DefaultInstanceLabelKey: "app-3"}},
	}
	d := detector(b, objects, stubApps{read: service.AppRead{Apps: apps}})
	targets := []service.ResourceRef{{Name: "listed"}, {Name: "nowhere-1"}, {Name: "nowhere-2"}, {Name: "annotated"}, {Name: "labelled"}}
	if o := d.Detect(b.Context(), full, targets, "en"); o.ArgoCD == nil || len(o.ArgoCD.Resources) != 3 || len(o.Unmanaged) != 2 {
		b.Fatalf("fixture: %+v", o)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d.Detect(b.Context(), full, targets, "en")
	}
}
