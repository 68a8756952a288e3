package ownership

import (
	"context"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// stubApps answers every read with the same Applications and settings, or
// with err.
type stubApps struct {
	read service.AppRead
	err  error
}

func (s stubApps) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return s.read, s.err
}

// app parses an Application like the cluster holds it.
func app(t testing.TB, name string, automated map[string]any, annotations map[string]any, resources ...map[string]any) service.Application {
	t.Helper()
	rows := make([]any, len(resources))
	for i, r := range resources {
		rows[i] = r
	}
	spec := map[string]any{"project": "default"}
	if automated != nil {
		spec["syncPolicy"] = map[string]any{"automated": automated}
	}
	a, ok := argocd.ParseApplication(map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "argocd", "annotations": annotations},
		"spec":     spec, "status": map[string]any{"resources": rows},
	}, "argocd")
	if !ok {
		t.Fatal("fixture app did not parse")
	}
	return a
}

func detector(t testing.TB, objects map[string]service.ObjectInfo, reader service.ApplicationReader) *Detector {
	t.Helper()
	cache, err := service.NewSnapshotCache(reader, 8, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Detector{Objects: stubObjects{objects: objects}, Snapshots: cache, Now: time.Now}
}

var full = service.Cluster{ID: "c", TeamID: "t", AccessLevel: service.AccessFull, ArgoCDNamespace: "argocd"}

func deployment(name string, annotations, labels map[string]string, fields ...service.ManagedFieldsEntry) service.ObjectInfo {
	return service.ObjectInfo{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: name, Namespaced: true,
		Found: true, Annotations: annotations, Labels: labels, ManagedFields: fields}
}

func TestClassify(t *testing.T) {
	selfHeal := map[string]any{"selfHeal": true}
	crd := service.ObjectInfo{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition",
		Name: "widgets.example.com", Found: true}
	shop := app(t, "shop", selfHeal, nil,
		map[string]any{"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition", "name": "widgets.example.com"},
		map[string]any{"group": "apps", "kind": "Deployment", "namespace": "ns", "name": "labelled"},
		map[string]any{"group": "apps", "kind": "Deployment", "namespace": "ns", "name": "custom"})
	paused := app(t, "paused", nil, map[string]any{argocd.AnnotationSkipReconcile: "true"},
		map[string]any{"group": "apps", "kind": "Deployment", "namespace": "ns", "name": "skipped"})
	argoApplied := service.ManagedFieldsEntry{Manager: "argocd-controller", Operation: "Apply"}
	objects := map[string]service.ObjectInfo{
		"widgets.example.com": crd,
		"unlisted":            {Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "unlisted", Found: true},
		"labelled":            deployment("labelled", nil, map[string]string{service.DefaultInstanceLabelKey: "shop"}),
		"custom":              deployment("custom", nil, map[string]string{"team.example.com/app": "shop"}),
		"other":               deployment("other", map[string]string{argocd.TrackingAnnotation: "shop:apps/Deployment:ns/other"}, nil),
		"mine":                deployment("mine", map[string]string{argocd.TrackingAnnotation: "shop:apps/Deployment:ns/mine", "argocd.argoproj.io/installation-id": "prod"}, nil),
		"skipped":             deployment("skipped", map[string]string{argocd.TrackingAnnotation: "paused:apps/Deployment:ns/skipped"}, nil),
		"helm":                deployment("helm", map[string]string{"meta.helm.sh/release-name": "web"}, map[string]string{service.DefaultInstanceLabelKey: "web"}, service.ManagedFieldsEntry{Manager: "helm", Operation: "Update"}),
		"argo":                deployment("argo", nil, map[string]string{service.DefaultInstanceLabelKey: "web"}, argoApplied),
	}
	type want struct {
		basis, cause, unmanaged string
		level                   service.Level
	}
	cases := []struct {
		name     string
		settings service.ArgoCDSettings
		cluster  service.Cluster
		err      error
		target   string
		want     want
	}{
		{"CRDListedWithoutTracking", service.ArgoCDSettings{}, full, nil, "widgets.example.com",
			want{basis: service.BasisStatusResources, cause: service.CausePolicy, level: service.LevelSelfHeal}},
		{"CRDListedNowhere", service.ArgoCDSettings{}, full, nil, "unlisted", want{unmanaged: "not_tracked"}},
		{"LabelConfirmed", service.ArgoCDSettings{}, full, nil, "labelled",
			want{basis: service.BasisLabel, cause: service.CausePolicy, level: service.LevelSelfHeal}},
		{"LoneLabelWithAnnotationTrackingFoundByStatus", service.ArgoCDSettings{TrackingMethod: "annotation"}, full, nil, "labelled",
			want{basis: service.BasisStatusResources, cause: service.CausePolicy, level: service.LevelSelfHeal}},
		{"CustomInstanceLabelKey", service.ArgoCDSettings{InstanceLabelKey: "team.example.com/app"}, full, nil, "custom",
			want{basis: service.BasisLabel, cause: service.CausePolicy, level: service.LevelSelfHeal}},
		{"InstallationIDMissing", service.ArgoCDSettings{InstallationID: "prod"}, full, nil, "other", want{unmanaged: "other_installation"}},
		{"InstallationIDMatches", service.ArgoCDSettings{InstallationID: "prod"}, full, nil, "mine",
			want{basis: service.BasisAnnotation, cause: service.CausePolicy, level: service.LevelSelfHeal}},
		{"InstallationIDUnsetIgnoresAnnotation", service.ArgoCDSettings{}, full, nil, "mine",
			want{basis: service.BasisAnnotation, cause: service.CausePolicy, level: service.LevelSelfHeal}},
		{"SkipReconcile", service.ArgoCDSettings{}, full, nil, "skipped",
			want{basis: service.BasisAnnotation, cause: service.CauseSkipReconcile, level: service.LevelNotReverted}},
		{"LimitedLabelWithArgoCDManager", service.ArgoCDSettings{}, service.Cluster{AccessLevel: service.AccessLimited, ArgoCDNamespace: "argocd"},
			nil, "argo", want{basis: service.BasisLabelUnconfirmed, cause: service.CausePolicyUnreadable, level: service.LevelUnknown}},
		{"LimitedLabelFromHelm", service.ArgoCDSettings{}, service.Cluster{AccessLevel: service.AccessLimited, ArgoCDNamespace: "argocd"},
			nil, "helm", want{unmanaged: "label_not_confirmed"}},
		{"ForbiddenLabelWithArgoCDManager", service.ArgoCDSettings{}, full,
			service.ReasonError(service.EFORBIDDEN, "argocd_forbidden", "forbidden"), "argo",
			want{basis: service.BasisLabelUnconfirmed, cause: service.CausePolicyUnreadable, level: service.LevelUnknown}},
		{"ReadSnapshotLabelNoAppListsIt", service.ArgoCDSettings{}, full, nil, "argo", want{unmanaged: "label_not_confirmed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := detector(t, objects, stubApps{read: service.AppRead{Apps: []service.Application{shop, paused}, Settings: c.settings}, err: c.err})
			o := d.Detect(t.Context(), c.cluster, []service.ResourceRef{{Kind: "x", Namespace: "ns", Name: c.target}}, "en")
			if c.want.unmanaged != "" {
				if o.ArgoCD != nil || len(o.Unmanaged) != 1 || o.Unmanaged[0].Reason != c.want.unmanaged {
					t.Fatalf("argocd %+v, unmanaged %+v; want unmanaged %s", o.ArgoCD, o.Unmanaged, c.want.unmanaged)
				}
				return
			}
			if o.ArgoCD == nil || len(o.ArgoCD.Resources) != 1 {
				t.Fatalf("argocd = %+v (unmanaged %+v, skipped %+v)", o.ArgoCD, o.Unmanaged, o.Skipped)
			}
			r := o.ArgoCD.Resources[0]
			if r.Basis != c.want.basis || r.LevelCause != c.want.cause || r.Level != c.want.level || o.ArgoCD.Level != c.want.level {
				t.Errorf("resource basis %s cause %s level %s; want %s %s %s (reason %q)", r.Basis, r.LevelCause, r.Level,
					c.want.basis, c.want.cause, c.want.level, r.Reason)
			}
		})
	}
}

// A cluster without Argo CD answers: nothing managed, a note, no skip.
func TestNotInstalledIsAnAnswer(t *testing.T) {
	d := detector(t, map[string]service.ObjectInfo{"web": deployment("web", nil, nil)},
		stubApps{err: service.ReasonError(service.ENOTFOUND, service.ReasonArgoCDNotInstalled, "no Application CRD")})
	o := d.Detect(t.Context(), full, []service.ResourceRef{{Kind: "deploy", Namespace: "ns", Name: "web"}}, "en")
	if o.Skipped != nil || o.ArgoCD != nil || o.Checked != 1 || len(o.Unmanaged) != 1 || len(o.Notes) != 1 {
		t.Errorf("ownership = %+v (skipped %+v)", o, o.Skipped)
	}
}

// not_in_git: the change touches only fields Git does not set; never for
// apply_manifest.
func TestNotInGit(t *testing.T) {
	shop := app(t, "shop", map[string]any{"selfHeal": true}, nil)
	lastApplied := `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"web"}]}}}}`
	objects := map[string]service.ObjectInfo{"web": deployment("web", map[string]string{
		argocd.TrackingAnnotation: "shop:apps/Deployment:ns/web", "kubectl.kubernetes.io/last-applied-configuration": lastApplied}, nil)}
	d := detector(t, objects, stubApps{read: service.AppRead{Apps: []service.Application{shop}}})
	for _, c := range []struct {
		tool, field string
		level       service.Level
		cause       string
	}{
		{"scale_resource", "/spec/replicas", service.LevelNotReverted, service.CauseNotInGit},
		{"patch_resource", "/spec/template/spec/containers/0/image", service.LevelSelfHeal, service.CausePolicy},
		{"apply_manifest", "/spec/replicas", service.LevelSelfHeal, service.CausePolicy},
	} {
		o := d.Detect(t.Context(), full, []service.ResourceRef{{Kind: "deploy", Namespace: "ns", Name: "web",
			ChangedFields: []string{c.field}, Tool: c.tool}}, "en")
		if o.ArgoCD == nil || o.ArgoCD.Level != c.level || o.ArgoCD.Resources[0].LevelCause != c.cause {
			t.Errorf("%s %s: %+v", c.tool, c.field, o.ArgoCD)
		}
	}
}
