package eksaccess

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/service"
)

// recordingCluster answers 401 to the first n requests (or to every token
// in refused) and records each request's token and body.
type recordingCluster struct {
	mu      sync.Mutex
	tokens  []string
	bodies  []string
	refuse  int  // the first refuse requests get 401
	always  bool // every request gets 401
	answers int
}

func (c *recordingCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens = append(c.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	c.bodies = append(c.bodies, string(body))
	c.answers++
	if c.always || c.answers <= c.refuse {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

func (c *recordingCluster) seen() ([]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...), append([]string(nil), c.bodies...)
}

func newTestTransport(t *testing.T, clock *testclock.Clock) (*http.Client, *countingProvider) {
	t.Helper()
	ts, base := newTestTokenSource(clock, time.Hour)
	return &http.Client{Transport: &bearerTransport{base: http.DefaultTransport, tokens: ts}}, base
}

func TestBearerTransportAddsTokenPerRequest(t *testing.T) {
	cluster := &recordingCluster{}
	srv := httptest.NewServer(cluster)
	defer srv.Close()
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	client, _ := newTestTransport(t, clock)
	for _, step := range []time.Duration{0, time.Minute, 13 * time.Minute} {
		clock.Advance(step)
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	tokens, _ := cluster.seen()
	if len(tokens) != 3 || tokens[0] != tokens[1] {
		t.Fatalf("tokens = %d, want 3 requests, the first two with one token", len(tokens))
	}
	if tokens[2] == tokens[1] {
		t.Error("the token was not renewed after 14 minutes")
	}
	for _, tok := range tokens {
		decodeToken(t, tok)
	}
}

func TestBearerTransportRetriesOnceAfter401(t *testing.T) {
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name       string
		cluster    *recordingCluster
		request    func(url string) *http.Request
		wantStatus int
		wantCalls  int
	}{
		{"GetRenewedAndRetried", &recordingCluster{refuse: 1}, func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u, nil)
			return r
		}, http.StatusOK, 2},
		{"PostWithGetBodyReplayed", &recordingCluster{refuse: 1}, func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"kind":"SelfSubjectReview"}`))
			return r
		}, http.StatusOK, 2},
		{"BodyNotReplayableReturned", &recordingCluster{refuse: 1}, func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, u, io.NopCloser(strings.NewReader("once")))
			return r
		}, http.StatusUnauthorized, 1},
		{"SecondRefusalReturned", &recordingCluster{always: true}, func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u, nil)
			return r
		}, http.StatusUnauthorized, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.cluster)
			defer srv.Close()
			client, _ := newTestTransport(t, clock)
			resp, err := client.Do(tc.request(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			tokens, bodies := tc.cluster.seen()
			if resp.StatusCode != tc.wantStatus || len(tokens) != tc.wantCalls {
				t.Fatalf("status %d after %d calls, want %d after %d", resp.StatusCode, len(tokens), tc.wantStatus, tc.wantCalls)
			}
			if len(tokens) == 2 {
				if tokens[0] == tokens[1] {
					t.Error("the retry carried the refused token")
				}
				if bodies[0] != bodies[1] {
					t.Errorf("the retry's body %q differs from the first %q", bodies[1], bodies[0])
				}
			}
		})
	}
}

type fakeAccounts map[string]service.Account

func (f fakeAccounts) GetAccount(_ context.Context, teamID, id string) (service.Account, error) {
	a, ok := f[teamID+"/"+id]
	if !ok {
		return service.Account{}, service.ErrAccountNotFound()
	}
	return a, nil
}

func testCluster() service.Cluster {
	return service.Cluster{ID: "prod", TeamID: "team-1", Kind: service.ClusterEKS, AccountID: "acc-1",
		Region: "us-east-1", EKSName: "prod-eks", Endpoint: "https://ABC.gr7.us-east-1.eks.amazonaws.com",
		CAData: []byte("-----BEGIN CERTIFICATE-----\n")}
}

func newTestConnector(t *testing.T) *Connector {
	t.Helper()
	cfg := aws.Config{Region: "us-east-1", Credentials: staticProvider{testCreds}}
	accounts := fakeAccounts{"team-1/acc-1": {ID: "acc-1", TeamID: "team-1", Partition: "aws",
		RoleARN: "arn:aws:iam::111122223333:role/kukie-access"}}
	_, conn, err := New(cfg, Options{Accounts: accounts,
		ExternalID: func(context.Context, string) (string, error) { return "ext-team-1", nil }})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestConnectorRESTConfig(t *testing.T) {
	conn := newTestConnector(t)
	cfg, err := conn.RESTConfig(context.Background(), testCluster())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != testCluster().Endpoint || string(cfg.CAData) != string(testCluster().CAData) {
		t.Errorf("Host/CA = %q/%q, want the cluster's endpoint and CA", cfg.Host, cfg.CAData)
	}
	if cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.ExecProvider != nil || cfg.WrapTransport == nil {
		t.Error("the token must come per request through WrapTransport, not be stored in the config")
	}

	for _, tc := range []struct {
		name   string
		change func(*service.Cluster)
	}{
		{"ErrStaticCluster", func(c *service.Cluster) { c.Kind = service.ClusterStatic }},
		{"ErrNoEndpoint", func(c *service.Cluster) { c.Endpoint = "" }},
		{"ErrUnknownAccount", func(c *service.Cluster) { c.AccountID = "other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			tc.change(&c)
			if _, err := conn.RESTConfig(context.Background(), c); err == nil {
				t.Error("RESTConfig succeeded")
			}
		})
	}
}

func TestConnectorRefusesOtherPartition(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1"}
	accounts := fakeAccounts{"team-1/acc-1": {ID: "acc-1", Partition: "aws-cn", RoleARN: "arn:aws-cn:iam::111122223333:role/kukie"}}
	_, conn, err := New(cfg, Options{Accounts: accounts,
		ExternalID: func(context.Context, string) (string, error) { return "ext", nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.RESTConfig(context.Background(), testCluster())
	if service.ErrorReason(err) != reasonAssumeRoleDenied {
		t.Errorf("err = %v, want %s", err, reasonAssumeRoleDenied)
	}
}

type stubConnector string

func (s stubConnector) RESTConfig(context.Context, service.Cluster) (*rest.Config, error) {
	return &rest.Config{Host: string(s)}, nil
}

func TestByKind(t *testing.T) {
	b := ByKind{Static: stubConnector("static"), EKS: stubConnector("eks")}
	for kind, want := range map[service.ClusterKind]string{service.ClusterEKS: "eks", service.ClusterStatic: "static"} {
		cfg, err := b.RESTConfig(context.Background(), service.Cluster{Kind: kind})
		if err != nil || cfg.Host != want {
			t.Errorf("%s cluster → %v, %v; want the %s connector", kind, cfg, err, want)
		}
	}
	if _, err := (ByKind{Static: stubConnector("static")}).RESTConfig(context.Background(), service.Cluster{Kind: service.ClusterEKS}); err == nil {
		t.Error("an EKS cluster without an EKS connector got a configuration")
	}
}

func TestNewNeedsRegion(t *testing.T) {
	if _, _, err := New(aws.Config{}, Options{}); err == nil {
		t.Error("New without a region succeeded")
	}
}

func TestErrorsKeepCause(t *testing.T) {
	cause := errors.New("boom")
	if err := errUnavailable(cause); !errors.Is(err, cause) || service.ErrorReason(err) != reasonAWSUnavailable {
		t.Errorf("errUnavailable = %v", err)
	}
}

// mustHTTPClient is the HTTP client client-go would build from cfg.
func mustHTTPClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
