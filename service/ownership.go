package service

import (
	"context"
	"encoding/json"
	"time"
)

// ObjectInfo is what ownership detection needs of one Kubernetes object:
// its resolved type, whether it exists, and its metadata.
type ObjectInfo struct {
	Group, Version, Kind string
	// Resource is the kind's resource (plural) name, once resolved.
	Resource          string
	Namespace, Name   string
	Namespaced, Found bool
	// Annotations may hold kubectl.kubernetes.io/last-applied-configuration,
	// which for a Secret holds its data: never log or return them.
	Annotations, Labels map[string]string
	// ManagedFields are the object's metadata.managedFields.
	ManagedFields []ManagedFieldsEntry
	// Object is the object's content for the values of changed fields
	// (issue 22): metadata.managedFields left out, and a Secret's data and
	// stringData never read into it.
	Object map[string]any
}

// ManagedFieldsEntry is one metadata.managedFields entry.
type ManagedFieldsEntry struct {
	Manager   string
	Operation string // Apply or Update
	// FieldsV1 is the raw fieldsV1 tree ("f:spec", "k:{...}", "v:...").
	FieldsV1 []byte
}

// ObjectReader resolves a resource's kind as kubectl does and reads the
// object. Failures carry a Reason: kind_unknown, cluster_unreachable,
// argocd_forbidden (the object may not be read), budget_exceeded.
type ObjectReader interface {
	ReadObject(ctx context.Context, c Cluster, ref ResourceRef) (ObjectInfo, error)
}

// OwnershipApp is an Application that manages a target, as the warning shows it.
type OwnershipApp struct {
	Name           string   `json:"name"`
	Namespace      string   `json:"namespace"`
	RepoURL        string   `json:"repo_url"`
	Path           string   `json:"path"`
	Paths          []string `json:"paths"`
	TargetRevision string   `json:"target_revision"`
	AutoSync       bool     `json:"auto_sync"`
	SelfHeal       bool     `json:"self_heal"`
	Prune          bool     `json:"prune"`
}

// OwnershipResource is a managed target with the app managing it.
type OwnershipResource struct {
	Group       string `json:"group"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Application string `json:"application"`
	// Tracking is annotation or label (kept one release for old readers;
	// Basis replaces it).
	Tracking string `json:"tracking,omitempty"`
	// Basis is how the object was found to be managed (Basis* values);
	// LevelCause what decided its level (Cause* values).
	Basis      string `json:"basis,omitempty"`
	LevelCause string `json:"level_cause,omitempty"`
	Level      Level  `json:"level"`
	Reason     string `json:"reason"`
	// HubClusterIDs are the team's clusters whose Argo CD manages the
	// object from outside it (hub-and-spoke): the app named by the
	// tracking annotation lives there and deploys to this cluster.
	HubClusterIDs []string `json:"hub_cluster_ids,omitempty"`
	// Fields are the changed fields, each with the value in the cluster
	// now and the planned one (issue 22).
	Fields []FieldPreview `json:"fields,omitempty"`
}

// FieldPreview is one changed field of a managed resource: what the
// cluster holds now and what the change plans. A field whose value the
// masker would mask (a Secret's data or stringData included) carries
// Masked instead of values.
type FieldPreview struct {
	Field string `json:"field"`
	// Live is the value in the cluster now; absent when the field does not exist.
	Live json.RawMessage `json:"live,omitempty"`
	// Planned is the change's value; absent when the plan gave none.
	Planned json.RawMessage `json:"planned,omitempty"`
	Masked  bool            `json:"masked,omitempty"`
	// Git is what the app's desired state in Git says of the field: the
	// value Argo CD will put back, and where Git sets it.
	Git *GitValue `json:"git,omitempty"`
}

// States of a field in Git (GitValue.State).
const (
	GitSet         = "set"         // the desired manifest sets the field: Value is what Argo CD puts back
	GitUnset       = "unset"       // the desired manifest does not set it
	GitPending     = "pending"     // not known within the detection budget
	GitUnavailable = "unavailable" // Reason says why
)

// GitValue is a field's desired state in Git.
type GitValue struct {
	State  string          `json:"state"`
	Value  json.RawMessage `json:"value,omitempty"`
	Reason Reason          `json:"reason,omitempty"`
	Source *GitSource      `json:"source,omitempty"`
}

// GitSource is where Git sets a field: the file and the 1-based line of
// the key that sets it, at the revision Argo CD compares against, and how
// (Via: manifest for a plain YAML file).
type GitSource struct {
	Revision string `json:"revision"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Via      string `json:"via"`
	// Key is the Helm values key that feeds the field ("image.tag"), and
	// KeyPlanned what that key must hold for the field to get the planned
	// value (absent when it cannot be told: a template transformed it).
	Key        string          `json:"key,omitempty"`
	KeyPlanned json.RawMessage `json:"key_planned,omitempty"`
	// Override names the Application's entry that sets the field
	// (application_override): "spec.source.helm.parameters[name=image.tag]".
	Override string `json:"override,omitempty"`
}

// GitLocator finds where the desired state of a managed object's app sets
// each changed field (internal/gitpreview), filling FieldPreview.Git.
type GitLocator interface {
	Locate(ctx context.Context, c Cluster, app Application, obj ObjectInfo, fields []FieldPreview) []FieldPreview
}

// Bases of a managed resource: the tracking annotation verified against
// the object; the instance label confirmed by the app's status.resources;
// no tracking metadata but listed in an app's status.resources (CRDs,
// custom label keys); or Applications could not be read and the
// annotation, or the label with Argo CD's field manager on the object,
// stands unconfirmed.
const (
	BasisAnnotation            = "annotation"
	BasisLabel                 = "label"
	BasisStatusResources       = "status_resources"
	BasisAnnotationUnconfirmed = "annotation_unconfirmed"
	BasisLabelUnconfirmed      = "label_unconfirmed"
)

// ValidBasis reports whether b is one of the Basis* values.
func ValidBasis(b string) bool {
	switch b {
	case BasisAnnotation, BasisLabel, BasisStatusResources, BasisAnnotationUnconfirmed, BasisLabelUnconfirmed:
		return true
	}
	return false
}

// ValidCause reports whether c is one of the Cause* values.
func ValidCause(c string) bool {
	switch c {
	case CauseSkipReconcile, CauseIgnoreDifferences, CauseNotInGit, CauseMatchesGit, CauseSelfHealPaused, CausePolicyUnreadable, CausePolicy:
		return true
	}
	return false
}

// GitNarrowingAllowed reports whether a change by tool may be found not to
// be reverted because Git does not set the fields it changes: never for
// apply_manifest (how it will be applied is unknown, and a client-side apply
// rewrites last-applied-configuration, after which Argo CD's three-way diff
// reverts what Git does not set) nor delete_resource.
func GitNarrowingAllowed(tool string) bool {
	return tool != "apply_manifest" && tool != "delete_resource"
}

// WithTool returns copies of refs carrying the tool that makes the change.
func WithTool(refs []ResourceRef, tool string) []ResourceRef {
	out := make([]ResourceRef, len(refs))
	for i, r := range refs {
		r.Tool = tool
		out[i] = r
	}
	return out
}

// Causes of a level, in precedence order: when several apply, the first
// names the cause.
const (
	CauseSkipReconcile     = "skip_reconcile"
	CauseIgnoreDifferences = "ignore_differences"
	CauseNotInGit          = "not_in_git"
	CauseMatchesGit        = "matches_git"
	CauseSelfHealPaused    = "self_heal_paused"
	CausePolicyUnreadable  = "policy_unreadable"
	CausePolicy            = "policy"
)

// ArgoCDWarning is the plan's `argocd` field: what the approval card shows
// when a change touches resources Argo CD manages.
type ArgoCDWarning struct {
	Summary string `json:"summary"`
	Level   Level  `json:"level"`
	Warning string `json:"warning"`
	// CheckedAt is when the detection behind this warning ran.
	CheckedAt    time.Time           `json:"checked_at"`
	Applications []OwnershipApp      `json:"applications"`
	Resources    []OwnershipResource `json:"resources"`
	// RecheckSkipped is set when the re-detection at approval could not
	// check everything: the warning then keeps the earlier findings joined
	// with the recheck's (the stronger level, the union of resources).
	RecheckSkipped *RecheckSkipped `json:"recheck_skipped,omitempty"`
	// Actions are what the card can offer against the revert: pausing the
	// app's automated sync (POST …/pause-plan) where the level is
	// self_heal or auto_sync.
	Actions []WarningAction `json:"actions,omitempty"`
}

// WarningAction is one action the card can offer: Kind pause_sync of
// App (its id, as the app routes take it) in the target's cluster, or in
// ClusterID.
type WarningAction struct {
	Kind string `json:"kind"`
	App  string `json:"app"`
	// ClusterID is the cluster the app lives in when it is not the
	// target's: a hub whose Argo CD deploys to it (hub-and-spoke).
	ClusterID string `json:"cluster_id,omitempty"`
}

// ActionPauseSync is the WarningAction that stops an app's automated sync.
const ActionPauseSync = "pause_sync"

// RecheckSkipped says why the approval's re-detection was incomplete, and when.
type RecheckSkipped struct {
	Reason Reason    `json:"reason"`
	At     time.Time `json:"at"`
}

// Skip says why detection could not finish; it never blocks a change.
type Skip struct {
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
}

// ResolvedTarget is one checked target as resolved in the cluster, with the
// app that manages it (empty when none); plans store it for history joins.
type ResolvedTarget struct {
	Group, Kind, Namespace, Name string
	AppNamespace, AppName        string
	// Checked is set when detection read the object, so the match and app
	// fields are what the cluster says.
	Checked bool
}

// Unmanaged is a checked target Argo CD does not manage, and why:
// object_not_found (a create), not_tracked (no tracking metadata),
// copied_annotation (the annotation names another object),
// label_not_confirmed (an instance label no app confirms, e.g. Helm's own),
// or other_installation (another Argo CD instance's, by installationID).
type Unmanaged struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
}

// Ownership is the answer of a detection.
type Ownership struct {
	ArgoCD     *ArgoCDWarning `json:"argocd"`
	Unmanaged  []Unmanaged    `json:"unmanaged"`
	Checked    int            `json:"checked"`
	Truncated  bool           `json:"truncated"`
	Skipped    *Skip          `json:"skipped"`
	DurationMS int64          `json:"duration_ms"`
	Notes      []string       `json:"notes"`
	// Access is, on a LIMITED cluster, whether Kukie's connection may make
	// the change to each target (a SelfSubjectAccessReview), before the
	// card: absent on FULL clusters.
	Access   []TargetAccess   `json:"access,omitempty"`
	Resolved []ResolvedTarget `json:"-"` // one per checked target, in order
}

// TargetAccess is whether Kukie may make a change to one target: Allowed
// true or false, or nil with Reason when the review could not be made.
type TargetAccess struct {
	Group       string `json:"group"`
	Kind        string `json:"kind"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Allowed     *bool  `json:"allowed"`
	Verb        string `json:"verb"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// TargetReviewer answers access reviews through Kukie's connection
// (AccessReviews, cached).
type TargetReviewer interface {
	Review(ctx context.Context, c Cluster, q AccessQuestion) (AccessAnswer, error)
}

// OwnershipDetector decides, per resource and just before a change,
// whether Argo CD manages it and how strongly it reverts. It never fails:
// problems become Skipped.
type OwnershipDetector interface {
	Detect(ctx context.Context, c Cluster, targets []ResourceRef, lang string) Ownership
	// Recheck detects again just before a person approves, on Applications
	// read afresh (within the cache's refresh floor). When it cannot check
	// every target, the answer's ArgoCD keeps the earlier warning joined
	// with what it found, marked with RecheckSkipped.
	Recheck(ctx context.Context, c Cluster, targets []ResourceRef, earlier *ArgoCDWarning, lang string) Ownership
}

// MaxOwnershipTargets is how many targets detection checks.
const MaxOwnershipTargets = 5
