package service

import (
	"context"
	"errors"
	"time"
)

// Card states of the sidebar.
const (
	CardFresh   = "fresh"   // read within the TTL
	CardStale   = "stale"   // older; a read is under way in the background
	CardPending = "pending" // never read yet; a read is under way
)

// SidebarCluster is a cluster with Argo CD, as the latest read of any
// replica found it.
type SidebarCluster struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Summary is nil while the card is pending.
	Summary *AppSummary `json:"summary"`
	// FetchedAt is when the shown read started; nil while pending.
	FetchedAt *time.Time `json:"fetched_at"`
	State     string     `json:"state"`
}

// SidebarRef names a cluster left out of the Argo CD list.
type SidebarRef struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Reason Reason `json:"reason,omitempty"`
}

// Sidebar groups the team's clusters for the Argo CD screen.
type Sidebar struct {
	Clusters    []SidebarCluster `json:"clusters"`
	Limited     []SidebarRef     `json:"limited"`
	Unavailable []SidebarRef     `json:"unavailable"`
}

// sidebarCard is the newest known read of one cluster.
type sidebarCard struct {
	known     bool
	summary   AppSummary
	reason    Reason // the failed read's reason; "" when good
	fetchedAt time.Time
	age       time.Duration
}

// Sidebar answers at once from what is known of each FULL cluster — the
// shared snapshot rows (any replica's reads) and this replica's cache —
// and groups them: with Argo CD (fresh, stale or pending), LIMITED (not
// queried), or unavailable with the reason of the failed read. Clusters
// never read or older than the TTL are read in the background, at most
// Parallel at once, through the cache (so never more often than its bound).
func (s *ArgoCD) Sidebar(ctx context.Context, p Principal) (Sidebar, error) {
	clusters, err := s.Clusters.ListClusters(ctx, p.TeamID)
	if err != nil {
		return Sidebar{}, err
	}
	shared := map[string]SharedCard{}
	if s.Cache.Shared != nil {
		cards, err := s.Cache.Shared.Cards(ctx, p.TeamID)
		if err != nil && ctx.Err() != nil {
			return Sidebar{}, ctx.Err()
		}
		// A failed table leaves the local cache: the sidebar still answers.
		for _, c := range cards {
			if c.SchemaVersion == SnapshotSchemaVersion && c.Written {
				shared[c.ClusterID] = c
			}
		}
	}
	out := Sidebar{Clusters: []SidebarCluster{}, Limited: []SidebarRef{}, Unavailable: []SidebarRef{}}
	var stale []Cluster // never read, or older than the TTL
	defer func() { s.readInBackground(stale) }()
	for _, cl := range clusters {
		switch {
		case !cl.Readable():
			out.Unavailable = append(out.Unavailable, SidebarRef{ID: cl.ID, Name: cl.Name, Reason: Reason(cl.AccessState)})
			continue
		case cl.AccessLevel != AccessFull:
			out.Limited = append(out.Limited, SidebarRef{ID: cl.ID, Name: cl.Name})
			continue
		}
		card := s.card(cl, shared)
		var maxAge time.Duration
		if card.known {
			maxAge = s.Cache.maxAge(cardErr(card.reason), false)
		}
		if !card.known || card.age >= maxAge {
			stale = append(stale, cl)
		}
		switch {
		case !card.known:
			out.Clusters = append(out.Clusters, SidebarCluster{ID: cl.ID, Name: cl.Name, State: CardPending})
		case card.reason != "":
			out.Unavailable = append(out.Unavailable, SidebarRef{ID: cl.ID, Name: cl.Name, Reason: card.reason})
		default:
			summary := card.summary
			summary.KukieRepo = kukieRepo(cl, summary)
			at := card.fetchedAt.UTC()
			state := CardFresh
			if card.age >= maxAge {
				state = CardStale
			}
			out.Clusters = append(out.Clusters, SidebarCluster{ID: cl.ID, Name: cl.Name, Summary: &summary, FetchedAt: &at, State: state})
		}
	}
	return out, nil
}

// cardErr stands for a failed read of this reason in maxAge.
func cardErr(reason Reason) error {
	if reason == "" {
		return nil
	}
	return ReasonError(EUPSTREAM, reason, "")
}

// card is the newest of the cluster's shared row and local snapshot.
func (s *ArgoCD) card(cl Cluster, shared map[string]SharedCard) sidebarCard {
	var c sidebarCard
	if row, ok := shared[cl.ID]; ok {
		c = sidebarCard{known: true, fetchedAt: row.FetchedAt, age: row.Age, reason: Reason(row.FailureReason)}
		switch {
		case row.Failed && c.reason == "":
			c.reason = ReasonInternal
		case !row.Failed && row.Summary != nil:
			c.summary = *row.Summary
		case !row.Failed:
			c.known = false // no summary to show: read it again
		}
	}
	if snap, ok := s.Cache.Peek(cl); ok && (!c.known || snap.FetchedAt.After(c.fetchedAt)) && !canceled(snap.Err) {
		c = sidebarCard{known: true, fetchedAt: snap.FetchedAt, age: s.Cache.Age(snap), summary: snap.Summary}
		if snap.Err != nil {
			if c.reason = ErrorReason(snap.Err); c.reason == "" {
				c.reason = ReasonInternal
			}
		}
	}
	return c
}

// canceled reports a snapshot that only says its caller gave up.
func canceled(err error) bool {
	return errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && ErrorReason(err) == "")
}

// readInBackground reads the clusters through the cache outside any
// request, at most Parallel at once; clusters already queued or being read
// are left to that read. Every cluster handed over is read, so one sidebar
// call starts the refresh of all its stale cards.
func (s *ArgoCD) readInBackground(clusters []Cluster) {
	s.initBackground.Do(func() {
		n := s.Parallel
		if n <= 0 {
			n = 8
		}
		s.background = make(chan struct{}, n)
	})
	var todo []Cluster
	for _, cl := range clusters {
		if _, busy := s.reading.LoadOrStore(cl.Key(), true); !busy {
			todo = append(todo, cl)
		}
	}
	if len(todo) == 0 {
		return
	}
	go func() {
		for _, cl := range todo {
			s.background <- struct{}{} // a slot: at most Parallel reads at once
			go func() {
				defer func() { <-s.background; s.reading.Delete(cl.Key()) }()
				s.Cache.Get(context.Background(), cl, false)
			}()
		}
	}()
}
