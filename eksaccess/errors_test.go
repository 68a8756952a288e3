package eksaccess

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kukie/gitops-server/service"
)

func opError(op string, err error) error {
	return &smithy.OperationError{ServiceID: "EKS", OperationName: op, Err: err}
}

func TestRetryable(t *testing.T) {
	invalidPrincipal := opError("CreateAccessEntry", &ekstypes.InvalidParameterException{Message: new(string)})
	denied := opError("AssociateAccessPolicy", &ekstypes.AccessDeniedException{})
	for _, tc := range []struct {
		name  string
		err   error
		since time.Duration
		want  bool
	}{
		{"Throttling", opError("CreateAccessEntry", &smithy.GenericAPIError{Code: "ThrottlingException"}), time.Hour, true},
		{"ServerError", opError("AssociateAccessPolicy", &ekstypes.ServerException{}), time.Hour, true},
		{"Unmodelled5xx", opError("DescribeCluster", &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 502}}, Err: fmt.Errorf("bad gateway")}), time.Hour, true},
		{"Unmodelled5xxFromTheSDK", opError("DescribeCluster", &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: fmt.Errorf("unavailable")}}), time.Hour, true},
		{"Unmodelled4xx", opError("DescribeCluster", &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 400}}, Err: fmt.Errorf("bad request")}), time.Minute, false},
		{"Network", opError("DescribeCluster", &smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Err: fmt.Errorf("refused")}}), time.Hour, true},
		{"InvalidPrincipalWhilePropagating", invalidPrincipal, time.Minute, true},
		{"InvalidPrincipalLater", invalidPrincipal, 10 * time.Minute, false},
		{"InvalidParameterOnAnotherOperation", opError("AssociateAccessPolicy", &ekstypes.InvalidParameterException{}), time.Minute, false},
		{"AccessDeniedWhilePropagating", service.WrapError(service.EVALIDATION, "x", denied), time.Minute, true},
		{"AccessDeniedLater", denied, 10 * time.Minute, false},
		{"ClusterRefusesTokenWhilePropagating", apierrors.NewUnauthorized("no"), time.Minute, true},
		{"ClusterRefusesTokenLater", apierrors.NewUnauthorized("no"), 10 * time.Minute, false},
		{"NotFound", opError("DescribeCluster", &ekstypes.ResourceNotFoundException{}), time.Minute, false},
		{"Forbidden", apierrors.NewForbidden(schema.GroupResource{}, "x", fmt.Errorf("no")), time.Minute, false},
		{"Canceled", context.Canceled, time.Minute, false},
		{"Nil", nil, time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryableWithin(tc.err, tc.since, service.RegistrationPropagationWindow); got != tc.want {
				t.Errorf("RetryableWithin(%v, %v, service.RegistrationPropagationWindow) = %v, want %v", tc.err, tc.since, got, tc.want)
			}
		})
	}
}

func TestEKSErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   string
		reason service.Reason
	}{
		{"Throttling", opError("CreateAccessEntry", &ekstypes.ThrottlingException{}), service.EUNAVAILABLE, reasonAWSUnavailable},
		{"AccessDenied", opError("AssociateAccessPolicy", &ekstypes.AccessDeniedException{}), service.EVALIDATION, ReasonAWSAccessDenied},
		{"OtherClientError", opError("CreateAccessEntry", &ekstypes.InvalidParameterException{}), service.EVALIDATION, ReasonAWSRequestRejected},
		{"Unclassified", fmt.Errorf("odd"), service.EINTERNAL, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := eksError(tc.err)
			if service.ErrorCode(err) != tc.code || service.ErrorReason(err) != tc.reason {
				t.Errorf("eksError = %v (%s/%s), want %s/%s", err, service.ErrorCode(err), service.ErrorReason(err), tc.code, tc.reason)
			}
		})
	}
}

func TestAccessPolicy(t *testing.T) {
	full, scope, err := accessPolicy("aws", service.Cluster{AccessLevel: service.AccessFull, Namespaces: []string{"a"}})
	if err != nil || full != "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy" ||
		scope.Type != ekstypes.AccessScopeTypeCluster || scope.Namespaces != nil {
		t.Errorf("full → %s %+v %v", full, scope, err)
	}
	edit, scope, err := accessPolicy("aws-cn", service.Cluster{AccessLevel: service.AccessLimited, Namespaces: []string{"b", "a", "b"}})
	if err != nil || edit != "arn:aws-cn:eks::aws:cluster-access-policy/AmazonEKSEditPolicy" ||
		scope.Type != ekstypes.AccessScopeTypeNamespace || fmt.Sprint(scope.Namespaces) != "[a b]" {
		t.Errorf("limited → %s %+v %v", edit, scope, err)
	}
	for _, c := range []service.Cluster{{AccessLevel: service.AccessLimited}, {AccessLevel: "root"}} {
		if _, _, err := accessPolicy("aws", c); service.ErrorCode(err) != service.EINVALID {
			t.Errorf("accessPolicy(%+v) = %v, want EINVALID", c, err)
		}
	}
}
