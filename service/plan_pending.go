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

// Bounds of the plans completed in the background at once per replica, in
// all and per team (one team's slow Git host cannot hold every slot); a
// plan beyond them keeps its pending fields (approval detects again).
const (
	maxPendingFills        = 16
	maxPendingFillsPerTeam = 2
)

// errPlanMoved aborts a fill: the plan was approved, rejected or changed
// since it was created.
var errPlanMoved = errors.New("the plan changed since its detection")

// pendingFills is the background completion of pending Git fields.
type pendingFills struct {
	mu     sync.Mutex
	total  int
	byTeam map[string]int
}

// take reserves a slot for team, false when none is free.
func (f *pendingFills) take(team string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byTeam == nil {
		f.byTeam = map[string]int{}
	}
	if f.total >= maxPendingFills || f.byTeam[team] >= maxPendingFillsPerTeam {
		return false
	}
	f.total++
	f.byTeam[team]++
	return true
}

func (f *pendingFills) release(team string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if f.byTeam[team]--; f.byTeam[team] == 0 {
		delete(f.byTeam, team)
	}
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
func (s *Plans) fillPending(plan Plan) {
	if !s.pending.take(plan.TeamID) {
		return // busy: approval detects again
	}
	go func() {
		defer s.pending.release(plan.TeamID)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if s.Done != nil {
			go func() {
				select {
				case <-s.Done:
					cancel() // the server stops: so does the fill
				case <-ctx.Done():
				}
			}()
		}
		pauses := s.PendingPauses
		if pauses == nil {
			pauses = DefaultPendingPauses
		}
		for _, pause := range pauses {
			if !sleepCtx(ctx, pause) {
				return
			}
			// The cluster as it is now: its access or repository may have changed.
			cluster, err := s.Clusters.GetCluster(ctx, plan.TeamID, plan.ClusterID)
			if err != nil {
				return
			}
			own := s.Detector.Detect(ctx, cluster, WithTool(plan.Resources, plan.Tool), "ko")
			if ctx.Err() != nil {
				return
			}
			if own.Skipped != nil || hasPendingGit(own.ArgoCD) {
				continue
			}
			s.storeFilled(ctx, plan, own.ArgoCD)
			return
		}
	}()
}

// sleepCtx waits d, false when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// storeFilled writes the completed warning when the plan has not moved.
func (s *Plans) storeFilled(ctx context.Context, plan Plan, w *ArgoCDWarning) {
	viewer := Principal{TeamID: plan.TeamID, UserID: plan.CreatedBy}
	_, _ = s.Store.UpdatePlan(ctx, viewer, plan.ID, func(p *Plan) (PlanChange, error) {
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
