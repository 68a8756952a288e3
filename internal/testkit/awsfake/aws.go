// Package awsfake runs wire-faithful fakes of STS, CloudFormation (awsQuery)
// and EKS (restJson1) for tests. The real aws-sdk-go-v2 clients reach them
// through their standard endpoint settings (BaseEndpoint or
// AWS_ENDPOINT_URL_<SERVICE>); every request's SigV4 signature is verified
// with the secret the fake issued. The fakes keep state (roles with trust
// policies and the IAM actions of the customer template's level branches,
// stacks, clusters, access entries, associations), count calls, and inject
// faults and latency, so eksaccess and API tests exercise the same bytes and
// error codes the product meets in AWS.
package awsfake

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Defaults of a fake started without options.
const (
	// DefaultAccount is the service's own AWS account: the base identity's
	// account, trusted by the roles' trust policies.
	DefaultAccount = "999999999999"
	// DefaultRegion is the region of the base configuration.
	DefaultRegion = "us-east-1"
	// Partition is the only partition the fakes serve.
	Partition = "aws"
)

// AWS is a running set of fakes: one HTTP server each for STS, EKS and
// CloudFormation, sharing one state. It is safe for concurrent use.
type AWS struct {
	stsSrv, eksSrv, cfnSrv *httptest.Server

	account string
	region  string
	base    credential

	mu              sync.Mutex
	now             func() time.Time
	sessionDuration time.Duration
	roles           map[string]*Role
	creds           map[string]*credential // by access key id
	stacks          map[string]*Stack      // by stack ARN
	clusters        map[string]*cluster    // by cluster ARN
	faults          map[string][]*Fault
	latency         map[string]time.Duration
	calls           []Call
	watchers        []func(clusterARN string)
}

// Option changes how Start sets up the fakes.
type Option func(*AWS)

// WithClock injects the clock used for credential expiry, token age and
// timestamps. Requests are signed by the SDK with the real time; the fakes do
// not check clock skew, only expiry, so a clock ahead of real time models
// "later".
func WithClock(now func() time.Time) Option { return func(a *AWS) { a.now = now } }

// WithAccount sets the service's own account (default DefaultAccount).
func WithAccount(id string) Option { return func(a *AWS) { a.account = id } }

// WithRegion sets the region of the base configuration (default DefaultRegion).
func WithRegion(region string) Option { return func(a *AWS) { a.region = region } }

// Start runs the three fakes on loopback ports until the test ends.
func Start(tb testing.TB, opts ...Option) *AWS {
	tb.Helper()
	a, stop := New(opts...)
	tb.Cleanup(stop)
	return a
}

// New runs the three fakes on loopback ports until stop, outside a test:
// the development sandbox's local AWS account (cmd/kukie-sandbox).
func New(opts ...Option) (a *AWS, stop func()) {
	a = &AWS{
		account:  DefaultAccount,
		region:   DefaultRegion,
		now:      time.Now,
		roles:    map[string]*Role{},
		creds:    map[string]*credential{},
		stacks:   map[string]*Stack{},
		clusters: map[string]*cluster{},
		faults:   map[string][]*Fault{},
		latency:  map[string]time.Duration{},
	}
	for _, o := range opts {
		o(a)
	}
	a.base = credential{
		accessKeyID:  "AKIA" + randomID(16),
		secret:       randomSecret(),
		account:      a.account,
		principalARN: fmt.Sprintf("arn:%s:iam::%s:user/kukie-service", Partition, a.account),
		userID:       "AIDA" + randomID(17),
	}
	a.creds[a.base.accessKeyID] = &a.base
	a.stsSrv = httptest.NewServer(http.HandlerFunc(a.serveSTS))
	a.eksSrv = httptest.NewServer(http.HandlerFunc(a.serveEKS))
	a.cfnSrv = httptest.NewServer(http.HandlerFunc(a.serveCloudFormation))
	return a, func() {
		a.stsSrv.Close()
		a.eksSrv.Close()
		a.cfnSrv.Close()
	}
}

// STSURL is the STS endpoint. EKS tokens do not name it: they name a
// standard STS host (TokenHosts), as the EKS authenticator requires.
func (a *AWS) STSURL() string { return a.stsSrv.URL }

// EKSURL is the EKS endpoint, serving every region.
func (a *AWS) EKSURL() string { return a.eksSrv.URL }

// CloudFormationURL is the CloudFormation endpoint, serving every region.
func (a *AWS) CloudFormationURL() string { return a.cfnSrv.URL }

// Account is the service's own AWS account, the base identity's.
func (a *AWS) Account() string { return a.account }

// Region is the region of the base configuration.
func (a *AWS) Region() string { return a.region }

// BaseCredentials are the service's static base credentials (what IRSA would
// provide in production); they may call AssumeRole and GetCallerIdentity.
func (a *AWS) BaseCredentials() aws.Credentials {
	return aws.Credentials{AccessKeyID: a.base.accessKeyID, SecretAccessKey: a.base.secret, Source: "awsfake"}
}

// BasePrincipalARN is the ARN of the base identity, an IAM user in the
// service account; calls it makes are counted under this ARN.
func (a *AWS) BasePrincipalARN() string { return a.base.principalARN }

// Env returns the standard SDK environment that points a process at the
// fakes with the base credentials.
func (a *AWS) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_STS":            a.STSURL(),
		"AWS_ENDPOINT_URL_EKS":            a.EKSURL(),
		"AWS_ENDPOINT_URL_CLOUDFORMATION": a.CloudFormationURL(),
		"AWS_ACCESS_KEY_ID":               a.base.accessKeyID,
		"AWS_SECRET_ACCESS_KEY":           a.base.secret,
		"AWS_REGION":                      a.region,
		"AWS_EC2_METADATA_DISABLED":       "true",
	}
}

// Setenv sets Env for the rest of the test (tb.Setenv: not for parallel
// tests), clearing variables that would override it.
func (a *AWS) Setenv(tb testing.TB) {
	tb.Helper()
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_ENDPOINT_URL"} {
		tb.Setenv(k, "")
	}
	tb.Setenv("AWS_CONFIG_FILE", "/dev/null")
	tb.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	for k, v := range a.Env() {
		tb.Setenv(k, v)
	}
}

// Config is an aws.Config with the base credentials and region and no
// endpoint; add STSOptions, EKSOptions or CloudFormationOptions when making
// a client.
func (a *AWS) Config() aws.Config {
	return aws.Config{Region: a.region, Credentials: credentials.NewStaticCredentialsProvider(a.base.accessKeyID, a.base.secret, "")}
}

// STSOptions points an STS client at the fake: sts.NewFromConfig(cfg, f.STSOptions).
func (a *AWS) STSOptions(o *sts.Options) { o.BaseEndpoint = aws.String(a.STSURL()) }

// EKSOptions points an EKS client at the fake.
func (a *AWS) EKSOptions(o *eks.Options) { o.BaseEndpoint = aws.String(a.EKSURL()) }

// CloudFormationOptions points a CloudFormation client at the fake.
func (a *AWS) CloudFormationOptions(o *cloudformation.Options) {
	o.BaseEndpoint = aws.String(a.CloudFormationURL())
}

// SetClock replaces the clock (see WithClock).
func (a *AWS) SetClock(now func() time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now = now
}

// SetSessionDuration makes AssumeRole issue credentials valid for d from now
// whatever DurationSeconds asked for (0 restores the requested duration), so
// renewal tests need not wait an hour. STS would not issue less than 15 min.
func (a *AWS) SetSessionDuration(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessionDuration = d
}

// OnAccessChange registers fn to be called, outside the fake's lock, after
// any change to a cluster's access entries or associations (by API or by a
// test's Add call); the EKS simulation uses it to keep RBAC in step.
func (a *AWS) OnAccessChange(fn func(clusterARN string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.watchers = append(a.watchers, fn)
}

func (a *AWS) notify(clusterARN string) {
	a.mu.Lock()
	ws := append([]func(string){}, a.watchers...)
	a.mu.Unlock()
	for _, w := range ws {
		w(clusterARN)
	}
}

func (a *AWS) clock() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.now()
}
