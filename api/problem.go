package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/kukie/gitops-server/service"
)

// problem is an RFC 9457 problem details body with Kukie's stable code.
type problem struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Detail    string               `json:"detail"`
	Code      string               `json:"code"`
	Reason    string               `json:"reason,omitempty"` // refines code (render_failed: helm_dependencies_missing)
	RequestID string               `json:"request_id,omitempty"`
	Errors    []service.FieldError `json:"errors,omitempty"`
}

// wireErrors maps service error codes to HTTP status and wire code.
var wireErrors = map[string]struct {
	status int
	code   service.Reason
}{
	service.EINVALID:         {http.StatusBadRequest, service.ReasonInvalidRequest},
	service.EVALIDATION:      {http.StatusUnprocessableEntity, service.ReasonValidationFailed},
	service.EUNAUTHENTICATED: {http.StatusUnauthorized, service.ReasonUnauthenticated},
	service.EFORBIDDEN:       {http.StatusForbidden, service.ReasonForbidden},
	service.ENOTFOUND:        {http.StatusNotFound, service.ReasonNotFound},
	service.ECONFLICT:        {http.StatusConflict, service.ReasonConflict},
	service.ETOOLARGE:        {http.StatusRequestEntityTooLarge, service.ReasonPayloadTooLarge},
	service.EUNAVAILABLE:     {http.StatusServiceUnavailable, service.ReasonUnavailable},
	service.EUPSTREAM:        {http.StatusBadGateway, service.ReasonClusterUnreachable},
	service.EINTERNAL:        {http.StatusInternalServerError, service.ReasonInternal},
}

// writeProblem writes a problem response with an explicit status and code.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, code service.Reason, detail string, fields []service.FieldError) {
	writeProblemWith(w, r, status, code, "", detail, fields)
}

// writeProblemWith is writeProblem with a reason that refines the code.
func writeProblemWith(w http.ResponseWriter, r *http.Request, status int, code, reason service.Reason, detail string,
	fields []service.FieldError) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kukie"`)
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "5")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problem{
		Type:      "about:blank",
		Title:     http.StatusText(status),
		Status:    status,
		Detail:    detail,
		Code:      string(code),
		Reason:    string(reason),
		RequestID: requestIDFromContext(r.Context()),
		Errors:    fields,
	})
}

// writeError answers with the problem err maps to. Unclassified errors are
// logged with their detail and answered with a generic 500.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if errors.Is(err, errUnsupportedMediaType) {
		writeProblem(w, r, http.StatusUnsupportedMediaType, service.ReasonUnsupportedMediaType,
			"The request body must be JSON (Content-Type: application/json).", nil)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nobody reads this answer. 499 keeps it out of
		// the 5xx metrics and the error log.
		log.DebugContext(r.Context(), "client closed request", "request_id", requestIDFromContext(r.Context()))
		w.WriteHeader(499)
		return
	}
	code := service.ErrorCode(err)
	wire, ok := wireErrors[code]
	if !ok {
		wire = wireErrors[service.EINTERNAL]
	}
	var fields []service.FieldError
	var cause service.Reason
	var se *service.Error
	if errors.As(err, &se) {
		fields, cause = se.Fields, se.Cause
		if se.Reason != "" && (wire.status < 500 || se.Code == service.EUPSTREAM || se.Code == service.EUNAVAILABLE) {
			wire.code = se.Reason // a refined wire code, e.g. cluster_not_found
		}
		if se.RetryAfter > 0 && wire.status == http.StatusServiceUnavailable {
			// Whole seconds, rounded up (render_busy: one queue timeout).
			w.Header().Set("Retry-After", strconv.Itoa(int((se.RetryAfter+time.Second-1)/time.Second)))
		}
	}
	// Clients get the code and a sentence; a cause (which may name a
	// cluster's address or a driver's text) goes to the log only.
	detail := service.ErrorMessage(err)
	switch {
	case wire.status == http.StatusInternalServerError:
		detail = "An internal error occurred."
		log.ErrorContext(r.Context(), "request failed", "request_id", requestIDFromContext(r.Context()), "err", err)
	case wire.status == http.StatusServiceUnavailable || wire.status == http.StatusBadGateway:
		log.WarnContext(r.Context(), "dependency unavailable", "request_id", requestIDFromContext(r.Context()), "err", err)
	case se != nil && se.Err != nil:
		log.InfoContext(r.Context(), "request refused", "request_id", requestIDFromContext(r.Context()),
			"code", wire.code, "err", err)
	}
	writeProblemWith(w, r, wire.status, wire.code, cause, detail, fields)
}
