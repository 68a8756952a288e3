package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kukie/gitops-server/service"
)

// The review resource is virtual: a create answers at once and stores
// nothing. Every authenticated user may create them.
var selfSubjectAccessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

var _ service.AccessReviewer = (*Reader)(nil)

// CanI asks the cluster whether Kukie's own connection may do q (a
// SelfSubjectAccessReview): the agent learns the boundary of a LIMITED
// cluster before it plans a change.
func (r *Reader) CanI(ctx context.Context, c service.Cluster, q service.AccessQuestion) (service.AccessAnswer, error) {
	cs, err := r.clientsFor(ctx, c)
	if err != nil {
		return service.AccessAnswer{}, service.WrapError(service.EINTERNAL, "The cluster connection could not be set up.", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	attrs := map[string]any{"verb": q.Verb, "group": q.Group, "resource": q.Resource, "namespace": q.Namespace}
	if q.Name != "" {
		attrs["name"] = q.Name
	}
	if q.Subresource != "" {
		attrs["subresource"] = q.Subresource
	}
	review := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": attrs},
	}}
	out, err := cs.dyn.Resource(selfSubjectAccessReviews).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return service.AccessAnswer{}, accessError(ctx, err)
	}
	allowed, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
	reason, _, _ := unstructured.NestedString(out.Object, "status", "reason")
	if !allowed && reason == "" {
		reason = "no RBAC rule allows it"
	}
	return service.AccessAnswer{Allowed: allowed, Reason: reason}, nil
}

// accessError classifies a failed review. Every authenticated user may
// create one, so a 403 means the cluster (or something in front of it)
// refuses Kukie altogether: it cannot be used now, as when unreachable.
func accessError(ctx context.Context, err error) error {
	if le := rateLimitError(err); le != nil {
		return le
	}
	switch {
	case unreachable(err):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	case apierrors.IsForbidden(err):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, "The cluster refused Kukie's access review.", err)
	case apierrors.IsBadRequest(err):
		return service.WrapError(service.EVALIDATION, "The cluster refused the question as malformed.", err)
	case pastDeadline(ctx):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	}
	return service.WrapError(service.EINTERNAL, "The access review failed.", err)
}
