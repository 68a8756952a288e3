package service

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// AppSource is one source of an Argo CD Application (spec.source or an
// entry of spec.sources).
type AppSource struct {
	RepoURL        string `json:"repo_url"`
	Path           string `json:"path"`
	Chart          string `json:"chart"`
	TargetRevision string `json:"target_revision"`
	// Ref names a multi-source app's values source ($<ref>/... value files).
	Ref string `json:"-"`
	// Spec is the whole source object as the Application holds it (its
	// repoURL without credentials): what rendering reads (directory,
	// kustomize and helm settings).
	Spec json.RawMessage `json:"-"`
}

// AppSync is what status.sync says Argo CD last compared: the revision(s)
// and the source(s) as they were then (status.sync.comparedTo), which the
// repo tab renders so it shows what the app applies.
type AppSync struct {
	Revision  string
	Revisions []string
	// ComparedTo are the compared sources (empty when status is empty).
	ComparedTo []AppSource
}

// AppDestination is where an Application deploys to.
type AppDestination struct {
	Server    string `json:"server"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// ClusterID is the team's cluster the app deploys to when it is another
	// of the team's registered clusters (a hub's spoke): set per request on
	// the app list, never in the shared snapshot.
	ClusterID string `json:"cluster_id,omitempty"`
}

// AppOperation is the last (or running) sync operation.
type AppOperation struct {
	Phase       string     `json:"phase"`
	Message     string     `json:"message"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	InitiatedBy string     `json:"initiated_by"`
	Automated   bool       `json:"automated"`
}

// Failed reports whether the operation ended in failure (Argo CD's phases
// Failed and Error). A nil operation has not failed.
func (o *AppOperation) Failed() bool { return o != nil && (o.Phase == "Failed" || o.Phase == "Error") }

// AppProblem says why an Application needs attention.
type AppProblem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Problem reasons, in the order the app list ranks them (most urgent first).
const (
	ProblemOperationFailed = "operation_failed"
	ProblemErrorCondition  = "error_condition"
	ProblemDegraded        = "degraded"
	ProblemMissing         = "missing"
	ProblemOutOfSync       = "out_of_sync"
	ProblemSyncUnknown     = "sync_unknown"
	ProblemProgressing     = "progressing"
	ProblemSuspended       = "suspended"
)

var problemRank = map[string]int{
	ProblemOperationFailed: 0, ProblemErrorCondition: 0,
	ProblemDegraded: 1, ProblemMissing: 2, ProblemOutOfSync: 3, ProblemSyncUnknown: 4,
	ProblemProgressing: 5, ProblemSuspended: 6,
}

// AppResource is one row of status.resources: an object the app manages.
type AppResource struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	// Health is nil when Argo CD did not store it: since Argo CD 3.0
	// status.resources holds no per-resource health by default
	// (controller.resource.health.persist), which is not "Unknown".
	Health          *string `json:"health"`
	Hook            bool    `json:"hook"`
	RequiresPruning bool    `json:"requires_pruning"`

	// RowLevel, RowCause and RowReason are what a direct change to the
	// row's object meets (argocd.DecideRow, the rule behind the approval
	// card too), set when the app is parsed.
	RowLevel  Level  `json:"-"`
	RowCause  string `json:"-"`
	RowReason string `json:"-"`
}

// AppCondition is one of status.conditions.
type AppCondition struct {
	Type               string     `json:"type"`
	Message            string     `json:"message"`
	LastTransitionTime *time.Time `json:"last_transition_time"`
}

// IsError reports an error condition: Argo CD names them with the suffix
// "Error" (ComparisonError, SyncError, ...); the others are warnings.
func (c AppCondition) IsError() bool { return strings.HasSuffix(c.Type, "Error") }

// AppHistoryEntry is one Git-driven deploy from status.history.
type AppHistoryEntry struct {
	ID          int64      `json:"id"`
	Revision    string     `json:"revision"`
	Revisions   []string   `json:"revisions"`
	DeployedAt  *time.Time `json:"deployed_at"`
	InitiatedBy string     `json:"initiated_by"`
}

// Application is an Argo CD Application as Kukie shows it, parsed from the
// cluster. It holds nothing user-specific, so it can be shared by a cache.
type Application struct {
	// ID is the path segment of the detail route: the name, or
	// "<namespace>_<name>" when the app lives outside the control-plane
	// namespace ("_" cannot occur in Kubernetes names).
	ID            string         `json:"id"`
	Name          string         `json:"name"`
	Namespace     string         `json:"namespace"`
	Project       string         `json:"project"`
	Sources       []AppSource    `json:"sources"`
	Destination   AppDestination `json:"destination"`
	SyncStatus    string         `json:"sync_status"`
	HealthStatus  string         `json:"health_status"`
	HealthMessage string         `json:"-"`
	AutoSync      bool           `json:"auto_sync"`
	SelfHeal      bool           `json:"self_heal"`
	Prune         bool           `json:"prune"`
	Operation     *AppOperation  `json:"operation"`
	ReconciledAt  *time.Time     `json:"reconciled_at"`
	Problems      []AppProblem   `json:"problems"`

	// Level is how strongly the app reverts a direct change to a resource
	// it manages, from its sync policy alone, and LevelReason says why in
	// words. Set when the app is parsed, so the detail's rows and ownership
	// detection read the same rule.
	Level       Level  `json:"-"`
	LevelReason string `json:"-"`

	Resources  []AppResource     `json:"-"`
	Conditions []AppCondition    `json:"-"`
	History    []AppHistoryEntry `json:"-"`

	// IgnoreDifferences are the app's spec.ignoreDifferences rules;
	// RespectIgnoreDifferences is set by the sync option of that name.
	IgnoreDifferences        []IgnoreRule `json:"-"`
	RespectIgnoreDifferences bool         `json:"-"`

	// Sync is status.sync's revision(s) and compared source(s).
	Sync AppSync `json:"-"`
	// HydratedSource is, for a spec.sourceHydrator app, the hydrated branch
	// (syncSource.targetBranch and path) rendered as a plain directory; nil
	// otherwise.
	HydratedSource *AppSource `json:"-"`

	// SkipReconcile is set by the annotation argocd.argoproj.io/skip-reconcile
	// (true): the controller ignores the app and reverts nothing.
	SkipReconcile bool `json:"-"`
	// ManifestGeneratePaths is set when the app carries
	// argocd.argoproj.io/manifest-generate-paths: auto-sync follows only
	// commits that touch those paths.
	ManifestGeneratePaths bool `json:"-"`
	// SelfHealPaused is set when the last sync operation to the current
	// revision and source completed without success (upstream
	// alreadyAttemptedSync): Argo CD neither auto-syncs nor self-heals
	// until a new revision or a successful sync.
	SelfHealPaused bool `json:"-"`
}

// Level says how strongly Argo CD reverts a direct change.
type Level string

// Levels, strongest first.
const (
	LevelSelfHeal    Level = "self_heal"    // auto-sync with selfHeal: reverted soon
	LevelUnknown     Level = "unknown"      // managed, but the policy cannot be read
	LevelAutoSync    Level = "auto_sync"    // reverted at the next Git change
	LevelManual      Level = "manual"       // stays; the app shows OutOfSync
	LevelNotReverted Level = "not_reverted" // ignored by the app's diff rules
)

// Valid reports whether l is one of the five levels. How levels compare is
// an Argo CD rule and lives in package argocd.
func (l Level) Valid() bool {
	switch l {
	case LevelSelfHeal, LevelUnknown, LevelAutoSync, LevelManual, LevelNotReverted:
		return true
	}
	return false
}

// AppID returns the detail-route id of an app in namespace ns when the
// control plane lives in controlNamespace.
func AppID(name, ns, controlNamespace string) string {
	if ns == "" || ns == controlNamespace {
		return name
	}
	return ns + "_" + name
}

// ComputeProblems fills in a.Problems from its status.
func (a *Application) ComputeProblems() {
	a.Problems = []AppProblem{}
	add := func(reason, msg string) { a.Problems = append(a.Problems, AppProblem{Reason: reason, Message: msg}) }
	if a.Operation.Failed() {
		add(ProblemOperationFailed, a.Operation.Message)
	}
	for _, c := range a.Conditions {
		if c.IsError() {
			add(ProblemErrorCondition, c.Type+": "+c.Message)
		}
	}
	switch a.HealthStatus {
	case "Degraded":
		add(ProblemDegraded, a.HealthMessage)
	case "Missing":
		add(ProblemMissing, a.HealthMessage)
	case "Progressing":
		add(ProblemProgressing, a.HealthMessage)
	case "Suspended":
		add(ProblemSuspended, a.HealthMessage)
	}
	switch a.SyncStatus {
	case "Synced":
	case "OutOfSync":
		add(ProblemOutOfSync, "")
	default:
		add(ProblemSyncUnknown, "")
	}
	sort.SliceStable(a.Problems, func(i, j int) bool {
		return problemRank[a.Problems[i].Reason] < problemRank[a.Problems[j].Reason]
	})
}

// rank is the app's place in the list: its most urgent problem, or after all
// problems when it has none.
func (a *Application) rank() int {
	if len(a.Problems) == 0 {
		return len(problemRank)
	}
	return problemRank[a.Problems[0].Reason]
}

// SortApplications orders apps problems first, then by name (and namespace).
func SortApplications(apps []Application) {
	sort.SliceStable(apps, func(i, j int) bool {
		ri, rj := apps[i].rank(), apps[j].rank()
		if ri != rj {
			return ri < rj
		}
		if apps[i].Name != apps[j].Name {
			return apps[i].Name < apps[j].Name
		}
		return apps[i].Namespace < apps[j].Namespace
	})
}

// AppSummary counts a cluster's apps for the summary card and the sidebar.
type AppSummary struct {
	Total           int       `json:"total"`
	Synced          int       `json:"synced"`
	OutOfSync       int       `json:"out_of_sync"`
	SyncUnknown     int       `json:"sync_unknown"`
	Healthy         int       `json:"healthy"`
	Progressing     int       `json:"progressing"`
	Degraded        int       `json:"degraded"`
	Suspended       int       `json:"suspended"`
	Missing         int       `json:"missing"`
	HealthUnknown   int       `json:"health_unknown"`
	SelfHeal        int       `json:"self_heal"`
	AutoSync        int       `json:"auto_sync"`
	OperationFailed int       `json:"operation_failed"`
	SourceRepos     []string  `json:"source_repos"`
	KukieRepo       KukieRepo `json:"kukie_repo"`
}

// KukieRepo is the GitOps repository connected to Kukie for a cluster, and
// whether any app deploys from it. Users confused it with the apps' own
// source repos, so it is shown apart.
type KukieRepo struct {
	URL       string `json:"url"`
	Connected bool   `json:"connected"`
}

// Summarize counts apps. The Kukie repo is joined in by the caller (it is
// team data, not cluster data).
func Summarize(apps []Application) AppSummary {
	s := AppSummary{Total: len(apps), SourceRepos: []string{}}
	repos := map[string]bool{}
	for _, a := range apps {
		switch a.SyncStatus {
		case "Synced":
			s.Synced++
		case "OutOfSync":
			s.OutOfSync++
		default:
			s.SyncUnknown++
		}
		switch a.HealthStatus {
		case "Healthy":
			s.Healthy++
		case "Progressing":
			s.Progressing++
		case "Degraded":
			s.Degraded++
		case "Suspended":
			s.Suspended++
		case "Missing":
			s.Missing++
		default:
			s.HealthUnknown++
		}
		if a.SelfHeal {
			s.SelfHeal++
		}
		if a.AutoSync {
			s.AutoSync++
		}
		if a.Operation.Failed() {
			s.OperationFailed++
		}
		for _, src := range a.Sources {
			// One repo written several ways (git@, https://, ssh://) is listed once.
			if key := NormalizeRepoURL(src.RepoURL); key != "" && !repos[key] {
				repos[key] = true
				s.SourceRepos = append(s.SourceRepos, src.RepoURL)
			}
		}
	}
	sort.Strings(s.SourceRepos)
	return s
}
