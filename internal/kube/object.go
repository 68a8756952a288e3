package kube

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kukie/gitops-server/service"
)

var (
	_ service.ObjectReader      = (*Reader)(nil)
	_ service.ApplicationReader = (*Reader)(nil)
	_ service.ClusterVersions   = (*Reader)(nil)
)

// Detection skip reasons beside the read failure classes.
const (
	ReasonKindUnknown = service.ReasonKindUnknown
	ReasonBudget      = service.ReasonBudgetExceeded
)

// ReadObject resolves ref's kind as kubectl does — ParseResourceArg, the
// cluster's discovery RESTMapper behind the short-name expander, KindFor —
// so deployment, deploy, Deployment, deployments, deployments.apps and
// deploy.apps all work, and reads the object. A missing object is
// Found: false, not an error (the change creates it).
func (r *Reader) ReadObject(ctx context.Context, c service.Cluster, ref service.ResourceRef) (service.ObjectInfo, error) {
	cs, err := r.clientsFor(ctx, c)
	if err != nil {
		return service.ObjectInfo{}, service.WrapError(service.EINTERNAL, "The cluster connection could not be set up.", err)
	}
	budget := ctx // the caller's whole budget; each call gets r.opts.Timeout within it
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	mapping, err := cs.resolve(ref, r.opts.Now)
	if err != nil {
		return service.ObjectInfo{}, objectError(budget, ctx, err)
	}
	gvk := mapping.GroupVersionKind
	info := service.ObjectInfo{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: mapping.Resource.Resource, Name: ref.Name,
		Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	var obj *unstructured.Unstructured
	if info.Namespaced {
		info.Namespace = ref.Namespace
		if info.Namespace == "" {
			info.Namespace = "default" // as kubectl without -n
		}
		obj, err = cs.dyn.Resource(mapping.Resource).Namespace(info.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	} else {
		obj, err = cs.dyn.Resource(mapping.Resource).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return info, nil
	case err != nil:
		return info, objectError(budget, ctx, err)
	}
	info.Found = true
	info.Annotations, info.Labels = obj.GetAnnotations(), obj.GetLabels()
	info.ManagedFields = managedFields(obj.GetManagedFields())
	info.Object = content(obj, gvk)
	return info, nil
}

// content is what detection may show of an object's fields: the object
// without metadata.managedFields and the last-applied annotation (read
// apart, never shown), and without a Secret's data and stringData, which
// are never kept.
func content(obj *unstructured.Unstructured, gvk schema.GroupVersionKind) map[string]any {
	out := obj.DeepCopy().Object
	unstructured.RemoveNestedField(out, "metadata", "managedFields")
	unstructured.RemoveNestedField(out, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	if gvk.Group == "" && gvk.Kind == "Secret" {
		delete(out, "data")
		delete(out, "stringData")
	}
	return out
}

// managedFields copies an object's metadata.managedFields: who wrote which
// fields, and how (Apply or Update). Argo CD's field manager is
// argocd-controller for both client- and server-side apply (upstream
// gitops-engine/pkg/sync/common/types.go).
func managedFields(entries []metav1.ManagedFieldsEntry) []service.ManagedFieldsEntry {
	if len(entries) == 0 {
		return nil
	}
	out := make([]service.ManagedFieldsEntry, 0, len(entries))
	for _, e := range entries {
		m := service.ManagedFieldsEntry{Manager: e.Manager, Operation: string(e.Operation)}
		if e.FieldsV1 != nil {
			m.FieldsV1 = bytes.Clone(e.FieldsV1.GetRawBytes())
		}
		out = append(out, m)
	}
	return out
}

// resolve maps a resource reference to its REST mapping. When nothing
// matches (perhaps a CRD installed since discovery was cached), the cached
// discovery is reset and the lookup retried — at most once per
// rediscoveryInterval per cluster.
func (cs *clientSet) resolve(ref service.ResourceRef, now func() time.Time) (*meta.RESTMapping, error) {
	arg := strings.TrimSpace(ref.Kind)
	if ref.Group != "" && !strings.Contains(arg, ".") {
		arg += "." + ref.Group
	}
	mapping, err := cs.mapping(arg)
	if err == nil || !meta.IsNoMatchError(err) || !cs.mayRediscover(now()) {
		return mapping, err
	}
	cs.mapper.Reset()
	return cs.mapping(arg)
}

// mayRediscover reports whether the cached discovery may be reset at now,
// and if so records the reset.
func (cs *clientSet) mayRediscover(now time.Time) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.lastReset.IsZero() && now.Sub(cs.lastReset) < rediscoveryInterval {
		return false
	}
	cs.lastReset = now
	return true
}

func (cs *clientSet) mapping(arg string) (*meta.RESTMapping, error) {
	fullySpecified, groupResource := schema.ParseResourceArg(strings.ToLower(arg))
	var gvk schema.GroupVersionKind
	if fullySpecified != nil {
		// A failure here falls back to the group/resource form, as kubectl does.
		gvk, _ = cs.expander.KindFor(*fullySpecified)
	}
	if gvk.Empty() {
		var err error
		if gvk, err = cs.expander.KindFor(groupResource.WithVersion("")); err != nil {
			return nil, err
		}
	}
	return cs.expander.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// objectError classifies a failed resolve or GET for detection. Only the
// caller's whole budget running out is budget_exceeded; one call (whose
// context is call) timing out means the cluster does not answer.
func objectError(budget, call context.Context, err error) error {
	if se := connectorError(err); se != nil {
		return se
	}
	switch {
	case errors.Is(err, errOwnRateLimit):
		return reasonError(service.EUNAVAILABLE, ReasonBudget,
			"Kukie's request rate limit for this cluster would delay this read past the detection budget.", err)
	case budget.Err() != nil && !unreachableBeforeDeadline(err):
		return reasonError(service.EUNAVAILABLE, ReasonBudget, "The detection budget ran out.", err)
	case meta.IsNoMatchError(err):
		return reasonError(service.EVALIDATION, ReasonKindUnknown, "The cluster serves no such kind (Kukie re-reads a cluster's kinds at most every 30 seconds).", err)
	case unreachable(err):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	case apierrors.IsForbidden(err):
		return reasonError(service.EFORBIDDEN, ReasonForbidden, "Kukie's role may not read this object.", err)
	case pastDeadline(call):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	}
	return service.WrapError(service.EINTERNAL, "Reading the object failed.", err)
}

// unreachableBeforeDeadline is true for errors that show the cluster was
// unreachable for reasons other than our deadline (refused, DNS, TLS).
func unreachableBeforeDeadline(err error) bool {
	return unreachable(err) && !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
