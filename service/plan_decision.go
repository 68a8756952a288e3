package service

import "context"

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
			payload, err := withDetection(plan.Payload, *recheck)
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
