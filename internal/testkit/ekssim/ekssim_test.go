package ekssim_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/ekssim"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

const (
	customer   = "111122223333"
	externalID = "kukie-team-0123456789abcdef"
	roleARN    = "arn:aws:iam::" + customer + ":role/kukie/KukieAccess"
)

// rbacWait is generous: RBAC follows access changes asynchronously, and the
// API server may cache a webhook answer for a few seconds.
const rbacWait = 30 * time.Second

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(rbacWait)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %s", what, err, rbacWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type env struct {
	f      *awsfake.AWS
	sim    *ekssim.Cluster
	eks    *eks.Client
	creds  aws.CredentialsProvider
	ctx    context.Context
	client func(t *testing.T) kubernetes.Interface
}

func start(t *testing.T, level awsfake.Level, allowed ...string) *env {
	k8stest.QuietClientGo()
	f := awsfake.Start(t)
	f.AddRole(awsfake.Role{ARN: roleARN, Trust: awsfake.Trust{ExternalID: externalID}, Level: level, AllowedNamespaces: allowed})
	sim := ekssim.Start(t, f, awsfake.Cluster{Region: "us-east-1", Account: customer, Name: "prod", AuthenticationMode: awsfake.AuthModeAPI}, k8stest.Options{})
	cfg := f.Config()
	creds := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg, f.STSOptions), roleARN,
		func(o *stscreds.AssumeRoleOptions) { o.ExternalID = aws.String(externalID) }))
	cfg.Credentials = creds
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &env{f: f, sim: sim, eks: eks.NewFromConfig(cfg, f.EKSOptions), creds: creds, ctx: ctx}
	// Each client gets a fresh token, so no answer cached for an older one
	// is reused.
	e.client = func(t *testing.T) kubernetes.Interface {
		t.Helper()
		return e.clientFor(t, "")
	}
	return e
}

// clientFor is a client of the cluster with a fresh token presigned for
// stsEndpoint (the standard host when empty).
func (e *env) clientFor(t *testing.T, stsEndpoint string) kubernetes.Interface {
	t.Helper()
	out, err := e.eks.DescribeCluster(e.ctx, &eks.DescribeClusterInput{Name: aws.String("prod")})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := base64.StdEncoding.DecodeString(aws.ToString(out.Cluster.CertificateAuthority.Data))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.f.TokenFor(e.ctx, e.creds, "prod", stsEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: aws.ToString(out.Cluster.Endpoint), BearerToken: tok,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// whoami is the user a SelfSubjectReview reports.
func whoami(ctx context.Context, cs kubernetes.Interface) (string, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// can asks the API server whether the token's user may do verb on resource
// in namespace.
func can(ctx context.Context, cs kubernetes.Interface, verb, resource, namespace string) (bool, error) {
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Resource: resource, Namespace: namespace}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

func expectCan(e *env, t *testing.T, want bool, verb, resource, namespace string) func() error {
	return func() error {
		got, err := can(e.ctx, e.client(t), verb, resource, namespace)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s %s in %q allowed=%v", verb, resource, namespace, got)
		}
		return nil
	}
}

func TestFullAccess(t *testing.T) {
	e := start(t, awsfake.LevelFull)

	if _, err := whoami(e.ctx, e.client(t)); !apierrors.IsUnauthorized(err) {
		t.Fatalf("without an access entry: %v, want 401", err)
	}
	if _, err := e.eks.CreateAccessEntry(e.ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "authenticated as the role", func() error {
		user, err := whoami(e.ctx, e.client(t))
		if err == nil && user != roleARN {
			return fmt.Errorf("user %q", user)
		}
		return err
	})
	// A token naming any other host than a standard STS one is refused,
	// however well signed: the fake's own endpoint (what
	// AWS_ENDPOINT_URL_STS names for the server's own calls) or a VPC
	// endpoint.
	for _, endpoint := range []string{e.f.STSURL(), "https://vpce-0123456789abcdef0-abcdefgh.sts.us-east-1.vpce.amazonaws.com"} {
		if _, err := whoami(e.ctx, e.clientFor(t, endpoint)); !apierrors.IsUnauthorized(err) {
			t.Errorf("token naming %s: %v, want 401", endpoint, err)
		}
	}
	if ok, err := can(e.ctx, e.client(t), "list", "secrets", ""); err != nil || ok {
		t.Fatalf("before association: allowed=%v %v", ok, err)
	}

	if _, err := e.eks.AssociateAccessPolicy(e.ctx, &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(awsfake.PolicyARN("aws", awsfake.PolicyClusterAdmin)),
		AccessScope: &types.AccessScope{Type: types.AccessScopeTypeCluster}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster admin", expectCan(e, t, true, "list", "secrets", ""))
	if _, err := e.eks.DisassociateAccessPolicy(e.ctx, &eks.DisassociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(awsfake.PolicyARN("aws", awsfake.PolicyClusterAdmin))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "admin removed", expectCan(e, t, false, "list", "secrets", ""))

	if _, err := e.eks.DeleteAccessEntry(e.ctx, &eks.DeleteAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "entry deleted", func() error {
		if _, err := whoami(e.ctx, e.client(t)); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("whoami: %v, want 401", err)
		}
		return nil
	})
	if e.sim.TokenReviews() == 0 {
		t.Error("the API server sent no TokenReview")
	}
	if err := e.sim.Err(); err != nil {
		t.Errorf("RBAC sync: %v", err)
	}
}

func TestLimitedAccess(t *testing.T) {
	e := start(t, awsfake.LevelLimited, "sandbox-*", "team-apps")
	if _, err := e.eks.CreateAccessEntry(e.ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(roleARN)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eks.AssociateAccessPolicy(e.ctx, &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(awsfake.PolicyARN("aws", awsfake.PolicyEdit)),
		AccessScope: &types.AccessScope{Type: types.AccessScopeTypeNamespace, Namespaces: []string{"sandbox-*"}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "edit in sandbox-plain", expectCan(e, t, true, "create", "configmaps", "sandbox-plain"))
	eventually(t, "edit in sandbox-helm", expectCan(e, t, true, "create", "configmaps", "sandbox-helm"))
	for _, ns := range []string{"argocd", "team-apps", "default"} {
		if ok, err := can(e.ctx, e.client(t), "get", "configmaps", ns); err != nil || ok {
			t.Errorf("get configmaps in %s: allowed=%v %v, want denied", ns, ok, err)
		}
	}
	if ok, err := can(e.ctx, e.client(t), "list", "namespaces", ""); err != nil || ok {
		t.Errorf("list namespaces: allowed=%v %v, want denied", ok, err)
	}

	// A namespace created later is covered by the pattern.
	admin, err := kubernetes.NewForConfig(e.sim.Kube.Config(k8stest.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sandbox-late"}}
	if _, err := admin.CoreV1().Namespaces().Create(e.ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "edit in a new sandbox namespace", expectCan(e, t, true, "create", "configmaps", ns.Name))

	// Narrowing the scope removes the other namespaces' bindings.
	if _, err := e.eks.AssociateAccessPolicy(e.ctx, &eks.AssociateAccessPolicyInput{ClusterName: aws.String("prod"),
		PrincipalArn: aws.String(roleARN), PolicyArn: aws.String(awsfake.PolicyARN("aws", awsfake.PolicyEdit)),
		AccessScope: &types.AccessScope{Type: types.AccessScopeTypeNamespace, Namespaces: []string{"team-apps"}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "edit moved to team-apps", expectCan(e, t, true, "create", "configmaps", "team-apps"))
	eventually(t, "edit gone from sandbox-plain", expectCan(e, t, false, "create", "configmaps", "sandbox-plain"))
}
