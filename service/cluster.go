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
	CreatedAt       time.Time   `json:"-"`
	UpdatedAt       time.Time   `json:"-"`
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
