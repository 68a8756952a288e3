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
	// RepoAuth is how Kukie reads GitOpsRepo (type and fingerprint, never a
	// secret); set on the answer to connecting it.
	RepoAuth *RepoAuthView `json:"gitops_repo_auth,omitempty"`
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
	return ReasonError(EUPSTREAM, ReasonClusterUnreachable, msg)
}

// Key identifies the cluster across teams: ids are chosen per team and are
// free text, so the key separates them with a byte no id holds.
func (c Cluster) Key() string { return c.TeamID + "\x00" + c.ID }

// ClusterLister lists a team's clusters ordered by name.
type ClusterLister interface {
	ListClusters(ctx context.Context, teamID string) ([]Cluster, error)
}

// ClusterStore persists clusters. Every method is scoped to a team; another
// team's cluster is ENOTFOUND with reason cluster_not_found.
type ClusterStore interface {
	ClusterLister
	GetCluster(ctx context.Context, teamID, id string) (Cluster, error)
	// UpsertCluster creates or updates a cluster (and its team on first use),
	// keeping its connected GitOps repo.
	UpsertCluster(ctx context.Context, c Cluster, now time.Time) (Cluster, error)
	SetGitOpsRepo(ctx context.Context, teamID, id, repoURL string, now time.Time) (Cluster, error)
}

// ErrClusterNotFound is the error for a cluster id the team does not have.
func ErrClusterNotFound() error {
	return ReasonError(ENOTFOUND, ReasonClusterNotFound, "The cluster does not exist in your team.")
}

// Clusters is the cluster use case.
type Clusters struct {
	Store ClusterStore
	Now   func() time.Time
	// RepoAuth keeps connected repositories' credentials, sealed with
	// Sealer (nil Sealer: only auth type none is accepted).
	RepoAuth RepoAuthStore
	Sealer   Sealer
	// RepoCheck verifies a connection before anything is stored (nil: not
	// checked).
	RepoCheck RepoChecker
}

// RepoChecker lists a repository's refs with the given credentials: a
// wrong token is repo_auth_failed, an unknown host key host_key_mismatch,
// an unreachable host repo_unreachable.
type RepoChecker interface {
	Verify(ctx context.Context, repoURL string, a RepoAuth) error
}

// List returns the caller's clusters.
func (s *Clusters) List(ctx context.Context, p Principal) ([]Cluster, error) {
	cs, err := s.Store.ListClusters(ctx, p.TeamID)
	if cs == nil {
		cs = []Cluster{}
	}
	return cs, err
}

// Get returns one of the caller's clusters, the same view List holds: what a
// client polls after registering until access_state is active. Another
// team's cluster, or none, is ErrClusterNotFound.
func (s *Clusters) Get(ctx context.Context, p Principal, clusterID string) (Cluster, error) {
	if clusterID == "" {
		return Cluster{}, ErrClusterNotFound()
	}
	return s.Store.GetCluster(ctx, p.TeamID, clusterID)
}

// SetGitOpsRepo connects a repository to a cluster ("" disconnects), with
// the credentials to read it (nil: anonymous when the URL changes, the
// stored ones kept when it does not). A URL never carries credentials.
// Secrets are stored sealed (KUKIE_SECRET_KEYS) and never returned: the
// answer shows the auth type and a fingerprint. The connection is verified
// first (list the remote's refs with the credentials and pinned host key);
// nothing is stored when that fails.
func (s *Clusters) SetGitOpsRepo(ctx context.Context, p Principal, clusterID, repoURL string, auth *RepoAuth) (Cluster, error) {
	var v ValidationErrors
	checkText(&v, "repo_url", repoURL, false, 2048)
	if problem := RepoURLCredentialProblem(repoURL); problem != "" {
		v.Add("repo_url", "%s", problem)
	}
	if repoURL != "" && !ValidRepoURL(repoURL) {
		v.Add("repo_url", "must be a Git repository URL such as https://github.com/org/repo or git@github.com:org/repo.git")
	}
	if err := v.Err(); err != nil {
		return Cluster{}, err
	}
	current, err := s.Store.GetCluster(ctx, p.TeamID, clusterID)
	if err != nil {
		return Cluster{}, err
	}
	if auth != nil && auth.Type != "" && auth.Type != RepoAuthNone {
		if err := ValidateRepoAuth(*auth); err != nil {
			return Cluster{}, err
		}
		if s.Sealer == nil || s.RepoAuth == nil {
			return Cluster{}, ErrSecretKeysNotConfigured()
		}
	}
	check := RepoAuth{Type: RepoAuthNone}
	if auth != nil {
		check = *auth
	} else if repoURL == current.GitOpsRepo && s.RepoAuth != nil && s.Sealer != nil {
		if sealed, err := s.RepoAuth.GetRepoAuth(ctx, p.TeamID, clusterID); err == nil {
			if check, err = OpenRepoAuth(s.Sealer, sealed); err != nil {
				return Cluster{}, err
			}
		}
	}
	if repoURL != "" && s.RepoCheck != nil {
		if err := s.RepoCheck.Verify(ctx, repoURL, check); err != nil {
			return Cluster{}, err
		}
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	c, err := s.Store.SetGitOpsRepo(ctx, p.TeamID, clusterID, repoURL, now)
	if err != nil || s.RepoAuth == nil {
		return c, err
	}
	switch {
	case repoURL == "" || (auth == nil && repoURL != current.GitOpsRepo) || (auth != nil && (auth.Type == "" || auth.Type == RepoAuthNone)):
		// Credentials belong to the URL they were checked against.
		if err := s.RepoAuth.DeleteRepoAuth(ctx, p.TeamID, clusterID); err != nil && ErrorCode(err) != ENOTFOUND {
			return c, err
		}
		view := RepoAuthView{Type: RepoAuthNone}
		if repoURL != "" {
			c.RepoAuth = &view
		}
	case auth != nil:
		sealed, err := SealRepoAuth(s.Sealer, p.TeamID, clusterID, *auth)
		if err != nil {
			return c, err
		}
		if sealed, err = s.RepoAuth.PutRepoAuth(ctx, p.TeamID, clusterID, sealed, now); err != nil {
			return c, err
		}
		view := sealed.View()
		c.RepoAuth = &view
	default:
		if sealed, err := s.RepoAuth.GetRepoAuth(ctx, p.TeamID, clusterID); err == nil {
			view := sealed.View()
			c.RepoAuth = &view
		}
	}
	return c, nil
}
