package eksaccess

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/service"
)

const (
	customerAccount = "111122223333"
	teamExternalID  = "kukie-team-0123456789abcdef"
	// customerRole carries a path, as customer roles may.
	customerRole  = "arn:aws:iam::" + customerAccount + ":role/kukie/KukieAccess"
	customerStack = "arn:aws:cloudformation:ap-northeast-2:" + customerAccount +
		":stack/kukie-access/8f3c2a10-0000-11ef-8000-0a1b2c3d4e5f"
	eksRegion = "ap-northeast-2"
	eksName   = "prod-eks"
)

// fixture is the fake AWS with one customer account, and the adapter under
// test configured only through the SDK's standard environment.
type fixture struct {
	fake    *awsfake.AWS
	aws     *AWS
	conn    *Connector
	account service.Account
}

// mustFixture starts the fakes with a customer role (the shipped template:
// ExternalId pinned) at level, and builds the adapter from
// config.LoadDefaultConfig as cmd does, with retries that do not wait.
func mustFixture(t *testing.T, level awsfake.Level, allowed ...string) *fixture {
	t.Helper()
	f := awsfake.Start(t)
	f.Setenv(t)
	f.AddRole(awsfake.Role{ARN: customerRole, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: teamExternalID},
		Level: level, AllowedNamespaces: allowed, StackARN: customerStack})
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(f.Region()),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		}))
	if err != nil {
		t.Fatal(err)
	}
	acct := service.Account{ID: "acc-1", TeamID: "team-1", AWSAccountID: customerAccount, Partition: "aws",
		RoleARN: customerRole, StackARN: customerStack}
	a, conn, err := New(cfg, Options{Accounts: fakeAccounts{"team-1/acc-1": acct},
		ExternalID: func(_ context.Context, teamID string) (string, error) {
			if teamID != "team-1" {
				return "", service.Errorf(service.ENOTFOUND, "no team")
			}
			return teamExternalID, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{fake: f, aws: a, conn: conn, account: acct}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func wantReason(t *testing.T, err error, code string, reason service.Reason) {
	t.Helper()
	if service.ErrorCode(err) != code || service.ErrorReason(err) != reason {
		t.Fatalf("err = %v (%s/%s), want %s/%s", err, service.ErrorCode(err), service.ErrorReason(err), code, reason)
	}
}

func TestVerifyRole(t *testing.T) {
	for _, tc := range []struct {
		name        string
		trust       awsfake.Trust
		fault       *awsfake.Fault
		code        string
		reason      service.Reason
		assumeCalls int
	}{
		{"ExternalIdEnforced", awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: teamExternalID}, nil, "", "", 3},
		{"ErrNoConditionAcceptsNone", awsfake.Trust{Mode: awsfake.TrustNone}, nil,
			service.EVALIDATION, reasonExternalIDNotEnforced, 2},
		{"ErrWildcardAcceptsWrongOne", awsfake.Trust{Mode: awsfake.TrustWildcard}, nil,
			service.EVALIDATION, reasonExternalIDNotEnforced, 3},
		{"ErrOtherTeamsExternalId", awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: "kukie-team-other"}, nil,
			service.EVALIDATION, reasonAssumeRoleDenied, 1},
		{"ErrTrustsAnotherAccount", awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: teamExternalID, Account: "444455556666"}, nil,
			service.EVALIDATION, reasonAssumeRoleDenied, 1},
		{"ErrThrottledIsUnavailable", awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: teamExternalID},
			&awsfake.Fault{Times: awsfake.Always, Code: "Throttling", Status: 400}, service.EUNAVAILABLE, reasonAWSUnavailable, 3},
		{"ErrServerErrorIsUnavailable", awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: teamExternalID},
			&awsfake.Fault{Times: awsfake.Always, Code: "InternalFailure", Status: 500}, service.EUNAVAILABLE, reasonAWSUnavailable, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := mustFixture(t, awsfake.LevelFull)
			fx.fake.AddRole(awsfake.Role{ARN: customerRole, Trust: tc.trust, Level: awsfake.LevelFull})
			if tc.fault != nil {
				fx.fake.FailWith(awsfake.OpAssumeRole, *tc.fault)
			}
			err := fx.aws.VerifyRole(ctxFor(t), customerRole, teamExternalID)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("VerifyRole: %v", err)
				}
			} else {
				wantReason(t, err, tc.code, tc.reason)
			}
			if got := fx.fake.Calls(awsfake.OpAssumeRole); got != tc.assumeCalls {
				t.Errorf("AssumeRole called %d times, want %d", got, tc.assumeCalls)
			}
		})
	}
}

func TestVerifyRoleProbeUnavailable(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	fx.fake.FailWith(awsfake.OpAssumeRole, awsfake.Fault{Times: awsfake.Always, Code: "Throttling", Status: 400})
	wantReason(t, fx.aws.probe(ctxFor(t), customerRole, teamExternalID, nil), service.EUNAVAILABLE, reasonAWSUnavailable)
	fx.fake.ClearFaults()
	fx.fake.FailWith(awsfake.OpAssumeRole, awsfake.Fault{Times: awsfake.Always, Code: "ValidationError", Status: 400})
	if err := fx.aws.probe(ctxFor(t), customerRole, teamExternalID, nil); service.ErrorCode(err) != service.EINTERNAL {
		t.Errorf("a probe failing otherwise than AccessDenied = %v, want EINTERNAL (not counted as refused)", err)
	}
}

func TestVerifyRoleKeepsOnlyTheGoodSession(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	ctx := ctxFor(t)
	if err := fx.aws.VerifyRole(ctx, customerRole, teamExternalID); err != nil {
		t.Fatal(err)
	}
	// The stack is read with the session VerifyRole cached: no fourth AssumeRole.
	fx.fake.AddStack(awsfake.Stack{ARN: customerStack, Parameters: map[string]string{"AccessLevel": "FULL"},
		Outputs: map[string]string{"KukieTemplateVersion": "5"}})
	if _, err := fx.aws.DescribeStack(ctx, customerRole, teamExternalID, customerStack); err != nil {
		t.Fatal(err)
	}
	if got := fx.fake.Calls(awsfake.OpAssumeRole); got != 3 {
		t.Errorf("AssumeRole called %d times, want 3 (verification only)", got)
	}

	// A role that does not enforce the ExternalId leaves nothing cached.
	fx.fake.AddRole(awsfake.Role{ARN: customerRole, Trust: awsfake.Trust{Mode: awsfake.TrustNone}, Level: awsfake.LevelFull})
	wantReason(t, fx.aws.VerifyRole(ctx, customerRole, teamExternalID), service.EVALIDATION, reasonExternalIDNotEnforced)
	if _, ok := fx.aws.creds.cache.Peek(customerRole + "\x00" + teamExternalID); ok {
		t.Error("the session of a rejected role stayed cached")
	}
}

func TestDescribeStack(t *testing.T) {
	topics := []string{"arn:aws:sns:ap-northeast-2:" + customerAccount + ":kukie-events"}
	for _, tc := range []struct {
		name     string
		stack    *awsfake.Stack
		fault    *awsfake.Fault
		stackARN string
		want     service.StackFacts
		code     string
		reason   service.Reason
	}{
		{"V5", &awsfake.Stack{Parameters: map[string]string{"AccessLevel": "FULL", "AllowedNamespaces": "team-b,team-a, team-b"},
			Outputs: map[string]string{"KukieTemplateVersion": "5"}, NotificationARNs: topics}, nil, customerStack,
			service.StackFacts{AccessLevel: service.AccessFull, TemplateVersion: "5",
				AllowedNamespaces: []string{"team-a", "team-b"}, NotificationARNs: topics}, "", ""},
		{"V4WithoutOutput", &awsfake.Stack{Parameters: map[string]string{"AccessLevel": "FULL"}, NotificationARNs: topics}, nil, customerStack,
			service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "4", ConfirmationRequired: true,
				AllowedNamespaces: []string{"kukie-*"}, NotificationARNs: topics}, "", ""},
		{"UnknownAccessLevel", &awsfake.Stack{Parameters: map[string]string{"AccessLevel": "EVERYTHING", "AllowedNamespaces": "dev-*"},
			Outputs: map[string]string{"KukieTemplateVersion": "5"}}, nil, customerStack,
			service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "5", ConfirmationRequired: true,
				AllowedNamespaces: []string{"dev-*"}, NotificationARNs: []string{}}, "", ""},
		{"ErrMissingStack", nil, nil, customerStack, service.StackFacts{}, service.EVALIDATION, reasonStackNotFound},
		{"ErrAnotherStackIsDenied", &awsfake.Stack{}, nil, strings.Replace(customerStack, "kukie-access", "other", 1),
			service.StackFacts{}, service.EVALIDATION, reasonStackNotFound},
		{"ErrDeletedStack", &awsfake.Stack{Status: "DELETE_COMPLETE", Outputs: map[string]string{"KukieTemplateVersion": "5"}}, nil,
			customerStack, service.StackFacts{}, service.EVALIDATION, reasonStackNotFound},
		{"ErrThrottled", &awsfake.Stack{}, &awsfake.Fault{Times: awsfake.Always, Code: "Throttling", Status: 400}, customerStack,
			service.StackFacts{}, service.EUNAVAILABLE, reasonAWSUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := mustFixture(t, awsfake.LevelFull)
			if tc.stack != nil {
				s := *tc.stack
				s.ARN = customerStack
				fx.fake.AddStack(s)
			}
			if tc.fault != nil {
				fx.fake.FailWith(awsfake.OpDescribeStacks, *tc.fault)
			}
			got, err := fx.aws.DescribeStack(ctxFor(t), customerRole, teamExternalID, tc.stackARN)
			if tc.code != "" {
				wantReason(t, err, tc.code, tc.reason)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ConfirmationRequired == (got.Reason == "") {
				t.Errorf("Reason %q must be set exactly when confirmation is required", got.Reason)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(service.StackFacts{}, "Reason")); diff != "" {
				t.Errorf("DescribeStack (-want +got):\n%s", diff)
			}
		})
	}
}

// caPEM is a stand-in CA certificate.
const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func (fx *fixture) addCluster(endpoint, ca string) string {
	return fx.fake.AddCluster(awsfake.Cluster{Region: eksRegion, Account: customerAccount, Name: eksName,
		Endpoint: endpoint, CAData: base64.StdEncoding.EncodeToString([]byte(ca))})
}

func TestDescribeCluster(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
	got, err := fx.aws.DescribeCluster(ctxFor(t), fx.account, teamExternalID, eksRegion, eksName)
	if err != nil {
		t.Fatal(err)
	}
	want := service.EKSCluster{ARN: arn, Status: "ACTIVE", AuthenticationMode: "API_AND_CONFIG_MAP",
		Endpoint: "https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", CAData: []byte(caPEM)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DescribeCluster (-want +got):\n%s", diff)
	}
	_, err = fx.aws.DescribeCluster(ctxFor(t), fx.account, teamExternalID, eksRegion, "nope")
	wantReason(t, err, service.ENOTFOUND, ReasonEKSClusterNotFound)
}

func eksCluster(level service.AccessLevel, namespaces ...string) service.Cluster {
	c := testCluster()
	c.Region, c.EKSName, c.AccessLevel, c.Namespaces = eksRegion, eksName, level, namespaces
	return c
}

func TestGrantAccess(t *testing.T) {
	editARN := awsfake.PolicyARN("aws", awsfake.PolicyEdit)
	adminARN := awsfake.PolicyARN("aws", awsfake.PolicyClusterAdmin)
	for _, tc := range []struct {
		name        string
		level       awsfake.Level
		existing    *awsfake.AccessEntry
		cluster     service.Cluster
		wantCreated bool
		want        []awsfake.Association
		code        string
		reason      service.Reason
	}{
		{"FullCreatesEntry", awsfake.LevelFull, nil, eksCluster(service.AccessFull, "ignored"), true,
			[]awsfake.Association{{PolicyARN: adminARN, ScopeType: "cluster"}}, "", ""},
		{"LimitedEditInSortedNamespaces", awsfake.LevelLimited, nil, eksCluster(service.AccessLimited, "team-b", "team-a", "team-b"), true,
			[]awsfake.Association{{PolicyARN: editARN, ScopeType: "namespace", Namespaces: []string{"team-a", "team-b"}}}, "", ""},
		{"ReusesCleanEntry", awsfake.LevelLimited, &awsfake.AccessEntry{PrincipalARN: customerRole},
			eksCluster(service.AccessLimited, "team-a"), false,
			[]awsfake.Association{{PolicyARN: editARN, ScopeType: "namespace", Namespaces: []string{"team-a"}}}, "", ""},
		{"ReusesEntryWithItsOwnPolicy", awsfake.LevelFull, &awsfake.AccessEntry{PrincipalARN: customerRole,
			Policies: []awsfake.Association{{PolicyARN: adminARN, ScopeType: "cluster"}}},
			eksCluster(service.AccessFull), false, []awsfake.Association{{PolicyARN: adminARN, ScopeType: "cluster"}}, "", ""},
		{"ErrEntryWithGroups", awsfake.LevelFull, &awsfake.AccessEntry{PrincipalARN: customerRole, KubernetesGroups: []string{"system:masters"}},
			eksCluster(service.AccessFull), false, nil, service.ECONFLICT, reasonAccessEntryConflict},
		{"ErrEntryWithOtherPolicy", awsfake.LevelLimited, &awsfake.AccessEntry{PrincipalARN: customerRole,
			Policies: []awsfake.Association{{PolicyARN: awsfake.PolicyARN("aws", awsfake.PolicyView), ScopeType: "cluster"}}},
			eksCluster(service.AccessLimited, "team-a"), false, nil, service.ECONFLICT, reasonAccessEntryConflict},
		{"ErrEntryOfAnotherType", awsfake.LevelFull, &awsfake.AccessEntry{PrincipalARN: customerRole, Type: "EC2_LINUX"},
			eksCluster(service.AccessFull), false, nil, service.ECONFLICT, reasonAccessEntryConflict},
		{"ErrNamespaceOutsideAllowed", awsfake.LevelLimited, nil, eksCluster(service.AccessLimited, "default"), true,
			nil, service.EVALIDATION, ReasonAWSAccessDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := mustFixture(t, tc.level, "team-*")
			arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
			if tc.existing != nil {
				fx.fake.AddAccessEntry(arn, *tc.existing)
			}
			created, err := fx.aws.GrantAccess(ctxFor(t), fx.account, teamExternalID, tc.cluster)
			if created != tc.wantCreated {
				t.Errorf("created = %v, want %v", created, tc.wantCreated)
			}
			if tc.code != "" {
				wantReason(t, err, tc.code, tc.reason)
				if tc.code == service.ECONFLICT && len(fx.fake.Associations(arn, customerRole)) != len(tc.existing.Policies) {
					t.Error("a conflicting entry was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			entry, ok := fx.fake.AccessEntry(arn, customerRole)
			if !ok || entry.Type != "STANDARD" || len(entry.KubernetesGroups) != 0 {
				t.Fatalf("entry = %+v, %v; want a STANDARD entry without groups", entry, ok)
			}
			if diff := cmp.Diff(tc.want, entry.Policies, cmpopts.IgnoreFields(awsfake.Association{}, "AssociatedAt", "ModifiedAt")); diff != "" {
				t.Errorf("associations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGrantAccessPropagation(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
	fx.fake.FailPropagation(1)
	c := eksCluster(service.AccessFull)
	created, err := fx.aws.GrantAccess(ctxFor(t), fx.account, teamExternalID, c)
	if err == nil || created {
		t.Fatalf("GrantAccess = %v, %v; want the propagation error", created, err)
	}
	if !RetryableWithin(err, time.Minute, service.RegistrationPropagationWindow) || RetryableWithin(err, 10*time.Minute, service.RegistrationPropagationWindow) {
		t.Errorf("an invalid principal right after the role change must be retryable, and not later: %v", err)
	}
	if created, err = fx.aws.GrantAccess(ctxFor(t), fx.account, teamExternalID, c); err != nil || !created {
		t.Fatalf("retry: GrantAccess = %v, %v", created, err)
	}
	if len(fx.fake.Associations(arn, customerRole)) != 1 {
		t.Error("the retry did not associate the policy")
	}

	// A later attempt after a failed association keeps reporting that Kukie
	// created the entry.
	fx.fake.Fail(awsfake.OpAssociateAccessPolicy, 1, "ThrottlingException", 429)
	c.EntryCreated = true
	created, err = fx.aws.GrantAccess(ctxFor(t), fx.account, teamExternalID, c)
	if err != nil || !created {
		t.Errorf("GrantAccess after throttling (retried by the SDK) = %v, %v", created, err)
	}
}

func TestRevokeAccess(t *testing.T) {
	viewARN := awsfake.PolicyARN("aws", awsfake.PolicyView)
	for _, tc := range []struct {
		name         string
		entryCreated bool
		foreign      bool
	}{
		{"KukiesEntryDeleted", true, false},
		{"ForeignEntryKept", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := mustFixture(t, awsfake.LevelFull)
			arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
			entry := awsfake.AccessEntry{PrincipalARN: customerRole, Policies: []awsfake.Association{
				{PolicyARN: awsfake.PolicyARN("aws", awsfake.PolicyClusterAdmin), ScopeType: "cluster"},
				{PolicyARN: awsfake.PolicyARN("aws", awsfake.PolicyEdit), ScopeType: "namespace", Namespaces: []string{"a"}}}}
			if tc.foreign {
				entry.Policies = append(entry.Policies, awsfake.Association{PolicyARN: viewARN, ScopeType: "cluster"})
			}
			fx.fake.AddAccessEntry(arn, entry)
			c := eksCluster(service.AccessFull)
			c.EntryCreated = tc.entryCreated
			if err := fx.aws.RevokeAccess(ctxFor(t), fx.account, teamExternalID, c); err != nil {
				t.Fatal(err)
			}
			got, ok := fx.fake.AccessEntry(arn, customerRole)
			if ok == tc.entryCreated {
				t.Errorf("entry present = %v, want %v", ok, !tc.entryCreated)
			}
			if tc.foreign && (len(got.Policies) != 1 || got.Policies[0].PolicyARN != viewARN) {
				t.Errorf("policies left = %+v, want only the customer's own View policy", got.Policies)
			}
			// Revoking again, and on a cluster that is gone, succeeds.
			if err := fx.aws.RevokeAccess(ctxFor(t), fx.account, teamExternalID, c); err != nil {
				t.Errorf("second revoke: %v", err)
			}
			c.EKSName = "deleted-cluster"
			if err := fx.aws.RevokeAccess(ctxFor(t), fx.account, teamExternalID, c); err != nil {
				t.Errorf("revoke on a missing cluster: %v", err)
			}
		})
	}
}

// tokenCheckingCluster is a trivial stand-in for an EKS API server: it
// accepts a token when the fake STS verifies it for the cluster's name, and
// answers SelfSubjectReview with the caller.
type tokenCheckingCluster struct {
	fake *awsfake.AWS
	name string

	mu       sync.Mutex
	tokens   map[string]bool
	callers  map[string]bool
	requests int
}

func (c *tokenCheckingCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	caller, err := c.fake.VerifyToken(token, c.name)
	c.mu.Lock()
	c.requests++
	c.tokens[token] = true
	if err == nil {
		c.callers[caller.PrincipalARN] = true
	}
	c.mu.Unlock()
	if err != nil {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
		"status": map[string]any{"userInfo": map[string]any{"username": caller.ARN}}})
}

func startTokenCheckingCluster(t *testing.T, fake *awsfake.AWS, name string) (*tokenCheckingCluster, *httptest.Server, string) {
	t.Helper()
	c := &tokenCheckingCluster{fake: fake, name: name, tokens: map[string]bool{}, callers: map[string]bool{}}
	srv := httptest.NewUnstartedServer(c)
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return c, srv, ca
}

func TestTokensAcceptedAndAssumeRoleOnce(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	ctx := ctxFor(t)
	cluster, srv, ca := startTokenCheckingCluster(t, fx.fake, eksName)
	fx.addCluster(srv.URL, ca)
	desc, err := fx.aws.DescribeCluster(ctx, fx.account, teamExternalID, eksRegion, eksName)
	if err != nil {
		t.Fatal(err)
	}
	c := eksCluster(service.AccessFull)
	c.Endpoint, c.CAData = desc.Endpoint, desc.CAData
	if _, err := fx.aws.GrantAccess(ctx, fx.account, teamExternalID, c); err != nil {
		t.Fatal(err)
	}
	if err := fx.aws.CheckAccess(ctx, c); err != nil {
		t.Fatalf("CheckAccess: %v", err)
	}

	// Many requests through several connections, concurrently.
	var wg sync.WaitGroup
	for range 4 {
		cfg, err := fx.conn.RESTConfig(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		client := mustHTTPClient(t, cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				resp, err := client.Get(srv.URL + "/version")
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d: the cluster refused the token", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := fx.fake.Calls(awsfake.OpAssumeRole); got != 1 {
		t.Errorf("AssumeRole called %d times for DescribeCluster, GrantAccess, CheckAccess and 100 requests, want 1", got)
	}
	if got := fx.fake.Calls(awsfake.OpDescribeCluster); got != 1 {
		t.Errorf("DescribeCluster called %d times, want 1 (reads use the stored endpoint and CA)", got)
	}
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	if !cluster.callers[customerRole] || len(cluster.callers) != 1 {
		t.Errorf("callers = %v, want only the customer role", cluster.callers)
	}
}

func TestCheckAccessRefused(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	_, srv, ca := startTokenCheckingCluster(t, fx.fake, "another-cluster") // tokens for eksName do not verify
	c := eksCluster(service.AccessFull)
	c.Endpoint, c.CAData = srv.URL, []byte(ca)
	err := fx.aws.CheckAccess(ctxFor(t), c)
	wantReason(t, err, service.EUPSTREAM, ReasonClusterUnauthorized)
	if !RetryableWithin(err, time.Minute, service.RegistrationPropagationWindow) || RetryableWithin(err, time.Hour, service.RegistrationPropagationWindow) {
		t.Errorf("a refused token is retryable only while the access entry may be propagating: %v", err)
	}
	srv.Close()
	wantReason(t, fx.aws.CheckAccess(ctxFor(t), c), service.EUPSTREAM, ReasonClusterUnreachable)
}

func TestCheckAccessRoleNoLongerAssumable(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	_, srv, ca := startTokenCheckingCluster(t, fx.fake, eksName)
	fx.fake.AddRole(awsfake.Role{ARN: customerRole, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: "changed"},
		Level: awsfake.LevelFull})
	c := eksCluster(service.AccessFull)
	c.Endpoint, c.CAData = srv.URL, []byte(ca)
	err := fx.aws.CheckAccess(ctxFor(t), c)
	wantReason(t, err, service.EVALIDATION, reasonAssumeRoleDenied)
	if RetryableWithin(err, time.Minute, service.RegistrationPropagationWindow) {
		t.Errorf("a role that refuses Kukie is not retried: %v", err)
	}
}
