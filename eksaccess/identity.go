package eksaccess

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// identityTimeout bounds the STS call that names the service's account.
const identityTimeout = 5 * time.Second

// ServiceAccountID returns the AWS account of the service's own identity
// (what customers' roles trust, shown by onboarding), asking STS
// GetCallerIdentity once it is needed and remembering a success; STS's
// error while it cannot answer.
func (a *AWS) ServiceAccountID(ctx context.Context) (string, error) {
	a.identity.Lock()
	defer a.identity.Unlock()
	if a.accountID != "" {
		return a.accountID, nil
	}
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	out, err := sts.NewFromConfig(a.cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	switch {
	case err != nil:
		return "", err
	case out.Account == nil || *out.Account == "":
		return "", errors.New("STS GetCallerIdentity answered no account")
	}
	a.accountID = *out.Account
	return a.accountID, nil
}
