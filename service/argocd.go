package service

import (
	"context"
	"sync"
	"time"
)

// ArgoCD is the Argo CD use case: the sidebar, the app list and the app
// detail, all served from the shared snapshot cache, with the team's own
// data (the connected repo) joined after the cache.
type ArgoCD struct {
	Clusters ClusterStore
	Cache    *SnapshotCache
	Detector OwnershipDetector
	Plans    PlanStore // for the apps' Kukie history
	// Masker drops planned values the masker would mask (nil: none).
	Masker ValueMasker
	// Secrets resolves destinations that name a hub's cluster secret
	// (nil: only destinations by server are matched to team clusters).
	Secrets *ClusterSecretCache
	// Parallel bounds the clusters the sidebar reads at once in the
	// background (default 8).
	Parallel int

	initBackground sync.Once
	background     chan struct{} // one slot per background read
	reading        sync.Map      // cluster keys read in the background now
}

// AppList is a cluster's app list with its summary.
type AppList struct {
	Summary   AppSummary
	Snapshot  *Snapshot
	KukieRepo KukieRepo
	// Destinations maps the indexes (in Snapshot.Apps) of apps deploying to
	// another of the team's clusters to its id (destination.cluster_id).
	Destinations map[int]string
}

// ErrLimitedAccess is the answer for Argo CD reads on a LIMITED cluster:
// its role cannot read Argo CD, so the cluster is not called.
func ErrLimitedAccess() error {
	return ReasonError(EFORBIDDEN, ReasonLimitedAccess,
		"Kukie has limited access to this cluster; Argo CD can be read only with full access.")
}

func (s *ArgoCD) fullCluster(ctx context.Context, p Principal, clusterID string) (Cluster, error) {
	cl, err := s.Clusters.GetCluster(ctx, p.TeamID, clusterID)
	if err != nil {
		return cl, err
	}
	if cl.AccessLevel != AccessFull {
		return cl, ErrLimitedAccess()
	}
	if !cl.Readable() {
		return cl, ErrNotReadable(cl)
	}
	return cl, nil
}

func (s *ArgoCD) snapshot(ctx context.Context, p Principal, clusterID string, refresh bool) (Cluster, *Snapshot, error) {
	cl, err := s.fullCluster(ctx, p, clusterID)
	if err != nil {
		return cl, nil, err
	}
	snap := s.Cache.Get(ctx, cl, refresh)
	if snap.Err != nil {
		return cl, nil, snap.Err
	}
	return cl, snap, nil
}

// List returns the cluster's apps, problems first, with the summary.
func (s *ArgoCD) List(ctx context.Context, p Principal, clusterID string, refresh bool) (AppList, error) {
	cl, snap, err := s.snapshot(ctx, p, clusterID, refresh)
	if err != nil {
		return AppList{}, err
	}
	summary := snap.Summary
	summary.KukieRepo = kukieRepo(cl, summary)
	return AppList{Summary: summary, Snapshot: snap, KukieRepo: summary.KukieRepo,
		Destinations: s.destinations(ctx, cl, snap)}, nil
}

// DetailResource is a status.resources row with the level a direct change
// to it would meet (the rule detection uses too), what decided it and why.
type DetailResource struct {
	AppResource
	Level      Level  `json:"level"`
	LevelCause string `json:"level_cause"`
	Reason     string `json:"reason"`
}

// AppConditions splits status.conditions: errors by Argo CD's "Error" type
// suffix; everything else is listed as a warning, so nothing the cluster
// says is hidden.
type AppConditions struct {
	Errors   []AppCondition `json:"errors"`
	Warnings []AppCondition `json:"warnings"`
}

// AppDetail is one app with everything the detail screen shows.
type AppDetail struct {
	Application
	HealthMessage string `json:"health_message"`
	// OutOfSyncResources answers "why OutOfSync": the rows Argo CD reports
	// as OutOfSync.
	OutOfSyncResources []DetailResource  `json:"out_of_sync_resources"`
	Resources          []DetailResource  `json:"resources"`
	Conditions         AppConditions     `json:"conditions"`
	History            []AppHistoryEntry `json:"history"`
	FetchedAt          time.Time         `json:"fetched_at"`
}

// Detail returns one app ready to show. An app that is not in the cluster
// (deleted, or an id naming a namespace that is gone) is app_not_found.
func (s *ArgoCD) Detail(ctx context.Context, p Principal, clusterID, appID string) (AppDetail, error) {
	_, snap, err := s.snapshot(ctx, p, clusterID, false)
	if err != nil {
		return AppDetail{}, err
	}
	app, ok := snap.App(appID)
	if !ok {
		return AppDetail{}, ErrAppNotFound()
	}
	d := AppDetail{Application: app, HealthMessage: app.HealthMessage, Resources: []DetailResource{},
		OutOfSyncResources: []DetailResource{}, History: app.History, FetchedAt: snap.FetchedAt.UTC(),
		Conditions: AppConditions{Errors: []AppCondition{}, Warnings: []AppCondition{}}}
	for _, res := range app.Resources {
		row := DetailResource{AppResource: res, Level: res.RowLevel, LevelCause: res.RowCause, Reason: res.RowReason}
		if row.Level == "" { // an app not parsed by argocd.ParseApplication
			row.Level, row.LevelCause, row.Reason = app.Level, CausePolicy, app.LevelReason
		}
		d.Resources = append(d.Resources, row)
		if res.Status == "OutOfSync" {
			d.OutOfSyncResources = append(d.OutOfSyncResources, row)
		}
	}
	for _, c := range app.Conditions {
		if c.IsError() {
			d.Conditions.Errors = append(d.Conditions.Errors, c)
		} else {
			d.Conditions.Warnings = append(d.Conditions.Warnings, c)
		}
	}
	return d, nil
}

// ErrAppNotFound is the answer for an app that is not in the cluster.
func ErrAppNotFound() error {
	return ReasonError(ENOTFOUND, ReasonAppNotFound, "The application does not exist in this cluster.")
}

// Ownership runs detection for the given targets on one of the team's
// clusters. It answers for LIMITED clusters and dead clusters too: what
// cannot be checked is reported as skipped, never as an error.
func (s *ArgoCD) Ownership(ctx context.Context, p Principal, clusterID string, targets []ResourceRef, lang string) (Ownership, error) {
	var v ValidationErrors
	if len(targets) == 0 {
		v.Add("resources", "must hold at least one resource")
	}
	validateResources(&v, targets)
	if err := v.Err(); err != nil {
		return Ownership{}, err
	}
	targets = DropMaskedChanges(compactChanges(targets), s.Masker)
	cl, err := s.Clusters.GetCluster(ctx, p.TeamID, clusterID)
	if err != nil {
		return Ownership{}, err
	}
	return s.Detector.Detect(ctx, cl, targets, lang), nil
}

// kukieRepo says whether any app deploys from the repo connected to Kukie,
// from the summary's source repos (one per repo however it is written).
func kukieRepo(cl Cluster, summary AppSummary) KukieRepo {
	r := KukieRepo{URL: cl.GitOpsRepo}
	want := NormalizeRepoURL(cl.GitOpsRepo)
	if want == "" {
		return r
	}
	for _, u := range summary.SourceRepos {
		if NormalizeRepoURL(u) == want {
			r.Connected = true
			return r
		}
	}
	return r
}
