package service

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestNewOnboarding(t *testing.T) {
	team := Team{ID: "team-a", ExternalID: "0123456789abcdef0123456789abcdef0123456789abcdef"}
	o := NewOnboarding(team, "111122223333")

	if o.ExternalID != team.ExternalID {
		t.Errorf("ExternalID = %q, want the team's %q", o.ExternalID, team.ExternalID)
	}
	if o.TemplateVersion != CurrentTemplateVersion || o.ServiceAccountID != "111122223333" {
		t.Errorf("TemplateVersion, ServiceAccountID = %q, %q", o.TemplateVersion, o.ServiceAccountID)
	}

	params := map[string]OnboardingParameter{}
	for _, p := range o.Parameters {
		params[p.Name] = p
	}
	if p := params[TemplateParamExternalID]; p.Value != team.ExternalID || !p.Required {
		t.Errorf("ExternalId parameter = %+v, want the team's value, required", p)
	}
	if p := params[TemplateParamServiceAccountID]; p.Value != "111122223333" || !p.Required {
		t.Errorf("KukieServiceAccountId parameter = %+v", p)
	}
	level, ok := params[TemplateParamAccessLevel]
	if !ok {
		t.Fatal("no AccessLevel parameter")
	}
	if level.Default != "" || level.Value != "" || !level.Required {
		t.Errorf("AccessLevel = %+v: it must be chosen explicitly (no default, no value, required)", level)
	}
	if !slices.Equal(level.AllowedValues, []string{"FULL", "LIMITED"}) {
		t.Errorf("AccessLevel allowed values = %v", level.AllowedValues)
	}
	if !strings.Contains(o.DeployCommand, "AccessLevel=FULL_OR_LIMITED ") ||
		strings.Contains(o.DeployCommand, "AccessLevel=FULL ") || strings.Contains(o.DeployCommand, "AccessLevel=LIMITED ") {
		t.Errorf("deploy command must leave the level to the customer: %s", o.DeployCommand)
	}
	if !strings.Contains(o.DeployCommand, "'ExternalId="+team.ExternalID+"'") {
		t.Errorf("deploy command lacks the team's ExternalId: %s", o.DeployCommand)
	}

	levels := map[AccessLevel]OnboardingLevel{}
	for _, l := range o.Levels {
		levels[l.Level] = l
	}
	full, limited := levels[AccessFull], levels[AccessLimited]
	if len(o.Levels) != 2 || full.ParameterValue != "FULL" || limited.ParameterValue != "LIMITED" {
		t.Fatalf("levels = %+v", o.Levels)
	}
	// Rights are described by what the role can do across the whole account,
	// not by what Kukie chooses to do with them.
	for _, want := range []string{"make itself cluster admin on any EKS cluster in this account", "only to clusters you register"} {
		if !strings.Contains(full.Summary, want) {
			t.Errorf("FULL summary %q lacks %q", full.Summary, want)
		}
	}
	for _, want := range []string{"edit rights in the allowed namespaces of any EKS cluster in this account", "Argo CD and GPU views are unavailable"} {
		if !strings.Contains(limited.Summary, want) {
			t.Errorf("LIMITED summary %q lacks %q", limited.Summary, want)
		}
	}
	if !strings.Contains(full.SummaryKO, "이 계정의 어떤 EKS 클러스터에서든") || !strings.Contains(limited.SummaryKO, "이 계정의 어떤 EKS 클러스터에서든") {
		t.Errorf("Korean summaries must speak of the whole account: %q / %q", full.SummaryKO, limited.SummaryKO)
	}
	if !slices.ContainsFunc(limited.CanDo, func(s string) bool { return strings.Contains(s, "Remove the ClusterAdmin policy") }) {
		t.Errorf("LIMITED can_do must say the role can remove ClusterAdmin: %q", limited.CanDo)
	}
	for _, l := range o.Levels {
		if len(l.CanDo) != len(l.CanDoKO) || len(l.CannotDo) != len(l.CannotDoKO) || len(l.CannotDo) == 0 {
			t.Errorf("%s: English and Korean lists differ or are empty: %d/%d can, %d/%d cannot",
				l.Level, len(l.CanDo), len(l.CanDoKO), len(l.CannotDo), len(l.CannotDoKO))
		}
	}
	if !strings.Contains(o.UpgradeNote, "never widens") || !strings.Contains(o.UpgradeNote, DefaultAllowedNamespaces) {
		t.Errorf("upgrade note = %q", o.UpgradeNote)
	}
}

func TestNewOnboardingWithoutAWS(t *testing.T) {
	o := NewOnboarding(Team{ExternalID: "abc123abc123"}, "")
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if wire["service_account_id"] != "" || wire["external_id"] != "abc123abc123" {
		t.Errorf("wire = %s", b)
	}
	for _, key := range []string{"parameters", "outputs", "levels", "capabilities"} {
		if list, ok := wire[key].([]any); !ok || len(list) == 0 {
			t.Errorf("%s = %v, want a non-empty list", key, wire[key])
		}
	}
	if !strings.Contains(o.DeployCommand, "'KukieServiceAccountId=KUKIE_SERVICE_ACCOUNT_ID'") {
		t.Errorf("deploy command without AWS: %s", o.DeployCommand)
	}
}

func TestNewOnboardingReturnsFreshSlices(t *testing.T) {
	a := NewOnboarding(Team{ExternalID: "abc123abc123"}, "")
	a.Levels[0].CanDo[0] = "changed"
	a.Levels[1].CannotDo[len(a.Levels[1].CannotDo)-1] = "changed"
	b := NewOnboarding(Team{ExternalID: "abc123abc123"}, "")
	if b.Levels[0].CanDo[0] == "changed" || slices.Contains(b.Levels[0].CannotDo, "changed") {
		t.Error("NewOnboarding shares slices between calls")
	}
}
