package argocd

import (
	"strings"

	"github.com/kukie/gitops-server/service"
)

// TrackingAnnotation is the tracking metadata Argo CD puts on the objects
// it manages (the instance label's default is service.DefaultInstanceLabelKey).
const TrackingAnnotation = "argocd.argoproj.io/tracking-id"

// TrackingID is a parsed tracking annotation:
// <app>:<group>/<kind>:<namespace>/<name>.
type TrackingID struct {
	// AppNamespace is set when the app part has the apps-in-any-namespace
	// form <namespace>_<name>; empty means Argo CD's own namespace.
	AppNamespace, AppName string
	Group, Kind           string
	Namespace, Name       string
}

// ParseTrackingID parses a tracking annotation as Argo CD does: split on the
// first two ":" (the name may contain more); the second and third parts
// must each split on "/" into exactly two pieces. The core group is empty.
func ParseTrackingID(s string) (TrackingID, bool) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 || parts[0] == "" {
		return TrackingID{}, false
	}
	gk := strings.Split(parts[1], "/")
	nn := strings.Split(parts[2], "/")
	if len(gk) != 2 || len(nn) != 2 || gk[1] == "" || nn[1] == "" {
		return TrackingID{}, false
	}
	id := TrackingID{Group: gk[0], Kind: gk[1], Namespace: nn[0], Name: nn[1]}
	id.AppNamespace, id.AppName = SplitInstance(parts[0])
	return id, true
}

// SplitInstance splits an app instance name of the form <namespace>_<name>
// ("_" cannot occur in Kubernetes names); without "_" the app lives in
// Argo CD's own namespace and the namespace is empty.
func SplitInstance(s string) (namespace, name string) {
	return service.ParseAppID(s, "")
}

// RefersTo reports whether the id names the object carrying it: same group,
// kind and name, and same namespace unless the object is cluster-scoped.
// An annotation that does not is a copy (kubectl get -o yaml | apply) and
// does not mean Argo CD manages the object.
func (id TrackingID) RefersTo(group, kind, namespace, name string, namespaced bool) bool {
	if id.Group != group || id.Kind != kind || id.Name != name {
		return false
	}
	return !namespaced || id.Namespace == namespace
}
