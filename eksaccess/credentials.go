package eksaccess

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/kukie/gitops-server/service"
)

// SessionDuration is how long an assumed-role session lasts: the most AWS
// allows when the service's own identity is itself a role (role chaining).
const SessionDuration = time.Hour

// credentialsWindow is how long before their expiry cached credentials are
// replaced: a token's whole life plus a minute, so a token presigned with
// credentials handed out by the cache never outlives them.
const credentialsWindow = TokenLifetime + time.Minute

// Credentials hands out the customer roles' credentials: one
// refresh-on-expiry provider per (role ARN, ExternalId), so AssumeRole is
// called about once an hour per role and team, not per request. Providers
// are kept in a bounded LRU.
type Credentials struct {
	sts       *sts.Client
	partition string
	prefix    string
	duration  time.Duration
	cache     *lru.Cache[string, *aws.CredentialsCache]
}

// CredentialsOptions tune Credentials; zero values take the defaults.
type CredentialsOptions struct {
	// Partition is the only partition whose roles are assumed (the
	// service's own identity lives there). Default: PartitionOf(cfg.Region).
	Partition string
	// MaxRoles bounds the cached providers (default 1024).
	MaxRoles int
	// SessionNamePrefix starts every RoleSessionName (default "kukie").
	SessionNamePrefix string
	// SessionDuration of each assumed session (default SessionDuration).
	SessionDuration time.Duration
}

// NewCredentials returns Credentials whose AssumeRole calls use cfg: the
// service's base identity (the SDK default chain) and its own region.
func NewCredentials(cfg aws.Config, opts CredentialsOptions) (*Credentials, error) {
	if opts.Partition == "" {
		opts.Partition = PartitionOf(cfg.Region)
	}
	if opts.MaxRoles <= 0 {
		opts.MaxRoles = 1024
	}
	if opts.SessionNamePrefix == "" {
		opts.SessionNamePrefix = "kukie"
	}
	if opts.SessionDuration <= 0 {
		opts.SessionDuration = SessionDuration
	}
	if opts.SessionDuration < credentialsWindow+time.Minute {
		opts.SessionDuration = credentialsWindow + time.Minute
	}
	cache, err := lru.New[string, *aws.CredentialsCache](opts.MaxRoles)
	if err != nil {
		return nil, err
	}
	return &Credentials{sts: sts.NewFromConfig(cfg), partition: opts.Partition,
		prefix: opts.SessionNamePrefix, duration: opts.SessionDuration, cache: cache}, nil
}

// Partition is the partition whose roles these credentials can assume.
func (c *Credentials) Partition() string { return c.partition }

// Provider returns the cached credentials provider of the role assumed with
// externalID. A role outside the service's partition, or a malformed ARN, is
// EVALIDATION assume_role_denied (nothing is called).
func (c *Credentials) Provider(roleARN, externalID string) (*aws.CredentialsCache, error) {
	if err := c.checkRole(roleARN); err != nil {
		return nil, err
	}
	key := roleARN + "\x00" + externalID
	if p, ok := c.cache.Get(key); ok {
		return p, nil
	}
	ext := externalID
	p := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(c.sts, roleARN, func(o *stscreds.AssumeRoleOptions) {
		o.ExternalID = &ext
		o.RoleSessionName = SessionName(c.prefix, externalID)
		o.Duration = c.duration
	}), func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = credentialsWindow })
	if prev, ok, _ := c.cache.PeekOrAdd(key, p); ok {
		return prev, nil
	}
	return p, nil
}

// Refresh assumes the role anew (whatever is cached) and keeps the result.
func (c *Credentials) Refresh(ctx context.Context, roleARN, externalID string) (aws.Credentials, error) {
	p, err := c.Provider(roleARN, externalID)
	if err != nil {
		return aws.Credentials{}, err
	}
	p.Invalidate()
	return p.Retrieve(ctx)
}

// Forget drops the cached provider of (roleARN, externalID).
func (c *Credentials) Forget(roleARN, externalID string) {
	c.cache.Remove(roleARN + "\x00" + externalID)
}

// checkRole refuses malformed role ARNs and roles in another partition.
func (c *Credentials) checkRole(roleARN string) error {
	role, ok := service.ParseRoleARN(roleARN)
	if !ok {
		return service.ReasonError(service.EVALIDATION, reasonAssumeRoleDenied,
			"The role ARN is not a valid IAM role ARN.")
	}
	if role.Partition != c.partition {
		return service.ReasonError(service.EVALIDATION, reasonAssumeRoleDenied,
			"Kukie has no identity in the AWS partition "+role.Partition+" (it runs in "+c.partition+"), so it cannot assume this role.")
	}
	return nil
}

var sessionNameInvalid = regexp.MustCompile(`[^\w+=,.@-]`)

// SessionName is the RoleSessionName for a team: prefix, "-" and a short
// hash of teamKey (the team's ExternalId, which names the team one to one).
// It shows in the customer's CloudTrail and satisfies STS's rule: 2–64
// characters of [\w+=,.@-].
func SessionName(prefix, teamKey string) string {
	sum := sha256.Sum256([]byte(teamKey))
	hash := hex.EncodeToString(sum[:6])
	p := sanitizeSessionName(prefix)
	if max := 64 - 1 - len(hash); len(p) > max {
		p = p[:max]
	}
	return sanitizeSessionName(p + "-" + hash)
}

// sanitizeSessionName maps s into STS's RoleSessionName alphabet: other
// characters become '-', the result is cut to 64 characters, and a result
// shorter than 2 becomes "kukie".
func sanitizeSessionName(s string) string {
	s = sessionNameInvalid.ReplaceAllString(s, "-")
	if len(s) > 64 {
		s = s[:64]
	}
	if len(s) < 2 {
		return "kukie"
	}
	return s
}
