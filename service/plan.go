package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
)

// PlanStatus is where an Action Plan is in its lifecycle:
// pending → approved → executed|failed, or pending → rejected.
type PlanStatus string

// Plan statuses.
const (
	PlanPending  PlanStatus = "pending"
	PlanApproved PlanStatus = "approved"
	PlanRejected PlanStatus = "rejected"
	PlanExecuted PlanStatus = "executed"
	PlanFailed   PlanStatus = "failed"
)

// Valid reports whether s is one of the known statuses.
func (s PlanStatus) Valid() bool {
	switch s {
	case PlanPending, PlanApproved, PlanRejected, PlanExecuted, PlanFailed:
		return true
	}
	return false
}

// Visibility says who in the team can see a plan.
type Visibility string

// Visibilities: a private plan is seen only by its creator (admins included);
// a shared plan by the whole team.
const (
	VisibilityPrivate Visibility = "private"
	VisibilityShared  Visibility = "shared"
)

// ResourceRef names one Kubernetes object a plan touches. Group is empty for
// the core group, Namespace for cluster-scoped objects.
type ResourceRef struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ChangedFields are JSON pointers of the fields a change touches
	// (e.g. /spec/replicas), checked against the app's ignoreDifferences.
	ChangedFields []string `json:"changed_fields,omitempty"`
	// Changes are the planned values of fields (`kubectl scale
	// --replicas=3` is {"/spec/replicas", 3}); their fields count as
	// changed. A value the masker would mask is dropped at input.
	Changes []FieldChange `json:"changes,omitempty"`
	// Tool is the tool making the change (the plan's), for detection only
	// (GitNarrowingAllowed); not stored with the plan's resources.
	Tool string `json:"-"`
}

// FieldChange is the planned value of one field of a resource.
type FieldChange struct {
	// Field is a JSON pointer (RFC 6901); a list item is named by its
	// index in the live object's list.
	Field string `json:"field"`
	// Value is the planned JSON value.
	Value json.RawMessage `json:"value"`
}

// Changed returns the JSON pointers the change touches: ChangedFields,
// then the fields of Changes not already named, each once.
func (r ResourceRef) Changed() []string {
	if len(r.Changes) == 0 {
		return r.ChangedFields
	}
	out := slices.Clone(r.ChangedFields)
	for _, c := range r.Changes {
		if !slices.Contains(out, c.Field) {
			out = append(out, c.Field)
		}
	}
	return out
}

// Plan is an Action Plan: the approval-card record the agent creates before
// it runs a change. Payload is free-form JSON; readers must tolerate any shape.
type Plan struct {
	ID              string          `json:"id"`
	ClusterID       string          `json:"cluster_id"`
	ConversationID  string          `json:"conversation_id"`
	Visibility      Visibility      `json:"visibility"`
	Tool            string          `json:"tool"`
	Command         string          `json:"command"`
	Resources       []ResourceRef   `json:"resources"`
	Payload         json.RawMessage `json:"payload"`
	Status          PlanStatus      `json:"status"`
	CreatedBy       string          `json:"created_by"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	ApprovedBy      *string         `json:"approved_by"`
	ApprovedAt      *time.Time      `json:"approved_at"`
	RejectedBy      *string         `json:"rejected_by"`
	RejectedAt      *time.Time      `json:"rejected_at"`
	CompletedBy     *string         `json:"completed_by"`
	CompletedAt     *time.Time      `json:"completed_at"`
	Output          *string         `json:"output"`
	OutputTruncated bool            `json:"output_truncated"`
	// ArgoCDOverride records that a person approved a direct change to
	// Argo CD-managed resources ("ArgoCD 관리 리소스 직접 변경").
	ArgoCDOverride *ArgoCDOverride `json:"argocd_override"`

	// TeamID is the owning team; never serialised (the caller knows its team).
	TeamID string `json:"-"`
}

// ArgoCDOverride is who approved a change Argo CD will revert, when, and
// at which level.
type ArgoCDOverride struct {
	By    string    `json:"by"`
	At    time.Time `json:"at"`
	Level Level     `json:"level"`
}

// PlanFilter selects plans for a list; empty fields do not filter.
type PlanFilter struct {
	ClusterID      string
	Status         PlanStatus
	ConversationID string
	Kind           string // lower-cased
	Namespace      string
	Name           string
	Limit          int
	After          *PlanCursor
}

// PlanCursor is the position after which the next page starts (newest first).
type PlanCursor struct {
	CreatedAt time.Time `json:"t"`
	ID        string    `json:"id"`
}

// NewPlan is a validated plan to insert, with the idempotency data of its request.
type NewPlan struct {
	Plan Plan
	// Resolved holds, per resource (same order), what detection resolved;
	// resources beyond it are stored as given.
	Resolved       []ResolvedTarget
	IdempotencyKey string // "" when the request had none
	Fingerprint    string // hash of the normalised request, to detect key reuse
}

// PlanStore persists plans. Every method is scoped to the viewer's team and
// visibility: a plan the viewer cannot see is ENOTFOUND.
type PlanStore interface {
	// CreatePlan inserts the plan. When the same creator already used the
	// idempotency key, it returns the stored plan and replayed=true instead,
	// or ECONFLICT if that plan came from a different request.
	CreatePlan(ctx context.Context, np NewPlan, now time.Time) (p Plan, replayed bool, err error)
	GetPlan(ctx context.Context, viewer Principal, id string) (Plan, error)
	// ReplayPlan returns the plan the creator already made with this
	// idempotency key (found=false when none), or ECONFLICT when that plan
	// came from a different request.
	ReplayPlan(ctx context.Context, np NewPlan) (p Plan, found bool, err error)
	// ListPlans returns up to f.Limit plans, newest first, and whether more follow.
	ListPlans(ctx context.Context, viewer Principal, f PlanFilter) (plans []Plan, more bool, err error)
	// UpdatePlan locks the plan, lets update change it and stores the result,
	// with what the returned PlanChange adds, in one transaction. An error
	// from update aborts without writing.
	UpdatePlan(ctx context.Context, viewer Principal, id string, update func(*Plan) (PlanChange, error)) (Plan, error)
	// AppHistory returns plans on the cluster, visible to viewer, that
	// touched the app: a resource whose detected app is it, or whose
	// resolved identity is one of the app's resources. Newest first.
	AppHistory(ctx context.Context, viewer Principal, q AppHistoryQuery) (plans []Plan, more bool, err error)
}

// AppHistoryQuery selects the plans of one app.
type AppHistoryQuery struct {
	ClusterID             string
	AppNamespace, AppName string
	Resources             []ResolvedTarget // the app's status.resources (Kind lower-cased)
	Limit                 int
	After                 *PlanCursor
}

// PlanChange is what an update writes besides the plan's own columns.
type PlanChange struct {
	// Resolved, per resource position, is a re-detection's result. Only
	// targets with Checked set replace the stored join columns; the others
	// keep what was stored before.
	Resolved []ResolvedTarget
}

// Plans is the Action Plan use case: creation, reads and the lifecycle rules.
type Plans struct {
	Store PlanStore
	// Masker drops planned values the masker would mask (nil: none).
	Masker   ValueMasker
	Clusters ClusterStore // a plan's cluster must be one of the team's
	// Detector runs ownership detection for plans of mutating tools, at
	// creation and again at approval; nil disables it.
	Detector      OwnershipDetector
	MutatingTools map[string]bool
	Now           func() time.Time
	// PendingPauses are the waits before each background re-detection of a
	// plan with pending Git fields (nil: DefaultPendingPauses).
	PendingPauses []time.Duration
	// Done, closed when the server shuts down, ends the background fills
	// (their detection too); nil: they run their course.
	Done <-chan struct{}

	pending pendingFills
}

// DefaultMutatingTools are the agent tools that change a cluster.
var DefaultMutatingTools = []string{"apply_manifest", "patch_resource", "scale_resource", "delete_resource", "restart_rollout"}

func (s *Plans) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// Create validates in and stores a pending plan created by the caller. With an
// idempotency key, a retry returns the first plan and replayed=true.
func (s *Plans) Create(ctx context.Context, p Principal, in PlanInput, idempotencyKey string) (Plan, bool, error) {
	if idempotencyKey != "" && !ValidIdempotencyKey(idempotencyKey) {
		return Plan{}, false, &Error{Code: EVALIDATION, Message: "The Idempotency-Key header is invalid.",
			Fields: []FieldError{{Field: "Idempotency-Key", Message: "must be 1 to 255 visible ASCII characters"}}}
	}
	in, err := in.validate()
	if err != nil {
		return Plan{}, false, err
	}
	in.Resources = DropMaskedChanges(in.Resources, s.Masker) // before anything keeps or hashes them
	cluster, err := s.Clusters.GetCluster(ctx, p.TeamID, in.ClusterID)
	if err != nil {
		return Plan{}, false, err
	}
	canonical, err := json.Marshal(in)
	if err != nil {
		return Plan{}, false, WrapError(EINTERNAL, "encode plan", err)
	}
	sum := sha256.Sum256(canonical) // of the client's request, before the server adds to it
	fingerprint := hex.EncodeToString(sum[:])
	if idempotencyKey != "" {
		// A retry is answered before detection runs again for nothing.
		probe := NewPlan{Plan: Plan{TeamID: p.TeamID, CreatedBy: p.UserID}, IdempotencyKey: idempotencyKey, Fingerprint: fingerprint}
		if plan, found, err := s.Store.ReplayPlan(ctx, probe); err != nil || found {
			return plan, found, err
		}
	}
	var resolved []ResolvedTarget
	pendingGit := false
	if s.detects(in.Tool) && len(in.Resources) > 0 {
		own := s.Detector.Detect(ctx, cluster, WithTool(in.Resources, in.Tool), "ko")
		resolved, pendingGit = own.Resolved, hasPendingGit(own.ArgoCD)
		if in.Payload, err = withDetection(in.Payload, own); err != nil {
			return Plan{}, false, err
		}
	} else if in.Payload, err = withDetection(in.Payload, Ownership{}); err != nil {
		// Only the server writes payload.argocd and payload.access: what a
		// client sends for a plan detection does not run on (a tool that
		// changes nothing) would stand as the server's word, and
		// git-change would read it.
		return Plan{}, false, err
	}
	// A client never writes the stop-sync records; the routes that make
	// those plans do.
	server := map[string]any{"argocd_pause": nil, "argocd_resume": nil}
	maps.Copy(server, in.server)
	if in.Payload, err = withServerParts(in.Payload, server); err != nil {
		return Plan{}, false, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Plan{}, false, WrapError(EINTERNAL, "generate plan id", err)
	}
	now := s.now()
	plan := Plan{
		ID:             id.String(),
		TeamID:         p.TeamID,
		ClusterID:      in.ClusterID,
		ConversationID: in.ConversationID,
		Visibility:     in.Visibility,
		Tool:           in.Tool,
		Command:        in.Command,
		Resources:      in.Resources,
		Payload:        in.Payload,
		Status:         PlanPending,
		CreatedBy:      p.UserID,
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	created, replayed, err := s.Store.CreatePlan(ctx, NewPlan{Plan: plan, Resolved: resolved, IdempotencyKey: idempotencyKey,
		Fingerprint: fingerprint}, now)
	if err == nil && !replayed && pendingGit {
		s.fillPending(created)
	}
	return created, replayed, err
}

// Get returns one plan visible to the caller.
func (s *Plans) Get(ctx context.Context, p Principal, id string) (Plan, error) {
	if !validPlanID(id) {
		return Plan{}, ErrPlanNotFound()
	}
	return s.Store.GetPlan(ctx, p, id)
}

func (s *Plans) detects(tool string) bool { return s.Detector != nil && s.MutatingTools[tool] }

// withArgoCD sets payload.argocd to the server's detection result (removing
// it when nothing is managed): the client's own value never stands.
func withArgoCD(payload json.RawMessage, w *ArgoCDWarning) (json.RawMessage, error) {
	var v any
	if w != nil {
		v = w
	}
	return withServerParts(payload, map[string]any{"argocd": v})
}

// withDetection sets what detection writes into a plan's payload: argocd
// (the warning) and access (a LIMITED cluster's answer per target), each
// removed when absent. The other server-written keys (argocd_pause,
// argocd_resume) are left as they are: a recheck at approval must keep
// them; creation strips a client's.
func withDetection(payload json.RawMessage, own Ownership) (json.RawMessage, error) {
	parts := map[string]any{"argocd": nil, "access": nil}
	if own.ArgoCD != nil {
		parts["argocd"] = own.ArgoCD
	}
	if len(own.Access) > 0 {
		parts["access"] = own.Access
	}
	return withServerParts(payload, parts)
}

// withServerParts sets the payload keys only the server writes (nil
// removes one): a client's own value never stands.
func withServerParts(payload json.RawMessage, parts map[string]any) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(payload, &fields); err != nil {
		return nil, WrapError(EINTERNAL, "decode payload", err)
	}
	for key, v := range parts {
		delete(fields, key)
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, WrapError(EINTERNAL, "encode "+key, err)
		}
		fields[key] = b
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, WrapError(EINTERNAL, "encode payload", err)
	}
	return out, nil
}

// ErrPlanNotFound is the answer for a plan the caller cannot see.
func ErrPlanNotFound() error { return Errorf(ENOTFOUND, "The plan does not exist.") }

func validPlanID(id string) bool { return ValidUUID(id) }
