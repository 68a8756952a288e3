package service

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultPendingPauses are the waits before each background re-detection
// of a plan whose Git fields were pending: the repository fetch the
// detection budget cut goes on meanwhile (the fetcher keeps it), so a
// later detection finds the tree cached.
var DefaultPendingPauses = []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}

// maxPendingFills bounds the plans completed in the background at once per
// replica; a plan beyond it keeps its pending fields (approval detects again).
const maxPendingFills = 16

// errPlanMoved aborts a fill: the plan was approved, rejected or changed
// since it was created.
var errPlanMoved = errors.New("the plan changed since its detection")

// pendingFills is the background completion of pending Git fields.
type pendingFills struct {
	once  sync.Once
	slots chan struct{}
}

// hasPendingGit reports whether a warning holds a field whose Git state is
// pending.
func hasPendingGit(w *ArgoCDWarning) bool {
	if w == nil {
		return false
	}
	for _, r := range w.Resources {
		for _, f := range r.Fields {
			if f.Git != nil && f.Git.State == GitPending {
				return true
			}
		}
	}
	return false
}

// fillPending completes, in the background, a plan whose detection left
// Git fields pending: after each pause it detects again and, once nothing
// is pending, stores the new payload.argocd — only while the plan is still
// pending and unchanged since creation (compare-and-set on updated_at), so
// an approval's re-detection is never overwritten. Lost on restart:
// approval detects again. The app polls GET /v1/plans/{id}.
func (s *Plans) fillPending(plan Plan, cluster Cluster) {
	s.pending.once.Do(func() { s.pending.slots = make(chan struct{}, maxPendingFills) })
	select {
	case s.pending.slots <- struct{}{}:
	default:
		return // busy: approval detects again
	}
	go func() {
		defer func() { <-s.pending.slots }()
		pauses := s.PendingPauses
		if pauses == nil {
			pauses = DefaultPendingPauses
		}
		for _, pause := range pauses {
			time.Sleep(pause)
			own := s.Detector.Detect(context.Background(), cluster, WithTool(plan.Resources, plan.Tool), "ko")
			if own.Skipped != nil || hasPendingGit(own.ArgoCD) {
				continue
			}
			s.storeFilled(plan, own.ArgoCD)
			return
		}
	}()
}

// storeFilled writes the completed warning when the plan has not moved.
func (s *Plans) storeFilled(plan Plan, w *ArgoCDWarning) {
	viewer := Principal{TeamID: plan.TeamID, UserID: plan.CreatedBy}
	_, _ = s.Store.UpdatePlan(context.Background(), viewer, plan.ID, func(p *Plan) (PlanChange, error) {
		if p.Status != PlanPending || !p.UpdatedAt.Equal(plan.UpdatedAt) {
			return PlanChange{}, errPlanMoved
		}
		payload, err := withArgoCD(p.Payload, w)
		if err != nil {
			return PlanChange{}, err
		}
		p.Payload, p.UpdatedAt = payload, s.now()
		return PlanChange{}, nil
	})
}
