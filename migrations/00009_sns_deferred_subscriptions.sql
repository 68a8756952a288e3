-- +goose Up
-- A SubscriptionConfirmation of a topic no account lists is no longer
-- verified on receipt (that would fetch a certificate for anyone's forged
-- message): it is kept unverified, its whole signed envelope (sns.Message as
-- JSON) in envelope, and verified by its confirmation job once an account
-- lists the topic. envelope is '' for rows earlier versions verified on
-- receipt. At most one row per topic (the newest received replaces it), and
-- a bounded total (service.Webhook.PendingMax): the oldest go first.
DELETE FROM sns_pending_subscriptions p
WHERE EXISTS (SELECT 1 FROM sns_pending_subscriptions q
              WHERE q.topic_arn = p.topic_arn AND (q.received_at, q.message_id) > (p.received_at, p.message_id));
ALTER TABLE sns_pending_subscriptions ADD COLUMN envelope text NOT NULL DEFAULT '';
ALTER TABLE sns_pending_subscriptions DROP CONSTRAINT sns_pending_subscriptions_pkey;
DROP INDEX sns_pending_subscriptions_topic;
ALTER TABLE sns_pending_subscriptions ADD PRIMARY KEY (topic_arn);
CREATE INDEX sns_pending_subscriptions_received ON sns_pending_subscriptions (received_at, message_id);

-- +goose Down
-- Earlier versions confirm a row without verifying it: unverified rows go.
DELETE FROM sns_pending_subscriptions WHERE envelope <> '';
DROP INDEX sns_pending_subscriptions_received;
ALTER TABLE sns_pending_subscriptions DROP CONSTRAINT sns_pending_subscriptions_pkey;
ALTER TABLE sns_pending_subscriptions ADD PRIMARY KEY (message_id);
CREATE INDEX sns_pending_subscriptions_topic ON sns_pending_subscriptions (topic_arn);
ALTER TABLE sns_pending_subscriptions DROP COLUMN envelope;
