-- +goose Up
-- What ownership detection found for each plan resource, for the Kukie
-- history join: the resource as the cluster resolved it (match_* — the
-- given group/kind when it could not be resolved) and the app managing it.
ALTER TABLE plan_resources
    ADD COLUMN changed_fields  text[] NOT NULL DEFAULT '{}',
    ADD COLUMN match_group     text   NOT NULL DEFAULT '',
    ADD COLUMN match_kind      text   NOT NULL DEFAULT '',
    ADD COLUMN match_namespace text   NOT NULL DEFAULT '',
    ADD COLUMN app_namespace   text,
    ADD COLUMN app_name        text;
UPDATE plan_resources SET match_group = api_group, match_kind = kind_lower, match_namespace = namespace;
CREATE INDEX plan_resources_app ON plan_resources (team_id, cluster_id, app_name, app_namespace)
    WHERE app_name IS NOT NULL;
CREATE INDEX plan_resources_match ON plan_resources (team_id, cluster_id, name, match_kind, match_namespace, match_group);

-- Who approved a change to Argo CD-managed resources, and at which level.
ALTER TABLE plans ADD COLUMN argocd_override jsonb;

-- +goose Down
ALTER TABLE plans DROP COLUMN argocd_override;
DROP INDEX plan_resources_match;
DROP INDEX plan_resources_app;
ALTER TABLE plan_resources DROP COLUMN changed_fields, DROP COLUMN match_group, DROP COLUMN match_kind,
    DROP COLUMN match_namespace, DROP COLUMN app_namespace, DROP COLUMN app_name;
