package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/ekssim"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// customer is one customer AWS account with Kukie's stack and one EKS
// cluster, simulated on a real kube-apiserver with the Argo CD fixtures.
type customer struct {
	account, role, stack string
	sim                  *ekssim.Cluster
}

func newCustomer(t *testing.T, f *awsfake.AWS, account, level, cluster string) customer {
	t.Helper()
	c := customer{account: account, role: "arn:aws:iam::" + account + ":role/kukie/kukie-access",
		stack: "arn:aws:cloudformation:ap-northeast-2:" + account + ":stack/kukie-access/0f1e2d3c"}
	c.sim = ekssim.Start(t, f, awsfake.Cluster{Region: "ap-northeast-2", Account: account, Name: cluster},
		k8stest.Options{ArgoCD: true})
	f.AddStack(awsfake.Stack{ARN: c.stack, Parameters: map[string]string{"AccessLevel": level, "AllowedNamespaces": "sandbox-*"},
		Outputs: map[string]string{"KukieTemplateVersion": "5"}})
	return c
}

// trust adds the customer's role, trusting the service with the team's ExternalId.
func (c customer) trust(f *awsfake.AWS, externalID string, level awsfake.Level) {
	f.AddRole(awsfake.Role{ARN: c.role, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: externalID},
		Level: level, AllowedNamespaces: []string{"sandbox-*"}, StackARN: c.stack})
}

func decodeJSON(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decode %.300s: %v", body, err)
	}
}

// eventually calls until ok says the answer is the one wanted; EKS access
// changes and their RBAC arrive a moment later. The deadline only catches
// a hang.
func eventually(t *testing.T, what string, try func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, last := try()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60 s; last answer %.500s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestEKSOnboardingEndToEnd drives the built server with only what an
// operator configures (KUKIE_AWS_REGION and the AWS SDK's standard
// endpoint settings) against wire-faithful AWS fakes and two simulated EKS
// clusters: onboarding, account connection, registration at both levels
// (one while IAM is still propagating: 202, then active through its job),
// the Argo CD list through the EKS token, limited access visible through
// real RBAC, and the AWS calls per read.
func TestEKSOnboardingEndToEnd(t *testing.T) {
	f := awsfake.Start(t, awsfake.WithRegion("ap-northeast-2"))
	f.Setenv(t)
	// The server first: it installs client-go's process-wide logger, which
	// must happen before the simulations' own client-go calls run.
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{"KUKIE_AWS_REGION": "ap-northeast-2"})
	full := newCustomer(t, f, "111122223333", "FULL", "prod")
	limited := newCustomer(t, f, "444455556666", "LIMITED", "shared")
	admin, agent := e2eToken(t, "admin"), e2eToken(t, "agent")

	status, body := call(t, "GET", s.public+"/v1/aws/onboarding", admin, "")
	var onboarding struct {
		ExternalID       string `json:"external_id"`
		ServiceAccountID string `json:"service_account_id"`
	}
	decodeJSON(t, body, &onboarding)
	if status != 200 || onboarding.ExternalID == "" || onboarding.ServiceAccountID != f.Account() {
		t.Fatalf("onboarding: %d %s", status, body)
	}
	// The customer creates the stack with the team's ExternalId.
	full.trust(f, onboarding.ExternalID, awsfake.LevelFull)
	limited.trust(f, onboarding.ExternalID, awsfake.LevelLimited)

	connect := func(c customer) string {
		t.Helper()
		status, body := call(t, "POST", s.public+"/v1/aws/accounts", admin,
			fmt.Sprintf(`{"role_arn":%q,"stack_arn":%q}`, c.role, c.stack))
		var acc struct{ ID, State, AccessLevel string }
		decodeJSON(t, body, &acc)
		if status != 201 || acc.State != "active" {
			t.Fatalf("connect %s: %d %s", c.account, status, body)
		}
		return acc.ID
	}
	register := func(accountID, name, namespaces string, wantStatus int, wantState string) string {
		t.Helper()
		status, body := call(t, "POST", s.public+"/v1/clusters", admin, fmt.Sprintf(
			`{"account_id":%q,"region":"ap-northeast-2","name":%q,"namespaces":%s}`, accountID, name, namespaces))
		var c struct {
			ID          string `json:"id"`
			AccessState string `json:"access_state"`
		}
		decodeJSON(t, body, &c)
		if status != wantStatus || c.AccessState != wantState {
			t.Fatalf("register %s: %d %s, want %d %s", name, status, body, wantStatus, wantState)
		}
		return c.ID
	}
	fullAccount := connect(full)
	fullCluster := register(fullAccount, "prod", `["sandbox-plain"]`, 201, "active")
	// The role was just created: IAM is still propagating it, so EKS refuses
	// it as a principal a few times. The registration answers 202 pending
	// and a job finishes it with backoff.
	limitedAccount := connect(limited)
	f.FailPropagation(3)
	limitedCluster := register(limitedAccount, "shared", `["sandbox-plain","sandbox-helm"]`, 202, "pending")
	eventually(t, "the pending registration finished by its job", func() (bool, string) {
		_, body := call(t, "GET", s.public+"/v1/clusters", admin, "")
		var list struct {
			Clusters []struct {
				ID          string `json:"id"`
				AccessState string `json:"access_state"`
			} `json:"clusters"`
		}
		decodeJSON(t, body, &list)
		for _, c := range list.Clusters {
			if c.ID == limitedCluster {
				return c.AccessState == "active", body
			}
		}
		return false, body
	})
	if n := f.CallsBy(awsfake.OpAssumeRole, full.role); n != 3 {
		t.Errorf("%d AssumeRole calls for connecting and registering, want 3 (the ExternalId checked three ways)", n)
	}

	// The Argo CD list through the EKS token, once the cluster-admin
	// association has become RBAC.
	apps := s.public + "/v1/clusters/" + fullCluster + "/argocd/applications"
	eventually(t, "Argo CD list of the FULL cluster", func() (bool, string) {
		status, body := call(t, "GET", apps+"?refresh=true", admin, "")
		return status == 200 && strings.Contains(body, `"total":12`), body
	})
	ownership := func(cluster, target string) (int, string) {
		return call(t, "POST", s.public+"/v1/clusters/"+cluster+"/argocd/ownership", agent, `{"resources":[`+target+`]}`)
	}
	status, body = ownership(fullCluster, `{"kind":"deploy","namespace":"sandbox-plain","name":"web"}`)
	if status != 200 || !strings.Contains(body, `"level":"self_heal"`) {
		t.Errorf("ownership on the FULL cluster: %d %s", status, body)
	}

	// LIMITED: Argo CD is not read, and Kukie's own rights are the Edit
	// policy's, in the allowed namespaces only.
	status, body = call(t, "GET", s.public+"/v1/clusters/"+limitedCluster+"/argocd/applications", admin, "")
	if status != 403 || !strings.Contains(body, "limited_access") {
		t.Errorf("Argo CD list of the LIMITED cluster: %d %s", status, body)
	}
	eventually(t, "an object in an allowed namespace read on the LIMITED cluster", func() (bool, string) {
		status, body := ownership(limitedCluster, `{"kind":"deploy","namespace":"sandbox-plain","name":"web"}`)
		return status == 200 && strings.Contains(body, `"checked":1`) && strings.Contains(body, `"level":"unknown"`), body
	})
	status, body = ownership(limitedCluster, `{"group":"argoproj.io","kind":"Application","namespace":"argocd","name":"sandbox-plain"}`)
	if status != 200 || !strings.Contains(body, `"reason":"argocd_forbidden"`) || !strings.Contains(body, `"checked":0`) {
		t.Errorf("ownership of an object in argocd on the LIMITED cluster: %d %s", status, body)
	}
	status, body = call(t, "POST", s.public+"/v1/clusters/"+limitedCluster+"/access/can-i", agent,
		`{"verb":"patch","group":"apps","resource":"deployments","namespace":"sandbox-helm"}`)
	if status != 200 || !strings.Contains(body, `"allowed":true`) {
		t.Errorf("can-i patch in sandbox-helm: %d %s", status, body)
	}
	status, body = call(t, "POST", s.public+"/v1/clusters/"+limitedCluster+"/access/can-i", agent,
		`{"verb":"list","group":"argoproj.io","resource":"applications","namespace":"argocd"}`)
	if status != 200 || !strings.Contains(body, `"allowed":false`) {
		t.Errorf("can-i list Applications on the LIMITED cluster: %d %s", status, body)
	}

	// Reads cost no AWS call: the role's session and the cluster's endpoint
	// are cached; tokens are presigned locally.
	assumed, described := f.Calls(awsfake.OpAssumeRole), f.Calls(awsfake.OpDescribeCluster)
	for range 10 {
		if status, body := call(t, "GET", apps+"/sandbox-plain", admin, ""); status != 200 {
			t.Fatalf("detail: %d %s", status, body)
		}
		ownership(fullCluster, `{"kind":"svc","namespace":"sandbox-plain","name":"web"}`)
	}
	if f.Calls(awsfake.OpAssumeRole) != assumed || f.Calls(awsfake.OpDescribeCluster) != described || described != 2 {
		t.Errorf("reads called AWS: AssumeRole %d→%d, DescribeCluster %d→%d (want 2, one per registration)",
			assumed, f.Calls(awsfake.OpAssumeRole), described, f.Calls(awsfake.OpDescribeCluster))
	}
	// The customer removes Kukie's access entry by hand: the next read is
	// refused even after one token renewal, and the cluster becomes
	// degraded instead of looking unreachable.
	f.RemoveAccessEntry(full.sim.ARN, full.role)
	eventually(t, "a cluster that refuses Kukie's token marked degraded", func() (bool, string) {
		status, body := call(t, "GET", apps+"?refresh=true", admin, "")
		_, clusters := call(t, "GET", s.public+"/v1/clusters", admin, "")
		return (status == 502 || status == 503) && strings.Contains(clusters, `"access_state":"degraded"`), body
	})
	status, body = call(t, "GET", s.public+"/v1/argocd/clusters", admin, "")
	if status != 200 || !strings.Contains(body, `"reason":"degraded"`) {
		t.Errorf("sidebar after the refusal: %d %s", status, body)
	}

	// Removal: the cluster, then the whole FULL account; jobs take Kukie's
	// access away (the entries Kukie created are deleted) before the rows go.
	if status, body := call(t, "DELETE", s.public+"/v1/clusters/"+limitedCluster, admin, ""); status != 202 ||
		!strings.Contains(body, `"access_state":"deleting"`) {
		t.Fatalf("remove cluster: %d %s", status, body)
	}
	if status, body := call(t, "DELETE", s.public+"/v1/aws/accounts/"+fullAccount, admin, ""); status != 202 ||
		!strings.Contains(body, `"state":"deleting"`) {
		t.Fatalf("disconnect account: %d %s", status, body)
	}
	eventually(t, "the removals finished by their jobs", func() (bool, string) {
		_, clusters := call(t, "GET", s.public+"/v1/clusters", admin, "")
		status, _ := call(t, "GET", s.public+"/v1/aws/accounts/"+fullAccount, admin, "")
		gone := status == 404 && !strings.Contains(clusters, fullCluster) && !strings.Contains(clusters, limitedCluster)
		return gone && len(f.AccessEntries(full.sim.ARN)) == 0 && len(f.AccessEntries(limited.sim.ARN)) == 0, clusters
	})
	if full.sim.TokenReviews() == 0 || limited.sim.TokenReviews() == 0 {
		t.Error("the clusters were not read through EKS tokens")
	}
	if full.sim.Err() != nil || limited.sim.Err() != nil {
		t.Errorf("simulation: %v / %v", full.sim.Err(), limited.sim.Err())
	}
}
