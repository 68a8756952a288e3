package service

import (
	"context"
	"time"
)

// HistoryNotice tells users the history holds only changes made through Kukie.
const HistoryNotice = "Kukie 로 한 변경만 보여요"

// HistoryItem is one Action Plan in an app's Kukie history.
type HistoryItem struct {
	PlanID         string          `json:"plan_id"`
	Status         PlanStatus      `json:"status"`
	Tool           string          `json:"tool"`
	Command        string          `json:"command"`
	CreatedBy      string          `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
	ApprovedBy     *string         `json:"approved_by"`
	ApprovedAt     *time.Time      `json:"approved_at"`
	CompletedAt    *time.Time      `json:"completed_at"`
	Resources      []ResourceRef   `json:"resources"`
	ArgoCDOverride *ArgoCDOverride `json:"argocd_override"`
	ArgoCD         *ArgoCDWarning  `json:"argocd"`
}

// History is a page of an app's Kukie history.
type History struct {
	Notice     string        `json:"notice"`
	Items      []HistoryItem `json:"items"`
	NextCursor string        `json:"next_cursor"`
}

// History returns the Action Plans visible to the caller that touched the
// app: per user, so never cached.
func (s *ArgoCD) History(ctx context.Context, p Principal, clusterID, appID string, limit int, cursor string) (History, error) {
	if limit == 0 {
		limit = DefaultPlanPageSize
	}
	if limit < 1 || limit > MaxPlanPageSize {
		var v ValidationErrors
		v.Add("limit", "must be between 1 and %d", MaxPlanPageSize)
		return History{}, v.Err()
	}
	q := AppHistoryQuery{ClusterID: clusterID, Limit: limit}
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return History{}, Errorf(EINVALID, "The cursor is not one this server issued.")
		}
		q.After = &c
	}
	app, _, err := s.Detail(ctx, p, clusterID, appID)
	if err != nil {
		return History{}, err
	}
	q.AppNamespace, q.AppName = app.Namespace, app.Name
	for _, r := range app.Resources {
		q.Resources = append(q.Resources, ResolvedTarget{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	found, more, err := s.Plans.AppHistory(ctx, p, q)
	if err != nil {
		return History{}, err
	}
	h := History{Notice: HistoryNotice, Items: []HistoryItem{}}
	for _, pl := range found {
		h.Items = append(h.Items, HistoryItem{PlanID: pl.ID, Status: pl.Status, Tool: pl.Tool, Command: pl.Command,
			CreatedBy: pl.CreatedBy, CreatedAt: pl.CreatedAt, ApprovedBy: pl.ApprovedBy, ApprovedAt: pl.ApprovedAt,
			CompletedAt: pl.CompletedAt, Resources: pl.Resources, ArgoCDOverride: pl.ArgoCDOverride,
			ArgoCD: ArgoCDFromPayload(pl.Payload)})
	}
	if more && len(found) > 0 {
		last := found[len(found)-1]
		h.NextCursor = encodeCursor(PlanCursor{CreatedAt: last.CreatedAt, ID: last.ID})
	}
	return h, nil
}
