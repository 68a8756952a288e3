-- +goose Up
CREATE TABLE teams (
    id          text        PRIMARY KEY,
    external_id text        NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL
);

CREATE TABLE plans (
    team_id          text        NOT NULL REFERENCES teams (id),
    id               uuid        NOT NULL,
    cluster_id       text        NOT NULL,
    conversation_id  text        NOT NULL,
    visibility       text        NOT NULL CHECK (visibility IN ('private', 'shared')),
    tool             text        NOT NULL,
    command          text        NOT NULL,
    payload          jsonb       NOT NULL,
    status           text        NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'executed', 'failed')),
    created_by       text        NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    approved_by      text,
    approved_at      timestamptz,
    rejected_by      text,
    rejected_at      timestamptz,
    completed_by     text,
    completed_at     timestamptz,
    output           text,
    output_truncated boolean     NOT NULL DEFAULT false,
    idempotency_key  text,
    request_hash     text        NOT NULL,
    PRIMARY KEY (id),
    UNIQUE (team_id, id)
);

-- Idempotent creates: one key per creator within a team.
CREATE UNIQUE INDEX plans_idempotency_key ON plans (team_id, created_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Lists: newest first within a team, optionally per cluster or conversation.
CREATE INDEX plans_team_created ON plans (team_id, created_at DESC, id DESC);
CREATE INDEX plans_team_cluster_created ON plans (team_id, cluster_id, created_at DESC, id DESC);
CREATE INDEX plans_team_conversation ON plans (team_id, conversation_id);

-- The resources each plan touches, normalised so later features can join
-- plans to Kubernetes objects (kind lower-cased, '' for core group or
-- cluster-scoped objects).
CREATE TABLE plan_resources (
    team_id    text     NOT NULL,
    plan_id    uuid     NOT NULL,
    position   smallint NOT NULL,
    cluster_id text     NOT NULL,
    api_group  text     NOT NULL,
    kind       text     NOT NULL,
    kind_lower text     NOT NULL,
    namespace  text     NOT NULL,
    name       text     NOT NULL,
    PRIMARY KEY (plan_id, position),
    FOREIGN KEY (team_id, plan_id) REFERENCES plans (team_id, id) ON DELETE CASCADE
);

CREATE INDEX plan_resources_lookup ON plan_resources (team_id, cluster_id, kind_lower, namespace, name);
-- Plan lists filtered by resource without a cluster.
CREATE INDEX plan_resources_by_name ON plan_resources (team_id, name, kind_lower);

-- +goose Down
DROP TABLE plan_resources;
DROP TABLE plans;
DROP TABLE teams;
