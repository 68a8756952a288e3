-- +goose Up
-- A team's cluster connections. Ids are chosen by operators and unique
-- within a team; two teams may register the same cluster under any ids.
CREATE TABLE clusters (
    team_id          text        NOT NULL REFERENCES teams (id),
    id               text        NOT NULL,
    name             text        NOT NULL,
    kind             text        NOT NULL CHECK (kind IN ('eks', 'static')),
    access_level     text        NOT NULL CHECK (access_level IN ('full', 'limited')),
    namespaces       text[]      NOT NULL DEFAULT '{}',
    argocd_namespace text        NOT NULL DEFAULT 'argocd',
    gitops_repo      text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, id)
);

-- +goose Down
DROP TABLE clusters;
