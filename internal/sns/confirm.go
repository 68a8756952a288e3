package sns

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Reasons of Confirm's failures.
const (
	ReasonConfirmFailed   Reason = "confirm_failed"   // the confirmation GET failed or answered 5xx (ErrTransient)
	ReasonConfirmRedirect Reason = "confirm_redirect" // the SNS host answered a redirect, not followed (ErrTransient)
	ReasonConfirmRefused  Reason = "confirm_refused"  // SNS refused the confirmation: 4xx, e.g. an expired token (ErrRejected)
)

// Confirm confirms the subscription of a verified SubscriptionConfirmation:
// it GETs the SubscribeURL — only one SubscribeURLAllowed accepts, checked
// again here — with the certificate client (the standard proxy variables,
// the system roots, no redirects followed, the fetch timeout). A 4xx
// answer is ErrRejected (retrying cannot help: the token expired or the
// topic is gone); anything else that fails is ErrTransient. Errors never
// hold the URL or the token.
func (v *Verifier) Confirm(ctx context.Context, m Message) error {
	if err := SubscribeURLAllowed(m); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, v.fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.SubscribeURL, nil)
	if err != nil {
		return transient(ReasonConfirmFailed, "building the confirmation request", nil)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		// *url.Error's text holds the URL, and with it the token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return transient(ReasonConfirmFailed, "the confirmation request failed", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxCertSize))
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
		return nil
	case code >= 300 && code < 400:
		return transient(ReasonConfirmRedirect, "the SNS host answered a redirect (not followed): "+strconv.Itoa(code), nil)
	case code >= 400 && code < 500:
		return &Error{Kind: ErrRejected, Reason: ReasonConfirmRefused, Detail: "SNS refused the confirmation: " + strconv.Itoa(code)}
	default:
		return transient(ReasonConfirmFailed, "the SNS host answered "+strconv.Itoa(code), nil)
	}
}
