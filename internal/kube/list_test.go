package kube_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/service"
)

// pageCounter counts the pages a reader fetches, and with expire set
// answers the first continued page that many times with 410 Gone, as the
// API server does when etcd compacted past the list's revision.
type pageCounter struct {
	pages, continued atomic.Int64
	expire           atomic.Int64
}

func (p *pageCounter) wrap(next kube.PageFetcher) kube.PageFetcher {
	return func(ctx context.Context, namespace, token string) (io.ReadCloser, error) {
		p.pages.Add(1)
		if token != "" {
			p.continued.Add(1)
			if p.expire.Add(-1) >= 0 {
				return nil, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
			}
		}
		return next(ctx, namespace, token)
	}
}

// mustPagedReader is mustReader listing pageSize apps per page, through a
// pageCounter.
func mustPagedReader(t *testing.T, user string, pageSize int) (*kube.Reader, service.Cluster, *counter, *pageCounter) {
	t.Helper()
	r, clusters, obs := mustReader(t, 20*time.Second, kubeconfig(t, withArgo, user))
	kube.SetPageSize(r, pageSize)
	pc := &pageCounter{}
	kube.WrapPages(r, pc.wrap)
	return r, clusters[0], obs, pc
}

func byID(apps []service.Application) []service.Application {
	out := slices.Clone(apps)
	slices.SortFunc(out, func(a, b service.Application) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// A list read in pages of 5 holds exactly what one page holds, and the
// observer still sees one list.
func TestListPages(t *testing.T) {
	whole, wholeCluster, _, wholePages := mustPagedReader(t, k8stest.UserAdmin, 500)
	want, err := whole.ListApplications(context.Background(), wholeCluster)
	if err != nil {
		t.Fatal(err)
	}
	if wholePages.pages.Load() != 1 {
		t.Errorf("%d pages for 12 apps at 500 a page, want 1", wholePages.pages.Load())
	}
	for _, c := range []struct {
		user      string
		pages     int64
		namespace string
	}{{k8stest.UserAdmin, 3, ""}, {k8stest.UserArgoCDReader, 1 + 3, "argocd"}} {
		t.Run(c.user, func(t *testing.T) {
			r, cluster, obs, pc := mustPagedReader(t, c.user, 5)
			got, err := r.ListApplications(context.Background(), cluster)
			if err != nil {
				t.Fatal(err)
			}
			if pc.pages.Load() != c.pages || got.OnlyNamespace != c.namespace {
				t.Errorf("%d pages, only namespace %q; want %d, %q", pc.pages.Load(), got.OnlyNamespace, c.pages, c.namespace)
			}
			wantApps := want.Apps
			if c.namespace != "" {
				wantApps = slices.DeleteFunc(slices.Clone(wantApps), func(a service.Application) bool { return a.Namespace != c.namespace })
			}
			if d := cmp.Diff(byID(wantApps), byID(got.Apps)); d != "" {
				t.Errorf("paged list differs from one page (-want +got):\n%s", d)
			}
			if obs.ok.Load() != 1 || obs.failed.Load() != 0 {
				t.Errorf("observed %d ok and %d failed lists, want one ok", obs.ok.Load(), obs.failed.Load())
			}
		})
	}
}

// A continue token that expires mid-list starts the list again once; a
// second expiry fails the read.
func TestListRestartsWhenContinueExpires(t *testing.T) {
	t.Run("Once", func(t *testing.T) {
		r, cluster, obs, pc := mustPagedReader(t, k8stest.UserAdmin, 5)
		pc.expire.Store(1)
		read, err := r.ListApplications(context.Background(), cluster)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		for _, a := range read.Apps {
			ids[a.ID]++
		}
		if len(read.Apps) != 12 || len(ids) != 12 {
			t.Errorf("%d apps (%d distinct) after a restart, want 12 once each", len(read.Apps), len(ids))
		}
		// first page, expired second, then the three pages again
		if pc.pages.Load() != 5 || obs.ok.Load() != 1 {
			t.Errorf("%d pages, %d ok lists observed; want 5 and 1", pc.pages.Load(), obs.ok.Load())
		}
	})
	t.Run("Twice", func(t *testing.T) {
		r, cluster, obs, pc := mustPagedReader(t, k8stest.UserAdmin, 5)
		pc.expire.Store(2)
		_, err := r.ListApplications(context.Background(), cluster)
		if service.ErrorCode(err) != service.EINTERNAL || !apierrors.IsResourceExpired(err) {
			t.Errorf("err = %v (code %q), want an internal error wrapping 410 Expired", err, service.ErrorCode(err))
		}
		if obs.failed.Load() != 1 {
			t.Errorf("%d failed lists observed, want 1", obs.failed.Load())
		}
	})
}
