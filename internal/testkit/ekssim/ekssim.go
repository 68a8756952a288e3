// Package ekssim turns a real kube-apiserver (internal/k8stest) into an EKS
// cluster of an awsfake.AWS: the API server authenticates bearer tokens
// through a TokenReview webhook that accepts an EKS token only when
// awsfake's VerifyToken accepts it for this cluster and the role has an
// access entry here (the user is the role ARN), and the cluster's access
// policy associations are materialised as real RBAC, eventually, as EKS does.
package ekssim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

// ManagedLabel marks the RBAC bindings the simulation owns.
const ManagedLabel = "ekssim.kukie.dev/managed"

// ResyncInterval is how often RBAC is re-derived even without an access
// change, so namespaces created later are covered by namespace scopes.
const ResyncInterval = time.Second

// policyRoles maps an EKS access policy to the ClusterRoles it stands for.
var policyRoles = map[string][]string{
	awsfake.PolicyClusterAdmin: {"cluster-admin"},
	awsfake.PolicyAdmin:        {"admin"},
	awsfake.PolicyEdit:         {"system:aggregate-to-edit", "system:aggregate-to-view"},
	awsfake.PolicyView:         {"view"},
}

// Cluster is a running simulated EKS cluster.
type Cluster struct {
	// ARN is the cluster's ARN in the fake.
	ARN string
	// Kube is the API server, with k8stest's certificate users (UserAdmin
	// bypasses EKS access entirely).
	Kube *k8stest.Cluster

	f     *awsfake.AWS
	admin kubernetes.Interface
	kick  chan struct{}

	mu      sync.Mutex
	served  []served // the EKS clusters this API server stands for, ARN's first
	lastErr error
	reviews int
}

// served is one EKS cluster of the fake that the API server stands for.
type served struct {
	arn, name string
}

// Start runs a kube-apiserver for cluster c of f and registers it in f
// (AddCluster with the server's endpoint and CA), until the test ends. A
// test that cannot get the API server fails saying how to build it.
func Start(tb testing.TB, f *awsfake.AWS, c awsfake.Cluster, opts k8stest.Options) *Cluster {
	tb.Helper()
	sim, stop, err := New(f, c, opts)
	if err != nil {
		tb.Fatalf("ekssim: %v", err)
	}
	tb.Cleanup(stop)
	return sim
}

// New is Start outside a test: the API server and its token webhook run
// until stop (the development sandbox's EKS clusters, cmd/kukie-sandbox).
func New(f *awsfake.AWS, c awsfake.Cluster, opts k8stest.Options) (sim *Cluster, stop func(), err error) {
	sim = &Cluster{f: f, kick: make(chan struct{}, 1)}
	webhook := httptest.NewServer(http.HandlerFunc(sim.serveTokenReview))
	opts.TokenWebhookURL = webhook.URL
	kube, err := k8stest.Start(opts)
	if err != nil {
		webhook.Close()
		return nil, nil, err
	}
	sim.Kube = kube
	if sim.admin, err = kubernetes.NewForConfig(kube.Config(k8stest.UserAdmin)); err != nil {
		_ = kube.Stop()
		webhook.Close()
		return nil, nil, err
	}
	sim.ARN = sim.Serve(c)
	f.OnAccessChange(func(arn string) {
		if sim.serves(arn) {
			sim.trigger()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go sim.run(ctx, done)
	sim.trigger()
	return sim, func() {
		cancel()
		<-done
		_ = kube.Stop()
		webhook.Close()
	}, nil
}

// Serve makes the API server also stand for cluster c of the fake (in
// another account, say) and returns its ARN: tests that need many EKS
// clusters, one per customer account, share one API server. Each cluster's
// access entries authenticate its own tokens and become RBAC here; the
// bindings are per principal, so accounts with different roles do not
// see each other's access.
func (c *Cluster) Serve(ec awsfake.Cluster) string {
	ec.Endpoint = c.Kube.Host()
	ec.CAData = base64.StdEncoding.EncodeToString(c.Kube.Config(k8stest.UserAdmin).CAData)
	arn := c.f.AddCluster(ec)
	c.mu.Lock()
	c.served = append(c.served, served{arn: arn, name: ec.Name})
	c.mu.Unlock()
	c.trigger()
	return arn
}

func (c *Cluster) serves(arn string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.served {
		if s.arn == arn {
			return true
		}
	}
	return false
}

func (c *Cluster) servedClusters() []served {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]served(nil), c.served...)
}

// Config is a client configuration for the cluster with a bearer token (an
// EKS token), trusting the cluster's CA.
func (c *Cluster) Config(token string) *rest.Config {
	admin := c.Kube.Config(k8stest.UserAdmin)
	return &rest.Config{Host: admin.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
}

// Err is the last RBAC synchronisation error, nil once a sync succeeds.
func (c *Cluster) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// TokenReviews is how many TokenReviews the API server has sent.
func (c *Cluster) TokenReviews() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reviews
}

func (c *Cluster) trigger() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// run synchronises RBAC on every access change and every ResyncInterval.
func (c *Cluster) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(ResyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-tick.C:
		}
		err := c.Sync(ctx)
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
	}
}

// serveTokenReview is the API server's authentication webhook.
func (c *Cluster) serveTokenReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.TokenReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.reviews++
	c.mu.Unlock()
	review.Status = c.review(review.Spec)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// review authenticates a token of any cluster the server stands for whose
// access entries hold the token's role.
func (c *Cluster) review(spec authenticationv1.TokenReviewSpec) authenticationv1.TokenReviewStatus {
	status := authenticationv1.TokenReviewStatus{Audiences: spec.Audiences}
	for _, s := range c.servedClusters() {
		caller, err := c.f.VerifyToken(spec.Token, s.name)
		entry, ok := c.f.AccessEntry(s.arn, caller.PrincipalARN)
		switch {
		case err != nil:
			status.Error = err.Error()
			continue
		case !ok:
			status.Error = "no access entry for " + caller.PrincipalARN + " on " + s.arn
			continue
		}
		status.Error = ""
		status.Authenticated = true
		status.User = authenticationv1.UserInfo{
			Username: caller.PrincipalARN,
			UID:      "aws-iam-authenticator:" + caller.Account + ":" + caller.AccessKeyID,
			Groups:   entry.KubernetesGroups,
			Extra: map[string]authenticationv1.ExtraValue{
				"arn":         {caller.ARN},
				"accessKeyId": {caller.AccessKeyID},
			},
		}
		return status
	}
	return status
}

// binding is one RBAC binding the access entries call for.
type binding struct {
	namespace, name, role, user string
}

// desired derives the bindings from the cluster's access entries: a
// cluster-scoped association binds its ClusterRoles cluster-wide, a
// namespace-scoped one in each existing namespace matching a scope pattern.
func (c *Cluster) desired(namespaces []string) map[binding]bool {
	want := map[binding]bool{}
	var entries []awsfake.AccessEntry
	for _, s := range c.servedClusters() {
		entries = append(entries, c.f.AccessEntries(s.arn)...)
	}
	for _, e := range entries {
		for _, p := range e.Policies {
			policy := p.PolicyARN[strings.LastIndex(p.PolicyARN, "/")+1:]
			for _, role := range policyRoles[policy] {
				name := bindingName(e.PrincipalARN, policy, role)
				if p.ScopeType == awsfake.ScopeCluster {
					want[binding{name: name, role: role, user: e.PrincipalARN}] = true
					continue
				}
				for _, ns := range namespaces {
					for _, pattern := range p.Namespaces {
						if awsfake.StringLike(pattern, ns) {
							want[binding{namespace: ns, name: name, role: role, user: e.PrincipalARN}] = true
						}
					}
				}
			}
		}
	}
	return want
}

// bindingName is stable per (principal, policy, role).
func bindingName(principal, policy, role string) string {
	sum := sha256.Sum256([]byte(principal))
	return fmt.Sprintf("ekssim-%s-%s-%s", hex.EncodeToString(sum[:6]), strings.ToLower(policy),
		strings.NewReplacer(":", "-").Replace(role))
}

// Sync makes the cluster's RBAC match its access entries now.
func (c *Cluster) Sync(ctx context.Context) error {
	nsList, err := c.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var namespaces []string
	for _, ns := range nsList.Items {
		if ns.DeletionTimestamp == nil {
			namespaces = append(namespaces, ns.Name)
		}
	}
	want := c.desired(namespaces)
	have := map[binding]bool{}
	selector := metav1.ListOptions{LabelSelector: ManagedLabel + "=true"}
	rbac := c.admin.RbacV1()

	crbs, err := rbac.ClusterRoleBindings().List(ctx, selector)
	if err != nil {
		return err
	}
	for _, b := range crbs.Items {
		k := binding{name: b.Name, role: b.RoleRef.Name, user: subjectUser(b.Subjects)}
		if !want[k] {
			if err := rbac.ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		have[k] = true
	}
	rbs, err := rbac.RoleBindings("").List(ctx, selector)
	if err != nil {
		return err
	}
	for _, b := range rbs.Items {
		k := binding{namespace: b.Namespace, name: b.Name, role: b.RoleRef.Name, user: subjectUser(b.Subjects)}
		if !want[k] {
			if err := rbac.RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		have[k] = true
	}

	for k := range want {
		if have[k] {
			continue
		}
		meta := metav1.ObjectMeta{Name: k.name, Namespace: k.namespace, Labels: map[string]string{ManagedLabel: "true"}}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: k.role}
		subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: k.user}}
		if k.namespace == "" {
			_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		} else {
			_, err = rbac.RoleBindings(k.namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func subjectUser(subjects []rbacv1.Subject) string {
	if len(subjects) != 1 {
		return ""
	}
	return subjects[0].Name
}
