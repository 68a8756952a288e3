-- +goose Up
-- Switching an account between full and limited from its CloudFormation
-- stack's notifications (issue 9). A verified notification bumps the
-- account's desired_generation; the reconcile job brings the clusters to
-- the stack's level and records the generation it applied, so the job loops
-- until applied_generation catches up with desired_generation.
ALTER TABLE aws_accounts
    ADD COLUMN desired_generation  bigint      NOT NULL DEFAULT 0,
    ADD COLUMN applied_generation  bigint      NOT NULL DEFAULT 0,
    -- The level an admin chose explicitly (PUT .../access-level or
    -- onboarding); NULL when nobody chose. A v5 stack at FULL widens access
    -- only when chosen_level = 'full': an upgrade from v4 never widens
    -- rights silently.
    ADD COLUMN chosen_level        text
        CONSTRAINT aws_accounts_chosen_level_check CHECK (chosen_level IN ('full', 'limited')),
    ADD COLUMN chosen_at           timestamptz,
    -- The newest stack event notified: AccessDeniedException is retried as
    -- IAM propagation for a while after it.
    ADD COLUMN last_stack_event_at timestamptz,
    ADD CONSTRAINT aws_accounts_generations_check
        CHECK (applied_generation >= 0 AND applied_generation <= desired_generation),
    ADD CONSTRAINT aws_accounts_chosen_check CHECK ((chosen_level IS NULL) = (chosen_at IS NULL));

-- Verified SNS messages bound to an account, kept to drop SNS's retries
-- (they reuse the MessageId). Only what identifies the event is stored:
-- never the body, a SubscribeURL, a Token or an UnsubscribeURL.
CREATE TABLE sns_messages (
    message_id      text        PRIMARY KEY,
    team_id         text        NOT NULL,
    account_id      text        NOT NULL,
    topic_arn       text        NOT NULL,
    type            text        NOT NULL
        CHECK (type IN ('Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation')),
    stack_id        text        NOT NULL DEFAULT '',
    resource_status text        NOT NULL DEFAULT '',
    event_time      timestamptz NOT NULL,
    received_at     timestamptz NOT NULL,
    FOREIGN KEY (team_id, account_id) REFERENCES aws_accounts (team_id, id) ON DELETE CASCADE
);

CREATE INDEX sns_messages_account ON sns_messages (team_id, account_id, received_at DESC);

-- Verified SubscriptionConfirmations from topics no account lists yet (the
-- customer subscribes before registering the account): confirmed when an
-- account registers the topic, dropped after expires_at (received_at plus
-- service.PendingSubscriptionTTL, 3 days).
-- subscribe_url and token confirm the subscription: they are never logged
-- nor returned by the API.
CREATE TABLE sns_pending_subscriptions (
    message_id    text        PRIMARY KEY,
    topic_arn     text        NOT NULL,
    subscribe_url text        NOT NULL,
    token         text        NOT NULL,
    received_at   timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    CHECK (expires_at > received_at)
);

CREATE INDEX sns_pending_subscriptions_topic ON sns_pending_subscriptions (topic_arn);
CREATE INDEX sns_pending_subscriptions_expires ON sns_pending_subscriptions (expires_at);

-- Every step of a level switch, before and after its AWS call: the account's
-- history with per-cluster outcomes. cluster_id is NULL for a step of the
-- account as a whole; it is not a foreign key, so the history of a removed
-- cluster stays.
CREATE TABLE access_changes (
    id          bigserial   PRIMARY KEY,
    team_id     text        NOT NULL,
    account_id  text        NOT NULL,
    cluster_id  text,
    generation  bigint      NOT NULL,
    from_level  text        NOT NULL CHECK (from_level IN ('full', 'limited')),
    to_level    text        NOT NULL CHECK (to_level IN ('full', 'limited')),
    step        text        NOT NULL CHECK (step <> ''),
    outcome     text        NOT NULL CHECK (outcome IN ('started', 'ok', 'gone', 'failed')),
    error       text        NOT NULL DEFAULT '',
    attempt     integer     NOT NULL CHECK (attempt >= 0),
    created_at  timestamptz NOT NULL,
    FOREIGN KEY (team_id, account_id) REFERENCES aws_accounts (team_id, id) ON DELETE CASCADE
);

-- The history, newest first.
CREATE INDEX access_changes_account_created ON access_changes (team_id, account_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE access_changes;
DROP TABLE sns_pending_subscriptions;
DROP TABLE sns_messages;
ALTER TABLE aws_accounts
    DROP CONSTRAINT aws_accounts_chosen_check,
    DROP CONSTRAINT aws_accounts_generations_check,
    DROP COLUMN last_stack_event_at,
    DROP COLUMN chosen_at,
    DROP COLUMN chosen_level,
    DROP COLUMN applied_generation,
    DROP COLUMN desired_generation;
