package ownership

import (
	"context"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

type failingReview struct{}

func (failingReview) Review(context.Context, service.Cluster, service.AccessQuestion) (service.AccessAnswer, error) {
	return service.AccessAnswer{}, service.ReasonError(service.EUPSTREAM, service.ReasonClusterUnreachable, "down")
}

// A review that cannot be made is allowed null with the reason; a target
// whose kind did not resolve is not asked about.
func TestTargetAccessReviewFails(t *testing.T) {
	d := &Detector{Access: failingReview{}}
	c := service.Cluster{AccessLevel: service.AccessLimited, Namespaces: []string{"shop"}}
	read := []target{
		{ref: service.ResourceRef{Tool: "patch_resource"}, info: service.ObjectInfo{Group: "apps", Kind: "Deployment", Resource: "deployments",
			Namespace: "shop", Name: "web", Namespaced: true, Found: true}},
		{ref: service.ResourceRef{Kind: "frobnicator"}},
	}
	got := d.targetAccess(context.Background(), c, read, "ko")
	if len(got) != 1 || got[0].Allowed != nil || got[0].Verb != "patch" || !strings.Contains(got[0].Reason, "cluster_unreachable") {
		t.Errorf("access = %+v", got)
	}
	if got := d.targetAccess(context.Background(), service.Cluster{AccessLevel: service.AccessFull}, read, "ko"); got != nil {
		t.Errorf("FULL cluster: %+v", got)
	}
}
