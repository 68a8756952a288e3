package eksaccess

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kukie/gitops-server/service"
)

// VerifyRole runs AWS's confused-deputy check: the role can be assumed
// with the team's ExternalId (else assume_role_denied), and is refused
// without one and with a random wrong one (else external_id_not_enforced).
// Throttling, network errors and 5xx are aws_unavailable. The probes'
// credentials are never cached; the good session is, and is dropped again
// when the check fails.
func (a *AWS) VerifyRole(ctx context.Context, roleARN, externalID string) error {
	if _, err := a.creds.Refresh(ctx, roleARN, externalID); err != nil {
		a.creds.Forget(roleARN, externalID)
		return assumeError(err)
	}
	wrong, err := randomExternalID()
	if err != nil {
		return err
	}
	for _, probe := range []*string{nil, &wrong} {
		if err := a.probe(ctx, roleARN, externalID, probe); err != nil {
			a.creds.Forget(roleARN, externalID)
			return err
		}
	}
	return nil
}

// probe assumes the role with an ExternalId that must be refused.
func (a *AWS) probe(ctx context.Context, roleARN, teamExternalID string, externalID *string) error {
	_, err := a.creds.sts.AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn:         aws.String(roleARN),
		RoleSessionName: aws.String(SessionName(a.creds.prefix+"-probe", teamExternalID)),
		ExternalId:      externalID,
		DurationSeconds: aws.Int32(900), // the shortest STS allows: the session is not used
	})
	switch {
	case err == nil:
		how := "without an ExternalId"
		if externalID != nil {
			how = "with a wrong ExternalId"
		}
		return service.ReasonError(service.EVALIDATION, reasonExternalIDNotEnforced,
			"The role can be assumed "+how+": its trust policy must require sts:ExternalId to equal your team's ExternalId "+
				"(StringEquals, not StringLike \"*\"), or anyone who knows the role ARN could use it through Kukie.")
	case apiCode(err) == "AccessDenied":
		return nil
	case errors.Is(err, context.Canceled):
		return err
	case transient(err):
		return errUnavailable(err)
	}
	return service.WrapError(service.EINTERNAL, "The ExternalId check could not be completed.", err)
}

// randomExternalID is a well-formed ExternalId no team has.
func randomExternalID() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", service.WrapError(service.EINTERNAL, "generate a probe ExternalId", err)
	}
	return "kukie-probe-" + hex.EncodeToString(b), nil
}
