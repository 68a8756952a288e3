package eksaccess

import (
	"context"
	"errors"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/service"
)

// checkTimeout bounds CheckAccess when the caller's context has no
// deadline.
const checkTimeout = 10 * time.Second

// CheckAccess confirms that the cluster accepts Kukie's token: a
// SelfSubjectReview through the EKS connector (any authenticated user may
// make one). A refused token is EUPSTREAM cluster_unauthorized (the access
// entry may still be propagating: RetryableWithin says so within
// service.RegistrationPropagationWindow); an unreachable endpoint is EUPSTREAM
// cluster_unreachable.
func (a *AWS) CheckAccess(ctx context.Context, c service.Cluster) error {
	cfg, err := a.conn.RESTConfig(ctx, c)
	if err != nil {
		return err
	}
	cfg.Timeout = checkTimeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return service.WrapError(service.EINTERNAL, "Build the cluster client.", err)
	}
	_, err = client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	var se *service.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se // from the token source, e.g. assume_role_denied; not the transport's wrapping
	case errors.Is(err, context.Canceled):
		return err
	case apierrors.IsUnauthorized(err):
		return &service.Error{Code: service.EUPSTREAM, Reason: ReasonClusterUnauthorized, Err: err,
			Message: "The cluster does not accept Kukie's credentials yet: its access entry may still be propagating, or was removed."}
	case kube.ConnectionFailure(err):
		return &service.Error{Code: service.EUPSTREAM, Reason: ReasonClusterUnreachable, Err: err,
			Message: "The cluster's API endpoint could not be reached."}
	}
	return service.WrapError(service.EINTERNAL, "SelfSubjectReview failed.", err)
}
