package cloudformation

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/service"
)

// The values the test deploys the template with.
const (
	partition      = "aws"
	account        = "111122223333"
	serviceAccount = "999988887777"
	externalID     = "0123456789abcdef0123456789abcdef0123456789abcdef"
	roleName       = "kukie-access-KukieAccessRole-1A2B3C4D5E6F"
	roleARN        = "arn:aws:iam::" + account + ":role/" + roleName
	stackID        = "arn:aws:cloudformation:eu-west-1:" + account + ":stack/kukie-access/5b1e2f60-0c1d-11ef-9a7e-0a1b2c3d4e5f"

	clusterAdmin = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
	edit         = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy"
	adminNS      = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy"
	view         = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"

	cluster     = "arn:aws:eks:eu-west-1:" + account + ":cluster/prod"
	ownEntry    = "arn:aws:eks:eu-west-1:" + account + ":access-entry/prod/role/" + account + "/" + roleName + "/7ac6b0b4-1f2e-4d3c-8b9a-0123456789ab"
	otherEntry  = "arn:aws:eks:eu-west-1:" + account + ":access-entry/prod/role/" + account + "/platform-admins/1c2d3e4f-5a6b-7c8d-9e0f-0123456789ab"
	userEntry   = "arn:aws:eks:eu-west-1:" + account + ":access-entry/prod/user/" + account + "/" + roleName + "/2c2d3e4f-5a6b-7c8d-9e0f-0123456789ab"
	foreignClus = "arn:aws:eks:eu-west-1:444455556666:cluster/prod"
)

var allowedNamespaces = []any{"kukie-*", "team-a"}

// The calls the server makes, and nothing else.
var serviceActions = []string{
	"cloudformation:DescribeStacks",
	"eks:AssociateAccessPolicy",
	"eks:CreateAccessEntry",
	"eks:DeleteAccessEntry",
	"eks:DescribeAccessEntry",
	"eks:DescribeCluster",
	"eks:DisassociateAccessPolicy",
	"eks:ListAssociatedAccessPolicies",
}

func TestTemplateIsPlainYAML(t *testing.T) {
	raw, err := os.ReadFile("kukie-access.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Short-form tags (!Sub, !If, !Ref ...) need a CloudFormation-aware
	// parser; the long forms keep the file readable by any YAML library.
	shortTag := regexp.MustCompile(`(^|[\s\[{,])!\w`)
	for i, line := range strings.Split(string(raw), "\n") {
		if j := strings.Index(line, "#"); j >= 0 && (j == 0 || line[j-1] == ' ') {
			line = line[:j]
		}
		if shortTag.MatchString(line) {
			t.Errorf("line %d uses a short-form tag: %s", i+1, line)
		}
	}
	if !strings.Contains(string(raw), "Fn::If") {
		t.Error("the template no longer switches statements with Fn::If")
	}
}

func TestTemplateParameters(t *testing.T) {
	tpl := mustLoad(t)
	params := object(t, tpl["Parameters"], "Parameters")
	if got := sortedKeys(params); !slices.Equal(got, []string{"AccessLevel", "AllowedNamespaces", "ExternalId", "KukieServiceAccountId"}) {
		t.Errorf("parameters = %v", got)
	}

	level := object(t, params["AccessLevel"], "AccessLevel")
	if _, ok := level["Default"]; ok {
		t.Error("AccessLevel has a default: the customer must choose FULL or LIMITED explicitly")
	}
	if diff := cmp.Diff([]any{"FULL", "LIMITED"}, level["AllowedValues"]); diff != "" || level["Type"] != "String" {
		t.Errorf("AccessLevel must be a String allowing exactly FULL and LIMITED (-want +got):\n%s", diff)
	}

	ext := object(t, params["ExternalId"], "ExternalId")
	if _, ok := ext["Default"]; ok {
		t.Error("ExternalId has a default: it must come from Kukie, per team")
	}
	if ext["AllowedPattern"] != `[\w+=,.@:/-]+` || fmt.Sprint(ext["MinLength"]) != "2" || fmt.Sprint(ext["MaxLength"]) != "1224" {
		t.Errorf("ExternalId must be 2-1224 characters of STS's alphabet: %v", ext)
	}
	extPattern := wholeMatch(t, ext["AllowedPattern"])
	for _, s := range []string{service.NewExternalID(), "team_1+x=y,z.w@a:b/c-d"} {
		if !extPattern.MatchString(s) {
			t.Errorf("ExternalId pattern rejects %q", s)
		}
	}
	for _, s := range []string{"with space", "quote'", "star*", "semi;colon"} {
		if extPattern.MatchString(s) {
			t.Errorf("ExternalId pattern accepts %q, outside STS's alphabet", s)
		}
	}

	svc := object(t, params["KukieServiceAccountId"], "KukieServiceAccountId")
	if _, ok := svc["Default"]; ok || svc["AllowedPattern"] != "[0-9]{12}" {
		t.Errorf("KukieServiceAccountId must be a 12-digit account without default: %v", svc)
	}

	ns := object(t, params["AllowedNamespaces"], "AllowedNamespaces")
	if ns["Type"] != "CommaDelimitedList" || ns["Default"] != service.DefaultAllowedNamespaces {
		t.Errorf("AllowedNamespaces = %v, want a CommaDelimitedList defaulting to %s", ns, service.DefaultAllowedNamespaces)
	}
	nsPattern := wholeMatch(t, ns["AllowedPattern"])
	for _, s := range []string{"kukie-*", "team-a", "default", "a", "dev-*-web"} {
		if !nsPattern.MatchString(s) {
			t.Errorf("AllowedNamespaces pattern rejects %q", s)
		}
	}
	for _, s := range []string{"", " team-a", "Team", "a?", "-a", strings.Repeat("a", 64)} {
		if nsPattern.MatchString(s) {
			t.Errorf("AllowedNamespaces pattern accepts %q", s)
		}
	}

	want := map[string]any{
		"IsFull":    map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "AccessLevel"}, "FULL"}},
		"IsLimited": map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "AccessLevel"}, "LIMITED"}},
	}
	if diff := cmp.Diff(want, tpl["Conditions"]); diff != "" {
		t.Errorf("Conditions (-want +got):\n%s", diff)
	}
}

func TestTemplateOutputsAndOnboardingAgree(t *testing.T) {
	tpl := mustLoad(t)
	outputs := object(t, tpl["Outputs"], "Outputs")
	version := object(t, outputs["KukieTemplateVersion"], "KukieTemplateVersion")
	if version["Value"] != service.CurrentTemplateVersion {
		t.Errorf("KukieTemplateVersion = %v, want %q", version["Value"], service.CurrentTemplateVersion)
	}
	role := object(t, outputs["RoleArn"], "RoleArn")
	if diff := cmp.Diff(map[string]any{"Fn::GetAtt": []any{"KukieAccessRole", "Arn"}}, role["Value"]); diff != "" {
		t.Errorf("RoleArn output (-want +got):\n%s", diff)
	}

	// What the onboarding answer tells the customer matches the file.
	o := service.NewOnboarding(service.Team{ExternalID: externalID}, serviceAccount)
	params := object(t, tpl["Parameters"], "Parameters")
	var names []string
	for _, p := range o.Parameters {
		names = append(names, p.Name)
		def, hasDefault := object(t, params[p.Name], p.Name)["Default"]
		if p.Required == hasDefault || (hasDefault && def != p.Default) {
			t.Errorf("onboarding parameter %s: required=%v default=%q; template default %v", p.Name, p.Required, p.Default, def)
		}
		if allowed, ok := object(t, params[p.Name], p.Name)["AllowedValues"]; ok {
			if diff := cmp.Diff(allowed, toAny(p.AllowedValues)); diff != "" {
				t.Errorf("onboarding %s allowed values (-template +onboarding):\n%s", p.Name, diff)
			}
		}
	}
	sort.Strings(names)
	if !slices.Equal(names, sortedKeys(params)) {
		t.Errorf("onboarding parameters %v, template parameters %v", names, sortedKeys(params))
	}
	var outs []string
	for _, out := range o.Outputs {
		outs = append(outs, out.Name)
	}
	sort.Strings(outs)
	if !slices.Equal(outs, sortedKeys(outputs)) {
		t.Errorf("onboarding outputs %v, template outputs %v", outs, sortedKeys(outputs))
	}
	for _, l := range o.Levels {
		if !slices.Contains([]string{"FULL", "LIMITED"}, l.ParameterValue) {
			t.Errorf("onboarding level %s names AccessLevel %q", l.Level, l.ParameterValue)
		}
	}
}

func TestTemplateResources(t *testing.T) {
	tpl := mustLoad(t)
	res := object(t, tpl["Resources"], "Resources")
	if got := sortedKeys(res); !slices.Equal(got, []string{"KukieAccessPolicy", "KukieAccessRole"}) {
		t.Fatalf("resources = %v, want only the role and its inline policy", got)
	}
	role := object(t, res["KukieAccessRole"], "KukieAccessRole")
	if role["Type"] != "AWS::IAM::Role" {
		t.Errorf("KukieAccessRole type = %v", role["Type"])
	}
	// No managed policies, permissions boundaries or extra inline policies:
	// the role's rights are the one RolePolicy below.
	if got := sortedKeys(object(t, role["Properties"], "role properties")); !slices.Equal(got, []string{"AssumeRolePolicyDocument", "Description", "MaxSessionDuration"}) {
		t.Errorf("role properties = %v", got)
	}
	pol := object(t, res["KukieAccessPolicy"], "KukieAccessPolicy")
	props := object(t, pol["Properties"], "policy properties")
	if pol["Type"] != "AWS::IAM::RolePolicy" || cmp.Diff(map[string]any{"Ref": "KukieAccessRole"}, props["RoleName"]) != "" {
		t.Errorf("KukieAccessPolicy must be the role's inline policy: %v", pol)
	}
}

func TestTrustPolicy(t *testing.T) {
	for _, level := range []string{"FULL", "LIMITED"} {
		t.Run(level, func(t *testing.T) {
			trust := deploy(t, level).trust
			if len(trust) != 1 {
				t.Fatalf("trust policy has %d statements, want 1", len(trust))
			}
			st := trust[0]
			if st.Effect != "Allow" || !slices.Equal(st.Action, []string{"sts:AssumeRole"}) ||
				!slices.Equal(st.Principal, []string{"arn:aws:iam::" + serviceAccount + ":root"}) {
				t.Errorf("trust statement = %+v, want Kukie's account allowed sts:AssumeRole", st)
			}
			// StringEquals, not StringLike: a pattern such as "*" would let
			// any ExternalId (the confused deputy) through.
			want := conditions{"StringEquals": {"sts:ExternalId": {externalID}}}
			if diff := cmp.Diff(want, st.Condition); diff != "" {
				t.Errorf("trust condition (-want +got):\n%s", diff)
			}
			for _, c := range []struct {
				name   string
				caller string
				extID  []string
				want   bool
			}{
				{"KukieWithTeamExternalId", serviceAccount, []string{externalID}, true},
				{"KukieWithoutExternalId", serviceAccount, nil, false},
				{"KukieWithWrongExternalId", serviceAccount, []string{"fedcba9876543210fedcba9876543210fedcba9876543210"}, false},
				{"OtherAccountWithTeamExternalId", "444455556666", []string{externalID}, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					ctx := map[string][]string{}
					if c.extID != nil {
						ctx["sts:ExternalId"] = c.extID
					}
					if got := assumeAllowed(t, trust, c.caller, ctx); got != c.want {
						t.Errorf("AssumeRole allowed = %v, want %v", got, c.want)
					}
				})
			}
		})
	}
}

func TestPolicyStatements(t *testing.T) {
	for _, level := range []string{"FULL", "LIMITED"} {
		t.Run(level, func(t *testing.T) {
			policy := deploy(t, level).policy
			var actions []string
			for _, st := range policy {
				if st.Effect != "Allow" {
					t.Errorf("%s: effect %q", st.Sid, st.Effect)
				}
				for _, a := range st.Action {
					if strings.ContainsAny(a, "*?") {
						t.Errorf("%s: wildcard action %q", st.Sid, a)
					}
					if !slices.Contains(actions, a) {
						actions = append(actions, a)
					}
				}
				checkResources(t, st)
			}
			sort.Strings(actions)
			if diff := cmp.Diff(serviceActions, actions); diff != "" {
				t.Errorf("actions must be exactly the calls the server makes (-want +got):\n%s", diff)
			}

			adminOrEdit := conditions{"StringEquals": {"eks:policyArn": {clusterAdmin, edit}}}
			associate := conditions{"StringEquals": {"eks:policyArn": {clusterAdmin}, "eks:accessScope": {"cluster"}}}
			if level == "LIMITED" {
				associate = conditions{
					"StringEquals":               {"eks:policyArn": {edit}, "eks:accessScope": {"namespace"}},
					"ForAllValues:StringLike":    {"eks:namespaces": {"kukie-*", "team-a"}},
					"ForAllValues:StringNotLike": {"eks:namespaces": {"kube-*", "${*}*", "k${*}*", "ku${*}*", "kub${*}*", "kube${*}*"}},
					"Null":                       {"eks:namespaces": {"false"}},
				}
			}
			for action, want := range map[string]conditions{
				"eks:AssociateAccessPolicy":    associate,
				"eks:DisassociateAccessPolicy": adminOrEdit,
				"eks:CreateAccessEntry": {
					"StringEquals":         {"eks:principalArn": {roleARN}},
					"StringEqualsIfExists": {"eks:accessEntryType": {"STANDARD"}},
					"Null":                 {"eks:kubernetesGroups": {"true"}, "eks:username": {"true"}},
				},
				"eks:DescribeCluster":              nil,
				"eks:DescribeAccessEntry":          nil,
				"eks:ListAssociatedAccessPolicies": nil,
				"eks:DeleteAccessEntry":            nil,
				"cloudformation:DescribeStacks":    nil,
			} {
				sts := statementsWith(policy, action)
				if len(sts) != 1 {
					t.Errorf("%s is in %d statements, want 1", action, len(sts))
					continue
				}
				if diff := cmp.Diff(want, sts[0].Condition, cmp.Comparer(func(a, b []string) bool {
					return slices.Equal(sorted(a), sorted(b))
				})); diff != "" {
					t.Errorf("%s conditions (-want +got):\n%s", action, diff)
				}
			}
		})
	}
}

// checkResources allows no bare "*": EKS resources are this account's, in
// any region (clusters are registered later, anywhere), access entries are
// the role's own, and the stack is this one.
func checkResources(t *testing.T, st statement) {
	t.Helper()
	if len(st.Resource) == 0 {
		t.Errorf("%s: no resource", st.Sid)
	}
	ownEntries := "arn:aws:eks:*:" + account + ":access-entry/*/role/" + account + "/" + roleName + "/*"
	clusters := "arn:aws:eks:*:" + account + ":cluster/*"
	for _, r := range st.Resource {
		var want string
		switch {
		case slices.Equal(st.Action, []string{"cloudformation:DescribeStacks"}):
			want = stackID
		case slices.Contains(st.Action, "eks:DescribeCluster") || slices.Contains(st.Action, "eks:CreateAccessEntry"):
			want = clusters
		default:
			want = ownEntries
		}
		if r != want {
			t.Errorf("%s: resource %q, want %q", st.Sid, r, want)
		}
	}
	if slices.Contains(st.Action, "eks:DescribeCluster") && slices.Contains(st.Action, "eks:CreateAccessEntry") {
		t.Errorf("%s: CreateAccessEntry must stay in its own statement, with its conditions", st.Sid)
	}
}

// TestPolicySimulation asks the level's policy the questions the server's
// calls (and a few it must never make) raise, with a small IAM evaluator.
func TestPolicySimulation(t *testing.T) {
	type call struct {
		name     string
		action   string
		resource string
		ctx      map[string][]string
		full     bool // allowed at FULL
		limited  bool // allowed at LIMITED
	}
	assoc := func(policyARN, scope string, namespaces ...string) map[string][]string {
		ctx := map[string][]string{"eks:policyArn": {policyARN}, "eks:accessScope": {scope}, "eks:principalArn": {roleARN}, "eks:clusterName": {"prod"}}
		if namespaces != nil {
			ctx["eks:namespaces"] = namespaces
		}
		return ctx
	}
	create := func(extra map[string][]string) map[string][]string {
		ctx := map[string][]string{"eks:principalArn": {roleARN}}
		for k, v := range extra {
			ctx[k] = v
		}
		return ctx
	}
	calls := []call{
		{"DescribeCluster", "eks:DescribeCluster", cluster, nil, true, true},
		{"DescribeClusterOtherRegion", "eks:DescribeCluster", "arn:aws:eks:ap-northeast-2:" + account + ":cluster/gpu", nil, true, true},
		{"DescribeClusterOtherAccount", "eks:DescribeCluster", foreignClus, nil, false, false},
		{"ListClusters", "eks:ListClusters", "*", nil, false, false},

		{"CreateOwnEntry", "eks:CreateAccessEntry", cluster, create(nil), true, true},
		{"CreateOwnEntryStandard", "eks:CreateAccessEntry", cluster, create(map[string][]string{"eks:accessEntryType": {"STANDARD"}}), true, true},
		{"CreateEntryForOtherRole", "eks:CreateAccessEntry", cluster, map[string][]string{"eks:principalArn": {"arn:aws:iam::" + account + ":role/platform-admins"}}, false, false},
		{"CreateOwnEntryWithGroups", "eks:CreateAccessEntry", cluster, create(map[string][]string{"eks:kubernetesGroups": {"cluster-admins"}}), false, false},
		{"CreateOwnEntryWithUsername", "eks:CreateAccessEntry", cluster, create(map[string][]string{"eks:username": {"admin"}}), false, false},
		{"CreateOwnEntryOfNodeType", "eks:CreateAccessEntry", cluster, create(map[string][]string{"eks:accessEntryType": {"EC2_LINUX"}}), false, false},
		{"UpdateOwnEntry", "eks:UpdateAccessEntry", ownEntry, nil, false, false},

		{"DescribeOwnEntry", "eks:DescribeAccessEntry", ownEntry, nil, true, true},
		{"ListOwnPolicies", "eks:ListAssociatedAccessPolicies", ownEntry, nil, true, true},
		{"DeleteOwnEntry", "eks:DeleteAccessEntry", ownEntry, nil, true, true},
		{"DeleteOtherRolesEntry", "eks:DeleteAccessEntry", otherEntry, nil, false, false},
		{"DescribeSameNamedUsersEntry", "eks:DescribeAccessEntry", userEntry, nil, false, false},

		{"AssociateClusterAdmin", "eks:AssociateAccessPolicy", ownEntry, assoc(clusterAdmin, "cluster"), true, false},
		{"AssociateClusterAdminToOtherRole", "eks:AssociateAccessPolicy", otherEntry, assoc(clusterAdmin, "cluster"), false, false},
		{"AssociateClusterAdminInNamespace", "eks:AssociateAccessPolicy", ownEntry, assoc(clusterAdmin, "namespace", "kukie-a"), false, false},
		{"AssociateAdminPolicy", "eks:AssociateAccessPolicy", ownEntry, assoc(adminNS, "cluster"), false, false},
		{"AssociateEditInAllowed", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "namespace", "kukie-a", "team-a"), false, true},
		{"AssociateEditWildcardAsAllowed", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "namespace", "kukie-*"), false, true},
		{"AssociateEditInDefault", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "namespace", "default"), false, false},
		{"AssociateEditPartlyOutside", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "namespace", "kukie-a", "argocd"), false, false},
		{"AssociateEditAllNamespaces", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "namespace", "*"), false, false},
		{"AssociateEditWithoutNamespaces", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "namespace"), false, false},
		{"AssociateEditClusterScope", "eks:AssociateAccessPolicy", ownEntry, assoc(edit, "cluster"), false, false},
		{"AssociateEditToOtherRole", "eks:AssociateAccessPolicy", otherEntry, assoc(edit, "namespace", "kukie-a"), false, false},

		// A downgrade must be able to take ClusterAdmin away; an upgrade takes Edit away.
		{"DisassociateClusterAdmin", "eks:DisassociateAccessPolicy", ownEntry, map[string][]string{"eks:policyArn": {clusterAdmin}}, true, true},
		{"DisassociateEdit", "eks:DisassociateAccessPolicy", ownEntry, map[string][]string{"eks:policyArn": {edit}}, true, true},
		{"DisassociateView", "eks:DisassociateAccessPolicy", ownEntry, map[string][]string{"eks:policyArn": {view}}, false, false},
		{"DisassociateFromOtherRole", "eks:DisassociateAccessPolicy", otherEntry, map[string][]string{"eks:policyArn": {clusterAdmin}}, false, false},

		{"DescribeOwnStack", "cloudformation:DescribeStacks", stackID, nil, true, true},
		{"DescribeOtherStack", "cloudformation:DescribeStacks", "arn:aws:cloudformation:eu-west-1:" + account + ":stack/prod-db/0f0e0d0c-0b0a-0908-0706-050403020100", nil, false, false},
		{"PassRole", "iam:PassRole", roleARN, nil, false, false},
	}
	for _, level := range []string{"FULL", "LIMITED"} {
		policy := deploy(t, level).policy
		for _, c := range calls {
			t.Run(level+"/"+c.name, func(t *testing.T) {
				want := c.full
				if level == "LIMITED" {
					want = c.limited
				}
				if got := allowed(t, policy, c.action, c.resource, c.ctx); got != want {
					t.Errorf("%s on %s with %v: allowed = %v, want %v", c.action, c.resource, c.ctx, got, want)
				}
			})
		}
	}
}

// --- loading and resolving the template ---------------------------------

func mustLoad(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("kukie-access.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatalf("kukie-access.yaml is not plain YAML: %v", err)
	}
	return tpl
}

type deployed struct {
	trust  []statement
	policy []statement
}

// deploy resolves the template as CloudFormation would for one AccessLevel
// and returns the role's trust policy and inline policy.
func deploy(t *testing.T, level string) deployed {
	t.Helper()
	return deployWith(t, level, allowedNamespaces)
}

// deployWith is deploy with the given AllowedNamespaces.
func deployWith(t *testing.T, level string, namespaces []any) deployed {
	t.Helper()
	tpl := mustLoad(t)
	r := resolver{t: t, refs: map[string]any{
		"AWS::Partition":        partition,
		"AWS::AccountId":        account,
		"AWS::StackId":          stackID,
		"KukieServiceAccountId": serviceAccount,
		"ExternalId":            externalID,
		"AccessLevel":           level,
		"AllowedNamespaces":     namespaces,
		"KukieAccessRole":       roleName,
		"KukieAccessRole.Arn":   roleARN,
	}, conditions: map[string]bool{}}
	for name, def := range object(t, tpl["Conditions"], "Conditions") {
		v, _ := r.resolve(def)
		b, ok := v.(bool)
		if !ok {
			t.Fatalf("condition %s resolves to %v", name, v)
		}
		r.conditions[name] = b
	}
	res := object(t, tpl["Resources"], "Resources")
	roleProps, _ := r.resolve(object(t, res["KukieAccessRole"], "KukieAccessRole")["Properties"])
	policyProps, _ := r.resolve(object(t, res["KukieAccessPolicy"], "KukieAccessPolicy")["Properties"])
	return deployed{
		trust:  statements(t, object(t, object(t, roleProps, "role")["AssumeRolePolicyDocument"], "trust policy"), true),
		policy: statements(t, object(t, object(t, policyProps, "policy")["PolicyDocument"], "policy document"), false),
	}
}

type resolver struct {
	t          *testing.T
	refs       map[string]any
	conditions map[string]bool
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

// resolve evaluates the intrinsic functions the template may use; false
// means AWS::NoValue (the element disappears).
func (r resolver) resolve(v any) (any, bool) {
	t := r.t
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				switch fn {
				case "Ref":
					if arg == "AWS::NoValue" {
						return nil, false
					}
					return r.ref(fmt.Sprint(arg)), true
				case "Fn::Sub":
					s, ok := arg.(string)
					if !ok {
						t.Fatalf("Fn::Sub with %T", arg)
					}
					return subVar.ReplaceAllStringFunc(s, func(m string) string {
						return fmt.Sprint(r.ref(m[2 : len(m)-1]))
					}), true
				case "Fn::GetAtt":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 2 {
						t.Fatalf("Fn::GetAtt %v", arg)
					}
					return r.ref(fmt.Sprint(parts[0]) + "." + fmt.Sprint(parts[1])), true
				case "Fn::If":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 3 {
						t.Fatalf("Fn::If %v", arg)
					}
					cond, ok := r.conditions[fmt.Sprint(parts[0])]
					if !ok {
						t.Fatalf("Fn::If on unknown condition %v", parts[0])
					}
					if cond {
						return r.resolve(parts[1])
					}
					return r.resolve(parts[2])
				case "Fn::Equals":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 2 {
						t.Fatalf("Fn::Equals %v", arg)
					}
					a, _ := r.resolve(parts[0])
					b, _ := r.resolve(parts[1])
					return cmp.Equal(a, b), true
				default:
					if strings.HasPrefix(fn, "Fn::") {
						t.Fatalf("the test does not know %s; teach resolve before using it", fn)
					}
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			if x, ok := r.resolve(e); ok {
				out[k] = x
			}
		}
		return out, true
	case []any:
		out := []any{}
		for _, e := range v {
			if x, ok := r.resolve(e); ok {
				out = append(out, x)
			}
		}
		return out, true
	default:
		return v, true
	}
}

func (r resolver) ref(name string) any {
	v, ok := r.refs[name]
	if !ok {
		r.t.Fatalf("the template refers to %q, which the test does not provide", name)
	}
	return v
}

// --- a small IAM evaluator ----------------------------------------------

// conditions maps operator → key → values.
type conditions map[string]map[string][]string

type statement struct {
	Sid       string
	Effect    string
	Principal []string
	Action    []string
	Resource  []string
	Condition conditions
}

// statements reads a policy document strictly: any element the evaluator
// does not model (NotAction, NotResource, NotPrincipal ...) fails the test.
func statements(t *testing.T, doc map[string]any, trust bool) []statement {
	t.Helper()
	if doc["Version"] != "2012-10-17" {
		t.Errorf("policy version %v", doc["Version"])
	}
	list, ok := doc["Statement"].([]any)
	if !ok {
		t.Fatalf("Statement is %T", doc["Statement"])
	}
	var out []statement
	for _, e := range list {
		m := object(t, e, "statement")
		var st statement
		for k, v := range m {
			switch k {
			case "Sid":
				st.Sid = fmt.Sprint(v)
			case "Effect":
				st.Effect = fmt.Sprint(v)
			case "Action":
				st.Action = strs(t, v)
			case "Resource":
				if trust {
					t.Errorf("trust statement with Resource")
				}
				st.Resource = strs(t, v)
			case "Principal":
				if !trust {
					t.Errorf("%v: Principal in the role's policy", m["Sid"])
				}
				p := object(t, v, "Principal")
				if len(p) != 1 || p["AWS"] == nil {
					t.Errorf("principal %v, want only AWS", p)
				}
				st.Principal = strs(t, p["AWS"])
			case "Condition":
				st.Condition = conditions{}
				for op, keys := range object(t, v, "Condition") {
					st.Condition[op] = map[string][]string{}
					for key, vals := range object(t, keys, op) {
						st.Condition[op][key] = strs(t, vals)
					}
				}
			default:
				t.Errorf("statement %v has %s, which this test does not model", m["Sid"], k)
			}
		}
		out = append(out, st)
	}
	return out
}

func statementsWith(policy []statement, action string) []statement {
	var out []statement
	for _, st := range policy {
		if slices.Contains(st.Action, action) {
			out = append(out, st)
		}
	}
	return out
}

// allowed reports whether policy allows the call: some Allow statement
// matches action, resource and all its conditions, and no Deny does.
func allowed(t *testing.T, policy []statement, action, resource string, ctx map[string][]string) bool {
	t.Helper()
	allow := false
	for _, st := range policy {
		if !slices.ContainsFunc(st.Action, func(p string) bool { return glob(strings.ToLower(p), strings.ToLower(action)) }) ||
			!slices.ContainsFunc(st.Resource, func(p string) bool { return arnMatch(p, resource) }) ||
			!st.Condition.hold(t, ctx) {
			continue
		}
		if st.Effect != "Allow" {
			return false
		}
		allow = true
	}
	return allow
}

func assumeAllowed(t *testing.T, trust []statement, callerAccount string, ctx map[string][]string) bool {
	t.Helper()
	allow := false
	for _, st := range trust {
		if !slices.Contains(st.Action, "sts:AssumeRole") ||
			!slices.Contains(st.Principal, "arn:aws:iam::"+callerAccount+":root") || !st.Condition.hold(t, ctx) {
			continue
		}
		if st.Effect != "Allow" {
			return false
		}
		allow = true
	}
	return allow
}

// hold evaluates the conditions (all must hold) as IAM does for the
// operators the template uses. Keys are case-insensitive.
func (c conditions) hold(t *testing.T, ctx map[string][]string) bool {
	t.Helper()
	get := func(key string) ([]string, bool) {
		for k, v := range ctx {
			if strings.EqualFold(k, key) {
				return v, len(v) > 0
			}
		}
		return nil, false
	}
	for op, keys := range c {
		for key, want := range keys {
			got, present := get(key)
			var ok bool
			switch op {
			case "StringEquals":
				ok = present && slices.ContainsFunc(got, func(g string) bool { return slices.Contains(want, g) })
			case "StringEqualsIfExists":
				ok = !present || slices.ContainsFunc(got, func(g string) bool { return slices.Contains(want, g) })
			case "StringLike":
				ok = present && slices.ContainsFunc(got, func(g string) bool { return matchesAny(want, g) })
			case "ForAllValues:StringLike":
				// True for a missing or empty key: IAM's well-known trap.
				ok = !slices.ContainsFunc(got, func(g string) bool { return !matchesAny(want, g) })
			case "ForAllValues:StringNotLike":
				ok = !slices.ContainsFunc(got, func(g string) bool { return matchesAny(want, g) })
			case "Null":
				if len(want) != 1 || (want[0] != "true" && want[0] != "false") {
					t.Fatalf("Null %s: %v", key, want)
				}
				ok = present == (want[0] == "false")
			default:
				t.Fatalf("the evaluator does not model condition operator %s; teach it before using it", op)
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

func matchesAny(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return glob(p, s) })
}

// glob matches IAM wildcards: * any run of characters, ? one character;
// ${*}, ${?} and ${$} stand for the characters themselves.
func glob(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for pattern != "" {
		switch {
		case strings.HasPrefix(pattern, "${*}"), strings.HasPrefix(pattern, "${?}"), strings.HasPrefix(pattern, "${$}"):
			re.WriteString(regexp.QuoteMeta(pattern[2:3]))
			pattern = pattern[4:]
			continue
		case pattern[0] == '*':
			re.WriteString(".*")
		case pattern[0] == '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(pattern[:1]))
		}
		pattern = pattern[1:]
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(s)
}

// arnMatch matches a Resource pattern: "*" alone, or segment by segment
// (arn:partition:service:region:account:resource).
func arnMatch(pattern, arn string) bool {
	if pattern == "*" {
		return true
	}
	p, a := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(p) != 6 || len(a) != 6 {
		return false
	}
	for i := range p {
		if !glob(p[i], a[i]) {
			return false
		}
	}
	return true
}

// --- helpers --------------------------------------------------------------

func object(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want a mapping", what, v)
	}
	return m
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return []string{v}
	case bool:
		return []string{fmt.Sprint(v)}
	case []any:
		var out []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				t.Fatalf("list element %v is %T, want a string", e, e)
			}
			out = append(out, s)
		}
		return out
	}
	t.Fatalf("%v is %T, want a string or a list of strings", v, v)
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

// wholeMatch compiles a CloudFormation AllowedPattern, which must match the
// whole value.
func wholeMatch(t *testing.T, v any) *regexp.Regexp {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("AllowedPattern %v", v)
	}
	return regexp.MustCompile("^(?:" + s + ")$")
}

// TestLimitedNeverKubeNamespaces: even a customer who allows every namespace
// does not let the role edit kube-* namespaces, where edit rights come close
// to cluster admin, nor ask for a wildcard that could cover them.
func TestLimitedNeverKubeNamespaces(t *testing.T) {
	policy := deployWith(t, "LIMITED", []any{"*"}).policy
	for ns, want := range map[string]bool{
		"default":     true,
		"kukie-a":     true,
		"kubeflow":    true,
		"team-*":      true,
		"kube-system": false,
		"kube-public": false,
		"kube-*":      false,
		"*":           false,
		"k*":          false,
		"ku*e-system": false,
		"kube*":       false,
	} {
		ctx := map[string][]string{"eks:policyArn": {edit}, "eks:accessScope": {"namespace"}, "eks:namespaces": {"kukie-a", ns}}
		if got := allowed(t, policy, "eks:AssociateAccessPolicy", ownEntry, ctx); got != want {
			t.Errorf("Edit in %q with AllowedNamespaces=*: allowed = %v, want %v", ns, got, want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"kukie-*", "kukie-a", true},
		{"kukie-*", "kukie-", true},
		{"kukie-*", "kukie", false},
		{"a?c", "abc", true},
		{"${*}*", "*", true},
		{"${*}*", "*-x", true},
		{"${*}*", "x*", false},
		{"k${*}*", "k*", true},
		{"k${*}*", "ku", false},
		{"a.b", "axb", false},
	} {
		if got := glob(c.pattern, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}
