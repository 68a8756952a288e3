package eksaccess

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/ekssim"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

var (
	adminPolicy = awsfake.PolicyARN("aws", awsfake.PolicyClusterAdmin)
	editPolicy  = awsfake.PolicyARN("aws", awsfake.PolicyEdit)
	adminAssoc  = awsfake.Association{PolicyARN: adminPolicy, ScopeType: awsfake.ScopeCluster}
)

func editAssoc(namespaces ...string) awsfake.Association {
	return awsfake.Association{PolicyARN: editPolicy, ScopeType: awsfake.ScopeNamespace, Namespaces: namespaces}
}

func listStep(outcome service.AccessChangeOutcome) service.SwitchStep {
	return service.SwitchStep{Action: StepList, Outcome: outcome}
}

func associateStep(policy string, outcome service.AccessChangeOutcome, scope ...string) service.SwitchStep {
	return service.SwitchStep{Action: StepAssociate, Policy: policy, Scope: scope, Outcome: outcome}
}

func disassociateStep(policy string, outcome service.AccessChangeOutcome) service.SwitchStep {
	return service.SwitchStep{Action: StepDisassociate, Policy: policy, Outcome: outcome}
}

// setRole replaces the customer role as a stack update does: same ARN and
// trust, another level branch or namespaces.
func (fx *fixture) setRole(level awsfake.Level, allowed []string, deny ...string) {
	fx.fake.AddRole(awsfake.Role{ARN: customerRole, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: teamExternalID},
		Level: level, AllowedNamespaces: allowed, StackARN: customerStack, Deny: deny})
}

// policyCalls are the access-policy operations the fake received, in order.
func policyCalls(f *awsfake.AWS) []string {
	var ops []string
	for _, c := range f.CallLog() {
		switch c.Op {
		case awsfake.OpListAssociatedAccessPolicies, awsfake.OpAssociateAccessPolicy, awsfake.OpDisassociateAccessPolicy:
			ops = append(ops, c.Op)
		}
	}
	return ops
}

// stepOps are the operations steps stand for.
func stepOps(steps []service.SwitchStep) []string {
	op := map[string]string{StepList: awsfake.OpListAssociatedAccessPolicies,
		StepAssociate: awsfake.OpAssociateAccessPolicy, StepDisassociate: awsfake.OpDisassociateAccessPolicy}
	var ops []string
	for _, s := range steps {
		ops = append(ops, op[s.Action])
	}
	return ops
}

var ignoreTimes = cmpopts.IgnoreFields(awsfake.Association{}, "AssociatedAt", "ModifiedAt")

// checkSteps compares steps without their errors, and checks that exactly
// the failed ones carry a service error.
func checkSteps(t *testing.T, want, got []service.SwitchStep) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(service.SwitchStep{}, "Err"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for i, s := range got {
		if (s.Outcome == OutcomeFailed) != (s.Err != nil) || (s.Err != nil && service.ErrorCode(s.Err) == service.EINTERNAL) {
			t.Errorf("step %d %+v: a failed step, and only it, carries a classified error", i, s)
		}
	}
}

func TestApplyLevel(t *testing.T) {
	allowed := []string{"team-*"}
	for _, tc := range []struct {
		name     string
		role     awsfake.Level
		deny     []string
		existing []awsfake.Association
		noEntry  bool
		fault    func(*awsfake.AWS)
		from     service.AccessLevel
		target   service.AccessLevel
		ns       []string

		want      service.SwitchResult // Reason is checked for presence only
		wantAssoc []awsfake.Association
		code      string
		reason    service.Reason
		retryable bool // within the propagation window
	}{
		{name: "UpgradeAdminFirstThenEditRemoved", role: awsfake.LevelFull, existing: []awsfake.Association{editAssoc("team-a")},
			from: service.AccessLimited, target: service.AccessFull,
			want: service.SwitchResult{Level: service.AccessFull, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(adminPolicy, OutcomeOK), disassociateStep(editPolicy, OutcomeOK)}},
			wantAssoc: []awsfake.Association{adminAssoc}},
		{name: "DowngradeEditFirstThenAdminRemoved", role: awsfake.LevelLimited, existing: []awsfake.Association{adminAssoc},
			from: service.AccessFull, target: service.AccessLimited, ns: []string{"team-b", "team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeOK, "team-a", "team-b"), disassociateStep(adminPolicy, OutcomeOK)}},
			wantAssoc: []awsfake.Association{editAssoc("team-a", "team-b")}},
		{name: "NarrowsEditScope", role: awsfake.LevelLimited, existing: []awsfake.Association{editAssoc("team-a", "team-b")},
			from: service.AccessLimited, target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeOK, "team-a"), disassociateStep(adminPolicy, OutcomeGone)}},
			wantAssoc: []awsfake.Association{editAssoc("team-a")}},
		{name: "WidensEditScope", role: awsfake.LevelLimited, existing: []awsfake.Association{editAssoc("team-a")},
			from: service.AccessLimited, target: service.AccessLimited, ns: []string{"team-a", "team-b"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeOK, "team-a", "team-b"), disassociateStep(adminPolicy, OutcomeGone)}},
			wantAssoc: []awsfake.Association{editAssoc("team-a", "team-b")}},
		{name: "EmptyScopeRemovesEditAndAdmin", role: awsfake.LevelLimited, existing: []awsfake.Association{adminAssoc, editAssoc("team-a")},
			from: service.AccessFull, target: service.AccessLimited,
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessNamespaceNotAllowed, Steps: []service.SwitchStep{
				listStep(OutcomeOK), disassociateStep(editPolicy, OutcomeOK), disassociateStep(adminPolicy, OutcomeOK)}}},
		{name: "EmptyScopeWithNothingAssociated", role: awsfake.LevelLimited,
			from: service.AccessLimited, target: service.AccessLimited, ns: []string{""},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessNamespaceNotAllowed, Steps: []service.SwitchStep{
				listStep(OutcomeOK), disassociateStep(adminPolicy, OutcomeGone)}}},
		{name: "DowngradeEditDeniedStillRemovesAdmin", role: awsfake.LevelLimited, deny: []string{"eks:AssociateAccessPolicy"},
			existing: []awsfake.Association{adminAssoc}, from: service.AccessFull, target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeFailed, "team-a"), disassociateStep(adminPolicy, OutcomeOK)}},
			code: service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "DowngradeEditOutsideAllowedStillRemovesAdmin", role: awsfake.LevelLimited,
			existing: []awsfake.Association{adminAssoc}, from: service.AccessFull, target: service.AccessLimited, ns: []string{"payments"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeFailed, "payments"), disassociateStep(adminPolicy, OutcomeOK)}},
			code: service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "DowngradeEditFailingOtherwiseStillRemovesAdmin", role: awsfake.LevelLimited,
			fault: func(f *awsfake.AWS) {
				f.FailWith(awsfake.OpAssociateAccessPolicy, awsfake.Fault{Times: awsfake.Always, Code: "InvalidRequestException", Status: 400})
			},
			existing: []awsfake.Association{adminAssoc}, from: service.AccessFull, target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeFailed, "team-a"), disassociateStep(adminPolicy, OutcomeOK)}},
			code: service.EVALIDATION, reason: ReasonAWSRequestRejected},
		{name: "NarrowingDeniedRemovesWiderEdit", role: awsfake.LevelLimited, deny: []string{"eks:AssociateAccessPolicy"},
			existing: []awsfake.Association{editAssoc("team-a", "team-b")}, from: service.AccessLimited, target: service.AccessLimited,
			ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeFailed, "team-a"), disassociateStep(editPolicy, OutcomeOK),
				disassociateStep(adminPolicy, OutcomeGone)}},
			code: service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "WideningDeniedKeepsNarrowerEdit", role: awsfake.LevelLimited, deny: []string{"eks:AssociateAccessPolicy"},
			existing: []awsfake.Association{editAssoc("team-a")}, from: service.AccessLimited, target: service.AccessLimited,
			ns: []string{"team-a", "team-b"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeFailed, "team-a", "team-b"), disassociateStep(adminPolicy, OutcomeGone)}},
			wantAssoc: []awsfake.Association{editAssoc("team-a")},
			code:      service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "AdminRemovalDeniedIsRevocationFailed", role: awsfake.LevelLimited, deny: []string{"eks:DisassociateAccessPolicy"},
			existing: []awsfake.Association{adminAssoc}, from: service.AccessFull, target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessRevocationFailed, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeOK, "team-a"), disassociateStep(adminPolicy, OutcomeFailed)}},
			wantAssoc: []awsfake.Association{adminAssoc, editAssoc("team-a")},
			code:      service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "AdminRemovalThrottledIsRevocationFailed", role: awsfake.LevelLimited,
			fault: func(f *awsfake.AWS) {
				f.FailWith(awsfake.OpDisassociateAccessPolicy, awsfake.Fault{Times: awsfake.Always, Code: "ThrottlingException", Status: 429})
			},
			existing: []awsfake.Association{adminAssoc}, from: service.AccessFull, target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessRevocationFailed, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(editPolicy, OutcomeOK, "team-a"), disassociateStep(adminPolicy, OutcomeFailed)}},
			wantAssoc: []awsfake.Association{adminAssoc, editAssoc("team-a")},
			code:      service.EUNAVAILABLE, reason: reasonAWSUnavailable, retryable: true},
		{name: "UpgradeDeniedKeepsLimitedAndEdit", role: awsfake.LevelLimited, existing: []awsfake.Association{editAssoc("team-a")},
			from: service.AccessLimited, target: service.AccessFull,
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessUpgradeFailed, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(adminPolicy, OutcomeFailed)}},
			wantAssoc: []awsfake.Association{editAssoc("team-a")},
			code:      service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "FullClusterThatLostAdminIsDegraded", role: awsfake.LevelFull, deny: []string{"eks:AssociateAccessPolicy"},
			from: service.AccessFull, target: service.AccessFull,
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(adminPolicy, OutcomeFailed)}},
			code: service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "UpgradeLeftoverEditIsRetried", role: awsfake.LevelFull, deny: []string{"eks:DisassociateAccessPolicy"},
			existing: []awsfake.Association{editAssoc("team-a")}, from: service.AccessLimited, target: service.AccessFull,
			want: service.SwitchResult{Level: service.AccessFull, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeOK), associateStep(adminPolicy, OutcomeOK), disassociateStep(editPolicy, OutcomeFailed)}},
			wantAssoc: []awsfake.Association{adminAssoc, editAssoc("team-a")},
			code:      service.EVALIDATION, reason: ReasonAWSAccessDenied, retryable: true},
		{name: "UnlistableFullWritesBlind", role: awsfake.LevelFull, existing: []awsfake.Association{editAssoc("team-a")},
			fault: func(f *awsfake.AWS) {
				f.FailWith(awsfake.OpListAssociatedAccessPolicies, awsfake.Fault{Times: awsfake.Always, Code: "ServerException", Status: 500})
			},
			from: service.AccessLimited, target: service.AccessFull,
			want: service.SwitchResult{Level: service.AccessFull, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeFailed), associateStep(adminPolicy, OutcomeOK), disassociateStep(editPolicy, OutcomeOK)}},
			wantAssoc: []awsfake.Association{adminAssoc}},
		{name: "UnlistableLimitedWritesBlind", role: awsfake.LevelLimited, existing: []awsfake.Association{adminAssoc},
			fault: func(f *awsfake.AWS) {
				f.FailWith(awsfake.OpListAssociatedAccessPolicies, awsfake.Fault{Times: awsfake.Always, Code: "ServerException", Status: 500})
			},
			from: service.AccessFull, target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessActive, Steps: []service.SwitchStep{
				listStep(OutcomeFailed), associateStep(editPolicy, OutcomeOK, "team-a"), disassociateStep(adminPolicy, OutcomeOK)}},
			wantAssoc: []awsfake.Association{editAssoc("team-a")}},
		{name: "ErrEntryMissingOnUpgrade", role: awsfake.LevelFull, noEntry: true, from: service.AccessLimited, target: service.AccessFull,
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessUpgradeFailed, Steps: []service.SwitchStep{
				listStep(OutcomeFailed), associateStep(adminPolicy, OutcomeFailed)}},
			code: service.ENOTFOUND, reason: ReasonAccessEntryMissing},
		{name: "ErrEntryMissingOnDowngrade", role: awsfake.LevelLimited, noEntry: true, from: service.AccessFull,
			target: service.AccessLimited, ns: []string{"team-a"},
			want: service.SwitchResult{Level: service.AccessLimited, State: service.AccessDegraded, Steps: []service.SwitchStep{
				listStep(OutcomeFailed), associateStep(editPolicy, OutcomeFailed, "team-a"), disassociateStep(adminPolicy, OutcomeGone)}},
			code: service.ENOTFOUND, reason: ReasonAccessEntryMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := mustFixture(t, tc.role, allowed...)
			fx.setRole(tc.role, allowed, tc.deny...)
			arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
			if !tc.noEntry {
				fx.fake.AddAccessEntry(arn, awsfake.AccessEntry{PrincipalARN: customerRole, Policies: tc.existing})
			}
			if tc.fault != nil {
				tc.fault(fx.fake)
			}
			c := eksCluster(tc.from)
			var observed []service.SwitchStep
			got, err := fx.aws.ApplyLevel(ctxFor(t), fx.account, teamExternalID, c, tc.target, tc.ns,
				service.ApplyOptions{Observe: func(s service.SwitchStep) { observed = append(observed, s) }})
			if tc.code == "" && err != nil {
				t.Fatalf("ApplyLevel: %v", err)
			}
			if tc.code != "" {
				wantReason(t, err, tc.code, tc.reason)
				if RetryableWithin(err, time.Minute, service.RegistrationPropagationWindow) != tc.retryable {
					t.Errorf("Retryable(%v) within the propagation window = %v, want %v", err, !tc.retryable, tc.retryable)
				}
				if got.Reason != service.ErrorMessage(err) {
					t.Errorf("Reason = %q, want the error's message %q", got.Reason, service.ErrorMessage(err))
				}
			}
			if got.Level != tc.want.Level || got.State != tc.want.State {
				t.Errorf("result = %s/%s, want %s/%s", got.Level, got.State, tc.want.Level, tc.want.State)
			}
			if (got.Reason == "") != (got.State == service.AccessActive && err == nil) {
				t.Errorf("Reason %q: want one exactly when the state is not active or an error is returned", got.Reason)
			}
			checkSteps(t, tc.want.Steps, got.Steps)
			// Each step is reported before its call (started) and after it.
			var announced []service.SwitchStep
			for _, s := range got.Steps {
				started := s
				started.Outcome, started.Err = service.AccessChangeStarted, nil
				announced = append(announced, started, s)
			}
			checkSteps(t, announced, observed)
			// The SDK retries throttling and 5xx, so one step may be several
			// calls of its operation; the order is the steps' order.
			if diff := cmp.Diff(slices.Compact(stepOps(got.Steps)), slices.Compact(policyCalls(fx.fake))); diff != "" {
				t.Errorf("calls in another order than the steps (-steps +calls):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAssoc, fx.fake.Associations(arn, customerRole), ignoreTimes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("associations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyLevelIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		role        awsfake.Level
		target      service.AccessLevel
		ns          []string
		secondSteps []service.SwitchStep
	}{
		{"Full", awsfake.LevelFull, service.AccessFull, nil, []service.SwitchStep{listStep(OutcomeOK)}},
		// ClusterAdmin's removal is sent whatever the listing says (a stale
		// listing must not leave admin in place): answered gone.
		{"Limited", awsfake.LevelLimited, service.AccessLimited, []string{"team-a", "team-b"},
			[]service.SwitchStep{listStep(OutcomeOK), disassociateStep(adminPolicy, OutcomeGone)}},
		{"NoNamespaceAllowed", awsfake.LevelLimited, service.AccessLimited, nil,
			[]service.SwitchStep{listStep(OutcomeOK), disassociateStep(adminPolicy, OutcomeGone)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := mustFixture(t, tc.role, "team-*")
			arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
			fx.fake.AddAccessEntry(arn, awsfake.AccessEntry{PrincipalARN: customerRole,
				Policies: []awsfake.Association{adminAssoc, editAssoc("team-z")}})
			ctx := ctxFor(t)
			first, err := fx.aws.ApplyLevel(ctx, fx.account, teamExternalID, eksCluster(service.AccessLimited), tc.target, tc.ns, service.ApplyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			after := fx.fake.Associations(arn, customerRole)
			fx.fake.ResetCalls()
			second, err := fx.aws.ApplyLevel(ctx, fx.account, teamExternalID, eksCluster(tc.target), tc.target, tc.ns, service.ApplyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := fx.fake.Calls(awsfake.OpAssociateAccessPolicy); n != 0 {
				t.Errorf("the second application made %d AssociateAccessPolicy calls, want none", n)
			}
			checkSteps(t, tc.secondSteps, second.Steps)
			if first.Level != second.Level || first.State != second.State || first.Reason != second.Reason {
				t.Errorf("second result %s/%s %q differs from the first %s/%s %q",
					second.Level, second.State, second.Reason, first.Level, first.State, first.Reason)
			}
			if diff := cmp.Diff(after, fx.fake.Associations(arn, customerRole)); diff != "" {
				t.Errorf("the second application changed the associations (-first +second):\n%s", diff)
			}
		})
	}
}

func TestApplyLevelRemovesAdminAfterContextEnds(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelLimited, "team-*")
	arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
	fx.fake.AddAccessEntry(arn, awsfake.AccessEntry{PrincipalARN: customerRole, Policies: []awsfake.Association{adminAssoc}})
	ctx := ctxFor(t)
	// Assume the role first, so the job's deadline falls in the Edit step.
	if _, err := fx.aws.role(ctx, customerRole, teamExternalID); err != nil {
		t.Fatal(err)
	}
	// The fake holds the call past the deadline (it reads the body only
	// after the delay, so it cannot notice the client leaving earlier).
	fx.fake.SetLatency(awsfake.OpAssociateAccessPolicy, 3*time.Second)
	jobCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	got, err := fx.aws.ApplyLevel(jobCtx, fx.account, teamExternalID, eksCluster(service.AccessFull), service.AccessLimited, []string{"team-a"}, service.ApplyOptions{})
	if !RetryableWithin(err, time.Hour, service.RegistrationPropagationWindow) {
		t.Errorf("err = %v, want the Edit step's timeout, retryable", err)
	}
	if got.State != service.AccessDegraded || got.Level != service.AccessLimited {
		t.Errorf("result = %s/%s, want limited/degraded", got.Level, got.State)
	}
	for _, a := range fx.fake.Associations(arn, customerRole) {
		if a.PolicyARN == adminPolicy {
			t.Fatal("ClusterAdmin is still associated after the job's context ended")
		}
	}
}

func TestApplyLevelRoleNotAssumable(t *testing.T) {
	for _, tc := range []struct {
		target service.AccessLevel
		state  service.AccessState
	}{
		{service.AccessFull, service.AccessUpgradeFailed},
		{service.AccessLimited, service.AccessRevocationFailed},
	} {
		t.Run(string(tc.target), func(t *testing.T) {
			fx := mustFixture(t, awsfake.LevelFull)
			fx.fake.AddRole(awsfake.Role{ARN: customerRole, Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: "changed"},
				Level: awsfake.LevelFull})
			got, err := fx.aws.ApplyLevel(ctxFor(t), fx.account, teamExternalID, eksCluster(service.AccessLimited), tc.target, []string{"team-a"}, service.ApplyOptions{})
			wantReason(t, err, service.EVALIDATION, reasonAssumeRoleDenied)
			if got.State != tc.state || got.Level != service.AccessLimited || len(got.Steps) != 0 || got.Reason == "" {
				t.Errorf("result = %+v, want limited/%s with a reason and no steps", got, tc.state)
			}
		})
	}
}

func TestApplyLevelInvalidTarget(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelFull)
	_, err := fx.aws.ApplyLevel(ctxFor(t), fx.account, teamExternalID, eksCluster(service.AccessLimited), "admin", nil, service.ApplyOptions{})
	if service.ErrorCode(err) != service.EINVALID {
		t.Errorf("err = %v, want EINVALID", err)
	}
	if n := len(fx.fake.CallLog()); n != 0 {
		t.Errorf("%d AWS calls for an invalid level, want none", n)
	}
}

// rbacWait only catches hangs: the simulation materialises associations
// as RBAC within about a second.
const rbacWait = 60 * time.Second

// waitCan waits until the API server answers a SelfSubjectAccessReview of
// Kukie's role (through its EKS token) with want.
func waitCan(t *testing.T, ctx context.Context, kube kubernetes.Interface, want bool, verb, group, resource, namespace string) {
	t.Helper()
	deadline := time.Now().Add(rbacWait)
	for {
		r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Namespace: namespace}},
		}, metav1.CreateOptions{})
		last := fmt.Sprint(err)
		if err == nil {
			if r.Status.Allowed == want {
				return
			}
			last = fmt.Sprintf("allowed=%v", r.Status.Allowed)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s.%s in %q: want allowed=%v, still %s after %s", verb, resource, group, namespace, want, last, rbacWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestApplyLevelRBAC switches a simulated EKS cluster (a real
// kube-apiserver whose RBAC follows the associations) limited → full →
// limited → narrower, checking the call order in the fake and what Kukie's
// role may do in the cluster after each switch.
func TestApplyLevelRBAC(t *testing.T) {
	k8stest.QuietClientGo()
	fx := mustFixture(t, awsfake.LevelLimited, "sandbox-*")
	sim := ekssim.Start(t, fx.fake, awsfake.Cluster{Region: eksRegion, Account: customerAccount, Name: eksName},
		k8stest.Options{ArgoCD: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	desc, err := fx.aws.DescribeCluster(ctx, fx.account, teamExternalID, eksRegion, eksName)
	if err != nil {
		t.Fatal(err)
	}
	c := eksCluster(service.AccessLimited, "sandbox-plain", "sandbox-helm")
	c.Endpoint, c.CAData = desc.Endpoint, desc.CAData
	if c.EntryCreated, err = fx.aws.GrantAccess(ctx, fx.account, teamExternalID, c); err != nil {
		t.Fatal(err)
	}
	cfg, err := fx.conn.RESTConfig(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apps := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	waitCan(t, ctx, kube, true, "patch", "apps", "deployments", "sandbox-plain")
	waitCan(t, ctx, kube, false, "list", "argoproj.io", "applications", "argocd")

	apply := func(t *testing.T, target service.AccessLevel, namespaces []string, want []service.SwitchStep) {
		t.Helper()
		fx.fake.ResetCalls()
		got, err := fx.aws.ApplyLevel(ctx, fx.account, teamExternalID, c, target, namespaces, service.ApplyOptions{})
		if err != nil {
			t.Fatalf("ApplyLevel %s: %v", target, err)
		}
		if got.Level != target || got.State != service.AccessActive {
			t.Fatalf("ApplyLevel %s = %s/%s, want %s/active", target, got.Level, got.State, target)
		}
		checkSteps(t, want, got.Steps)
		// No faults, no SDK retries: one call per step, in the steps' order.
		if diff := cmp.Diff(stepOps(want), policyCalls(fx.fake)); diff != "" {
			t.Errorf("AWS calls (-want +got):\n%s", diff)
		}
		c.AccessLevel = got.Level
	}

	if !t.Run("UpgradeToFull", func(t *testing.T) {
		fx.setRole(awsfake.LevelFull, nil) // the stack update's IAM policy
		apply(t, service.AccessFull, nil, []service.SwitchStep{listStep(OutcomeOK), associateStep(adminPolicy, OutcomeOK),
			disassociateStep(editPolicy, OutcomeOK)})
		waitCan(t, ctx, kube, true, "list", "argoproj.io", "applications", "argocd")
		list, err := dyn.Resource(apps).Namespace("argocd").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			t.Fatalf("list applications in argocd as cluster admin: %v (%v)", err, list)
		}
	}) {
		return
	}

	if !t.Run("DowngradeToLimited", func(t *testing.T) {
		fx.setRole(awsfake.LevelLimited, []string{"sandbox-*"})
		apply(t, service.AccessLimited, []string{"sandbox-helm", "sandbox-plain"}, []service.SwitchStep{listStep(OutcomeOK),
			associateStep(editPolicy, OutcomeOK, "sandbox-helm", "sandbox-plain"), disassociateStep(adminPolicy, OutcomeOK)})
		waitCan(t, ctx, kube, false, "list", "argoproj.io", "applications", "argocd")
		if _, err := dyn.Resource(apps).Namespace("argocd").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("list applications in argocd after the downgrade: %v, want 403", err)
		}
		waitCan(t, ctx, kube, true, "patch", "apps", "deployments", "sandbox-helm")
		waitCan(t, ctx, kube, true, "patch", "apps", "deployments", "sandbox-plain")
		patch := []byte(`{"metadata":{"annotations":{"kukie.dev/switch-test":"limited"}}}`)
		if _, err := kube.AppsV1().Deployments("sandbox-plain").Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("patch a deployment in an allowed namespace: %v", err)
		}
	}) {
		return
	}

	t.Run("NarrowLimited", func(t *testing.T) {
		fx.setRole(awsfake.LevelLimited, []string{"sandbox-plain"}) // AllowedNamespaces shrank
		apply(t, service.AccessLimited, []string{"sandbox-plain"}, []service.SwitchStep{listStep(OutcomeOK),
			associateStep(editPolicy, OutcomeOK, "sandbox-plain"), disassociateStep(adminPolicy, OutcomeGone)})
		waitCan(t, ctx, kube, false, "patch", "apps", "deployments", "sandbox-helm")
		waitCan(t, ctx, kube, true, "patch", "apps", "deployments", "sandbox-plain")
	})

	if err := sim.Err(); err != nil {
		t.Errorf("RBAC sync: %v", err)
	}
}

// The downgrade order: while the Edit association is refused with
// AccessDenied (the stack's IAM change propagating) and the caller will
// retry, ClusterAdmin stays — the cluster is never without a policy; the
// attempt that gives up removes it (fail closed, degraded); once Edit is
// accepted, Edit is associated before ClusterAdmin goes.
func TestApplyLevelKeepsAdminWhileEditPropagates(t *testing.T) {
	fx := mustFixture(t, awsfake.LevelLimited, "team-*")
	arn := fx.addCluster("https://ABC.gr7.ap-northeast-2.eks.amazonaws.com", caPEM)
	fx.fake.AddAccessEntry(arn, awsfake.AccessEntry{PrincipalARN: customerRole, Policies: []awsfake.Association{adminAssoc}})
	fx.fake.FailWith(awsfake.OpAssociateAccessPolicy, awsfake.Fault{Times: 2, Code: "AccessDeniedException", Status: 403})
	hasAdmin := func() bool {
		for _, a := range fx.fake.Associations(arn, customerRole) {
			if a.PolicyARN == adminPolicy {
				return true
			}
		}
		return false
	}
	retrying := service.ApplyOptions{KeepAdmin: func(err error) bool { return RetryableWithin(err, time.Second, time.Minute) }}
	got, err := fx.aws.ApplyLevel(ctxFor(t), fx.account, teamExternalID, eksCluster(service.AccessFull), service.AccessLimited, []string{"team-a"}, retrying)
	if err == nil || got.Level != service.AccessFull || got.State != service.AccessActive || !hasAdmin() {
		t.Fatalf("a retried Edit failure: %+v, %v, admin kept %v; want full/active with ClusterAdmin kept", got, err, hasAdmin())
	}
	// The caller's last attempt: Edit still refused, ClusterAdmin goes.
	got, err = fx.aws.ApplyLevel(ctxFor(t), fx.account, teamExternalID, eksCluster(service.AccessFull), service.AccessLimited, []string{"team-a"},
		service.ApplyOptions{KeepAdmin: func(error) bool { return false }})
	if err == nil || got.Level != service.AccessLimited || got.State != service.AccessDegraded || hasAdmin() {
		t.Fatalf("the last attempt: %+v, %v, admin kept %v; want limited/degraded without ClusterAdmin", got, err, hasAdmin())
	}
	// Edit accepted now: associated before ClusterAdmin would be removed.
	fx.fake.AddAccessEntry(arn, awsfake.AccessEntry{PrincipalARN: customerRole, Policies: []awsfake.Association{adminAssoc}})
	fx.fake.ResetCalls()
	got, err = fx.aws.ApplyLevel(ctxFor(t), fx.account, teamExternalID, eksCluster(service.AccessFull), service.AccessLimited, []string{"team-a"}, retrying)
	if err != nil || got.State != service.AccessActive || len(got.Steps) < 2 ||
		got.Steps[len(got.Steps)-2].Policy != editPolicy || got.Steps[len(got.Steps)-1].Policy != adminPolicy {
		t.Fatalf("after propagation: %+v, %v; want Edit associated, then ClusterAdmin removed", got, err)
	}
}
