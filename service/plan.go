package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
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
	// Tool is the tool making the change (the plan's), for detection only
	// (GitNarrowingAllowed); not stored with the plan's resources.
	Tool string `json:"-"`
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
	Store    PlanStore
	Clusters ClusterStore // a plan's cluster must be one of the team's
	// Detector runs ownership detection for plans of mutating tools, at
	// creation and again at approval; nil disables it.
	Detector      OwnershipDetector
	MutatingTools map[string]bool
	Now           func() time.Time
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
	if s.detects(in.Tool) && len(in.Resources) > 0 {
		own := s.Detector.Detect(ctx, cluster, WithTool(in.Resources, in.Tool), "ko")
		resolved = own.Resolved
		if in.Payload, err = withArgoCD(in.Payload, own.ArgoCD); err != nil {
			return Plan{}, false, err
		}
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
	return s.Store.CreatePlan(ctx, NewPlan{Plan: plan, Resolved: resolved, IdempotencyKey: idempotencyKey,
		Fingerprint: fingerprint}, now)
}

// Get returns one plan visible to the caller.
func (s *Plans) Get(ctx context.Context, p Principal, id string) (Plan, error) {
	if !validPlanID(id) {
		return Plan{}, ErrPlanNotFound()
	}
	return s.Store.GetPlan(ctx, p, id)
}

// PlanQuery is a list request as the client sends it.
type PlanQuery struct {
	ClusterID, Status, ConversationID, Kind, Namespace, Name string
	Limit                                                    int // 0 = default
	Cursor                                                   string
}

// PlanPage is one page of plans and the cursor of the next ("" when last).
type PlanPage struct {
	Items      []Plan `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// List returns the caller's visible plans matching q, newest first.
func (s *Plans) List(ctx context.Context, p Principal, q PlanQuery) (PlanPage, error) {
	var v ValidationErrors
	f := PlanFilter{
		ClusterID:      q.ClusterID,
		Status:         PlanStatus(q.Status),
		ConversationID: q.ConversationID,
		Kind:           strings.ToLower(q.Kind),
		Namespace:      q.Namespace,
		Name:           q.Name,
		Limit:          q.Limit,
	}
	if f.Status != "" && !f.Status.Valid() {
		v.Add("status", "must be one of pending, approved, rejected, executed, failed")
	}
	for field, val := range map[string]string{"cluster_id": q.ClusterID, "conversation_id": q.ConversationID,
		"kind": q.Kind, "namespace": q.Namespace, "name": q.Name} {
		checkText(&v, field, val, false, maxIDLength)
	}
	if err := v.Err(); err != nil {
		return PlanPage{}, err
	}
	if err := checkLimit(&f.Limit); err != nil {
		return PlanPage{}, err
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return PlanPage{}, Errorf(EINVALID, "The cursor is not one this server issued.")
		}
		f.After = &c
	}
	plans, more, err := s.Store.ListPlans(ctx, p, f)
	if err != nil {
		return PlanPage{}, err
	}
	page := PlanPage{Items: plans}
	if page.Items == nil {
		page.Items = []Plan{}
	}
	if more && len(plans) > 0 {
		last := plans[len(plans)-1]
		page.NextCursor = encodeCursor(PlanCursor{CreatedAt: last.CreatedAt, ID: last.ID})
	}
	return page, nil
}

// Approve moves a pending plan to approved. A person decides: the route
// table (api/routes.go, humanOnly) refuses an agent token even when it also
// carries member or admin — role rules live there, in one place, where
// OpenAPI documents them and the tenancy matrix walks every route.
func (s *Plans) Approve(ctx context.Context, p Principal, id string) (Plan, error) {
	return s.decide(ctx, p, id, PlanApproved)
}

// Reject moves a pending plan to rejected, under the same rules as Approve.
func (s *Plans) Reject(ctx context.Context, p Principal, id string) (Plan, error) {
	return s.decide(ctx, p, id, PlanRejected)
}

func (s *Plans) decide(ctx context.Context, p Principal, id string, to PlanStatus) (Plan, error) {
	if !validPlanID(id) {
		return Plan{}, ErrPlanNotFound()
	}
	// Approval checks ownership again — the cluster may have changed since
	// the plan was made — without ever blocking the approval.
	var recheck *Ownership
	if to == PlanApproved {
		current, err := s.Store.GetPlan(ctx, p, id)
		if err != nil {
			return Plan{}, err
		}
		if current.Status == PlanPending && s.detects(current.Tool) && len(current.Resources) > 0 {
			if cluster, err := s.Clusters.GetCluster(ctx, p.TeamID, current.ClusterID); err == nil {
				own := s.Detector.Recheck(ctx, cluster, WithTool(current.Resources, current.Tool), ArgoCDFromPayload(current.Payload), "ko")
				recheck = &own
			}
		}
	}
	now := s.now()
	return s.Store.UpdatePlan(ctx, p, id, func(plan *Plan) (PlanChange, error) {
		var change PlanChange
		if plan.Status != PlanPending {
			return change, Errorf(ECONFLICT, "The plan is %s; only a pending plan can be %s.", plan.Status, to)
		}
		plan.Status = to
		plan.UpdatedAt = now
		user := p.UserID
		if to == PlanRejected {
			plan.RejectedBy, plan.RejectedAt = &user, &now
			return change, nil
		}
		plan.ApprovedBy, plan.ApprovedAt = &user, &now
		if recheck != nil {
			payload, err := withArgoCD(plan.Payload, recheck.ArgoCD)
			if err != nil {
				return change, err
			}
			plan.Payload = payload
			// The history join follows what the recheck could read.
			change.Resolved = recheck.Resolved
		}
		// Only a server-made payload.argocd (mutating tools) counts: a
		// client's own value is not the server's warning.
		if w := ArgoCDFromPayload(plan.Payload); s.detects(plan.Tool) && w != nil && w.Level != "" {
			plan.ArgoCDOverride = &ArgoCDOverride{By: user, At: now, Level: w.Level}
		}
		return change, nil
	})
}

func (s *Plans) detects(tool string) bool { return s.Detector != nil && s.MutatingTools[tool] }

// withArgoCD sets payload.argocd to the server's detection result (removing
// it when nothing is managed): the client's own value never stands.
func withArgoCD(payload json.RawMessage, w *ArgoCDWarning) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(payload, &fields); err != nil {
		return nil, WrapError(EINTERNAL, "decode payload", err)
	}
	delete(fields, "argocd")
	if w != nil {
		b, err := json.Marshal(w)
		if err != nil {
			return nil, WrapError(EINTERNAL, "encode argocd", err)
		}
		fields["argocd"] = b
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, WrapError(EINTERNAL, "encode payload", err)
	}
	return out, nil
}

// RecordResult stores the outcome of an approved plan. Only the agent acting
// for the plan's creator reports it (the run happens in that user's
// conversation). Repeating an identical report answers with the stored plan
// (agents retry); a different one after completion is a conflict.
func (s *Plans) RecordResult(ctx context.Context, p Principal, id string, in ResultInput) (Plan, error) {
	in, truncated, err := in.validate()
	if err != nil {
		return Plan{}, err
	}
	if !validPlanID(id) {
		return Plan{}, ErrPlanNotFound()
	}
	now := s.now()
	return s.Store.UpdatePlan(ctx, p, id, func(plan *Plan) (PlanChange, error) {
		if plan.CreatedBy != p.UserID {
			return PlanChange{}, Errorf(EFORBIDDEN, "Only the agent acting for the plan's creator can record its result.")
		}
		switch {
		case plan.Status == in.Outcome && plan.Output != nil && *plan.Output == in.Output:
			return PlanChange{}, nil // an identical retry
		case plan.Status != PlanApproved:
			return PlanChange{}, Errorf(ECONFLICT, "The plan is %s; a result can be recorded only for an approved plan.", plan.Status)
		}
		user, output := p.UserID, in.Output
		plan.Status = in.Outcome
		plan.UpdatedAt = now
		plan.CompletedBy, plan.CompletedAt = &user, &now
		plan.Output, plan.OutputTruncated = &output, truncated
		return PlanChange{}, nil
	})
}

// ParseLimit reads a page-size query parameter (plans and Kukie history):
// absent is the default; a value that is not an integer is malformed
// (EINVALID); a number outside 1..MaxPlanPageSize breaks a rule
// (EVALIDATION). Both name the field limit.
func ParseLimit(s string) (int, error) {
	if s == "" {
		return DefaultPlanPageSize, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, &Error{Code: EINVALID, Message: "limit must be an integer.",
			Fields: []FieldError{{Field: "limit", Message: "must be an integer"}}}
	}
	if n == 0 {
		n = -1 // an explicit 0 is out of range, not "the default"
	}
	return n, checkLimit(&n)
}

// checkLimit validates a page size; 0 (not given) becomes the default.
func checkLimit(n *int) error {
	switch {
	case *n == 0:
		*n = DefaultPlanPageSize
	case *n < 1 || *n > MaxPlanPageSize:
		var v ValidationErrors
		v.Add("limit", "must be between 1 and %d", MaxPlanPageSize)
		return v.Err()
	}
	return nil
}

// ErrPlanNotFound is the answer for a plan the caller cannot see.
func ErrPlanNotFound() error { return Errorf(ENOTFOUND, "The plan does not exist.") }

func validPlanID(id string) bool { return ValidUUID(id) }

func encodeCursor(c PlanCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (PlanCursor, error) {
	var c PlanCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if !validPlanID(c.ID) || c.CreatedAt.IsZero() {
		return c, Errorf(EINVALID, "bad cursor")
	}
	return c, nil
}
