package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

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
