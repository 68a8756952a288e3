package service

import (
	"errors"
	"fmt"
	"time"
)

// Error codes used across the service. The HTTP layer maps each to a status
// and a wire code; adapters translate infrastructure errors into these.
const (
	EINVALID         = "invalid"         // malformed input (wrong types, bad syntax)
	EVALIDATION      = "validation"      // well-formed input that breaks a rule
	EUNAUTHENTICATED = "unauthenticated" // no or bad credentials
	EFORBIDDEN       = "forbidden"       // authenticated, but not allowed
	ENOTFOUND        = "not_found"       // missing, or not visible to the caller
	ECONFLICT        = "conflict"        // state does not allow the operation
	ETOOLARGE        = "too_large"       // a size limit was exceeded
	EUNAVAILABLE     = "unavailable"     // a dependency is down; retry later
	EUPSTREAM        = "upstream"        // a customer system (a cluster) cannot be reached
	EINTERNAL        = "internal"        // anything unclassified
)

// FieldError names one invalid field of a request and says what is wrong.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the service's one error type: a code for machines, a message safe
// to show to the caller, optional field details, and a wrapped cause that is
// only ever logged.
type Error struct {
	Code    string
	Message string
	// Reason refines Code for clients that act on it (the wire code), e.g.
	// ReasonClusterNotFound or ReasonArgoCDForbidden. Empty means the code's
	// default.
	Reason Reason
	// Cause refines Reason further where a client may act on it, e.g.
	// helm_dependencies_missing under render_failed ("" when none).
	Cause  Reason
	Fields []FieldError
	Err    error
	// RetryAfter, when set, is how long the client should wait before
	// retrying an EUNAVAILABLE answer (its Retry-After header).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with the given code and message that keeps err
// as its cause for the logs.
func WrapError(code, message string, err error) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorReason returns the Reason of the first *Error in err's chain, or "".
func ErrorReason(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// ReasonError returns an *Error with a code, a reason and a message.
func ReasonError(code string, reason Reason, message string) *Error {
	return &Error{Code: code, Reason: reason, Message: message}
}

// ErrorMessage returns the caller-safe message of err, or a generic one when
// err is not an *Error (its text may hold internals).
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "An internal error occurred."
}

// ValidationErrors collects field problems; Err returns nil when none were added.
type ValidationErrors []FieldError

// Add records a problem with field.
func (v *ValidationErrors) Add(field, format string, args ...any) {
	*v = append(*v, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns an EVALIDATION *Error holding the collected fields, or nil.
func (v ValidationErrors) Err() error {
	if len(v) == 0 {
		return nil
	}
	return &Error{Code: EVALIDATION, Message: "The request has invalid fields.", Fields: v}
}
