package gitrepo

import (
	"context"
	"errors"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/kukie/gitops-server/service"
)

// Wire codes (service.Error.Reason) of the failures this package reports,
// named for this package; the values are the service's.
// Each error is a *service.Error whose Code gives the HTTP class: 422 for
// credentials, host keys and limits, 404 for refs, 503 for a busy replica,
// 502 for the rest.
const (
	ReasonRepoAuthFailed = service.ReasonRepoAuthFailed
	ReasonHostKey        = service.ReasonHostKeyMismatch
	ReasonUnreachable    = service.ReasonRepoUnreachable
	ReasonRefNotFound    = service.ReasonRefNotFound
	ReasonRepoTooLarge   = service.ReasonRepoTooLarge
	ReasonRepoURLInvalid = service.ReasonRepoURLInvalid
	ReasonAuthInvalid    = service.ReasonRepoAuthInvalid
	ReasonFetchBusy      = service.ReasonRepoFetchBusy
)

// fetchBusyRetry is the Retry-After of repo_fetch_busy: about what a
// large fetch takes.
const fetchBusyRetry = 30 * time.Second

func authFailed(err error) error {
	return &service.Error{Code: service.EVALIDATION, Reason: ReasonRepoAuthFailed,
		Message: "The Git server refused these credentials.", Err: err}
}

func hostKeyMismatch(err error) error {
	return &service.Error{Code: service.EVALIDATION, Reason: ReasonHostKey,
		Message: "The SSH server's host key does not match the pinned known_hosts entry.", Err: err}
}

func unreachable(message string, err error) error {
	if message == "" {
		message = "The Git server could not be reached."
	}
	return &service.Error{Code: service.EUPSTREAM, Reason: ReasonUnreachable, Message: message, Err: err}
}

func refNotFound(message string) error {
	return &service.Error{Code: service.ENOTFOUND, Reason: ReasonRefNotFound, Message: message}
}

func tooLarge(message string) error {
	return &service.Error{Code: service.EVALIDATION, Reason: ReasonRepoTooLarge, Message: message}
}

// fetchBusy is a fetch refused for the memory other fetches hold: the
// replica's load, not the repository, so it is never remembered.
func fetchBusy() error {
	return &service.Error{Code: service.EUNAVAILABLE, Reason: ReasonFetchBusy, RetryAfter: fetchBusyRetry,
		Message: "Other repository fetches are using the memory set aside for fetches; try again shortly."}
}

func authInvalid(message string, err error) error {
	return &service.Error{Code: service.EVALIDATION, Reason: ReasonAuthInvalid, Message: message, Err: err}
}

// classify maps a transport error to one of the reasons above, by type:
// go-git's HTTP status errors, the SSH stages this package tracks, and
// context errors (returned as they are, so a caller's cancellation stays a
// cancellation). An error that is already a *service.Error passes through.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *service.Error
	if errors.As(err, &se) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod):
		return authFailed(err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return unreachable("The Git server says the repository does not exist, or these credentials cannot see it.", err)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return refNotFound("The repository is empty: it has no commits.")
	}
	return unreachable("", err)
}
