package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kukie/gitops-server/service"
)

// maxBodyBytes caps every request body. It leaves room around the largest
// legal plan (a 256 KiB payload and a 64 KiB command); the payload's own
// limit is checked separately so its error names it.
const maxBodyBytes = 1 << 20

// encode writes v as JSON with status.
func encode(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads one JSON value of type T from the request body. Unknown
// fields, trailing data, wrong types and syntax errors are EINVALID; a
// missing or non-JSON Content-Type is answered by the caller as 415.
func decode[T any](r *http.Request) (T, error) {
	var v T
	if !isJSON(r.Header.Get("Content-Type")) {
		return v, errUnsupportedMediaType
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return v, decodeError(err)
	}
	if err := checkDepth(body, maxJSONDepth); err != nil {
		return v, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return v, decodeError(err)
		}
		return v, service.Errorf(service.EINVALID, "The request body must hold a single JSON value.")
	}
	return v, nil
}

var errUnsupportedMediaType = errors.New("unsupported media type")

// maxJSONDepth bounds how deeply a request body may nest objects and
// arrays: far above any legal request (a plan payload included), far
// below what would make decoding costly.
const maxJSONDepth = 64

// checkDepth refuses JSON nested deeper than max, before it is decoded.
// It only counts brackets outside strings; the decoder judges the rest.
func checkDepth(b []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return service.Errorf(service.EINVALID, "The request body nests objects and arrays deeper than %d levels.", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func decodeError(err error) error {
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &maxErr):
		return service.Errorf(service.ETOOLARGE, "The request body must be at most %d bytes.", maxErr.Limit)
	case errors.Is(err, io.EOF):
		return service.Errorf(service.EINVALID, "The request body is empty; a JSON object is required.")
	case errors.As(err, &syntaxErr):
		return service.Errorf(service.EINVALID, "The request body is not valid JSON (at byte %d).", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return service.Errorf(service.EINVALID, "The request body is truncated JSON.")
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return service.Errorf(service.EINVALID, "The request body must be a JSON object.")
		}
		return &service.Error{Code: service.EINVALID, Message: fmt.Sprintf("Field %q has the wrong type.", field),
			Fields: []service.FieldError{{Field: field, Message: "must be of type " + typeErr.Type.String()}}}
	}
	// Unknown fields and other decoder complaints: the decoder's text names the field.
	return service.Errorf(service.EINVALID, "The request body is invalid: %s.", strings.TrimPrefix(err.Error(), "json: "))
}

// reply answers v as JSON with 200, or the problem err maps to.
func reply(w http.ResponseWriter, r *http.Request, log *slog.Logger, v any, err error) {
	if err != nil {
		writeError(w, r, log, err)
		return
	}
	encode(w, http.StatusOK, v)
}

// problem is an RFC 9457 problem details body with Kukie's stable code.
type problem struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Detail    string               `json:"detail"`
	Code      string               `json:"code"`
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
	var se *service.Error
	if errors.As(err, &se) {
		fields = se.Fields
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
	writeProblem(w, r, wire.status, wire.code, detail, fields)
}
