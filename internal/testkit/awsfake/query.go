package awsfake

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"

	"github.com/google/uuid"
)

// XML namespaces of the awsQuery services.
const (
	xmlnsSTS = "https://sts.amazonaws.com/doc/2011-06-15/"
	xmlnsCFN = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
)

// queryResponse is <{Action}Response><{Action}Result>…</…><ResponseMetadata>.
type queryResponse struct {
	XMLName  xml.Name
	Xmlns    string        `xml:"xmlns,attr"`
	Result   any           // a struct whose XMLName is {Action}Result
	Metadata queryMetadata `xml:"ResponseMetadata"`
}

type queryMetadata struct {
	RequestID string `xml:"RequestId"`
}

// queryErrorResponse is awsQuery's error document; the SDK reads
// ErrorResponse/Error/Code and Message.
type queryErrorResponse struct {
	XMLName   xml.Name   `xml:"ErrorResponse"`
	Xmlns     string     `xml:"xmlns,attr"`
	Error     queryError `xml:"Error"`
	RequestID string     `xml:"RequestId"`
}

type queryError struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// readQuery reads an awsQuery request's parameters: the form body of a
// POST, the query string of a GET.
func readQuery(r *http.Request) (params url.Values, body []byte, err error) {
	body, err = io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, nil, err
	}
	if r.Method == http.MethodGet {
		return r.URL.Query(), body, nil
	}
	params, err = url.ParseQuery(string(body))
	return params, body, err
}

func writeQueryResult(w http.ResponseWriter, xmlns, action string, result any) {
	id := uuid.NewString()
	b, err := xml.Marshal(queryResponse{
		XMLName: xml.Name{Local: action + "Response"}, Xmlns: xmlns, Result: result,
		Metadata: queryMetadata{RequestID: id},
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", id)
	_, _ = w.Write(b)
}

func writeQueryError(w http.ResponseWriter, xmlns string, status int, code, message string) {
	id := uuid.NewString()
	typ := "Sender"
	if status >= 500 {
		typ = "Receiver"
	}
	b, _ := xml.Marshal(queryErrorResponse{Xmlns: xmlns, Error: queryError{Type: typ, Code: code, Message: message}, RequestID: id})
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", id)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// queryAuthError answers an authentication failure as STS and
// CloudFormation do.
func queryAuthError(w http.ResponseWriter, xmlns string, f *authFailure) {
	switch f.kind {
	case authMissing:
		writeQueryError(w, xmlns, http.StatusForbidden, "MissingAuthenticationToken", f.msg)
	case authUnknown:
		writeQueryError(w, xmlns, http.StatusForbidden, "InvalidClientTokenId", f.msg)
	case authExpired:
		writeQueryError(w, xmlns, http.StatusForbidden, "ExpiredToken", f.msg)
	default:
		writeQueryError(w, xmlns, http.StatusForbidden, "SignatureDoesNotMatch", f.msg)
	}
}
