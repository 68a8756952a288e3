package helmrepo

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/kukie/gitops-server/internal/netguard"
	"github.com/kukie/gitops-server/service"
)

// ReasonRepoURLInvalid is the reason for a repository URL that does not parse.
const ReasonRepoURLInvalid = service.ReasonRepoURLInvalid

func authFailed(status int) error {
	return &service.Error{Code: service.EVALIDATION, Reason: service.ReasonRepoAuthFailed,
		Message: fmt.Sprintf("The Helm repository answered %d: a private Helm repository: Kukie fetches charts anonymously.", status)}
}

func unreachable(message string, err error) error {
	if message == "" {
		message = "The Helm repository could not be reached."
	}
	return &service.Error{Code: service.EUPSTREAM, Reason: service.ReasonRepoUnreachable, Message: message, Err: err}
}

func notFound(message string) error {
	return &service.Error{Code: service.ENOTFOUND, Reason: service.ReasonRefNotFound, Message: message}
}

func unsupported(message string) error {
	return &service.Error{Code: service.EVALIDATION, Reason: service.ReasonSourceTypeUnsupported, Message: message}
}

func badArchive(message string, err error) error {
	return &service.Error{Code: service.EVALIDATION, Reason: service.ReasonRenderFailed, Message: message, Err: err}
}

// statusError maps a non-200 answer for what (index.yaml or an archive,
// named without credentials) to a reason.
func statusError(status int, what string) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return authFailed(status)
	case status >= 300 && status < 400:
		return unreachable(fmt.Sprintf("The Helm repository redirected the request for %s; redirects are not followed.", what), nil)
	default:
		return unreachable(fmt.Sprintf("The Helm repository answered %d for %s.", status, what), nil)
	}
}

// requestError maps a failed GET to a reason; a refusal by the network
// guard says so.
func requestError(err error) error {
	if errors.Is(err, netguard.ErrRefused) {
		return unreachable("The Helm repository's address is not allowed (private, loopback or metadata addresses are refused).", err)
	}
	return unreachable("", err)
}
