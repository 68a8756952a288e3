-- +goose Up
-- Argo CD snapshots shared by every replica (issue 12): one row per
-- (team, cluster), so a cluster is read once per window however many
-- replicas serve it. UNLOGGED: a snapshot is a cache that any replica can
-- rebuild with one read, so it skips the WAL (cheap writes) and is emptied
-- after a crash, which costs one read per cluster.
--
-- Rolling updates follow expand/contract: a new server version only adds
-- columns with defaults (or a new table) and still writes what the old one
-- reads; a later release drops what no running version reads. A new
-- encoding bumps schema_version instead: replicas ignore rows of another
-- version and read the cluster again.
CREATE UNLOGGED TABLE cluster_snapshots (
    team_id         text        NOT NULL,
    cluster_id      text        NOT NULL,
    schema_version  integer     NOT NULL,
    -- When the read started, by the database's clock (replica clocks skew).
    -- -infinity until the first read is written.
    fetched_at      timestamptz NOT NULL DEFAULT '-infinity',
    -- The read lease: the replica reading the cluster now, and until when.
    -- Taken by an autocommit compare-and-set, never a lock held across the
    -- read.
    lease_owner     text,
    lease_until     timestamptz NOT NULL DEFAULT '-infinity',
    -- sha256 of the encoding (service.EncodeSnapshot, gob); the encoding is
    -- rewritten only when it changes.
    content_hash    text        NOT NULL DEFAULT '',
    encoding        bytea,
    -- The app counts for the sidebar, without decoding the encoding; NULL
    -- for a failed read.
    summary         jsonb,
    failure_code    text,
    failure_reason  text,
    PRIMARY KEY (team_id, cluster_id),
    -- A removed cluster's snapshot goes with it: an id registered again
    -- (perhaps for another cluster) never serves the old one's apps.
    FOREIGN KEY (team_id, cluster_id) REFERENCES clusters (team_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE cluster_snapshots;
