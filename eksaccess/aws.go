package eksaccess

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/kukie/gitops-server/service"
)

// AccountLookup finds a team's connected account (the store implements it).
type AccountLookup interface {
	GetAccount(ctx context.Context, teamID, id string) (service.Account, error)
}

// ExternalIDLookup returns a team's ExternalId.
type ExternalIDLookup func(ctx context.Context, teamID string) (string, error)

// Options configure New; zero values take the defaults.
type Options struct {
	// Partition the service has an identity in; roles and regions of other
	// partitions are refused. Default: PartitionOf(cfg.Region).
	Partition string
	// MaxRoles bounds the cached role credentials (default 1024).
	MaxRoles int
	// SessionNamePrefix starts every RoleSessionName (default "kukie").
	SessionNamePrefix string
	// Accounts and ExternalID let the Connector find the role and the
	// ExternalId of a cluster's account. Required for cluster reads.
	Accounts   AccountLookup
	ExternalID ExternalIDLookup
	// Now is the clock of token renewal (default time.Now).
	Now func() time.Time
}

// AWS is the AWS side of accounts and EKS access: every call acts through
// the customer's role assumed with the team's ExternalId.
type AWS struct {
	cfg   aws.Config
	creds *Credentials
	conn  *Connector

	identity  sync.Mutex
	accountID string // the service's own AWS account, once known
}

var _ service.AWSAccess = (*AWS)(nil)

// New returns the AWS adapter and the EKS cluster connector, sharing one
// Credentials. cfg is the service's own AWS configuration: the SDK default
// chain and KUKIE_AWS_REGION as its region, e.g.
// config.LoadDefaultConfig(ctx, config.WithRegion(region)).
func New(cfg aws.Config, opts Options) (*AWS, *Connector, error) {
	if cfg.Region == "" {
		return nil, nil, errors.New("eksaccess: the AWS region of Kukie's own STS calls is not set (KUKIE_AWS_REGION)")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	creds, err := NewCredentials(cfg, CredentialsOptions{Partition: opts.Partition, MaxRoles: opts.MaxRoles,
		SessionNamePrefix: opts.SessionNamePrefix})
	if err != nil {
		return nil, nil, err
	}
	conn := &Connector{cfg: cfg, creds: creds, accounts: opts.Accounts, externalID: opts.ExternalID, now: opts.Now}
	return &AWS{cfg: cfg, creds: creds, conn: conn}, conn, nil
}

// PartitionOf is the AWS partition of a region, by the regions' documented
// name prefixes (cn-: aws-cn; us-gov-: aws-us-gov; us-iso-, us-isob-,
// eu-isoe-, us-isof-: the isolated partitions; anything else: aws). Set
// Options.Partition for a partition this list does not know.
func PartitionOf(region string) string {
	for _, p := range []struct{ prefix, partition string }{
		{"cn-", "aws-cn"}, {"us-gov-", "aws-us-gov"}, {"us-iso-", "aws-iso"},
		{"us-isob-", "aws-iso-b"}, {"eu-isoe-", "aws-iso-e"}, {"us-isof-", "aws-iso-f"},
	} {
		if strings.HasPrefix(region, p.prefix) {
			return p.partition
		}
	}
	return "aws"
}

// role returns the credentials of roleARN assumed with externalID, assuming
// it now when nothing valid is cached, so AssumeRole failures are told
// apart from those of the call that follows.
func (a *AWS) role(ctx context.Context, roleARN, externalID string) (aws.CredentialsProvider, error) {
	p, err := a.creds.Provider(roleARN, externalID)
	if err != nil {
		return nil, err
	}
	if _, err := p.Retrieve(ctx); err != nil {
		return nil, assumeError(err)
	}
	return p, nil
}

// checkRegion refuses a region outside the service's partition.
func (a *AWS) checkRegion(region string) error {
	if !service.ValidRegion(region) {
		return service.Errorf(service.EINVALID, "%q is not an AWS region.", region)
	}
	if PartitionOf(region) != a.creds.Partition() {
		return service.ReasonError(service.EVALIDATION, reasonAssumeRoleDenied,
			"Kukie has no identity in the AWS partition of region "+region+".")
	}
	return nil
}

func (a *AWS) eksClient(ctx context.Context, roleARN, externalID, region string) (*eks.Client, error) {
	if err := a.checkRegion(region); err != nil {
		return nil, err
	}
	p, err := a.role(ctx, roleARN, externalID)
	if err != nil {
		return nil, err
	}
	return eks.NewFromConfig(a.cfg, func(o *eks.Options) {
		o.Region = region
		o.Credentials = p
	}), nil
}

func (a *AWS) cloudFormationClient(ctx context.Context, roleARN, externalID, region string) (*cloudformation.Client, error) {
	if err := a.checkRegion(region); err != nil {
		return nil, err
	}
	p, err := a.role(ctx, roleARN, externalID)
	if err != nil {
		return nil, err
	}
	return cloudformation.NewFromConfig(a.cfg, func(o *cloudformation.Options) {
		o.Region = region
		o.Credentials = p
	}), nil
}
