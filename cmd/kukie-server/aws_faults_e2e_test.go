package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/ekssim"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
)

// awsFaults are the two faults every AWS call is tried with, as each
// service spells them: throttling, and AWS failing (5xx).
func awsFaults(op string) []awsfake.Fault {
	switch op {
	case awsfake.OpAssumeRole, awsfake.OpGetCallerIdentity, awsfake.OpDescribeStacks: // STS and CloudFormation (awsQuery)
		return []awsfake.Fault{{Code: "Throttling", Status: 400}, {Code: "InternalFailure", Status: 500}}
	}
	return []awsfake.Fault{{Code: "ThrottlingException", Status: 429}, {Code: "ServerException", Status: 500}}
}

// sdkAttempts is how often the SDK's standard retryer tries one call: a
// fault queued for that many calls fails one call of the service.
const sdkAttempts = 3

// queueFaults makes op fail for c's role: sdkAttempts calls throttled, then
// sdkAttempts calls with a 5xx, then it works again. It returns how many
// calls of op the role had made before.
func queueFaults(c *switchCustomer, op string) int {
	before := c.e.f.CallsBy(op, c.role)
	for _, f := range awsFaults(op) {
		f.Times, f.Principal = sdkAttempts, c.role
		c.e.f.FailWith(op, f)
	}
	return before
}

// The flows below run in goroutines, all at once: they return their first
// failure instead of stopping the test.

// connectAccount posts the account; a 201 records its id.
func connectAccount(c *switchCustomer) answer {
	a := request("POST", c.s.public+"/v1/aws/accounts", c.e.admin, fmt.Sprintf(`{"role_arn":%q,"stack_arn":%q}`, c.role, c.stack))
	if a.err == nil && a.status == 201 {
		var acc struct{ ID string }
		a.err = json.Unmarshal([]byte(a.body), &acc)
		c.accountID = acc.ID
	}
	return a
}

// registerCluster posts the account's cluster; a 201 or 202 records its id.
func registerCluster(c *switchCustomer) answer {
	a := request("POST", c.s.public+"/v1/clusters", c.e.admin, fmt.Sprintf(
		`{"account_id":%q,"region":%q,"name":%q,"namespaces":["sandbox-plain"]}`, c.accountID, switchRegion, c.eksName))
	if a.err == nil && (a.status == 201 || a.status == 202) {
		var cl clusterView
		a.err = json.Unmarshal([]byte(a.body), &cl)
		c.clusterID = cl.ID
	}
	return a
}

// want checks an answer's status and, when given, a fragment of its body.
func want(what string, a answer, status int, fragment string) error {
	switch {
	case a.err != nil:
		return fmt.Errorf("%s: %w", what, a.err)
	case a.status != status || !strings.Contains(a.body, fragment):
		return fmt.Errorf("%s: %d %.300s, want %d with %s", what, a.status, a.body, status, fragment)
	}
	return nil
}

// registered registers the account's cluster and waits until it is
// active: at once (201), or by its job (202 pending) when the request's
// attempt ran out waiting, e.g. for a cluster lock while many registrations
// run at once.
func registered(what string, c *switchCustomer) error {
	a := registerCluster(c)
	if err := want(what, a, 201, `"access_state":"active"`); err == nil {
		return nil
	}
	if err := want(what, a, 202, `"access_state":"pending"`); err != nil {
		return err
	}
	return clusterIn(c, "active", func() bool { return true })
}

// mustRegister connects the account and registers its cluster, active.
func mustRegister(c *switchCustomer) error {
	if err := want("connect", connectAccount(c), 201, ""); err != nil {
		return err
	}
	return registered("register", c)
}

// listedCluster returns the cluster as the team lists it, and whether it
// is listed.
func listedCluster(c *switchCustomer) (clusterView, bool, error) {
	a := request("GET", c.s.public+"/v1/clusters", c.e.admin, "")
	if err := want("clusters", a, 200, ""); err != nil {
		return clusterView{}, false, err
	}
	var list struct{ Clusters []clusterView }
	if err := json.Unmarshal([]byte(a.body), &list); err != nil {
		return clusterView{}, false, err
	}
	for _, cl := range list.Clusters {
		if cl.ID == c.clusterID {
			return cl, true, nil
		}
	}
	return clusterView{}, false, nil
}

// waitFor polls until done says so; the deadline only catches a hang.
func waitFor(what string, done func() (bool, string, error)) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, last, err := done()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%s: not after 90 s; last %s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clusterIn waits until the cluster is listed in state.
func clusterIn(c *switchCustomer, state string, also func() bool) error {
	return waitFor("cluster "+state, func() (bool, string, error) {
		cl, _, err := listedCluster(c)
		return cl.AccessState == state && also(), fmt.Sprintf("%+v", cl), err
	})
}

// faultedCalls checks that op was called past its queued faults.
func faultedCalls(c *switchCustomer, op string, before int) error {
	if n := c.e.f.CallsBy(op, c.role) - before; n <= 2*sdkAttempts {
		return fmt.Errorf("%d calls of %s, want the %d faulted ones and one that worked", n, op, 2*sdkAttempts)
	}
	return nil
}

// answered makes op answer each of its faults for good while try runs, and
// wants the documented 503 aws_unavailable; then it clears the fault.
func answered(c *switchCustomer, op string, try func() answer) error {
	for _, f := range awsFaults(op) {
		f.Times, f.Principal = awsfake.Always, c.role
		c.e.f.FailWith(op, f)
		calls := c.e.f.CallsBy(op, c.role)
		err := want(fmt.Sprintf("with %s answering %s (%d)", op, f.Code, f.Status), try(), 503, `"code":"aws_unavailable"`)
		c.e.f.ClearFaultsFor(c.role)
		if err == nil && c.e.f.CallsBy(op, c.role) == calls {
			err = fmt.Errorf("%s was not called", op)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// awsFaultCase is one AWS call made to fail, in the flow that makes it.
type awsFaultCase struct {
	name    string
	account string
	stack   stackSpec // the customer's stack; limitedSandbox when zero
	run     func(c *switchCustomer) error
}

// accountIn returns the account as its API shows it.
func accountIn(c *switchCustomer) (accountView, error) {
	a := request("GET", c.s.public+"/v1/aws/accounts/"+c.accountID, c.e.admin, "")
	if err := want("account", a, 200, ""); err != nil {
		return accountView{}, err
	}
	var v accountView
	return v, json.Unmarshal([]byte(a.body), &v)
}

// stackUpdated makes the customer's stack what spec says and delivers the
// stack's UPDATE_COMPLETE event, signed as SNS signs it; it returns the
// account's desired generation from before.
func stackUpdated(c *switchCustomer, spec stackSpec) (int64, error) {
	a, err := accountIn(c)
	if err != nil {
		return 0, err
	}
	c.update(spec)
	m := c.e.sns.Notification(c.topic, sns.CloudFormationSubject,
		snstest.StackEventMessage(snstest.StackStatusEvent(c.stack, "UPDATE_COMPLETE", time.Now())))
	res, err := snstest.Post(context.Background(), nil, c.s.public+"/webhooks/aws/sns", c.e.sns.Sign(m, sns.SignatureVersion2), nil)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return a.DesiredGeneration, errors.Join(err, want("stack event", answer{status: res.StatusCode, body: string(b)}, 200, `"verdict":"accepted"`))
}

// switched waits until the account's reconcile applied a generation after
// before and the cluster is active at level.
func switched(c *switchCustomer, before int64, level string) error {
	return waitFor("switch to "+level, func() (bool, string, error) {
		a, err := accountIn(c)
		if err != nil {
			return false, "", err
		}
		cl, _, err := listedCluster(c)
		done := a.AppliedGeneration > before && a.AppliedGeneration == a.DesiredGeneration &&
			cl.AccessLevel == level && cl.AccessState == "active"
		return done, fmt.Sprintf("%+v %+v", a, cl), err
	})
}

// associated checks the EKS associations of the customer's role.
func associated(c *switchCustomer, want map[string][]string) error {
	if diff := cmp.Diff(want, c.associations()); diff != "" {
		return fmt.Errorf("EKS associations of Kukie's role (-want +got):\n%s", diff)
	}
	return nil
}

// TestAWSFaults makes each AWS call the service makes answer throttling,
// then a 5xx, for one customer's role, through the AWS SDK's own retries.
// A call a request waits for answers 503 aws_unavailable, never a 500 or
// a hang, and works once the fault clears; a call a job makes is retried
// by the job until it works, and the job finishes.
func TestAWSFaults(t *testing.T) {
	e := &switchEnv{f: awsfake.Start(t, awsfake.WithRegion(switchRegion))}
	e.f.Setenv(t)
	e.sns = snstest.StartHost(t, snsAuthority, snstest.HostOptions{})
	e.sns.SetEnv(t)
	e.admin, e.agent = e2eToken(t, "admin"), e2eToken(t, "agent")
	// Credentials for STS's shortest session (15 min) are within the
	// server's renewal window at once, so every flow assumes the role again,
	// as each does once its credentials near expiry: AssumeRole's faults
	// reach the switch's calls too.
	e.f.SetSessionDuration(15 * time.Minute)
	// The server first: it installs client-go's process-wide logger, which
	// must happen before the simulation's own client-go calls run.
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{"KUKIE_AWS_REGION": switchRegion})
	// The service's own account, which the onboarding template makes the
	// customer's role trust, comes from STS GetCallerIdentity once: while
	// STS fails, onboarding answers 503 rather than a template without it.
	onboarding := s.public + "/v1/aws/onboarding"
	for _, f := range awsFaults(awsfake.OpGetCallerIdentity) {
		f.Times = awsfake.Always
		e.f.FailWith(awsfake.OpGetCallerIdentity, f)
		if status, body := call(t, "GET", onboarding, e.admin, ""); status != 503 || !hasCode(body, "aws_unavailable") {
			t.Errorf("onboarding with GetCallerIdentity answering %s: %d %.300s, want 503 aws_unavailable", f.Code, status, body)
		}
		e.f.ClearFaults()
	}
	if status, body := call(t, "GET", onboarding, e.admin, ""); status != 200 || !strings.Contains(body, `"service_account_id":"`+e.f.Account()+`"`) {
		t.Errorf("onboarding once STS answers: %d %.300s", status, body)
	}
	e.sim = ekssim.Start(t, e.f, awsfake.Cluster{Region: switchRegion, Account: "999900000013", Name: "shared"},
		k8stest.Options{})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", grepLines(s.logs.String(), `"err"`))
		}
	})

	cases := []awsFaultCase{
		// Calls a request waits for: the documented 503, then success.
		{name: "ConnectAssumeRole", account: "213000000001", run: func(c *switchCustomer) error {
			if err := answered(c, awsfake.OpAssumeRole, func() answer { return connectAccount(c) }); err != nil {
				return err
			}
			return want("connect once AssumeRole works", connectAccount(c), 201, "")
		}},
		{name: "ConnectDescribeStacks", account: "213000000002", run: func(c *switchCustomer) error {
			if err := answered(c, awsfake.OpDescribeStacks, func() answer { return connectAccount(c) }); err != nil {
				return err
			}
			return want("connect once DescribeStacks works", connectAccount(c), 201, "")
		}},
		{name: "RegisterDescribeCluster", account: "213000000003", run: func(c *switchCustomer) error {
			if err := want("connect", connectAccount(c), 201, ""); err != nil {
				return err
			}
			if err := answered(c, awsfake.OpDescribeCluster, func() answer { return registerCluster(c) }); err != nil {
				return err
			}
			if err := registered("register once DescribeCluster works", c); err != nil {
				return err
			}
			if n := len(c.e.f.AccessEntries(c.clusterARN)); n != 1 {
				return fmt.Errorf("%d access entries after two failed registrations and one that worked", n)
			}
			return nil
		}},
	}
	// Calls a job retries: registration's grant (the request answers 202
	// pending), a reconcile, a removal.
	for i, op := range []string{awsfake.OpCreateAccessEntry, awsfake.OpAssociateAccessPolicy} {
		cases = append(cases, awsFaultCase{name: "Register" + op, account: fmt.Sprintf("2130000001%02d", i), run: func(c *switchCustomer) error {
			if err := want("connect", connectAccount(c), 201, ""); err != nil {
				return err
			}
			before := queueFaults(c, op)
			if err := want("register with "+op+" throttled", registerCluster(c), 202, `"access_state":"pending"`); err != nil {
				return err
			}
			if err := clusterIn(c, "active", func() bool { return true }); err != nil {
				return err
			}
			return faultedCalls(c, op, before)
		}})
	}
	for i, op := range []string{awsfake.OpDescribeAccessEntry, awsfake.OpListAssociatedAccessPolicies} {
		cases = append(cases, awsFaultCase{name: "Reconcile" + op, account: fmt.Sprintf("2130000002%02d", i), run: func(c *switchCustomer) error {
			if err := mustRegister(c); err != nil {
				return err
			}
			before := queueFaults(c, op)
			if err := want("reconcile", request("POST", s.public+"/v1/clusters/"+c.clusterID+"/access/reconcile", e.admin, ""), 202, ""); err != nil {
				return err
			}
			return clusterIn(c, "active", func() bool { return faultedCalls(c, op, before) == nil })
		}})
	}
	for i, op := range []string{awsfake.OpListAssociatedAccessPolicies, awsfake.OpDisassociateAccessPolicy, awsfake.OpDeleteAccessEntry} {
		cases = append(cases, awsFaultCase{name: "Remove" + op, account: fmt.Sprintf("2130000003%02d", i), run: func(c *switchCustomer) error {
			if err := mustRegister(c); err != nil {
				return err
			}
			before := queueFaults(c, op)
			if err := want("remove", request("DELETE", s.public+"/v1/clusters/"+c.clusterID, e.admin, ""), 202, ""); err != nil {
				return err
			}
			err := waitFor("the removal finished by its job", func() (bool, string, error) {
				cl, listed, err := listedCluster(c)
				return !listed && len(e.f.AccessEntries(c.clusterARN)) == 0, fmt.Sprintf("%+v", cl), err
			})
			if err != nil {
				return err
			}
			return faultedCalls(c, op, before)
		}})
	}

	// A level switch, started by the stack's signed event, with each call
	// it makes failing for a while: its job retries until the cluster is at
	// the stack's level, with the associations of that level alone. The
	// upgrade associates ClusterAdmin and removes Edit, the downgrade the
	// reverse.
	for i, op := range []string{awsfake.OpAssumeRole, awsfake.OpDescribeStacks, awsfake.OpListAssociatedAccessPolicies,
		awsfake.OpAssociateAccessPolicy, awsfake.OpDisassociateAccessPolicy} {
		for j, sw := range []struct {
			name     string
			from, to stackSpec
			level    string
			assoc    map[string][]string
		}{
			{"Upgrade", limitedSandbox, fullSandbox, "full", map[string][]string{adminPolicy: nil}},
			{"Downgrade", fullSandbox, limitedSandbox, "limited", map[string][]string{editPolicy: {"sandbox-plain"}}},
		} {
			cases = append(cases, awsFaultCase{name: sw.name + op, account: fmt.Sprintf("2130000004%d%d", i, j), stack: sw.from, run: func(c *switchCustomer) error {
				if err := mustRegister(c); err != nil {
					return err
				}
				calls := queueFaults(c, op)
				before, err := stackUpdated(c, sw.to)
				if err != nil {
					return err
				}
				if err := switched(c, before, sw.level); err != nil {
					return err
				}
				if op == awsfake.OpListAssociatedAccessPolicies {
					// A failed listing is not retried: the writes are
					// made blind (eksaccess ApplyLevel), and they work.
					if n := c.e.f.CallsBy(op, c.role) - calls; n < sdkAttempts {
						return fmt.Errorf("%d calls of %s, want the %d of the failed listing", n, op, sdkAttempts)
					}
					return associated(c, sw.assoc)
				}
				return errors.Join(faultedCalls(c, op, calls), associated(c, sw.assoc))
			}})
		}
	}

	// Each case has its own customer; they run at once (most of their
	// time is the SDK's and the jobs' backoff).
	customers := make([]*switchCustomer, len(cases))
	for i, tc := range cases {
		spec := tc.stack
		if spec.level == "" {
			spec = limitedSandbox
		}
		customers[i] = e.newCustomer(t, s, tc.account, spec)
	}
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Go(func() { errs[i] = tc.run(customers[i]) })
	}
	wg.Wait()
	wantNoServerErrors(t, s)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Error(errs[i])
			}
		})
	}
}
