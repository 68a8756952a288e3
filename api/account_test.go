package api

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

// fakeAWS is the AWS side at the service boundary (eksaccess has its own
// tests against wire-faithful fakes): it answers what the test sets.
type fakeAWS struct {
	mu          sync.Mutex
	verifyErr   error
	facts       service.StackFacts
	cluster     service.EKSCluster
	grantErrs   []error // one per GrantAccess call, then nil
	grants      int
	revocations int
	entries     map[string]bool // clusters with an entry made by GrantAccess
}

func (f *fakeAWS) VerifyRole(context.Context, string, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifyErr
}

func (f *fakeAWS) DescribeStack(context.Context, string, string, string) (service.StackFacts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.facts, nil
}

func (f *fakeAWS) DescribeCluster(context.Context, service.Account, string, string, string) (service.EKSCluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cluster, nil
}

// GrantAccess creates the entry on the first call that gets that far (a
// propagating failure happens after the create; a permanent one before),
// and reports created only then, as EKS's 409 on a second create would.
func (f *fakeAWS) GrantAccess(_ context.Context, _ service.Account, _ string, c service.Cluster) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants++
	var err error
	if len(f.grantErrs) > 0 {
		err, f.grantErrs = f.grantErrs[0], f.grantErrs[1:]
	}
	if err != nil && service.ErrorCode(err) != service.EUNAVAILABLE {
		return false, err
	}
	created := !f.entries[c.ID]
	if f.entries == nil {
		f.entries = map[string]bool{}
	}
	f.entries[c.ID] = true
	return created, err
}

func (f *fakeAWS) RevokeAccess(context.Context, service.Account, string, service.Cluster) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revocations++
	return nil
}

func (f *fakeAWS) set(change func(*fakeAWS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

type okChecker struct{}

func (okChecker) CheckAccess(context.Context, service.Cluster) error { return nil }

// fakeJobs records what was queued.
type fakeJobs struct {
	mu              sync.Mutex
	access, removal []string
}

func (j *fakeJobs) EnqueueAccess(_ context.Context, team, id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.access = append(j.access, team+"/"+id)
	return nil
}

func (j *fakeJobs) EnqueueRemoval(_ context.Context, team, id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.removal = append(j.removal, team+"/"+id)
	return nil
}

const (
	roleARN  = "arn:aws:iam::111122223333:role/kukie/kukie-access"
	stackARN = "arn:aws:cloudformation:ap-northeast-2:111122223333:stack/kukie-access/6f1c-4e2a"
)

func newAWSAPI(t *testing.T, aws *fakeAWS) (*testAPI, *fakeJobs) {
	t.Helper()
	jobs := &fakeJobs{}
	var deps awsDeps
	if aws != nil {
		deps = awsDeps{aws: aws, checker: okChecker{}, jobs: jobs}
	}
	srv, _ := mustServeWithAWS(t, nil, deps)
	doc, router := mustSpec(t)
	return &testAPI{t: t, srv: srv, router: router, doc: doc}, jobs
}

func connectBody(role, stack string) map[string]any {
	return map[string]any{"role_arn": role, "stack_arn": stack}
}

func TestAccountsWithoutAWS(t *testing.T) {
	a, _ := newAWSAPI(t, nil)
	admin := token(t, "carol", "team-a", "admin")
	res := a.do("POST", "/v1/aws/accounts", admin, connectBody(roleARN, stackARN), nil)
	res.wantProblem(t, 503, "aws_unavailable")
	if res.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	a.do("POST", "/v1/clusters", admin, map[string]any{"account_id": "x", "region": "us-east-1", "name": "c",
		"namespaces": []string{"web"}}, nil).wantProblem(t, 404, "account_not_found")
	var list struct{ Accounts []service.Account }
	a.do("GET", "/v1/aws/accounts", admin, nil, nil).decode(t, &list)
	if len(list.Accounts) != 0 {
		t.Errorf("accounts = %+v", list.Accounts)
	}
}

func TestConnectAccount(t *testing.T) {
	aws := &fakeAWS{facts: service.StackFacts{AccessLevel: service.AccessFull, TemplateVersion: "5",
		AllowedNamespaces: []string{"kukie-*"}, NotificationARNs: []string{"arn:aws:sns:ap-northeast-2:111122223333:kukie"}}}
	a, _ := newAWSAPI(t, aws)
	admin, member := token(t, "carol", "team-a", "admin"), token(t, "alice", "team-a", "member")
	var acc service.Account
	res := a.do("POST", "/v1/aws/accounts", admin, connectBody(roleARN, stackARN), nil)
	res.decode(t, &acc)
	if res.status != 201 || acc.AWSAccountID != "111122223333" || acc.Partition != "aws" || acc.AccessLevel != service.AccessFull ||
		acc.State != service.AccountActive || res.header.Get("Location") != "/v1/aws/accounts/"+acc.ID {
		t.Fatalf("connect: %d %+v", res.status, acc)
	}
	var got service.Account
	a.do("GET", "/v1/aws/accounts/"+acc.ID, member, nil, nil).decode(t, &got)
	if got.ID != acc.ID || got.RoleARN != roleARN {
		t.Errorf("get = %+v", got)
	}
	a.do("GET", "/v1/aws/accounts/"+acc.ID, token(t, "eve", "team-b", "admin"), nil, nil).wantProblem(t, 404, "account_not_found")
	// The same AWS account cannot be connected twice, by any team.
	a.do("POST", "/v1/aws/accounts", token(t, "eve", "team-b", "admin"), connectBody(roleARN, stackARN), nil).
		wantProblem(t, 409, "aws_account_in_use")
	// A person decides: admin tokens that also carry agent are refused, as are members.
	a.do("POST", "/v1/aws/accounts", token(t, "carol", "team-a", "admin", "agent"), connectBody(roleARN, stackARN), nil).
		wantProblem(t, 403, "forbidden")
	a.do("POST", "/v1/aws/accounts", member, connectBody(roleARN, stackARN), nil).wantProblem(t, 403, "forbidden")

	p := a.do("POST", "/v1/aws/accounts", admin, connectBody("arn:aws:iam::1:user/x", "nope"), nil).wantProblem(t, 422, "validation_failed")
	if len(p.Errors) != 2 {
		t.Errorf("errors = %+v", p.Errors)
	}
	a.do("POST", "/v1/aws/accounts", admin, connectBody("arn:aws:iam::444455556666:role/kukie",
		stackARN), nil).wantProblem(t, 422, "stack_account_mismatch")
	for _, reason := range []service.Reason{"assume_role_denied", "external_id_not_enforced", "stack_not_found"} {
		aws.set(func(f *fakeAWS) { f.verifyErr = service.ReasonError(service.EVALIDATION, reason, "refused") })
		a.do("POST", "/v1/aws/accounts", admin, connectBody("arn:aws:iam::777788889999:role/k",
			"arn:aws:cloudformation:us-east-1:777788889999:stack/k/1"), nil).wantProblem(t, 422, string(reason))
	}
	aws.set(func(f *fakeAWS) { f.verifyErr = service.ErrAWSUnavailable() })
	a.do("POST", "/v1/aws/accounts", admin, connectBody("arn:aws:iam::777788889999:role/k",
		"arn:aws:cloudformation:us-east-1:777788889999:stack/k/1"), nil).wantProblem(t, 503, "aws_unavailable")
	// A v4 stack is applied as limited and waits for a person's confirmation.
	aws.set(func(f *fakeAWS) {
		f.verifyErr = nil
		f.facts = service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "4", ConfirmationRequired: true,
			Reason: "template v4", AllowedNamespaces: []string{"kukie-*"}}
	})
	a.do("POST", "/v1/aws/accounts", admin, connectBody("arn:aws:iam::777788889999:role/k",
		"arn:aws:cloudformation:us-east-1:777788889999:stack/k/1"), nil).decode(t, &got)
	if got.State != service.AccountConfirmationRequired || got.AccessLevel != service.AccessLimited || got.TemplateVersion != "4" {
		t.Errorf("v4 account = %+v", got)
	}
	var list struct{ Accounts []service.Account }
	a.do("GET", "/v1/aws/accounts", member, nil, nil).decode(t, &list)
	if len(list.Accounts) != 2 {
		t.Errorf("%d accounts stored, want 2 (nothing stored on a refusal)", len(list.Accounts))
	}
}

func TestRegisterCluster(t *testing.T) {
	aws := &fakeAWS{facts: service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "5",
		AllowedNamespaces: []string{"kukie-*", "web"}},
		cluster: service.EKSCluster{Status: "ACTIVE", AuthenticationMode: "API_AND_CONFIG_MAP", Endpoint: "https://eks.example", CAData: []byte("pem")}}
	a, jobs := newAWSAPI(t, aws)
	admin := token(t, "carol", "team-a", "admin")
	var acc service.Account
	a.do("POST", "/v1/aws/accounts", admin, connectBody(roleARN, stackARN), nil).decode(t, &acc)
	register := func(name string, namespaces ...string) response {
		return a.do("POST", "/v1/clusters", admin, map[string]any{"account_id": acc.ID, "region": "ap-northeast-2",
			"name": name, "namespaces": namespaces}, nil)
	}
	var c service.Cluster
	res := register("prod", "web", "kukie-api")
	res.decode(t, &c)
	if res.status != 201 || c.Kind != service.ClusterEKS || c.AccessState != service.AccessActive || c.AccessLevel != service.AccessLimited ||
		c.AccountID != acc.ID || c.EKSName != "prod" || len(c.Namespaces) != 2 {
		t.Fatalf("register: %d %+v", res.status, c)
	}
	register("prod", "web").wantProblem(t, 409, "cluster_exists")
	grants := aws.grants
	p := register("other", "web", "default", "kube-system").wantProblem(t, 422, "namespaces_not_allowed")
	if len(p.Errors) != 2 || aws.grants != grants {
		t.Errorf("outside namespaces: errors %+v, %d access calls", p.Errors, aws.grants-grants)
	}
	aws.set(func(f *fakeAWS) { f.cluster.AuthenticationMode = "CONFIG_MAP" })
	register("cm", "web").wantProblem(t, 422, "authentication_mode_unsupported")
	aws.set(func(f *fakeAWS) { f.cluster.AuthenticationMode, f.cluster.Status = "API", "CREATING" })
	register("new", "web").wantProblem(t, 422, "cluster_not_active")
	aws.set(func(f *fakeAWS) {
		f.cluster.Status = "ACTIVE"
		f.grantErrs = []error{service.ReasonError(service.ECONFLICT, "access_entry_conflict", "groups")}
	})
	register("foreign", "web").wantProblem(t, 409, "access_entry_conflict")
	// AWS still propagating: 202 pending, a job finishes it, the cluster is not read meanwhile.
	aws.set(func(f *fakeAWS) { f.grantErrs = []error{service.WrapError(service.EUNAVAILABLE, "propagating", nil)} })
	res = register("slow", "web")
	var pending service.Cluster
	res.decode(t, &pending)
	if res.status != 202 || pending.AccessState != service.AccessPending || len(jobs.access) != 1 {
		t.Fatalf("propagating: %d %+v jobs %v", res.status, pending, jobs.access)
	}
	var sb service.Sidebar
	a.do("GET", "/v1/argocd/clusters", admin, nil, nil).decode(t, &sb)
	found := false
	for _, u := range sb.Unavailable {
		found = found || (u.ID == pending.ID && u.Reason == "pending")
	}
	if !found {
		t.Errorf("pending cluster not listed unavailable: %+v", sb.Unavailable)
	}
	var list struct{ Clusters []service.Cluster }
	a.do("GET", "/v1/clusters", admin, nil, nil).decode(t, &list)
	names := map[string]bool{}
	for _, cl := range list.Clusters {
		names[cl.Name] = true
	}
	if !names["prod"] || !names["slow"] || names["foreign"] || names["other"] {
		t.Errorf("clusters = %v (refused registrations must leave nothing)", names)
	}
	// Reconcile and removal queue jobs; only admins without agent may.
	a.do("POST", "/v1/clusters/"+c.ID+"/access/reconcile", admin, nil, nil).decode(t, &service.Cluster{})
	var removing service.Cluster
	a.do("DELETE", "/v1/clusters/"+c.ID, admin, nil, nil).decode(t, &removing)
	if removing.AccessState != service.AccessDeleting || len(jobs.access) != 2 || len(jobs.removal) != 1 {
		t.Errorf("remove: %+v jobs %v %v", removing, jobs.access, jobs.removal)
	}
	agentAdmin := token(t, "carol", "team-a", "admin", "agent")
	register2 := map[string]any{"account_id": acc.ID, "region": "ap-northeast-2", "name": "x", "namespaces": []string{"web"}}
	a.do("POST", "/v1/clusters", agentAdmin, register2, nil).wantProblem(t, 403, "forbidden")
	a.do("DELETE", "/v1/clusters/"+pending.ID, agentAdmin, nil, nil).wantProblem(t, 403, "forbidden")
	a.do("POST", "/v1/clusters/"+pending.ID+"/access/reconcile", agentAdmin, nil, nil).wantProblem(t, 403, "forbidden")
	a.do("DELETE", "/v1/clusters/prod-eks", admin, nil, nil).wantProblem(t, 409, "conflict")
	a.do("DELETE", "/v1/aws/accounts/"+acc.ID, agentAdmin, nil, nil).wantProblem(t, 403, "forbidden")
	a.do("DELETE", "/v1/aws/accounts/"+acc.ID, token(t, "eve", "team-b", "admin"), nil, nil).wantProblem(t, 404, "account_not_found")
	var gone service.Account
	a.do("DELETE", "/v1/aws/accounts/"+acc.ID, admin, nil, nil).decode(t, &gone)
	if gone.State != service.AccountDeleting || len(jobs.removal) < 2 {
		t.Errorf("disconnect: %+v, removal jobs %v", gone, jobs.removal)
	}
	// A disconnecting account takes no new clusters.
	a.do("POST", "/v1/clusters", admin, register2, nil).wantProblem(t, 409, "conflict")
	a.do("DELETE", "/v1/clusters/"+pending.ID, token(t, "eve", "team-b", "admin"), nil, nil).wantProblem(t, 404, "cluster_not_found")
	a.do("POST", "/v1/clusters", token(t, "eve", "team-b", "admin"), register2, nil).wantProblem(t, 404, "account_not_found")
}

func TestOnboarding(t *testing.T) {
	a, _ := newAWSAPI(t, nil)
	member := token(t, "alice", "team-a", "member")
	var team service.Team
	a.do("GET", "/v1/team", member, nil, nil).decode(t, &team)
	var o service.Onboarding
	a.do("GET", "/v1/aws/onboarding", member, nil, nil).decode(t, &o)
	if o.ExternalID == "" || o.ExternalID != team.ExternalID || len(o.Levels) != 2 {
		t.Errorf("onboarding = %+v (team %s)", o, team.ExternalID)
	}
	a.do("GET", "/v1/aws/onboarding", token(t, "bot", "team-a", "agent"), nil, nil).wantProblem(t, 403, "forbidden")
}

// TestRegistrationJobGivesUp: the job retries while AWS propagates and, on
// its last attempt, leaves the cluster degraded with the reason; a later
// attempt that succeeds makes it active.
func TestRegistrationJobGivesUp(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	aws := &fakeAWS{facts: service.StackFacts{AccessLevel: service.AccessFull, TemplateVersion: "5"},
		cluster: service.EKSCluster{Status: "ACTIVE", AuthenticationMode: "API"}}
	reg := &service.Registrations{Clusters: db, EKS: db, Accounts: db, Teams: db, AWS: aws, Checker: okChecker{},
		Jobs: &fakeJobs{}, Now: time.Now}
	p := service.Principal{TeamID: "team-a", UserID: "carol", Roles: []service.Role{service.RoleAdmin}}
	acc, err := (&service.Accounts{Store: db, Teams: db, AWS: aws, Now: time.Now}).Connect(ctx, p, roleARN, stackARN, "")
	if err != nil {
		t.Fatal(err)
	}
	propagating := service.WrapError(service.EUNAVAILABLE, "The specified principalArn is invalid.", nil)
	aws.set(func(f *fakeAWS) { f.grantErrs = []error{propagating, propagating, propagating} })
	c, err := reg.Register(ctx, p, service.RegisterCluster{AccountID: acc.ID, Region: "us-east-1", Name: "prod", Namespaces: []string{"web"}})
	if err != nil || c.AccessState != service.AccessPending {
		t.Fatalf("register: %+v %v", c, err)
	}
	if err := reg.FinishAccess(ctx, p.TeamID, c.ID, false); err == nil {
		t.Error("a propagating failure before the last attempt must ask for a retry")
	}
	if err := reg.FinishAccess(ctx, p.TeamID, c.ID, true); err != nil {
		t.Fatalf("last attempt: %v", err)
	}
	got, err := db.GetCluster(ctx, p.TeamID, c.ID)
	if err != nil || got.AccessState != service.AccessDegraded || got.AccessReason == "" {
		t.Fatalf("after giving up: %+v %v", got, err)
	}
	// The customer fixed it and reconciles: the next attempt succeeds.
	if err := reg.FinishAccess(ctx, p.TeamID, c.ID, false); err != nil {
		t.Fatal(err)
	}
	if got, _ = db.GetCluster(ctx, p.TeamID, c.ID); got.AccessState != service.AccessActive || got.AccessReason != "" || !got.EntryCreated {
		t.Errorf("after a successful attempt: %+v", got)
	}
}
