package awsfake_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
)

var (
	clusterAdmin = awsfake.PolicyARN("aws", awsfake.PolicyClusterAdmin)
	editPolicy   = awsfake.PolicyARN("aws", awsfake.PolicyEdit)
	viewPolicy   = awsfake.PolicyARN("aws", awsfake.PolicyView)
)

// eksFixture is a fake with one role of level and an ACTIVE cluster "prod"
// in the customer account, and an EKS client with the role's credentials.
func eksFixture(t *testing.T, level awsfake.Level, allowed ...string) (*awsfake.AWS, *eks.Client, string) {
	t.Helper()
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: level, AllowedNamespaces: allowed})
	arn := f.AddCluster(awsfake.Cluster{Region: "us-east-1", Account: customer, Name: "prod",
		Endpoint: "https://prod.example.test", CAData: "Q0EgUEVN", AuthenticationMode: awsfake.AuthModeAPI})
	return f, eksClient(f, assumed(f, roleARN, externalID)), arn
}

func TestEKSAccessLifecycle(t *testing.T) {
	f, client, clusterARN := eksFixture(t, awsfake.LevelFull)
	c := ctx(t)

	dc, err := client.DescribeCluster(c, &eks.DescribeClusterInput{Name: aws.String("prod")})
	if err != nil {
		t.Fatal(err)
	}
	cl := dc.Cluster
	if aws.ToString(cl.Name) != "prod" || aws.ToString(cl.Arn) != clusterARN || cl.Status != types.ClusterStatusActive ||
		aws.ToString(cl.Endpoint) != "https://prod.example.test" || aws.ToString(cl.CertificateAuthority.Data) != "Q0EgUEVN" ||
		cl.AccessConfig.AuthenticationMode != types.AuthenticationModeApi || cl.CreatedAt == nil {
		t.Errorf("cluster = %+v", cl)
	}

	created, err := client.CreateAccessEntry(c, &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(created.AccessEntry.PrincipalArn) != roleARN || aws.ToString(created.AccessEntry.Type) != "STANDARD" {
		t.Errorf("created entry = %+v", created.AccessEntry)
	}
	_, err = client.CreateAccessEntry(c, &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	var inUse *types.ResourceInUseException
	if !errors.As(err, &inUse) {
		t.Fatalf("second CreateAccessEntry: %v, want ResourceInUseException", err)
	}
	apiError(t, err, "ResourceInUseException", http.StatusConflict)

	de, err := client.DescribeAccessEntry(c, &eks.DescribeAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(de.AccessEntry.PrincipalArn) != roleARN || len(de.AccessEntry.KubernetesGroups) != 0 {
		t.Errorf("described entry = %+v", de.AccessEntry)
	}

	as, err := client.AssociateAccessPolicy(c, &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(clusterAdmin),
		AccessScope: &types.AccessScope{Type: types.AccessScopeTypeCluster}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(as.AssociatedAccessPolicy.PolicyArn) != clusterAdmin || as.AssociatedAccessPolicy.AccessScope.Type != types.AccessScopeTypeCluster {
		t.Errorf("associated = %+v", as.AssociatedAccessPolicy)
	}
	// An upsert: the same policy again keeps one association.
	if _, err := client.AssociateAccessPolicy(c, &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(clusterAdmin),
		AccessScope: &types.AccessScope{Type: types.AccessScopeTypeCluster}}); err != nil {
		t.Fatal(err)
	}

	list, err := client.ListAssociatedAccessPolicies(c, &eks.ListAssociatedAccessPoliciesInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.AssociatedAccessPolicies) != 1 || aws.ToString(list.AssociatedAccessPolicies[0].PolicyArn) != clusterAdmin ||
		aws.ToString(list.PrincipalArn) != roleARN || aws.ToString(list.ClusterName) != "prod" {
		t.Errorf("listed = %+v", list)
	}
	got := f.Associations(clusterARN, roleARN)
	if diff := cmp.Diff([]awsfake.Association{{PolicyARN: clusterAdmin, ScopeType: awsfake.ScopeCluster}}, got,
		cmpopts.IgnoreFields(awsfake.Association{}, "AssociatedAt", "ModifiedAt")); diff != "" {
		t.Errorf("Associations (-want +got):\n%s", diff)
	}

	if _, err := client.DisassociateAccessPolicy(c, &eks.DisassociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(clusterAdmin)}); err != nil {
		t.Fatal(err)
	}
	if got := f.Associations(clusterARN, roleARN); len(got) != 0 {
		t.Errorf("after disassociation: %+v", got)
	}
	_, err = client.DisassociateAccessPolicy(c, &eks.DisassociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(clusterAdmin)})
	apiError(t, err, "ResourceNotFoundException", http.StatusNotFound)

	if _, err := client.DeleteAccessEntry(c, &eks.DeleteAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)}); err != nil {
		t.Fatal(err)
	}
	_, err = client.DescribeAccessEntry(c, &eks.DescribeAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("DescribeAccessEntry after delete: %v, want ResourceNotFoundException", err)
	}
	if len(f.AccessEntries(clusterARN)) != 0 {
		t.Errorf("entries left: %+v", f.AccessEntries(clusterARN))
	}
	for op, want := range map[string]int{awsfake.OpCreateAccessEntry: 2, awsfake.OpAssociateAccessPolicy: 2, awsfake.OpDisassociateAccessPolicy: 2} {
		if n := f.CallsBy(op, roleARN); n != want {
			t.Errorf("%s calls by the role = %d, want %d", op, n, want)
		}
	}
}

func TestAssociateAccessPolicyConditions(t *testing.T) {
	type assoc struct {
		policy     string
		scope      types.AccessScopeType
		namespaces []string
	}
	cases := []struct {
		name   string
		level  awsfake.Level
		assoc  assoc
		code   string // "" when allowed
		status int
	}{
		{"FullClusterAdmin", awsfake.LevelFull, assoc{clusterAdmin, types.AccessScopeTypeCluster, nil}, "", 0},
		{"ErrFullClusterAdminNamespaced", awsfake.LevelFull, assoc{clusterAdmin, types.AccessScopeTypeNamespace, []string{"kukie-a"}}, "AccessDeniedException", 403},
		{"ErrFullEdit", awsfake.LevelFull, assoc{editPolicy, types.AccessScopeTypeCluster, nil}, "AccessDeniedException", 403},
		{"LimitedEditAllowed", awsfake.LevelLimited, assoc{editPolicy, types.AccessScopeTypeNamespace, []string{"kukie-a", "team-a"}}, "", 0},
		{"LimitedEditWildcardScope", awsfake.LevelLimited, assoc{editPolicy, types.AccessScopeTypeNamespace, []string{"kukie-*"}}, "", 0},
		{"ErrLimitedNamespaceOutside", awsfake.LevelLimited, assoc{editPolicy, types.AccessScopeTypeNamespace, []string{"kukie-a", "default"}}, "AccessDeniedException", 403},
		{"ErrLimitedClusterScope", awsfake.LevelLimited, assoc{editPolicy, types.AccessScopeTypeCluster, nil}, "AccessDeniedException", 403},
		{"ErrLimitedClusterAdmin", awsfake.LevelLimited, assoc{clusterAdmin, types.AccessScopeTypeCluster, nil}, "AccessDeniedException", 403},
		{"ErrLimitedView", awsfake.LevelLimited, assoc{viewPolicy, types.AccessScopeTypeNamespace, []string{"kukie-a"}}, "AccessDeniedException", 403},
		{"ErrLimitedNamespacesMissing", awsfake.LevelLimited, assoc{editPolicy, types.AccessScopeTypeNamespace, nil}, "InvalidParameterException", 400},
		{"ErrNoLevel", "", assoc{clusterAdmin, types.AccessScopeTypeCluster, nil}, "AccessDeniedException", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, client, clusterARN := eksFixture(t, tc.level, "kukie-*", "team-a")
			f.AddAccessEntry(clusterARN, awsfake.AccessEntry{PrincipalARN: roleARN})
			_, err := client.AssociateAccessPolicy(ctx(t), &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
				PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(tc.assoc.policy),
				AccessScope: &types.AccessScope{Type: tc.assoc.scope, Namespaces: tc.assoc.namespaces}})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			apiError(t, err, tc.code, tc.status)
		})
	}

	t.Run("ScopeReplaced", func(t *testing.T) {
		f, client, clusterARN := eksFixture(t, awsfake.LevelLimited, "kukie-*")
		f.AddAccessEntry(clusterARN, awsfake.AccessEntry{PrincipalARN: roleARN})
		for _, ns := range [][]string{{"kukie-a", "kukie-b"}, {"kukie-c"}} {
			if _, err := client.AssociateAccessPolicy(ctx(t), &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
				PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(editPolicy),
				AccessScope: &types.AccessScope{Type: types.AccessScopeTypeNamespace, Namespaces: ns}}); err != nil {
				t.Fatal(err)
			}
		}
		got := f.Associations(clusterARN, roleARN)
		if len(got) != 1 || !cmp.Equal(got[0].Namespaces, []string{"kukie-c"}) {
			t.Errorf("associations = %+v, want Edit on kukie-c only", got)
		}
	})

	t.Run("LimitedMayDisassociateClusterAdmin", func(t *testing.T) {
		// A downgrade from full: the limited role removes ClusterAdmin.
		f, client, clusterARN := eksFixture(t, awsfake.LevelLimited, "kukie-*")
		f.AddAccessEntry(clusterARN, awsfake.AccessEntry{PrincipalARN: roleARN,
			Policies: []awsfake.Association{{PolicyARN: clusterAdmin, ScopeType: awsfake.ScopeCluster}}})
		if _, err := client.DisassociateAccessPolicy(ctx(t), &eks.DisassociateAccessPolicyInput{ClusterName: aws.String("prod"),
			PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(clusterAdmin)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ErrDenied", func(t *testing.T) {
		f := awsfake.Start(t)
		f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: awsfake.LevelFull,
			Deny: []string{"eks:CreateAccessEntry"}})
		f.AddCluster(awsfake.Cluster{Region: "us-east-1", Account: customer, Name: "prod"})
		_, err := eksClient(f, assumed(f, roleARN, externalID)).CreateAccessEntry(ctx(t), &eks.CreateAccessEntryInput{
			ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
		apiError(t, err, "AccessDeniedException", http.StatusForbidden)
	})
}

func TestCreateAccessEntryErrors(t *testing.T) {
	f, client, _ := eksFixture(t, awsfake.LevelFull)
	f.AddCluster(awsfake.Cluster{Region: "us-east-1", Account: customer, Name: "legacy", AuthenticationMode: awsfake.AuthModeConfigMap})
	f.AddCluster(awsfake.Cluster{Region: "eu-west-1", Account: customer, Name: "dublin"})
	f.AddCluster(awsfake.Cluster{Region: "us-east-1", Account: "444455556666", Name: "theirs"})
	cases := []struct {
		name, cluster, principal, code string
		status                         int
	}{
		{"ErrSessionARN", "prod", "arn:aws:sts::" + customer + ":assumed-role/KukieAccess/kukie-test", "InvalidParameterException", 400},
		{"ErrUnknownRole", "prod", "arn:aws:iam::" + customer + ":role/NotYetPropagated", "InvalidParameterException", 400},
		{"ErrConfigMapMode", "legacy", roleARN, "InvalidRequestException", 400},
		{"ErrNoSuchCluster", "nope", roleARN, "ResourceNotFoundException", 404},
		{"ErrOtherRegion", "dublin", roleARN, "ResourceNotFoundException", 404},
		{"ErrOtherAccount", "theirs", roleARN, "ResourceNotFoundException", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.CreateAccessEntry(ctx(t), &eks.CreateAccessEntryInput{ClusterName: aws.String(tc.cluster), PrincipalArn: aws.String(tc.principal)})
			apiError(t, err, tc.code, tc.status)
		})
	}
}

func TestForeignAccessEntry(t *testing.T) {
	f, client, clusterARN := eksFixture(t, awsfake.LevelLimited, "kukie-*")
	f.AddAccessEntry(clusterARN, awsfake.AccessEntry{PrincipalARN: roleARN, KubernetesGroups: []string{"ops"},
		Policies: []awsfake.Association{{PolicyARN: viewPolicy, ScopeType: awsfake.ScopeCluster}}})
	de, err := client.DescribeAccessEntry(ctx(t), &eks.DescribeAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(de.AccessEntry.KubernetesGroups, []string{"ops"}) || aws.ToString(de.AccessEntry.Type) != "STANDARD" {
		t.Errorf("entry = %+v", de.AccessEntry)
	}
	list, err := client.ListAssociatedAccessPolicies(ctx(t), &eks.ListAssociatedAccessPoliciesInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.AssociatedAccessPolicies) != 1 || aws.ToString(list.AssociatedAccessPolicies[0].PolicyArn) != viewPolicy {
		t.Errorf("policies = %+v", list.AssociatedAccessPolicies)
	}
	_, err = client.CreateAccessEntry(ctx(t), &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)})
	apiError(t, err, "ResourceInUseException", http.StatusConflict)
}

func TestEKSFaults(t *testing.T) {
	t.Run("PropagationThenSuccess", func(t *testing.T) {
		f, client, clusterARN := eksFixture(t, awsfake.LevelFull)
		f.FailPropagation(2)
		in := &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)}
		for range 2 {
			_, err := client.CreateAccessEntry(ctx(t), in)
			var invalid *types.InvalidParameterException
			if !errors.As(err, &invalid) {
				t.Fatalf("CreateAccessEntry: %v, want InvalidParameterException", err)
			}
		}
		if _, err := client.CreateAccessEntry(ctx(t), in); err != nil {
			t.Fatalf("third CreateAccessEntry: %v", err)
		}
		if n := f.Calls(awsfake.OpCreateAccessEntry); n != 3 {
			t.Errorf("CreateAccessEntry calls = %d, want 3 (the SDK does not retry InvalidParameterException)", n)
		}
		if len(f.AccessEntries(clusterARN)) != 1 {
			t.Errorf("entries = %+v", f.AccessEntries(clusterARN))
		}
	})
	t.Run("ThrottlingIsRetryable", func(t *testing.T) {
		f, client, _ := eksFixture(t, awsfake.LevelFull)
		f.Fail(awsfake.OpDescribeCluster, awsfake.Always, "ThrottlingException", http.StatusTooManyRequests)
		_, err := client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")})
		apiError(t, err, "ThrottlingException", http.StatusTooManyRequests)
		var throttled *types.ThrottlingException
		var maxAttempts *retry.MaxAttemptsError
		if !errors.As(err, &throttled) || !errors.As(err, &maxAttempts) {
			t.Errorf("error %v: want a ThrottlingException the SDK retried", err)
		}
		if n := f.Calls(awsfake.OpDescribeCluster); n != 3 {
			t.Errorf("DescribeCluster calls = %d, want 3 (SDK attempts)", n)
		}
		f.ClearFaults()
		if _, err := client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ServerErrorForOnePrincipal", func(t *testing.T) {
		f, client, _ := eksFixture(t, awsfake.LevelFull)
		f.FailWith(awsfake.OpDescribeCluster, awsfake.Fault{Times: 1, Code: "ServerException", Status: 500, Principal: "arn:aws:iam::" + customer + ":role/Other"})
		f.FailWith(awsfake.OpDescribeCluster, awsfake.Fault{Times: 1, Code: "ServerException", Status: 500, Principal: roleARN})
		if _, err := client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")}); err != nil {
			t.Fatal(err)
		}
		if n := f.CallsBy(awsfake.OpDescribeCluster, roleARN); n != 2 {
			t.Errorf("DescribeCluster calls = %d, want 2 (one 500 retried)", n)
		}
	})
	t.Run("Latency", func(t *testing.T) {
		f, client, _ := eksFixture(t, awsfake.LevelFull)
		f.SetLatency(awsfake.OpDescribeCluster, time.Hour)
		c, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
		defer cancel()
		_, err := client.DescribeCluster(c, &eks.DescribeClusterInput{Name: aws.String("prod")})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("DescribeCluster: %v, want the deadline to pass", err)
		}
	})
}

func TestEKSAuthentication(t *testing.T) {
	f, _, _ := eksFixture(t, awsfake.LevelFull)
	creds, err := assumed(f, roleARN, externalID).Credentials.Retrieve(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name              string
		id, secret, token string
		code              string
	}{
		{"Assumed", creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken, ""},
		{"ErrTamperedSecret", creds.AccessKeyID, tamper(creds.SecretAccessKey), creds.SessionToken, "InvalidSignatureException"},
		{"ErrWrongSessionToken", creds.AccessKeyID, creds.SecretAccessKey, "other", "UnrecognizedClientException"},
		{"ErrUnknownKey", "ASIAUNKNOWN000000000", creds.SecretAccessKey, creds.SessionToken, "UnrecognizedClientException"},
		{"ErrBaseIdentity", f.BaseCredentials().AccessKeyID, f.BaseCredentials().SecretAccessKey, "", "AccessDeniedException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(f)
			cfg.Credentials = staticCreds(tc.id, tc.secret, tc.token)
			_, err := eksClient(f, cfg).DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			apiError(t, err, tc.code, http.StatusForbidden)
		})
	}
	t.Run("ErrWrongService", func(t *testing.T) {
		// A client signing for another service (an endpoint mix-up).
		cfg := baseConfig(f)
		cfg.Credentials = staticCreds(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
		client := eks.NewFromConfig(cfg, func(o *eks.Options) { o.BaseEndpoint = aws.String(f.STSURL()) })
		if _, err := client.DescribeCluster(ctx(t), &eks.DescribeClusterInput{Name: aws.String("prod")}); err == nil {
			t.Fatal("EKS request to the STS endpoint succeeded")
		}
	})
}
