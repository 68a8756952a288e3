package ownership

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// maxColdHubReads bounds the cluster reads one detection spends on hubs
// whose Applications (or cluster secrets) are not cached: warm hubs cost
// none, the rest stay unchecked and the answer says so.
const maxColdHubReads = 2

// hubs finds, within one detection, the Application a tracking annotation
// names in the team's other Argo CD clusters (hub-and-spoke: Argo CD runs
// in a hub and deploys to this cluster). Each hub is read at most once per
// detection.
type hubs struct {
	d      *Detector
	spoke  service.Cluster
	server string // the spoke's API server, normalised
	listed bool
	list   []*hub
	cold   int // cold reads spent
}

// hub is one candidate cluster and what this detection read of it.
type hub struct {
	c       service.Cluster
	snap    *service.Snapshot
	secrets *service.SecretsRead
	// unchecked is set when a read it needed was left out (cold budget
	// spent); charged when it took one of the cold reads.
	unchecked, charged bool
}

// hubMatch is an app of a hub that deploys to the spoke.
type hubMatch struct {
	hub      *hub
	app      service.Application
	settings service.ArgoCDSettings
}

func (d *Detector) newHubs(spoke service.Cluster) *hubs {
	return &hubs{d: d, spoke: spoke, server: service.NormalizeServer(spoke.Endpoint)}
}

// candidates lists the team's other clusters whose Applications Kukie may
// read: FULL and with access in place. Warm ones come first, then those
// whose last read showed apps deploying elsewhere (likely hubs), then
// those never read, and last those whose last read failed or found no
// Argo CD.
func (h *hubs) candidates(ctx context.Context) []*hub {
	if h.listed {
		return h.list
	}
	h.listed = true
	if h.d.Clusters == nil || h.server == "" {
		return nil
	}
	clusters, err := h.d.Clusters.ListClusters(ctx, h.spoke.TeamID)
	if err != nil {
		if h.d.Log != nil {
			h.d.Log.WarnContext(ctx, "hub lookup could not list the team's clusters", "err", err)
		}
		return nil
	}
	rank := map[*hub]int{}
	for _, c := range clusters {
		// The same cluster registered again (another level or user) is not
		// a hub: its Applications are this cluster's, read as allowed here.
		if c.ID != h.spoke.ID && c.AccessLevel == service.AccessFull && c.Readable() &&
			service.NormalizeServer(c.Endpoint) != h.server {
			hb := &hub{c: c}
			rank[hb] = 2
			if s, ok := h.d.Snapshots.Warm(ctx, c); ok {
				hb.snap, rank[hb] = s, 0
			} else if s, ok := h.d.Snapshots.Peek(c); ok {
				rank[hb] = 3
				if s.Err == nil && deploysElsewhere(c, s) {
					rank[hb] = 1
				}
			}
			h.list = append(h.list, hb)
		}
	}
	slices.SortStableFunc(h.list, func(a, b *hub) int { return rank[a] - rank[b] })
	// The first cold ones are read at once, in parallel, within the
	// detection's budget (a hub that does not answer holds up none of the
	// others); the rest stay unchecked.
	var wg sync.WaitGroup
	for _, hb := range h.list {
		switch {
		case hb.snap != nil:
		case h.spend(hb):
			wg.Go(func() { hb.snap = h.d.Snapshots.Get(ctx, hb.c, false) })
		default:
			hb.unchecked = true
		}
	}
	wg.Wait()
	return h.list
}

// deploysElsewhere reports whether some app of the snapshot deploys to
// another cluster than its own.
func deploysElsewhere(c service.Cluster, s *service.Snapshot) bool {
	own := service.NormalizeServer(c.Endpoint)
	for _, a := range s.Apps() {
		if service.DestinationServer(c, a.Destination, nil) != own {
			return true
		}
	}
	return false
}

// spend takes one cold hub read from the budget for hb, reporting whether
// there was one: a hub read is its Applications and, when its apps name
// destinations, its cluster secrets.
func (h *hubs) spend(hb *hub) bool {
	if hb.charged {
		return true
	}
	if h.cold >= maxColdHubReads {
		return false
	}
	h.cold++
	hb.charged = true
	return true
}

// find returns the apps named (namespace "" is the hub's Argo CD
// namespace) that deploy to the spoke, one per hub claiming it, and the
// hubs left unchecked.
func (h *hubs) find(ctx context.Context, i service.ObjectInfo, ns, name string) ([]hubMatch, []*hub) {
	var found []hubMatch
	var unchecked []*hub
	for _, hb := range h.candidates(ctx) {
		if hb.unchecked {
			unchecked = append(unchecked, hb)
			continue
		}
		m, ok := h.claims(ctx, hb, i, ns, name)
		if hb.unchecked {
			unchecked = append(unchecked, hb)
		} else if ok {
			found = append(found, m)
		}
	}
	return found, unchecked
}

// claims reports whether the hub's app of that name deploys to the spoke
// and would have written the object's annotation (its tracking method is
// not label-only, and its installation id, if set, is the object's).
func (h *hubs) claims(ctx context.Context, hb *hub, i service.ObjectInfo, ns, name string) (hubMatch, bool) {
	if hb.snap.Err != nil {
		return hubMatch{}, false
	}
	s := hb.snap.Settings
	if s.TrackingMethod == "label" || (s.InstallationID != "" && i.Annotations[installationIDAnnotation] != s.InstallationID) {
		return hubMatch{}, false
	}
	app := find(hb.c, hb.snap, ns, name)
	if app == nil {
		return hubMatch{}, false
	}
	var secrets []service.ArgoCDClusterRef
	if service.NeedsSecrets(app.Destination) {
		if h.d.Secrets == nil {
			return hubMatch{}, false
		}
		if hb.secrets == nil {
			r, warm := h.d.Secrets.Warm(hb.c)
			if !warm {
				if !h.spend(hb) {
					hb.unchecked = true
					return hubMatch{}, false
				}
				r = h.d.Secrets.Get(ctx, hb.c)
			}
			if r.Err != nil && h.d.Log != nil {
				h.d.Log.WarnContext(ctx, "hub lookup could not read Argo CD's cluster secrets", "hub", hb.c.ID, "err", r.Err)
			}
			hb.secrets = &r
		}
		secrets = hb.secrets.Refs
	}
	if service.DestinationServer(hb.c, app.Destination, secrets) != h.server {
		return hubMatch{}, false
	}
	return hubMatch{hub: hb, app: *app, settings: s}, true
}

// fromHubs resolves an annotation whose app is not in the spoke: the level
// the claiming hubs' apps give (the strongest when several do, all named),
// else the unknown level stays, saying which hubs could not be checked.
func (d *Detector) fromHubs(ctx context.Context, h *hubs, res *managed, i service.ObjectInfo, ref service.ResourceRef) {
	found, unchecked := h.find(ctx, i, res.trackedNamespace, res.Application)
	if len(found) == 0 {
		if len(unchecked) > 0 {
			res.Reason += "; " + uncheckedHubs(unchecked)
		}
		return
	}
	t := argoTarget(i, ref)
	var best *managed
	var ids []string
	for _, m := range found {
		cand := managed{OwnershipResource: res.OwnershipResource, app: &m.app, appNamespace: m.app.Namespace, hub: &m.hub.c}
		cand.Basis = service.BasisAnnotation
		cand.decide(m.app, m.settings, t, i, "tracking annotation names app "+m.app.Name+" of Argo CD in cluster "+m.hub.c.Name+
			", which deploys to this cluster")
		ids = append(ids, m.hub.c.ID)
		if best == nil || argocd.Stronger(cand.Level, best.Level) {
			best = &cand
		}
	}
	slices.Sort(ids)
	best.HubClusterIDs = ids
	if len(unchecked) > 0 {
		best.Reason += "; " + uncheckedHubs(unchecked)
	}
	*res = *best
}

// uncheckedHubs says which clusters that may run Argo CD were not looked
// at within the detection.
func uncheckedHubs(unchecked []*hub) string {
	names := make([]string, 0, len(unchecked))
	for _, hb := range unchecked {
		names = append(names, hb.c.Name)
	}
	return "the team's clusters " + strings.Join(names, ", ") +
		" may run the Argo CD that deploys here, but their Applications were not cached and only " +
		"two such clusters are read per check, so they were not checked"
}
