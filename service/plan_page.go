package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

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
