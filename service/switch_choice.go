package service

import (
	"context"
	"fmt"
	"strings"
)

// ChooseLevel records the level an admin chose for the account and starts
// the reconcile job that applies it. The stack stays the ceiling: choosing
// full on a LIMITED stack applies limited; choosing limited on a FULL stack
// applies limited; choosing full is what widens a v4 account's FULL stack.
func (s *Switches) ChooseLevel(ctx context.Context, p Principal, accountID string, level AccessLevel) (Account, error) {
	if level != AccessFull && level != AccessLimited {
		var v ValidationErrors
		v.Add("access_level", "must be full or limited")
		return Account{}, v.Err()
	}
	a, err := s.account(ctx, p, accountID)
	if err != nil {
		return a, err
	}
	if a.State == AccountDeleting {
		return a, ReasonError(ECONFLICT, ReasonConflict, "The AWS account is being disconnected.")
	}
	if s.AWS == nil || s.Trigger == nil {
		return a, ErrAWSUnavailable()
	}
	return s.Trigger.Choose(ctx, p.TeamID, accountID, level, s.now())
}

// AccessChangePage is a page of an account's switch history, newest
// first; NextBefore, when not 0, asks for the next page.
type AccessChangePage struct {
	Items      []AccessChange `json:"items"`
	NextBefore int64          `json:"next_before,omitempty"`
}

// History returns the account's switch steps, newest first: up to limit
// (checkLimit: 1–200, default 50) older than the step with id before (0: the newest).
func (s *Switches) History(ctx context.Context, p Principal, accountID string, limit int, before int64) (AccessChangePage, error) {
	if _, err := s.account(ctx, p, accountID); err != nil {
		return AccessChangePage{}, err
	}
	if err := checkLimit(&limit); err != nil {
		return AccessChangePage{}, err
	}
	var cursor *int64
	if before > 0 {
		cursor = &before
	}
	items, err := s.Store.ListAccessChanges(ctx, p.TeamID, accountID, limit, cursor)
	if err != nil {
		return AccessChangePage{}, err
	}
	page := AccessChangePage{Items: items}
	if len(items) == limit {
		page.NextBefore = items[len(items)-1].ID
	}
	return page, nil
}

func (s *Switches) account(ctx context.Context, p Principal, id string) (Account, error) {
	if id == "" || len(id) > maxIDLength {
		return Account{}, ErrAccountNotFound()
	}
	return s.Accounts.GetAccount(ctx, p.TeamID, id)
}

// record appends a step to the account's history; a failure to record is
// logged, not fatal: the AWS call's outcome still decides the state.
func (s *Switches) record(ctx context.Context, c AccessChange) {
	c.CreatedAt = s.now()
	wctx, cancel := finalWrite(ctx)
	defer cancel()
	if _, err := s.Store.RecordAccessChange(wctx, c); err != nil {
		s.log().Warn("access change not recorded", "team", c.TeamID, "account", c.AccountID, "cluster", c.ClusterID,
			"step", c.Step, "outcome", c.Outcome, "error", err)
	}
}

// stepName names a step for the history: the action and the policy's name
// ("associate AmazonEKSEditPolicy").
func stepName(step SwitchStep) string {
	if step.Policy == "" {
		return step.Action
	}
	name := step.Policy[strings.LastIndex(step.Policy, "/")+1:]
	if len(step.Scope) > 0 {
		return fmt.Sprintf("%s %s (%s)", step.Action, name, strings.Join(step.Scope, ","))
	}
	return step.Action + " " + name
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ErrorMessage(err)
}
