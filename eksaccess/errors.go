package eksaccess

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/service"
)

// Failure reasons (the problem codes clients see) this package returns.
const (
	reasonAssumeRoleDenied      = "assume_role_denied"
	reasonExternalIDNotEnforced = "external_id_not_enforced"
	reasonStackNotFound         = "stack_not_found"
	reasonAccessEntryConflict   = "access_entry_conflict"
	reasonAWSUnavailable        = service.ReasonAWSUnavailable
	// ReasonEKSClusterNotFound: DescribeCluster found no such cluster in
	// the region (ENOTFOUND).
	ReasonEKSClusterNotFound = "eks_cluster_not_found"
	// ReasonAWSAccessDenied: the customer's role is not allowed an EKS call
	// Kukie needs (EVALIDATION): the stack is not the current template, was
	// changed by hand, or the IAM change is still propagating.
	ReasonAWSAccessDenied = "aws_access_denied"
	// ReasonAWSRequestRejected: AWS refused a call for another reason
	// (EVALIDATION); the AWS error code is in the message.
	ReasonAWSRequestRejected = "aws_request_rejected"
	// ReasonClusterUnauthorized: the cluster did not accept Kukie's token
	// (EUPSTREAM), e.g. an access entry still propagating or removed.
	ReasonClusterUnauthorized = service.ReasonClusterUnauthorized
	// ReasonClusterUnreachable: the cluster's endpoint could not be reached
	// (EUPSTREAM); the same code kube uses for reads.
	ReasonClusterUnreachable = service.ReasonClusterUnreachable
)

// RetryableWithin reports whether the job runner should try err's
// operation again, sinceChange after the role, stack or cluster last
// changed: throttling, 5xx and network failures (of AWS or of the cluster)
// always; within window also CreateAccessEntry's InvalidParameterException
// ("invalid principal" while a new role propagates), EKS
// AccessDeniedException (a new IAM policy propagating) and a cluster that
// does not accept the token yet (access entries are eventually consistent).
// Everything else is permanent. It decides by operation, error code and
// elapsed time, never by message text. The windows are the service's: a
// registration's service.RegistrationPropagationWindow, a level switch's
// KUKIE_SWITCH_RETRY_BUDGET.
func RetryableWithin(err error, sinceChange, window time.Duration) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if transient(err) || kube.ConnectionFailure(err) {
		return true
	}
	if sinceChange >= window {
		return false
	}
	code := apiCode(err)
	switch {
	case operation(err) == "CreateAccessEntry" && code == "InvalidParameterException":
		return true
	case code == "AccessDeniedException":
		return true
	case apierrors.IsUnauthorized(err):
		return true
	}
	return false
}

// transient reports AWS (or a cluster) being unreachable or overloaded:
// throttling codes, 5xx answers, connection failures and timeouts.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if code := apiCode(err); code != "" {
		if _, ok := retry.DefaultThrottleErrorCodes[code]; ok {
			return true
		}
		if _, ok := retry.DefaultRetryableErrorCodes[code]; ok {
			return true
		}
		switch code {
		case "ServiceUnavailable", "ServiceUnavailableException", "ServerException",
			"InternalFailure", "InternalError", "ResourcePropagationDelayException":
			return true
		}
	}
	// An answer without a modelled code: judged by its HTTP status
	// (smithy's and the AWS SDK's response errors both carry it).
	var resp interface{ HTTPStatusCode() int }
	if errors.As(err, &resp) && (resp.HTTPStatusCode() >= 500 || resp.HTTPStatusCode() == 429) {
		return true
	}
	var send *smithyhttp.RequestSendError
	if errors.As(err, &send) {
		return true // the SDK wraps every transport failure in it
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// apiCode is the AWS error code in err's chain, or "".
func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// operation is the name of the AWS operation that failed, or "".
func operation(err error) string {
	var op *smithy.OperationError
	if errors.As(err, &op) {
		return op.Operation()
	}
	return ""
}

func errUnavailable(err error) error {
	return &service.Error{Code: service.EUNAVAILABLE, Reason: reasonAWSUnavailable,
		Message: "AWS cannot be reached from Kukie right now; try again later.", Err: err}
}

// assumeError maps a failed AssumeRole with the team's ExternalId.
func assumeError(err error) error {
	var se *service.Error
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, context.Canceled):
		return err
	case transient(err):
		return errUnavailable(err)
	case apiCode(err) == "AccessDenied":
		return &service.Error{Code: service.EVALIDATION, Reason: reasonAssumeRoleDenied, Err: err,
			Message: "Kukie could not assume the role with your team's ExternalId: check the role's trust policy " +
				"(Kukie's AWS account as principal, sts:ExternalId equal to your team's ExternalId) and that the role exists."}
	}
	return service.WrapError(service.EINTERNAL, "AssumeRole failed.", err)
}

// eksError maps a failed EKS call whose specific outcomes the caller has
// already handled.
func eksError(err error) error {
	switch code := apiCode(err); {
	case errors.Is(err, context.Canceled):
		return err
	case transient(err):
		return errUnavailable(err)
	case code == "AccessDeniedException":
		return &service.Error{Code: service.EVALIDATION, Reason: ReasonAWSAccessDenied, Err: err,
			Message: "The role is not allowed " + "eks:" + operation(err) + " on this cluster: update the stack to the current Kukie template " +
				"and keep the namespaces within AllowedNamespaces (a change made moments ago may still be propagating)."}
	case code != "":
		return &service.Error{Code: service.EVALIDATION, Reason: ReasonAWSRequestRejected, Err: err,
			Message: "AWS refused eks:" + operation(err) + " (" + code + ")."}
	}
	return service.WrapError(service.EINTERNAL, "EKS call failed.", err)
}
