package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/ekssim"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
)

const switchRegion = "ap-northeast-2"

// switchBudgets shrink the job and switch budgets so that retries, the
// AccessDenied window and the stuck-job rescue play out in seconds.
var switchBudgets = map[string]string{
	"KUKIE_AWS_REGION":          switchRegion,
	"KUKIE_JOB_TIMEOUT":         "5s",
	"KUKIE_JOB_RESCUE_AFTER":    "10s",
	"KUKIE_SWITCH_RETRY_BUDGET": "3s",
}

// Access policy names as the history and the call log name them.
const (
	adminPolicy = awsfake.PolicyClusterAdmin
	editPolicy  = awsfake.PolicyEdit
)

// switchEnv is what the level-switch scenarios share: the AWS fakes, the
// SNS endpoint stand-in, and one kube-apiserver standing for every
// customer's EKS cluster (each scenario has its own account and role).
type switchEnv struct {
	f            *awsfake.AWS
	sns          *snstest.Host
	sim          *ekssim.Cluster
	admin, agent string
	checks       atomic.Int64 // names can-i questions apart, past the answer cache
}

// stackSpec is what the customer's stack says (and so what its role may do).
type stackSpec struct {
	level   awsfake.Level // the AccessLevel parameter and the role's branch
	allowed string        // AllowedNamespaces, comma-separated
	version string        // KukieTemplateVersion; "" is a v4 stack
	status  string        // StackStatus; "" is CREATE_COMPLETE
}

// switchCustomer is a customer account whose stack notifies topic, with
// one EKS cluster, connected to one server.
type switchCustomer struct {
	e                               *switchEnv
	s                               *server
	account, role, stack, topic     string
	eksName, clusterARN, externalID string
	accountID, clusterID            string
}

type accountView struct {
	AccessLevel       string `json:"access_level"`
	State             string `json:"state"`
	StateReason       string `json:"state_reason"`
	DesiredGeneration int64  `json:"desired_generation"`
	AppliedGeneration int64  `json:"applied_generation"`
}

type clusterView struct {
	ID           string `json:"id"`
	AccessLevel  string `json:"access_level"`
	AccessState  string `json:"access_state"`
	AccessReason string `json:"access_reason"`
}

type changeView struct {
	ClusterID  string `json:"cluster_id"`
	Generation int64  `json:"generation"`
	Step       string `json:"step"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error"`
}

// newCustomer creates account's stack and role as spec says and serves
// its EKS cluster, without connecting the account to s.
func (e *switchEnv) newCustomer(t *testing.T, s *server, account string, spec stackSpec) *switchCustomer {
	t.Helper()
	c := &switchCustomer{e: e, s: s, account: account, eksName: "eks-" + account[len(account)-4:],
		role:  "arn:aws:iam::" + account + ":role/kukie/kukie-access",
		stack: "arn:aws:cloudformation:" + switchRegion + ":" + account + ":stack/kukie-access/5e7a1c2b",
		topic: "arn:aws:sns:" + switchRegion + ":" + account + ":kukie-stack-events"}
	c.clusterARN = e.sim.Serve(awsfake.Cluster{Region: switchRegion, Account: account, Name: c.eksName})
	status, body := call(t, "GET", s.public+"/v1/aws/onboarding", e.admin, "")
	var onboarding struct {
		ExternalID string `json:"external_id"`
	}
	decodeJSON(t, body, &onboarding)
	if status != 200 || onboarding.ExternalID == "" {
		t.Fatalf("onboarding: %d %s", status, body)
	}
	c.externalID = onboarding.ExternalID
	c.update(spec)
	return c
}

// customer creates account's stack and role as spec says, connects the
// account to s and registers its cluster with namespaces (a JSON array).
func (e *switchEnv) customer(t *testing.T, s *server, account string, spec stackSpec, namespaces string) *switchCustomer {
	t.Helper()
	c := e.newCustomer(t, s, account, spec)
	status, body := call(t, "POST", s.public+"/v1/aws/accounts", e.admin,
		fmt.Sprintf(`{"role_arn":%q,"stack_arn":%q}`, c.role, c.stack))
	var acc struct{ ID string }
	decodeJSON(t, body, &acc)
	if status != 201 {
		t.Fatalf("connect %s: %d %s", account, status, body)
	}
	c.accountID = acc.ID
	status, body = call(t, "POST", s.public+"/v1/clusters", e.admin, fmt.Sprintf(
		`{"account_id":%q,"region":%q,"name":%q,"namespaces":%s}`, c.accountID, switchRegion, c.eksName, namespaces))
	var cl clusterView
	decodeJSON(t, body, &cl)
	if status != 201 || cl.AccessState != "active" {
		t.Fatalf("register %s: %d %s", c.eksName, status, body)
	}
	c.clusterID = cl.ID
	return c
}

// update makes the stack (and its role) what spec says, as a stack update
// does; the stack always notifies the customer's topic.
func (c *switchCustomer) update(spec stackSpec) {
	outputs := map[string]string{}
	if spec.version != "" {
		outputs["KukieTemplateVersion"] = spec.version
	}
	c.e.f.AddStack(awsfake.Stack{ARN: c.stack, Status: spec.status, Outputs: outputs, NotificationARNs: []string{c.topic},
		Parameters: map[string]string{"AccessLevel": string(spec.level), "AllowedNamespaces": spec.allowed}})
	c.e.f.AddRole(awsfake.Role{ARN: c.role, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: c.externalID},
		Level: spec.level, AllowedNamespaces: strings.Split(spec.allowed, ","), StackARN: c.stack})
}

// deliver signs m as SNS does and posts it to the server's webhook.
func (c *switchCustomer) deliver(t *testing.T, m sns.Message) (int, string) {
	t.Helper()
	res, err := snstest.Post(t.Context(), nil, c.s.public+"/webhooks/aws/sns", c.e.sns.Sign(m, sns.SignatureVersion2), nil)
	if err != nil {
		t.Fatalf("deliver %s: %v", m.Type, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// stackEvent delivers the stack's own event of status and returns the
// account's desired generation from before it.
func (c *switchCustomer) stackEvent(t *testing.T, status string) (before int64) {
	t.Helper()
	before = c.accountState(t).DesiredGeneration
	m := c.e.sns.Notification(c.topic, sns.CloudFormationSubject,
		snstest.StackEventMessage(snstest.StackStatusEvent(c.stack, status, time.Now())))
	if code, body := c.deliver(t, m); code != 200 || !strings.Contains(body, `"verdict":"accepted"`) {
		t.Fatalf("%s notification: %d %s", status, code, body)
	}
	return before
}

func (c *switchCustomer) accountState(t *testing.T) accountView {
	t.Helper()
	status, body := call(t, "GET", c.s.public+"/v1/aws/accounts/"+c.accountID, c.e.admin, "")
	if status != 200 {
		t.Fatalf("account: %d %s", status, body)
	}
	var a accountView
	decodeJSON(t, body, &a)
	return a
}

func (c *switchCustomer) clusterState(t *testing.T) clusterView {
	t.Helper()
	status, body := call(t, "GET", c.s.public+"/v1/clusters", c.e.admin, "")
	var list struct{ Clusters []clusterView }
	decodeJSON(t, body, &list)
	for _, cl := range list.Clusters {
		if cl.ID == c.clusterID {
			return cl
		}
	}
	t.Fatalf("cluster %s not listed: %d %s", c.clusterID, status, body)
	return clusterView{}
}

// settle waits until the account's reconcile has applied a generation
// after before and the cluster is at level in state.
func (c *switchCustomer) settle(t *testing.T, before int64, level, state string) (accountView, clusterView) {
	t.Helper()
	var a accountView
	var cl clusterView
	eventually(t, fmt.Sprintf("cluster %s %s/%s", c.eksName, level, state), func() (bool, string) {
		a, cl = c.accountState(t), c.clusterState(t)
		done := a.AppliedGeneration > before && a.AppliedGeneration == a.DesiredGeneration
		return done && cl.AccessLevel == level && cl.AccessState == state, fmt.Sprintf("%+v %+v", a, cl)
	})
	return a, cl
}

// writes lists the role's association writes from call mark on, as
// "associate AmazonEKSEditPolicy".
func (c *switchCustomer) writes(mark int) []string {
	var out []string
	for _, call := range c.e.f.CallLog()[mark:] {
		if call.Principal != c.role || call.Policy == "" {
			continue
		}
		verb := strings.TrimSuffix(strings.ToLower(call.Op), "accesspolicy")
		out = append(out, verb+" "+call.Policy[strings.LastIndex(call.Policy, "/")+1:])
	}
	return out
}

// wantWrites checks the role's association writes from call mark on.
func (c *switchCustomer) wantWrites(t *testing.T, mark int, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, c.writes(mark)); diff != "" {
		t.Errorf("association writes (-want +got):\n%s", diff)
	}
}

// faultyDowngrade connects a FULL account, downgrades its stack to
// LIMITED with op failing for good, and delivers the stack's event.
func (e *switchEnv) faultyDowngrade(t *testing.T, s *server, account, op string, fault awsfake.Fault) (
	c *switchCustomer, before int64, mark int) {
	t.Helper()
	c = e.customer(t, s, account, fullSandbox, `["sandbox-plain"]`)
	c.update(limitedSandbox)
	fault.Times, fault.Principal = awsfake.Always, c.role
	e.f.FailWith(op, fault)
	mark = len(e.f.CallLog())
	return c, c.stackEvent(t, "UPDATE_COMPLETE"), mark
}

// changes is the account's history of generations after before, oldest
// first, as "step outcome".
func (c *switchCustomer) changes(t *testing.T, before int64) []string {
	t.Helper()
	status, body := call(t, "GET", c.s.public+"/v1/aws/accounts/"+c.accountID+"/access-changes?limit=200", c.e.admin, "")
	var page struct{ Items []changeView }
	decodeJSON(t, body, &page)
	if status != 200 {
		t.Fatalf("access changes: %d %s", status, body)
	}
	var out []string
	for _, ch := range slices.Backward(page.Items) {
		if ch.Generation > before && ch.ClusterID == c.clusterID {
			out = append(out, ch.Step+" "+ch.Outcome)
		}
	}
	return out
}

// wantPairs checks that each write step was recorded started, then ok.
func (c *switchCustomer) wantPairs(t *testing.T, before int64, steps ...string) {
	t.Helper()
	var want []string
	for _, s := range steps {
		want = append(want, s+" started", s+" ok")
	}
	c.wantChanges(t, before, want...)
}

// wantChanges checks the cluster's history after generation before.
func (c *switchCustomer) wantChanges(t *testing.T, before int64, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, c.changes(t, before)); diff != "" {
		t.Errorf("access changes (-want +got):\n%s", diff)
	}
}

// canI asks the real API server, through Kukie's own EKS credentials,
// whether Kukie may verb resource in namespace. A new object name per
// question keeps the server's answer cache out of it.
func (c *switchCustomer) canI(t *testing.T, verb, group, resource, namespace string) (bool, string) {
	t.Helper()
	status, body := call(t, "POST", c.s.public+"/v1/clusters/"+c.clusterID+"/access/can-i", c.e.agent, fmt.Sprintf(
		`{"verb":%q,"group":%q,"resource":%q,"namespace":%q,"name":"switch-check-%d"}`,
		verb, group, resource, namespace, c.e.checks.Add(1)))
	return status == 200 && strings.Contains(body, `"allowed":true`), fmt.Sprintf("%d %s", status, body)
}

// wantCanI waits until the API server's answer is want: RBAC follows an
// association a moment later, as on EKS.
func (c *switchCustomer) wantCanI(t *testing.T, want bool, verb, group, resource, namespace string) {
	t.Helper()
	eventually(t, fmt.Sprintf("can-i %s %s/%s in %s = %v", verb, group, resource, namespace, want), func() (bool, string) {
		got, last := c.canI(t, verb, group, resource, namespace)
		return got == want && strings.HasPrefix(last, "200"), last
	})
}

func (c *switchCustomer) associations() map[string][]string {
	out := map[string][]string{}
	for _, a := range c.e.f.Associations(c.clusterARN, c.role) {
		out[a.PolicyARN[strings.LastIndex(a.PolicyARN, "/")+1:]] = a.Namespaces
	}
	return out
}

func (c *switchCustomer) wantAssociations(t *testing.T, want map[string][]string) {
	t.Helper()
	if diff := cmp.Diff(want, c.associations()); diff != "" {
		t.Errorf("EKS associations of Kukie's role (-want +got):\n%s", diff)
	}
}

var (
	limitedSandbox = stackSpec{level: awsfake.LevelLimited, allowed: "sandbox-*", version: "5"}
	fullSandbox    = stackSpec{level: awsfake.LevelFull, allowed: "sandbox-*", version: "5"}
)

// TestSwitchEndToEnd drives level switches through the server configured
// only by its environment, against the AWS fakes, a real kube-apiserver
// whose RBAC follows the EKS associations, and genuinely signed SNS
// deliveries of the customers' stack events.
func TestSwitchEndToEnd(t *testing.T) {
	e := &switchEnv{f: awsfake.Start(t, awsfake.WithRegion(switchRegion))}
	e.f.Setenv(t)
	e.sns = snstest.StartHost(t, snsAuthority, snstest.HostOptions{})
	e.sns.SetEnv(t)
	e.admin, e.agent = e2eToken(t, "admin"), e2eToken(t, "agent")
	// The servers first: each installs client-go's process-wide logger,
	// which must happen before the simulation's own client-go calls run.
	dbURL := pgtest.MustCreateDatabase(t)
	s := startServer(t, dbURL, switchBudgets)
	// A second replica of s on the same database (its own pool, River
	// client and snapshot cache), as a Deployment with two pods runs them.
	replica := startServer(t, dbURL, switchBudgets)
	periodic := startServer(t, pgtest.MustCreateDatabase(t), withEnv(switchBudgets, "KUKIE_RECONCILE_INTERVAL", "3s"))
	e.sim = ekssim.Start(t, e.f, awsfake.Cluster{Region: switchRegion, Account: "999900000000", Name: "shared"},
		k8stest.Options{ArgoCD: true})

	t.Run("UpgradeThenDowngrade", func(t *testing.T) {
		c := e.customer(t, s, "210000000001", limitedSandbox, `["sandbox-plain"]`)
		apps := s.public + "/v1/clusters/" + c.clusterID + "/argocd/applications?refresh=true"

		c.update(fullSandbox)
		mark := len(e.f.CallLog())
		before := c.stackEvent(t, "UPDATE_COMPLETE")
		c.settle(t, before, "full", "active")
		c.wantWrites(t, mark, "associate "+adminPolicy, "disassociate "+editPolicy)
		c.wantPairs(t, before, "associate "+adminPolicy, "disassociate "+editPolicy)
		c.wantAssociations(t, map[string][]string{adminPolicy: nil})
		c.wantCanI(t, true, "list", "argoproj.io", "applications", "argocd")
		eventually(t, "Argo CD list of the upgraded cluster", func() (bool, string) {
			status, body := call(t, "GET", apps, e.admin, "")
			return status == 200 && strings.Contains(body, `"total":12`), body
		})

		// The downgrade reaches the other replica (the load balancer picks
		// any pod); the job may run on either. Its answers are read there too.
		c.s = replica
		c.update(limitedSandbox)
		mark = len(e.f.CallLog())
		before = c.stackEvent(t, "UPDATE_COMPLETE")
		c.settle(t, before, "limited", "active")
		editStep := "associate " + editPolicy + " (sandbox-plain)"
		c.wantWrites(t, mark, "associate "+editPolicy, "disassociate "+adminPolicy)
		c.wantPairs(t, before, editStep, "disassociate "+adminPolicy)
		c.wantAssociations(t, map[string][]string{editPolicy: {"sandbox-plain"}})
		c.wantCanI(t, false, "list", "argoproj.io", "applications", "argocd")
		c.wantCanI(t, true, "patch", "apps", "deployments", "sandbox-plain")
		if status, body := call(t, "GET", apps, e.admin, ""); status != 403 || !strings.Contains(body, "limited_access") {
			t.Errorf("Argo CD list of the downgraded cluster: %d %s", status, body)
		}

		// SNS retries may reach both replicas at once: one takes the
		// message, the other answers duplicate, and one switch runs.
		before = c.accountState(t).DesiredGeneration
		m := e.sns.Notification(c.topic, sns.CloudFormationSubject,
			snstest.StackEventMessage(snstest.StackStatusEvent(c.stack, "UPDATE_COMPLETE", time.Now())))
		signed := e.sns.Sign(m, sns.SignatureVersion2)
		bodies := make([]string, 2)
		var wg sync.WaitGroup
		for i, target := range []*server{s, replica} {
			wg.Go(func() {
				res, err := snstest.Post(t.Context(), nil, target.public+"/webhooks/aws/sns", signed, nil)
				if err != nil {
					bodies[i] = err.Error()
					return
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				bodies[i] = string(b)
			})
		}
		wg.Wait()
		joined := strings.Join(bodies, " | ")
		if strings.Count(joined, `"verdict":"accepted"`) != 1 || strings.Count(joined, `"verdict":"duplicate"`) != 1 {
			t.Errorf("one message to both replicas: %s; want one accepted, one duplicate", joined)
		}
		if a, _ := c.settle(t, before, "limited", "active"); a.DesiredGeneration != before+1 {
			t.Errorf("desired generation %d after one message from %d", a.DesiredGeneration, before)
		}
	})

	t.Run("NarrowedAllowedNamespaces", func(t *testing.T) {
		c := e.customer(t, s, "210000000002", limitedSandbox, `["sandbox-plain","sandbox-helm"]`)
		c.wantCanI(t, true, "patch", "apps", "deployments", "sandbox-helm")

		c.update(stackSpec{level: awsfake.LevelLimited, allowed: "sandbox-plain", version: "5"})
		before := c.stackEvent(t, "UPDATE_COMPLETE")
		_, cl := c.settle(t, before, "limited", "active")
		if !strings.Contains(cl.AccessReason, "sandbox-helm") {
			t.Errorf("reason of the narrowed cluster does not name sandbox-helm: %q", cl.AccessReason)
		}
		c.wantAssociations(t, map[string][]string{editPolicy: {"sandbox-plain"}})
		narrowed := "associate " + editPolicy + " (sandbox-plain)"
		c.wantChanges(t, before, narrowed+" started", narrowed+" ok",
			// ClusterAdmin is removed on every limited reconcile; here it was not there.
			"disassociate "+adminPolicy+" started", "disassociate "+adminPolicy+" gone")
		c.wantCanI(t, false, "patch", "apps", "deployments", "sandbox-helm")
		c.wantCanI(t, true, "patch", "apps", "deployments", "sandbox-plain")

		c.update(stackSpec{level: awsfake.LevelLimited, allowed: "prod-*", version: "5"})
		before = c.stackEvent(t, "UPDATE_COMPLETE")
		_, cl = c.settle(t, before, "limited", "namespace_not_allowed")
		if !strings.Contains(cl.AccessReason, "sandbox-helm, sandbox-plain") {
			t.Errorf("reason does not list the dropped namespaces: %q", cl.AccessReason)
		}
		c.wantAssociations(t, map[string][]string{})
	})

	t.Run("DowngradeEditFailsForGood", func(t *testing.T) {
		c, before, mark := e.faultyDowngrade(t, s, "210000000003", awsfake.OpAssociateAccessPolicy,
			awsfake.Fault{Code: "InvalidParameterException", Status: 400})
		c.settle(t, before, "limited", "degraded")
		c.wantWrites(t, mark, "associate "+editPolicy, "disassociate "+adminPolicy)
		// Fail closed: no access at all beats the admin the customer revoked.
		c.wantAssociations(t, map[string][]string{})
	})

	t.Run("ClusterAdminRemovalDenied", func(t *testing.T) {
		c, before, mark := e.faultyDowngrade(t, s, "210000000004", awsfake.OpDisassociateAccessPolicy,
			awsfake.Fault{Code: "AccessDeniedException", Status: 403})
		_, cl := c.settle(t, before, "limited", "revocation_failed")
		if !strings.Contains(cl.AccessReason, "disassociate-access-policy") {
			t.Errorf("the reason does not tell the customer what to do: %q", cl.AccessReason)
		}
		// Edit first; the denied removal is retried while the denial may be
		// IAM propagating (KUKIE_SWITCH_RETRY_BUDGET), so it comes once or more.
		if w := c.writes(mark); len(w) < 2 || w[0] != "associate "+editPolicy ||
			slices.ContainsFunc(w[1:], func(s string) bool { return s != "disassociate "+adminPolicy }) {
			t.Errorf("writes %q, want Edit associated, then ClusterAdmin's removal tried", w)
		}
		c.wantAssociations(t, map[string][]string{adminPolicy: nil, editPolicy: {"sandbox-plain"}})
		// The switch ran on one of the two replicas: it counted it.
		_, metrics := call(t, "GET", s.admin+"/metrics", "", "")
		_, other := call(t, "GET", replica.admin+"/metrics", "", "")
		metrics += other
		if !regexp.MustCompile(`(?m)^kukie_access_switches_total\{outcome="revocation_failed"\} [1-9]`).MatchString(metrics) {
			t.Errorf("no revocation_failed switch in either replica's metrics:\n%s", grepLines(metrics, "kukie_access_switches_total"))
		}
	})

	t.Run("V4ToV5FullNeedsConfirmation", func(t *testing.T) {
		if err := e.sim.Kube.Apply(t.Context(), []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: kukie-apps}\n")); err != nil {
			t.Fatalf("namespace kukie-apps: %v", err)
		}
		c := e.customer(t, s, "210000000005", stackSpec{level: awsfake.LevelLimited, allowed: "kukie-*"}, `["kukie-apps"]`)
		if a := c.accountState(t); a.State != "confirmation_required" || a.AccessLevel != "limited" {
			t.Fatalf("v4 account: %+v", a)
		}
		c.update(stackSpec{level: awsfake.LevelFull, allowed: "kukie-*", version: "5"})
		mark := len(e.f.CallLog())
		before := c.stackEvent(t, "UPDATE_COMPLETE")
		a, _ := c.settle(t, before, "limited", "active")
		if a.State != "confirmation_required" || a.AccessLevel != "limited" {
			t.Errorf("v5 FULL stack not confirmed: account %+v, want limited and confirmation_required", a)
		}
		if w := c.writes(mark); slices.Contains(w, "associate "+adminPolicy) {
			t.Errorf("ClusterAdmin associated before anyone confirmed: %v", w)
		}
		c.wantCanI(t, false, "list", "argoproj.io", "applications", "argocd")

		url := s.public + "/v1/aws/accounts/" + c.accountID + "/access-level"
		if status, body := call(t, "PUT", url, e.agent, `{"access_level":"full"}`); status != 403 {
			t.Errorf("the agent chose the level: %d %s", status, body)
		}
		before = c.accountState(t).DesiredGeneration
		mark = len(e.f.CallLog())
		if status, body := call(t, "PUT", url, e.admin, `{"access_level":"full"}`); status != 202 {
			t.Fatalf("confirm full: %d %s", status, body)
		}
		a, _ = c.settle(t, before, "full", "active")
		if a.State != "active" || a.AccessLevel != "full" {
			t.Errorf("confirmed account: %+v", a)
		}
		c.wantWrites(t, mark, "associate "+adminPolicy, "disassociate "+editPolicy)
		c.wantCanI(t, true, "list", "argoproj.io", "applications", "argocd")
	})

	t.Run("RollbackCompleteReadsTheStack", func(t *testing.T) {
		c := e.customer(t, s, "210000000006", limitedSandbox, `["sandbox-plain"]`)
		// The customer's update to FULL starts, fails and rolls back: the
		// in-progress event changes nothing, the rollback's completion
		// reconciles to the stack as it now is — still LIMITED.
		c.update(stackSpec{level: awsfake.LevelFull, allowed: "sandbox-*", version: "5", status: "UPDATE_IN_PROGRESS"})
		inProgress := e.sns.Notification(c.topic, sns.CloudFormationSubject,
			snstest.StackEventMessage(snstest.StackStatusEvent(c.stack, "UPDATE_IN_PROGRESS", time.Now())))
		if status, body := c.deliver(t, inProgress); status != 200 || !strings.Contains(body, `"verdict":"ignored"`) {
			t.Errorf("in-progress event: %d %s", status, body)
		}
		c.update(stackSpec{level: awsfake.LevelLimited, allowed: "sandbox-*", version: "5", status: "UPDATE_ROLLBACK_COMPLETE"})
		mark := len(e.f.CallLog())
		described := e.f.CallsBy(awsfake.OpDescribeStacks, c.role)
		before := c.stackEvent(t, "UPDATE_ROLLBACK_COMPLETE")
		c.settle(t, before, "limited", "active")
		if e.f.CallsBy(awsfake.OpDescribeStacks, c.role) == described {
			t.Error("the rollback's reconcile did not read the stack")
		}
		if w := c.writes(mark); slices.Contains(w, "associate "+adminPolicy) {
			t.Errorf("the rolled-back FULL was applied: %v", w)
		}
		c.wantAssociations(t, map[string][]string{editPolicy: {"sandbox-plain"}})
	})

	t.Run("PeriodicReconcileRepairsDroppedNotification", func(t *testing.T) {
		c := e.customer(t, periodic, "210000000007", limitedSandbox, `["sandbox-plain"]`)
		before := c.accountState(t).AppliedGeneration
		c.update(fullSandbox) // and SNS never delivers the event
		mark := len(e.f.CallLog())
		c.settle(t, before, "full", "active")
		c.wantWrites(t, mark, "associate "+adminPolicy, "disassociate "+editPolicy)
		c.wantCanI(t, true, "list", "argoproj.io", "applications", "argocd")
	})

	t.Run("UnsubscribeDisconnects", func(t *testing.T) {
		c := e.customer(t, s, "210000000008", limitedSandbox, `["sandbox-plain"]`)
		if status, body := c.deliver(t, e.sns.UnsubscribeConfirmation(c.topic)); status != 200 ||
			!strings.Contains(body, `"verdict":"disconnected"`) {
			t.Fatalf("unsubscribe confirmation: %d %s", status, body)
		}
		if a := c.accountState(t); a.State != "disconnected" || a.StateReason == "" {
			t.Errorf("account after unsubscribing: %+v", a)
		}
		_, metrics := call(t, "GET", s.admin+"/metrics", "", "")
		if !strings.Contains(metrics, `kukie_aws_accounts_disconnected_total{why="unsubscribed"} 1`) {
			t.Errorf("no disconnection in the metrics:\n%s", grepLines(metrics, "kukie_aws_accounts_disconnected_total"))
		}
	})

	t.Run("KilledAfterAssociateResumes", func(t *testing.T) {
		bin := buildServer(t)
		dbURL := pgtest.MustCreateDatabase(t)
		first := startChild(t, bin, dbURL)
		c := e.customer(t, first.server, "210000000009", limitedSandbox, `["sandbox-plain"]`)

		// The upgrade's second write hangs: the job is running, ClusterAdmin
		// associated and Edit not yet removed, when the process dies.
		e.f.SetLatency(awsfake.OpDisassociateAccessPolicy, 10*time.Minute)
		c.update(fullSandbox)
		before := c.stackEvent(t, "UPDATE_COMPLETE")
		eventually(t, "the upgrade stuck removing Edit", func() (bool, string) {
			got := c.changes(t, before)
			return slices.Contains(got, "disassociate "+editPolicy+" started"), strings.Join(got, "; ")
		})
		first.kill(t)
		e.f.SetLatency(awsfake.OpDisassociateAccessPolicy, 0)
		c.wantAssociations(t, map[string][]string{adminPolicy: nil, editPolicy: {"sandbox-plain"}})

		// A new process on the same database: River's rescuer takes the job
		// for dead after KUKIE_JOB_RESCUE_AFTER, but it runs only every 30 s
		// (not configurable) and only in the leader, which the new process
		// becomes once the dead one's lease ran out.
		c.s = startChild(t, bin, dbURL).server
		within(t, 3*time.Minute, "the rescued job converged", func() (bool, string) {
			a, cl := c.accountState(t), c.clusterState(t)
			ok := a.AppliedGeneration > before && a.AppliedGeneration == a.DesiredGeneration &&
				cl.AccessLevel == "full" && cl.AccessState == "active"
			return ok, fmt.Sprintf("%+v %+v", a, cl)
		})
		c.wantAssociations(t, map[string][]string{adminPolicy: nil})
		if errs := switchJobErrors(t, dbURL, c.accountID); !strings.Contains(errs, "Stuck job rescued") {
			t.Errorf("the job was not rescued as stuck; its errors: %s", errs)
		}
	})
}

func withEnv(env map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range env {
		out[k] = v
	}
	return out
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// within is eventually with a deadline of its own, for waits that
// include River's maintenance intervals; it only catches a hang.
func within(t *testing.T, d time.Duration, what string, try func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := try()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v; last answer %.500s", what, d, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// switchJobErrors is the errors River recorded on the account's reconcile
// jobs.
func switchJobErrors(t *testing.T, dbURL, accountID string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var errs string
	if err := conn.QueryRow(t.Context(), `SELECT coalesce(string_agg(errors::text, ' '), '') FROM river_job
		WHERE kind = 'kukie_account_switch' AND args->>'account_id' = $1`, accountID).Scan(&errs); err != nil {
		t.Fatal(err)
	}
	return errs
}

// buildServer builds the kukie-server binary, for a test that must kill
// the process for real.
func buildServer(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		t.Fatalf("go env GOMOD: %v (the go command must be on PATH to build kukie-server)", err)
	}
	bin := filepath.Join(t.TempDir(), "kukie-server")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kukie-server")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kukie-server: %v\n%s", err, out)
	}
	return bin
}

// child is a kukie-server process started from the built binary.
type child struct {
	*server
	cmd *exec.Cmd
}

// startChild runs bin serve on dbURL with the switch budgets, configured
// only by its environment: this process's (the AWS endpoints, the SNS
// proxy, SSL_CERT_FILE) and the server's own KUKIE_* variables.
func startChild(t *testing.T, bin, dbURL string) *child {
	t.Helper()
	publicAddr, adminAddr := pickTwo(t)
	env := withEnv(switchBudgets, "KUKIE_DATABASE_URL", dbURL)
	for k, v := range map[string]string{"KUKIE_HTTP_ADDR": publicAddr, "KUKIE_ADMIN_ADDR": adminAddr,
		"KUKIE_AUTH_HS256_SECRET": e2eSecret, "KUKIE_MIGRATE_ON_START": "true", "KUKIE_SHUTDOWN_DELAY": "200ms"} {
		env[k] = v
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &child{server: &server{public: "http://" + publicAddr, admin: "http://" + adminAddr, publicAddr: publicAddr,
		logs: &syncBuffer{}}, cmd: cmd}
	cmd.Stdout, cmd.Stderr = c.logs, c.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("kukie-server (pid %d) logs:\n%s", cmd.Process.Pid, c.logs)
		}
	})
	c.stop = func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	within(t, 30*time.Second, "kukie-server child healthy", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("kukie-server exited: %v\n%s", cmd.ProcessState, c.logs)
		default:
		}
		res, err := http.Get(c.admin + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == 200, res.Status
	})
	return c
}

// kill ends the process with SIGKILL: nothing runs on the way out.
func (c *child) kill(t *testing.T) {
	t.Helper()
	c.stop()
	if c.cmd.ProcessState == nil || c.cmd.ProcessState.Success() {
		t.Fatalf("kukie-server was not killed: %v", c.cmd.ProcessState)
	}
}
