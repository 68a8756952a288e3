package service

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The stack is the ceiling, a chosen level may only narrow it, and a FULL
// stack widens an account limited by its v4 template only once full is
// chosen.
func TestEffectiveFacts(t *testing.T) {
	v5 := Account{ID: "acc", TemplateVersion: "5", State: AccountActive, AccessLevel: AccessLimited}
	v4 := Account{ID: "acc", TemplateVersion: "4", State: AccountConfirmationRequired, AccessLevel: AccessLimited}
	awaiting := Account{ID: "acc", TemplateVersion: "5", State: AccountConfirmationRequired, AccessLevel: AccessLimited}
	wasFull := Account{ID: "acc", TemplateVersion: "5", State: AccountActive, AccessLevel: AccessFull}
	stack := func(level AccessLevel) StackFacts {
		return StackFacts{AccessLevel: level, TemplateVersion: "5", AllowedNamespaces: []string{"web"}}
	}
	chosen := func(level AccessLevel) AccountSwitchState {
		return AccountSwitchState{ChosenLevel: level, ChosenAt: time.Unix(1, 0)}
	}
	for _, c := range []struct {
		name        string
		account     Account
		state       AccountSwitchState
		facts       StackFacts
		wantLevel   AccessLevel
		wantConfirm bool
	}{
		{"V5FullWidens", v5, AccountSwitchState{}, stack(AccessFull), AccessFull, false},
		{"V5LimitedNarrows", wasFull, AccountSwitchState{}, stack(AccessLimited), AccessLimited, false},
		{"ChosenLimitedNarrowsFullStack", v5, chosen(AccessLimited), stack(AccessFull), AccessLimited, false},
		{"ChosenFullNeverExceedsLimitedStack", v5, chosen(AccessFull), stack(AccessLimited), AccessLimited, false},
		{"V4ToV5FullUnconfirmedStaysLimited", v4, AccountSwitchState{}, stack(AccessFull), AccessLimited, true},
		{"AwaitingConfirmationStaysLimited", awaiting, AccountSwitchState{}, stack(AccessFull), AccessLimited, true},
		{"V4ToV5FullConfirmed", v4, chosen(AccessFull), stack(AccessFull), AccessFull, false},
		{"AwaitingConfirmedByChoice", awaiting, chosen(AccessFull), stack(AccessFull), AccessFull, false},
		{"V4ToV5LimitedNeedsNothing", v4, AccountSwitchState{}, stack(AccessLimited), AccessLimited, false},
		{"FullAccountStaysFull", wasFull, AccountSwitchState{}, stack(AccessFull), AccessFull, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := EffectiveFacts(c.account, c.state, c.facts)
			if got.AccessLevel != c.wantLevel || got.ConfirmationRequired != c.wantConfirm {
				t.Errorf("level %s, confirmation required %v; want %s, %v", got.AccessLevel, got.ConfirmationRequired,
					c.wantLevel, c.wantConfirm)
			}
			if c.wantConfirm && !strings.Contains(got.Reason, "/v1/aws/accounts/acc/access-level") {
				t.Errorf("reason %q does not say how to confirm", got.Reason)
			}
			if diff := cmp.Diff(c.facts.AllowedNamespaces, got.AllowedNamespaces); diff != "" {
				t.Errorf("namespaces changed:\n%s", diff)
			}
		})
	}
}

// The Edit scope is the registered namespaces the stack allows; system
// namespaces never.
func TestEditScope(t *testing.T) {
	scope, dropped := editScope([]string{"kukie-api", "web", "kube-system", "billing"}, []string{"kukie-*", "web", "kube-*"})
	if diff := cmp.Diff([]string{"kukie-api", "web"}, scope); diff != "" {
		t.Errorf("scope (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kube-system", "billing"}, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	scope, dropped = editScope([]string{"web"}, nil)
	if len(scope) != 0 || scope == nil || len(dropped) != 1 {
		t.Errorf("nothing allowed: scope %#v, dropped %v; want an empty (non-nil) scope", scope, dropped)
	}
}

func TestStepName(t *testing.T) {
	for _, c := range []struct {
		step SwitchStep
		want string
	}{
		{SwitchStep{Action: "list"}, "list"},
		{SwitchStep{Action: "associate", Policy: "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"},
			"associate AmazonEKSClusterAdminPolicy"},
		{SwitchStep{Action: "associate", Policy: "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy", Scope: []string{"a", "b"}},
			"associate AmazonEKSEditPolicy (a,b)"},
	} {
		if got := stepName(c.step); got != c.want {
			t.Errorf("stepName(%+v) = %q, want %q", c.step, got, c.want)
		}
	}
}
