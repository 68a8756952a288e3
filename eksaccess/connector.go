package eksaccess

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/service"
)

// Connector connects client-go to EKS clusters: the endpoint and CA stored
// from DescribeCluster, and a token presigned with the account's role that
// is added to each request (never stored in the rest.Config) and renewed
// when due or when the cluster answers 401.
type Connector struct {
	cfg        aws.Config
	creds      *Credentials
	accounts   AccountLookup
	externalID ExternalIDLookup
	now        func() time.Time
}

var _ kube.ClusterConnector = (*Connector)(nil)

// RESTConfig returns the configuration of a registered EKS cluster. It
// looks up the cluster's account and the team's ExternalId once; tokens
// are then made per request as needed.
func (c *Connector) RESTConfig(ctx context.Context, cl service.Cluster) (*rest.Config, error) {
	if cl.Kind != service.ClusterEKS {
		return nil, fmt.Errorf("eksaccess: cluster %q of team %q is not an EKS cluster", cl.ID, cl.TeamID)
	}
	if cl.Endpoint == "" || len(cl.CAData) == 0 || cl.EKSName == "" || cl.Region == "" {
		return nil, fmt.Errorf("eksaccess: EKS cluster %q of team %q has no endpoint, CA, name or region recorded", cl.ID, cl.TeamID)
	}
	if c.accounts == nil || c.externalID == nil {
		return nil, fmt.Errorf("eksaccess: the connector has no account or ExternalId lookup")
	}
	account, err := c.accounts.GetAccount(ctx, cl.TeamID, cl.AccountID)
	if err != nil {
		return nil, err
	}
	externalID, err := c.externalID(ctx, cl.TeamID)
	if err != nil {
		return nil, err
	}
	if _, err := c.creds.Provider(account.RoleARN, externalID); err != nil {
		return nil, err
	}
	tokens := &tokenSource{cfg: c.cfg, region: cl.Region, clusterName: cl.EKSName, now: c.now,
		creds: func() (aws.CredentialsProvider, error) { return c.creds.Provider(account.RoleARN, externalID) }}
	return &rest.Config{
		Host:            cl.Endpoint,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), cl.CAData...)},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return &bearerTransport{base: rt, tokens: tokens}
		},
	}, nil
}

// tokens is what bearerTransport needs of a tokenSource.
type tokens interface {
	Token(ctx context.Context) (string, error)
	Renew(ctx context.Context, stale string) (string, error)
}

// bearerTransport adds the current token to each request. On a 401 it
// renews the token once and retries once, when the request's body can be
// sent again; a second 401 is returned as it is.
type bearerTransport struct {
	base   http.RoundTripper
	tokens tokens
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	token, err := t.tokens.Token(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(withBearer(req, token))
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable(req) {
		return resp, err
	}
	fresh, err := t.tokens.Renew(ctx, token)
	if err != nil {
		return resp, nil
	}
	retry := withBearer(req, fresh)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		retry.Body = body
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return t.base.RoundTrip(retry)
}

// replayable reports whether req can be sent a second time.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func withBearer(req *http.Request, token string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// ByKind connects to each cluster through the connector of its kind: EKS
// clusters through EKS, every other kind (static) through Static.
type ByKind struct {
	Static, EKS kube.ClusterConnector
}

var _ kube.ClusterConnector = ByKind{}

// RESTConfig dispatches on c.Kind.
func (b ByKind) RESTConfig(ctx context.Context, c service.Cluster) (*rest.Config, error) {
	conn := b.Static
	if c.Kind == service.ClusterEKS {
		conn = b.EKS
	}
	if conn == nil {
		return nil, fmt.Errorf("eksaccess: no connector for %s cluster %q (is AWS configured?)", c.Kind, c.ID)
	}
	return conn.RESTConfig(ctx, c)
}
