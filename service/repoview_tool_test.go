package service

import "testing"

// A tool answers every failure as a sentence for the model except a
// malformed request, authentication, role and tenancy, which stay problems.
func TestToolAnswerFailures(t *testing.T) {
	problems := []error{
		&Error{Code: EVALIDATION, Message: "bad", Fields: []FieldError{{Field: "cluster_id", Message: "is required"}}},
		&Error{Code: EINVALID, Message: "does not parse"},
		&Error{Code: EUNAUTHENTICATED, Message: "who"},
		&Error{Code: EFORBIDDEN, Message: "role"},
		ErrClusterNotFound(),
	}
	for _, err := range problems {
		if _, got := toolAnswer("", err, "en"); got != err {
			t.Errorf("%v: answered as text, want the problem", err)
		}
	}
	texts := []error{
		ReasonError(EVALIDATION, ReasonRepoTooLarge, "The repository is too large."),
		ReasonError(EVALIDATION, ReasonSourceTypeUnsupported, "Plugins are not rendered."),
		ReasonError(EVALIDATION, ReasonRenderFailed, "The chart does not render."),
		ReasonError(EUPSTREAM, ReasonRepoAuthFailed, "The repository refused the credentials."),
		ReasonError(ENOTFOUND, ReasonRefNotFound, "No such ref."),
	}
	for _, err := range texts {
		a, got := toolAnswer("", err, "en")
		if got != nil || a.Text != ErrorMessage(err) {
			t.Errorf("%v: %+v, %v; want the sentence as text", err, a, got)
		}
	}
}
