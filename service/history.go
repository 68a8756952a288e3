package service

import (
	"context"
	"strings"
	"time"
)

// HistoryNotice tells users the history holds only changes made through Kukie.
const HistoryNotice = "Kukie 로 한 변경만 보여요"

// ObjectRef names one Kubernetes object as the cluster spells its kind.
type ObjectRef struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// HistoryItem is one Action Plan in an app's Kukie history.
type HistoryItem struct {
	PlanID         string          `json:"plan_id"`
	ConversationID string          `json:"conversation_id"`
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
	// OutOfSyncResources are the plan's resources the app reports OutOfSync
	// now: "was this OutOfSync caused by a change made in chat?". Empty when
	// the app could not be read.
	OutOfSyncResources []ObjectRef `json:"out_of_sync_resources"`
}

// History is a page of an app's Kukie history.
type History struct {
	Notice     string        `json:"notice"`
	Items      []HistoryItem `json:"items"`
	NextCursor string        `json:"next_cursor"`
	// Partial is set when the app could not be read from the cluster: the
	// items are then the plans stored with this app as their detected app
	// (a deleted app still has the plans that touched it), and
	// PartialReason says why.
	Partial       bool    `json:"partial"`
	PartialReason *Reason `json:"partial_reason"`
}

// partialReasons are the reasons a history can be partial.
var partialReasons = map[Reason]bool{
	ReasonClusterUnreachable: true, ReasonArgoCDForbidden: true, ReasonArgoCDNotInstalled: true, ReasonAppNotFound: true,
}

// History returns the Action Plans visible to the caller that touched the
// app: per user, so never cached. History is database data: when the
// cluster cannot be read, or the app is gone, it answers from the stored
// app join alone and says so, because that is when users debug.
func (s *ArgoCD) History(ctx context.Context, p Principal, clusterID, appID string, limit int, cursor string) (History, error) {
	q := AppHistoryQuery{ClusterID: clusterID, Limit: limit}
	if err := checkLimit(&q.Limit); err != nil {
		return History{}, err
	}
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return History{}, Errorf(EINVALID, "The cursor is not one this server issued.")
		}
		q.After = &c
	}
	cl, err := s.fullCluster(ctx, p, clusterID)
	if err != nil {
		return History{}, err
	}
	h := History{Notice: HistoryNotice, Items: []HistoryItem{}}
	var app *Application
	snap := s.Cache.Get(ctx, cl, false)
	switch {
	case ctx.Err() != nil:
		return History{}, ctx.Err()
	case snap.Err != nil:
		reason := ErrorReason(snap.Err)
		if !partialReasons[reason] {
			reason = ReasonClusterUnreachable
		}
		h.Partial, h.PartialReason = true, &reason
	default:
		if a, ok := snap.App(appID); ok {
			app = &a
		} else {
			reason := ReasonAppNotFound
			h.Partial, h.PartialReason = true, &reason
		}
	}
	q.AppNamespace, q.AppName = ParseAppID(appID, cl.ArgoCDNamespace)
	if app != nil {
		q.AppNamespace, q.AppName = app.Namespace, app.Name
		for _, r := range app.Resources {
			q.Resources = append(q.Resources, ResolvedTarget{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
		}
	}
	found, more, err := s.Plans.AppHistory(ctx, p, q)
	if err != nil {
		return History{}, err
	}
	for _, pl := range found {
		item := HistoryItem{PlanID: pl.ID, ConversationID: pl.ConversationID, Status: pl.Status, Tool: pl.Tool,
			Command: pl.Command, CreatedBy: pl.CreatedBy, CreatedAt: pl.CreatedAt, ApprovedBy: pl.ApprovedBy,
			ApprovedAt: pl.ApprovedAt, CompletedAt: pl.CompletedAt, Resources: pl.Resources,
			ArgoCDOverride: pl.ArgoCDOverride, ArgoCD: ArgoCDFromPayload(pl.Payload), OutOfSyncResources: []ObjectRef{}}
		if app != nil {
			item.OutOfSyncResources = outOfSync(*app, pl.Resources)
		}
		h.Items = append(h.Items, item)
	}
	if more && len(found) > 0 {
		last := found[len(found)-1]
		h.NextCursor = encodeCursor(PlanCursor{CreatedAt: last.CreatedAt, ID: last.ID})
	}
	return h, nil
}

// outOfSync returns the app's OutOfSync rows that are among the plan's
// resources. Kinds are compared in canonical form (a plan may say deploy);
// a plan resource without a namespace is kubectl's "default".
func outOfSync(app Application, resources []ResourceRef) []ObjectRef {
	out := []ObjectRef{}
	for _, row := range app.Resources {
		if row.Status != "OutOfSync" {
			continue
		}
		group, kind := CanonicalKind(row.Group, row.Kind)
		for _, r := range resources {
			g, k := CanonicalKind(r.Group, r.Kind)
			ns := r.Namespace
			if ns == "" && row.Namespace == "default" {
				ns = "default"
			}
			if g == group && k == kind && r.Name == row.Name && ns == row.Namespace {
				out = append(out, ObjectRef{Group: row.Group, Kind: row.Kind, Namespace: row.Namespace, Name: row.Name})
				break
			}
		}
	}
	return out
}

// ParseAppID splits an app's route id into its namespace and name: the
// inverse of AppID. An id without "_" names an app in controlNamespace
// ("_" cannot occur in Kubernetes names, so the first one separates).
func ParseAppID(id, controlNamespace string) (namespace, name string) {
	if ns, n, ok := strings.Cut(id, "_"); ok {
		return ns, n
	}
	return controlNamespace, id
}
