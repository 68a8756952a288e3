package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/k8stest"
	"github.com/kukie/gitops-server/service"
)

// TestCheckAccess: a SelfSubjectReview through the connection succeeds for
// any accepted user, and a token the cluster refuses is told apart from a
// cluster that does not answer.
func TestCheckAccess(t *testing.T) {
	r, clusters, _ := mustReader(t, 20*time.Second, kubeconfig(t, withArgo, k8stest.UserNobody), badTokenKubeconfig(t),
		k8stest.TokenKubeconfig("https://"+k8stest.ClosedAddr(t), "x"))
	ctx := context.Background()
	if err := r.CheckAccess(ctx, clusters[0]); err != nil {
		t.Errorf("a user without any rights is still authenticated: %v", err)
	}
	if err := r.CheckAccess(ctx, clusters[1]); service.ErrorReason(err) != "credentials_refused" || service.ErrorCode(err) != service.EFORBIDDEN {
		t.Errorf("refused token: %v", err)
	}
	if err := r.CheckAccess(ctx, clusters[2]); service.ErrorCode(err) != service.EUNAVAILABLE {
		t.Errorf("closed port: %v", err)
	}
}
