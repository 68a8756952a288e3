package service

import (
	"context"
	"time"
)

// AccessLevel is what Kukie's role may do in a cluster: FULL is cluster
// admin; LIMITED is edit in the allowed namespaces (and cannot read Argo CD).
type AccessLevel string

// Access levels, lower-case on the wire.
const (
	AccessFull    AccessLevel = "full"
	AccessLimited AccessLevel = "limited"
)

// ClusterKind says how Kukie connects to a cluster.
type ClusterKind string

// Cluster kinds: EKS through the customer's IAM role, or static (a
// kubeconfig file, for development and non-EKS clusters).
const (
	ClusterEKS    ClusterKind = "eks"
	ClusterStatic ClusterKind = "static"
)

// AccessState says whether Kukie's access to a cluster is in place. Only an
// active cluster is read; the others are listed as unavailable with the
// state as the reason.
type AccessState string

// Access states: active; pending (AWS is still propagating a change: a job
// finishes it); degraded (the cluster refused Kukie's credentials);
// namespace_not_allowed (a registered namespace is outside the stack's
// AllowedNamespaces); upgrade_failed and revocation_failed (a level
// switch could not complete: the account's switch runs again on
// reconcile); deleting (removal in progress, or failed with the reason:
// reconcile runs it again).
const (
	AccessActive              AccessState = "active"
	AccessPending             AccessState = "pending"
	AccessDegraded            AccessState = "degraded"
	AccessNamespaceNotAllowed AccessState = "namespace_not_allowed"
	AccessUpgradeFailed       AccessState = "upgrade_failed"
	AccessRevocationFailed    AccessState = "revocation_failed"
	AccessDeleting            AccessState = "deleting"
)

// DefaultArgoCDNamespace is Argo CD's usual control-plane namespace.
const DefaultArgoCDNamespace = "argocd"

// Cluster is a team's Kubernetes cluster connection.
type Cluster struct {
	ID              string      `json:"id"`
	TeamID          string      `json:"-"`
	Name            string      `json:"name"`
	Kind            ClusterKind `json:"kind"`
	AccessLevel     AccessLevel `json:"access_level"`
	Namespaces      []string    `json:"namespaces"`
	ArgoCDNamespace string      `json:"argocd_namespace"`
	GitOpsRepo      string      `json:"gitops_repo"`
	// AccessState and AccessReason say whether Kukie's access is in place
	// (static clusters are always active).
	AccessState  AccessState `json:"access_state"`
	AccessReason string      `json:"access_reason"`
	// EKS clusters: the connected account, where the cluster is, and how to
	// reach it (endpoint and CA from DescribeCluster).
	AccountID string `json:"account_id,omitempty"`
	Region    string `json:"region,omitempty"`
	EKSName   string `json:"eks_name,omitempty"`
	Endpoint  string `json:"-"`
	CAData    []byte `json:"-"`
	// EntryCreated records that Kukie created the access entry, so removal
	// deletes only what Kukie created.
	EntryCreated bool      `json:"-"`
	CreatedAt    time.Time `json:"-"`
	UpdatedAt    time.Time `json:"-"`
}

// ClusterAccess is the outcome of an access change on an EKS cluster.
type ClusterAccess struct {
	Level        AccessLevel // the applied level
	State        AccessState
	Reason       string
	EntryCreated bool
	Endpoint     string
	CAData       []byte
}

// EKSClusterStore persists EKS cluster registrations (team-scoped like
// ClusterStore).
type EKSClusterStore interface {
	// CreateCluster inserts a registered cluster; the same (account,
	// region, EKS name) in the team is ECONFLICT with reason cluster_exists.
	CreateCluster(ctx context.Context, c Cluster, now time.Time) (Cluster, error)
	// SetClusterAccess records an access change's outcome.
	SetClusterAccess(ctx context.Context, teamID, id string, a ClusterAccess, now time.Time) (Cluster, error)
	// DeleteCluster removes the cluster row (after its access was revoked).
	DeleteCluster(ctx context.Context, teamID, id string) error
	// LockCluster serialises access changes of one cluster (jobs and the
	// in-request attempt) until unlock is called.
	LockCluster(ctx context.Context, teamID, id string) (unlock func(), err error)
}

// Readable reports whether Kukie may call the cluster: its access is in
// place (an empty state is a static cluster's).
func (c Cluster) Readable() bool { return c.AccessState == "" || c.AccessState == AccessActive }

// ErrNotReadable is the answer for reads of a cluster whose access is not
// in place: it is not called.
func ErrNotReadable(c Cluster) error {
	msg := "Kukie's access to this cluster is " + string(c.AccessState) + "."
	if c.AccessReason != "" {
		msg += " " + c.AccessReason
	}
	return ReasonError(EUPSTREAM, "cluster_unreachable", msg)
}

// Key identifies the cluster across teams: ids are chosen per team and are
// free text, so the key separates them with a byte no id holds.
func (c Cluster) Key() string { return c.TeamID + "\x00" + c.ID }

// ClusterStore persists clusters. Every method is scoped to a team; another
// team's cluster is ENOTFOUND with reason cluster_not_found.
type ClusterStore interface {
	ListClusters(ctx context.Context, teamID string) ([]Cluster, error)
	GetCluster(ctx context.Context, teamID, id string) (Cluster, error)
	// UpsertCluster creates or updates a cluster (and its team on first use),
	// keeping its connected GitOps repo.
	UpsertCluster(ctx context.Context, c Cluster, now time.Time) (Cluster, error)
	SetGitOpsRepo(ctx context.Context, teamID, id, repoURL string, now time.Time) (Cluster, error)
}

// ErrClusterNotFound is the error for a cluster id the team does not have.
func ErrClusterNotFound() error {
	return ReasonError(ENOTFOUND, "cluster_not_found", "The cluster does not exist in your team.")
}

// Clusters is the cluster use case.
type Clusters struct {
	Store ClusterStore
	Now   func() time.Time
}

// List returns the caller's clusters.
func (s *Clusters) List(ctx context.Context, p Principal) ([]Cluster, error) {
	cs, err := s.Store.ListClusters(ctx, p.TeamID)
	if cs == nil {
		cs = []Cluster{}
	}
	return cs, err
}

// SetGitOpsRepo connects a repository to a cluster ("" disconnects). A URL
// carrying credentials is refused (RepoURLCredentialProblem): the whole team
// sees it.
func (s *Clusters) SetGitOpsRepo(ctx context.Context, p Principal, clusterID, repoURL string) (Cluster, error) {
	var v ValidationErrors
	checkText(&v, "repo_url", repoURL, false, 2048)
	if problem := RepoURLCredentialProblem(repoURL); problem != "" {
		v.Add("repo_url", "%s", problem)
	}
	if repoURL != "" && !LooksLikeRepoURL(repoURL) {
		v.Add("repo_url", "must be a Git repository URL such as https://github.com/org/repo or git@github.com:org/repo.git")
	}
	if err := v.Err(); err != nil {
		return Cluster{}, err
	}
	return s.Store.SetGitOpsRepo(ctx, p.TeamID, clusterID, repoURL, s.Now().UTC().Truncate(time.Microsecond))
}
