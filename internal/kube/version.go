package kube

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/kukie/gitops-server/service"
)

// ReasonDiscoveryForbidden: the cluster refused Kukie's connection its
// version or its API discovery (open to every authenticated user unless a
// cluster's RBAC was changed).
const ReasonDiscoveryForbidden = service.ReasonForbidden

// versionTTL is how long ClusterVersion keeps a cluster's version. When it
// runs out, the cached discovery is read afresh too, so an upgrade or a CRD
// installed since shows in the answer within this time.
const versionTTL = 10 * time.Minute

// versionCache is a cluster connection's server version and when it was read.
type versionCache struct {
	mu      sync.Mutex // held while reading, so concurrent callers make one request
	version string
	at      time.Time // zero until the first successful read
}

// ClusterVersion returns the cluster's server version as it reports it
// (GitVersion, such as "v1.37.2"; a locally built API server may report a
// version that is not semver, which the caller handles) and its API versions
// as Helm's Capabilities.APIVersions takes them, sorted and deduplicated.
// The version is kept for 10 minutes by the reader's clock; the API versions
// come from the discovery the RESTMapper caches, read afresh whenever the
// version is, so a warm call makes no request. Failures are service errors
// whose reason is cluster_unreachable, cluster_unauthorized or forbidden.
func (r *Reader) ClusterVersion(ctx context.Context, c service.Cluster) (version string, apiVersions []string, err error) {
	cs, err := r.clientsFor(ctx, c)
	if err != nil {
		return "", nil, service.WrapError(service.EINTERNAL, "The cluster connection could not be set up.", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	if version, err = cs.serverVersion(ctx, r.opts.Now); err != nil {
		return "", nil, discoveryError(c, err)
	}
	_, lists, err := discovery.ServerGroupsAndResourcesWithContext(ctx, cs.cached)
	// Some group versions failing (an aggregated API down) still leaves the
	// others, as Argo CD accepts too.
	if err != nil && (!discovery.IsGroupDiscoveryFailedError(err) || len(lists) == 0) {
		return "", nil, discoveryError(c, err)
	}
	return version, helmAPIVersions(lists), nil
}

// serverVersion returns the cached version, or reads it when older than
// versionTTL and then resets the cached discovery, so both are as fresh.
func (cs *clientSet) serverVersion(ctx context.Context, now func() time.Time) (string, error) {
	vc := &cs.version
	vc.mu.Lock()
	defer vc.mu.Unlock()
	t := now()
	if !vc.at.IsZero() && t.Sub(vc.at) < versionTTL {
		return vc.version, nil
	}
	info, err := discovery.ToDiscoveryInterfaceWithContext(cs.disc).ServerVersionWithContext(ctx)
	if err != nil {
		return "", err
	}
	cs.mapper.Reset() // no request: the next discovery read fetches
	vc.version, vc.at = info.GitVersion, t
	return vc.version, nil
}

// helmAPIVersions turns discovery into the strings Argo CD passes to Helm:
// "group/version" and "group/version/Kind" for each resource that can be
// listed and watched, in every served group version (not only the
// preferred one). Upstream: argoproj/argo-cd util/argo/argo.go
// APIResourcesToStrings(resources, true), fed by gitops-engine
// pkg/cache/cluster.go (sync: GetAPIResources(config, false, ...)) and
// pkg/utils/kube/ctl.go filterAPIResources (ServerGroupsAndResources, list
// and watch verbs). A group version with no such resource (say
// authorization.k8s.io/v1) and subresource kinds (Scale) are left out, as
// there.
func helmAPIVersions(lists []*metav1.APIResourceList) []string {
	set := map[string]struct{}{}
	for _, l := range lists {
		for _, res := range l.APIResources {
			if !hasVerb(res, "list") || !hasVerb(res, "watch") {
				continue
			}
			set[l.GroupVersion] = struct{}{}
			set[l.GroupVersion+"/"+res.Kind] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func hasVerb(res metav1.APIResource, verb string) bool {
	return slices.ContainsFunc(res.Verbs, func(v string) bool { return strings.EqualFold(v, verb) })
}

// discoveryError classifies a failed version or discovery read.
func discoveryError(c service.Cluster, err error) error {
	if se := connectionError(c, err); se != nil {
		return se
	}
	if apierrors.IsForbidden(err) {
		return reasonError(service.EFORBIDDEN, ReasonDiscoveryForbidden,
			"Kukie's role may not read the cluster's version or API discovery.", err)
	}
	return service.WrapError(service.EINTERNAL, "Reading the cluster's version and API discovery failed.", err)
}
