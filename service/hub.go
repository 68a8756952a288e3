package service

import (
	"context"
	"slices"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// ArgoCDClusterRef is a cluster an Argo CD instance deploys to, as its
// cluster secret (label argocd.argoproj.io/secret-type: cluster) names
// it: the name and server only. The secret's config (bearer tokens, role
// ARNs) is never decoded, kept, logged or returned.
type ArgoCDClusterRef struct {
	Name   string
	Server string
}

// ClusterSecretReader lists the cluster secrets in a cluster's Argo CD
// namespace, decoding name and server only.
type ClusterSecretReader interface {
	ClusterSecrets(ctx context.Context, c Cluster) ([]ArgoCDClusterRef, error)
}

// Argo CD's names for the cluster it runs in (upstream
// pkg/apis/application/v1alpha1: KubernetesInternalAPIServerAddr and the
// in-cluster secret-less destination name).
const (
	InClusterServer = "https://kubernetes.default.svc"
	InClusterName   = "in-cluster"
)

// NormalizeServer is an API server address as destinations are compared:
// lower case, no trailing "/", no ":443" after an https host.
func NormalizeServer(s string) string {
	s = strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), "/")
	if strings.HasPrefix(s, "https://") {
		s = strings.TrimSuffix(s, ":443")
	}
	return s
}

// DestinationServer is the API server an app of hub deploys to, as far as
// it can be told: its destination's server, the server of the hub's
// cluster secret its destination names, or the hub's own address for Argo
// CD's in-cluster names. "" when unknown (a name no secret has).
func DestinationServer(hub Cluster, d AppDestination, secrets []ArgoCDClusterRef) string {
	server := d.Server
	if server == "" && d.Name != "" {
		for _, s := range secrets {
			if s.Name == d.Name {
				server = s.Server
				break
			}
		}
		if server == "" && d.Name == InClusterName {
			server = InClusterServer
		}
	}
	if NormalizeServer(server) == InClusterServer {
		server = hub.Endpoint
	}
	return NormalizeServer(server)
}

// NeedsSecrets reports whether telling an app's destination needs the
// hub's cluster secrets: it names a cluster and gives no server.
func NeedsSecrets(d AppDestination) bool { return d.Server == "" && d.Name != "" }

// ClusterSecretCache keeps each cluster's Argo CD cluster secrets (names
// and servers only) for the snapshot window, so detection and the app
// list read them at most once per window; concurrent misses share one
// read, and a failed read is remembered for the failure window.
type ClusterSecretCache struct {
	reader  ClusterSecretReader
	now     func() time.Time
	entries *lru.Cache[string, secretsEntry]
	flight  singleflight.Group

	TTL        time.Duration // a good read serves this long (SnapshotTTL)
	FailureTTL time.Duration // a failed one (SnapshotFailureTTL)
}

// SecretsRead is one read of a cluster's secrets: the refs, or why not.
type SecretsRead struct {
	Refs []ArgoCDClusterRef
	Err  error
}

type secretsEntry struct {
	SecretsRead
	at time.Time
}

// NewClusterSecretCache returns a cache of at most maxClusters clusters' secrets.
func NewClusterSecretCache(reader ClusterSecretReader, maxClusters int, now func() time.Time) (*ClusterSecretCache, error) {
	entries, err := lru.New[string, secretsEntry](maxClusters)
	if err != nil {
		return nil, err
	}
	return &ClusterSecretCache{reader: reader, now: now, entries: entries, TTL: SnapshotTTL, FailureTTL: SnapshotFailureTTL}, nil
}

// Warm returns the cluster's cached read when it is still in its window:
// no cluster call.
func (c *ClusterSecretCache) Warm(cl Cluster) (SecretsRead, bool) {
	e, ok := c.entries.Get(cl.Key())
	if !ok {
		return SecretsRead{}, false
	}
	ttl := c.TTL
	if e.Err != nil {
		ttl = c.FailureTTL
	}
	if c.now().Sub(e.at) >= ttl {
		return SecretsRead{}, false
	}
	return e.SecretsRead, true
}

// Get returns the cluster's secrets, reading them when the cached read is
// out of its window.
func (c *ClusterSecretCache) Get(ctx context.Context, cl Cluster) SecretsRead {
	if r, ok := c.Warm(cl); ok {
		return r
	}
	ch := c.flight.DoChan(cl.Key(), func() (any, error) {
		if r, ok := c.Warm(cl); ok {
			return r, nil
		}
		// The read outlives a caller that gives up, as snapshot reads do.
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SnapshotReadTimeout)
		defer cancel()
		at := c.now()
		refs, err := c.reader.ClusterSecrets(readCtx, cl)
		r := SecretsRead{Refs: refs, Err: err}
		c.entries.Add(cl.Key(), secretsEntry{SecretsRead: r, at: at})
		return r, nil
	})
	select {
	case res := <-ch:
		return res.Val.(SecretsRead)
	case <-ctx.Done():
		return SecretsRead{Err: ctx.Err()}
	}
}

// destinationMemo is a snapshot's destinations as worked out for a hub
// at one address.
type destinationMemo struct {
	endpoint string
	ids      map[int]string
}

// destinations maps the apps of a hub's snapshot that deploy to another of
// the team's clusters to its id, matching the destination's server (or
// the server of the cluster secret it names) to the clusters' addresses.
// It is worked out once per snapshot, so the team's clusters are listed
// at most once per snapshot window, not on every app list; a cluster
// registered meanwhile shows from the next snapshot. A hub whose apps all
// deploy in-cluster costs no lookup.
func (s *ArgoCD) destinations(ctx context.Context, hub Cluster, snap *Snapshot) map[int]string {
	if m := snap.destinations.Load(); m != nil && m.endpoint == hub.Endpoint {
		return m.ids
	}
	ids, ok := s.findDestinations(ctx, hub, snap)
	if ok {
		snap.destinations.Store(&destinationMemo{endpoint: hub.Endpoint, ids: ids})
	}
	return ids
}

// findDestinations works the mapping out; ok is false when the team's
// clusters or the hub's cluster secrets could not be read (the mapping is
// then worked out again on the next list).
func (s *ArgoCD) findDestinations(ctx context.Context, hub Cluster, snap *Snapshot) (map[int]string, bool) {
	remote := false
	for _, a := range snap.Apps() {
		remote = remote || DestinationServer(hub, a.Destination, nil) != NormalizeServer(hub.Endpoint)
	}
	if !remote {
		return nil, true
	}
	clusters, err := s.Clusters.ListClusters(ctx, hub.TeamID)
	if err != nil {
		return nil, false
	}
	byServer := map[string]string{}
	for _, c := range clusters {
		if server := NormalizeServer(c.Endpoint); c.ID != hub.ID && server != "" && server != NormalizeServer(hub.Endpoint) {
			if _, taken := byServer[server]; !taken {
				byServer[server] = c.ID
			}
		}
	}
	if len(byServer) == 0 {
		return nil, true
	}
	var secrets []ArgoCDClusterRef
	complete := true // false when the hub's cluster secrets could not be read
	out := map[int]string{}
	for i, a := range snap.Apps() {
		if NeedsSecrets(a.Destination) && secrets == nil && s.Secrets != nil {
			read := s.Secrets.Get(ctx, hub)
			secrets, complete = read.Refs, read.Err == nil
			if secrets == nil {
				secrets = []ArgoCDClusterRef{}
			}
		}
		if id, ok := byServer[DestinationServer(hub, a.Destination, secrets)]; ok {
			out[i] = id
		}
	}
	return out, complete
}

// WithDestinations returns the apps with destination.cluster_id set as the
// mapping says (copies: the snapshot's apps are shared).
func WithDestinations(apps []Application, ids map[int]string) []Application {
	out := slices.Clone(apps)
	for i, id := range ids {
		out[i].Destination.ClusterID = id
	}
	return out
}
