package ownership

import (
	"github.com/kukie/gitops-server/argocd"
	"github.com/kukie/gitops-server/service"
)

// managed is a managed resource with the app managing it (nil when the
// app could not be read) and that app's namespace.
type managed struct {
	service.OwnershipResource
	app          *service.Application
	appNamespace string
}

// classify decides whether Argo CD manages one existing object: by a
// tracking annotation naming the object itself, or by an instance label
// the named app confirms in its status.resources. When it does not, the
// result's Reason says why (not_tracked, copied_annotation,
// label_not_confirmed).
func classify(c service.Cluster, i service.ObjectInfo, changed []string, a apps) (managed, bool) {
	res := managed{OwnershipResource: service.OwnershipResource{Group: i.Group, Kind: i.Kind, Name: i.Name, Namespace: i.Namespace}}
	if id, ok := argocd.ParseTrackingID(i.Annotations[argocd.TrackingAnnotation]); ok &&
		id.RefersTo(i.Group, i.Kind, i.Namespace, i.Name, i.Namespaced) {
		res.Tracking, res.Application, res.appNamespace = "annotation", id.AppName, id.AppNamespace
		if res.appNamespace == "" {
			res.appNamespace = c.ArgoCDNamespace
		}
		res.app = find(c, a.snap, id.AppNamespace, id.AppName)
		if res.app == nil {
			res.Level, res.Reason = service.LevelUnknown, unreadApp(c, id, a)
			return res, true
		}
		res.Level, res.Reason = argocd.ObjectLevel(*res.app, i.Group, i.Kind, i.Namespace, i.Name, changed, "tracking annotation")
		return res, true
	}
	// A label alone proves nothing (Helm charts set it too) until the app
	// it names lists this object among its resources.
	if inst := i.Labels[argocd.InstanceLabel]; inst != "" {
		ns, name := argocd.SplitInstance(inst)
		app := find(c, a.snap, ns, name)
		if app == nil || !lists(*app, i) {
			res.Reason = "label_not_confirmed"
			return res, false
		}
		res.Tracking, res.Application, res.appNamespace, res.app = "label", app.Name, app.Namespace, app
		res.Level, res.Reason = argocd.ObjectLevel(*app, i.Group, i.Kind, i.Namespace, i.Name, changed,
			"instance label confirmed by the app's status.resources")
		return res, true
	}
	res.Reason = "not_tracked"
	if i.Annotations[argocd.TrackingAnnotation] != "" {
		res.Reason = "copied_annotation"
	}
	return res, false
}

// unreadApp says why the app an annotation names could not be found: its
// Applications were not read, only Argo CD's own namespace could be read,
// or it is not in this cluster (Argo CD may run in another one).
func unreadApp(c service.Cluster, id argocd.TrackingID, a apps) string {
	prefix := "tracking annotation names app " + id.AppName
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
	for _, r := range a.Resources {
		if r.Group == i.Group && r.Kind == i.Kind && r.Name == i.Name && (!i.Namespaced || r.Namespace == i.Namespace) {
			return true
		}
	}
	return false
}
