package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kukie/gitops-server/eksaccess"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// awsSide is the AWS half of the server, present when KUKIE_AWS_REGION is
// set. Its identity comes from the SDK's default chain (IRSA or Pod
// Identity in production; AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
// elsewhere) and its endpoints from the SDK's standard settings
// (AWS_ENDPOINT_URL_STS, _EKS, _CLOUDFORMATION).
type awsSide struct {
	access    *eksaccess.AWS
	connector *eksaccess.Connector
	cfg       aws.Config

	mu        sync.Mutex
	accountID string // the service's own AWS account, once known
}

func newAWSSide(ctx context.Context, region string, db *store.DB) (*awsSide, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return nil, err
	}
	access, conn, err := eksaccess.New(cfg, eksaccess.Options{
		Accounts: db,
		ExternalID: func(ctx context.Context, teamID string) (string, error) {
			// The team exists (it owns the cluster); this never makes a new one
			// for a cluster read.
			team, err := db.EnsureTeam(ctx, teamID, service.NewExternalID(), time.Now().UTC())
			return team.ExternalID, err
		},
	})
	if err != nil {
		return nil, err
	}
	return &awsSide{access: access, connector: conn, cfg: cfg}, nil
}

// serviceAccountID returns the AWS account of the service's own identity
// (what customers' roles trust), asking STS once it is needed and
// remembering a success; STS's error while it cannot answer.
func (a *awsSide) serviceAccountID(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.accountID != "" {
		return a.accountID, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
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
