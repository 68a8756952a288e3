package ownership

import (
	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// Metadata keys classification reads besides Argo CD's tracking ones.
const (
	installationIDAnnotation = "argocd.argoproj.io/installation-id"
	lastAppliedAnnotation    = "kubectl.kubernetes.io/last-applied-configuration"
	// helmReleaseAnnotation is set by helm install/upgrade, never by Argo
	// CD's helm template: a label next to it is Helm's, not evidence.
	helmReleaseAnnotation = "meta.helm.sh/release-name"
	// argoCDManager is Argo CD's field manager for client- and server-side
	// apply (upstream common.ArgoCDSSAManager).
	argoCDManager = "argocd-controller"
)

// managed is a managed resource with the app managing it (nil when the
// app could not be read) and that app's namespace.
type managed struct {
	service.OwnershipResource
	app          *service.Application
	appNamespace string
	// trackedNamespace is the app namespace the tracking annotation gives
	// ("" for Argo CD's own), and hub the cluster the app was found in when
	// it is not the target's (hub-and-spoke).
	trackedNamespace string
	hub              *service.Cluster
	// judged are the masker's judgements of the object (fieldPreviews):
	// the values they masked join the request's redaction set.
	judged []service.FieldMasking
}

// classify decides whether Argo CD manages one existing object, in the
// order Argo CD's own tracking does (upstream util/argo/resource_tracking.go):
// a tracking annotation naming the object itself (unless another
// installation's), an instance label the named app confirms in its
// status.resources, and — for objects Argo CD never marks, such as
// CustomResourceDefinitions (upstream reposerver/repository/repository.go
// skips SetAppInstance for them) or a custom label key — an app listing the
// object in its status.resources. When Applications could not be read, an
// annotation stands unconfirmed, and a lone label counts only with Argo
// CD's field manager on the object and no Helm release annotation. When it
// does not manage the object, the result's Reason says why (not_tracked,
// copied_annotation, label_not_confirmed, other_installation).
func classify(c service.Cluster, i service.ObjectInfo, ref service.ResourceRef, a apps) (managed, bool) {
	res := managed{OwnershipResource: service.OwnershipResource{Group: i.Group, Kind: i.Kind, Name: i.Name, Namespace: i.Namespace}}
	s := a.settings()
	t := argoTarget(i, ref)
	reason := "not_tracked"

	annotation := i.Annotations[argocd.TrackingAnnotation]
	if s.TrackingMethod != "label" && annotation != "" {
		reason = "copied_annotation"
		if id, ok := argocd.ParseTrackingID(annotation); ok && id.RefersTo(i.Group, i.Kind, i.Namespace, i.Name, i.Namespaced) {
			if s.InstallationID != "" && i.Annotations[installationIDAnnotation] != s.InstallationID {
				res.Reason = "other_installation"
				return res, false
			}
			res.Tracking, res.Application, res.appNamespace, res.trackedNamespace = "annotation", id.AppName, id.AppNamespace, id.AppNamespace
			if res.appNamespace == "" {
				res.appNamespace = c.ArgoCDNamespace
			}
			if res.app = find(c, a.snap, id.AppNamespace, id.AppName); res.app == nil {
				res.Basis = service.BasisAnnotationUnconfirmed
				res.Level, res.LevelCause, res.Reason = service.LevelUnknown, service.CausePolicyUnreadable, unreadApp(c, id.AppName, "tracking annotation", a)
				return res, true
			}
			res.Basis = service.BasisAnnotation
			res.decide(*res.app, s, t, i, "tracking annotation")
			return res, true
		}
	}

	// A label alone proves nothing (Helm charts set it too) until the app
	// it names lists this object among its resources; with annotation
	// tracking configured, a lone label never does.
	if inst := i.Labels[s.LabelKey()]; inst != "" && (s.TrackingMethod == "" || s.TrackingMethod == "label") {
		reason = "label_not_confirmed"
		ns, name := argocd.SplitInstance(inst)
		if a.snap == nil {
			if argoCDApplied(i) {
				res.Tracking, res.Basis, res.Application, res.appNamespace = "label", service.BasisLabelUnconfirmed, name, ns
				if res.appNamespace == "" {
					res.appNamespace = c.ArgoCDNamespace
				}
				res.Level, res.LevelCause, res.Reason = service.LevelUnknown, service.CausePolicyUnreadable,
					unreadApp(c, name, "instance label and Argo CD's field manager", a)
				return res, true
			}
		} else if app := find(c, a.snap, ns, name); app != nil && lists(*app, i) {
			res.Tracking, res.Basis, res.Application, res.appNamespace, res.app = "label", service.BasisLabel, app.Name, app.Namespace, app
			res.decide(*app, s, t, i, "instance label confirmed by the app's status.resources")
			return res, true
		}
	}

	// Objects Argo CD syncs without marking them: listed by an app.
	if a.snap != nil {
		namespace := ""
		if i.Namespaced {
			namespace = i.Namespace
		}
		var best *managed
		for _, app := range a.snap.Listing(i.Group, i.Kind, namespace, i.Name) {
			cand := managed{OwnershipResource: res.OwnershipResource, app: &app, appNamespace: app.Namespace}
			cand.Application, cand.Basis = app.Name, service.BasisStatusResources
			cand.decide(app, s, t, i, "listed in the app's status.resources (no tracking metadata)")
			if best == nil || argocd.Stronger(cand.Level, best.Level) {
				best = &cand
			}
		}
		if best != nil {
			return *best, true
		}
	}
	res.Reason = reason
	return res, false
}

// argoTarget is the object and change as Argo CD's rules take them.
func argoTarget(i service.ObjectInfo, ref service.ResourceRef) argocd.Target {
	return argocd.Target{Group: i.Group, Kind: i.Kind, Namespace: i.Namespace, Name: i.Name, Changed: ref.Changed(),
		NarrowByGit: service.GitNarrowingAllowed(ref.Tool), LastApplied: i.Annotations[lastAppliedAnnotation],
		ManagedFields: i.ManagedFields}
}

// decide sets the level, its cause and the reason from the app's rules and
// its status.resources row for the object (a hook, or an object to prune),
// as the app detail's row does.
func (m *managed) decide(app service.Application, s service.ArgoCDSettings, t argocd.Target, i service.ObjectInfo, how string) {
	if r, ok := row(app, i); ok {
		t.Hook, t.RequiresPruning = r.Hook, r.RequiresPruning
	}
	d := argocd.Decide(app, s, t, how)
	m.Level, m.LevelCause, m.Reason = d.Level, d.Cause, d.Reason
}

// argoCDApplied reports positive evidence that Argo CD applied the object:
// its field manager in managedFields, and no Helm release annotation.
func argoCDApplied(i service.ObjectInfo) bool {
	if i.Annotations[helmReleaseAnnotation] != "" {
		return false
	}
	for _, f := range i.ManagedFields {
		if f.Manager == argoCDManager {
			return true
		}
	}
	return false
}

// unreadApp says why the app named by the object's tracking metadata could
// not be found: its Applications were not read, only Argo CD's own
// namespace could be read, or it is not in this cluster (Argo CD may run in
// another one).
func unreadApp(c service.Cluster, app, how string, a apps) string {
	prefix := how + " name app " + app
	if how == "tracking annotation" {
		prefix = "tracking annotation names app " + app
	}
	switch {
	case a.note != "":
		return prefix + ", but " + a.note
	case a.snap != nil && a.snap.OnlyNamespace != "":
		return prefix + ", which was not found: Kukie's role may read Applications only in namespace " +
			a.snap.OnlyNamespace + ", so apps elsewhere and their sync policy cannot be seen"
	}
	return prefix + ", which is not in this cluster (Argo CD may run in another cluster): the sync policy cannot be read"
}

// find returns the app named by a tracking id or label (an empty namespace
// means Argo CD's own), or nil.
func find(c service.Cluster, snap *service.Snapshot, ns, name string) *service.Application {
	if snap == nil {
		return nil
	}
	if ns == "" {
		ns = c.ArgoCDNamespace
	}
	if a, ok := snap.App(service.AppID(name, ns, c.ArgoCDNamespace)); ok {
		return &a
	}
	return nil
}

// lists reports whether the app's status.resources holds the object.
func lists(a service.Application, i service.ObjectInfo) bool {
	_, ok := row(a, i)
	return ok
}

// row returns the app's status.resources row for the object, if it lists it.
func row(a service.Application, i service.ObjectInfo) (service.AppResource, bool) {
	for _, r := range a.Resources {
		if r.Group == i.Group && r.Kind == i.Kind && r.Name == i.Name && (!i.Namespaced || r.Namespace == i.Namespace) {
			return r, true
		}
	}
	return service.AppResource{}, false
}
