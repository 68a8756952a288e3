package service

import "context"

// ConfirmTopics starts the confirmation of subscriptions that arrived for
// the account's topics before the account listed them. Failures are logged:
// the subscriptions stay pending and the next reconcile tries again.
func (s *Switches) ConfirmTopics(ctx context.Context, a Account) {
	if s.Trigger == nil || a.State == AccountDeleting {
		return
	}
	for _, topic := range a.NotificationARNs {
		own, err := s.ownTopic(ctx, a, topic)
		if err != nil {
			s.log().Warn("pending SNS subscriptions not confirmed yet", "team", a.TeamID, "account", a.ID, "error", err)
			continue
		}
		if !own {
			continue // the webhook refuses this topic's messages: never subscribe to it
		}
		n, err := s.Trigger.ConfirmPending(ctx, topic, s.now())
		if err != nil {
			s.log().Warn("pending SNS subscriptions not confirmed yet", "team", a.TeamID, "account", a.ID, "error", err)
			continue
		}
		if n > 0 {
			s.log().Info("confirming SNS subscriptions received before the account listed the topic",
				"team", a.TeamID, "account", a.ID, "subscriptions", n)
		}
	}
}

// ownTopic reports whether topic is in the account's own AWS account and
// partition and listed by it: the only topics whose messages the webhook
// takes. The rule has one home, SwitchStore.AllowedTopic.
func (s *Switches) ownTopic(ctx context.Context, a Account, topic string) (bool, error) {
	teamID, accountID, found, err := s.Store.AllowedTopic(ctx, topic)
	return found && teamID == a.TeamID && accountID == a.ID, err
}

// Resubscribed is told that a subscription of topic was confirmed: an
// account disconnected by an unsubscription receives its stack's
// notifications again. It becomes confirmation_required (so a FULL stack
// cannot widen it on the way back) and its reconcile runs, which settles
// the state from the stack.
func (s *Switches) Resubscribed(ctx context.Context, topic string) error {
	teamID, accountID, found, err := s.Store.AllowedTopic(ctx, topic)
	if err != nil || !found {
		return err
	}
	a, err := s.Accounts.GetAccount(ctx, teamID, accountID)
	if err != nil {
		return err
	}
	if a.State != AccountDisconnected || a.StateReason != ReasonUnsubscribed {
		return nil
	}
	if _, err := s.Accounts.SetAccountState(ctx, teamID, accountID, AccountConfirmationRequired, reasonResubscribed, s.now()); err != nil {
		return err
	}
	s.log().Info("AWS account receives stack notifications again", "team", teamID, "account", accountID)
	if s.Trigger == nil {
		return nil
	}
	return s.Trigger.Request(ctx, teamID, accountID)
}
