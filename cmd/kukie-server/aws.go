package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/kukie/gitops-server/eksaccess"
	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// awsParts is the AWS half of the server, present when KUKIE_AWS_REGION is
// set; without it every field is nil and the AWS routes answer
// aws_unavailable while static clusters keep working. Its identity comes
// from the SDK's default chain (IRSA or Pod Identity in production;
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY elsewhere) and its endpoints from
// the SDK's standard settings (AWS_ENDPOINT_URL_STS, _EKS, _CLOUDFORMATION).
// The fields are interfaces set only when AWS is on, so none holds a typed
// nil.
type awsParts struct {
	access           service.AWSAccess
	checker          service.AccessChecker
	levels           service.LevelApplier
	connector        kube.ClusterConnector
	serviceAccountID func(context.Context) (string, error)
	retryable        func(err error, sinceChange, window time.Duration) bool
	// sns verifies SNS deliveries: signing certificates are fetched through
	// the standard proxy variables and trusted by the system roots
	// (SSL_CERT_FILE/DIR).
	sns *sns.Verifier
}

// on reports whether AWS is configured.
func (a awsParts) on() bool { return a.access != nil }

func newAWSParts(ctx context.Context, cfg config, db *store.DB, log *slog.Logger) (awsParts, error) {
	if cfg.AWSRegion == "" {
		return awsParts{}, nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.AWSRegion))
	if err != nil {
		return awsParts{}, fmt.Errorf("KUKIE_AWS_REGION: %w", err)
	}
	access, conn, err := eksaccess.New(awsCfg, eksaccess.Options{
		Accounts: db,
		ExternalID: func(ctx context.Context, teamID string) (string, error) {
			// The team exists (it owns the cluster); this never makes a new one
			// for a cluster read.
			team, err := db.EnsureTeam(ctx, teamID, service.NewExternalID(), time.Now().UTC())
			return team.ExternalID, err
		},
	})
	if err != nil {
		return awsParts{}, fmt.Errorf("KUKIE_AWS_REGION: %w", err)
	}
	verifier, err := sns.New(sns.Options{MaxAge: cfg.SNSMaxMessageAge})
	if err != nil {
		return awsParts{}, err
	}
	log.Info("AWS access configured", "region", cfg.AWSRegion)
	return awsParts{access: access, checker: access, levels: access, connector: conn,
		serviceAccountID: access.ServiceAccountID, retryable: eksaccess.RetryableWithin, sns: verifier}, nil
}
