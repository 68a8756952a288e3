-- +goose Up
-- GitOps repository URLs stored before credentials were refused may hold a
-- token (https://ghp_x@github.com/org/repo) that every member of the team
-- saw. Drop the credentials and keep the URL, by the rule of
-- service.StripRepoCredentials (service/repo.go):
--   - scheme URLs other than ssh lose their whole user part:
--     https://tok@github.com/o/r -> https://github.com/o/r,
--     https://u:p@host/x -> https://host/x;
--   - ssh:// and scp-style URLs lose the password, and a user that is not a
--     plain name (git, deploy, alice: see plainRepoUser) becomes git:
--     ssh://tok@host/x -> ssh://git@host/x, ghp_x@github.com:o/r ->
--     git@github.com:o/r. Dropping the user instead would make ssh log in as
--     whoever runs git; git is the user of every major Git host, so the URL
--     keeps working and carries nothing secret;
--   - user@host/path without a scheme loses its user part.
-- A URL without credentials is left exactly as it is. Nothing is logged or
-- raised: the old values appear nowhere. The tokens were exposed and must be
-- rotated all the same (docs/operations.md).
--
-- Plans created before repo URLs were cleaned at parse time hold the same
-- kind of URL in their ownership answer, payload.argocd.applications[].repo_url
-- (service/argocd_payload.go), which GET /v1/plans/{id} returns as stored.
-- Those are cleaned by the same rule below.
--
-- The helpers are temporary (pg_temp): they die with this session.

-- +goose StatementBegin
CREATE FUNCTION pg_temp.kukie_plain_repo_user(u text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT u = 'git' OR (
        length(u) <= 32
        AND u ~ '^[a-z][a-z0-9._-]*$'
        AND length(regexp_replace(u, '[^0-9]', '', 'g')) <= 4
        AND u !~ '^(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|gldt-)')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION pg_temp.kukie_strip_repo_user(s text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    m text[];
    u text;
BEGIN
    IF s ~ '^[A-Za-z][A-Za-z0-9+.-]*:/' THEN
        -- scheme:/+ authority: the user part ends at its last "@".
        m := regexp_match(s, '^([A-Za-z][A-Za-z0-9+.-]*:/+)([^/?#]*)@(.*)$');
        IF m IS NULL THEN
            RETURN s;
        END IF;
        IF lower(m[1]) !~ '^(ssh|git\+ssh|ssh\+git):' THEN
            RETURN m[1] || m[3];
        END IF;
    ELSE
        -- No scheme: the user part ends at the last "@" before the host's
        -- ":" (scp-style) or before the first "/".
        m := regexp_match(s, '^([^/@]*(?:@[^/:@]*)*)@([^/:@]*)((?::|/).*)?$');
        IF m IS NULL THEN
            RETURN s;
        END IF;
        IF coalesce(m[3], '') !~ '^:' THEN
            RETURN m[2] || coalesce(m[3], '');
        END IF;
        m := ARRAY['', m[1], m[2] || m[3]];
    END IF;
    u := split_part(m[2], ':', 1);
    IF NOT pg_temp.kukie_plain_repo_user(u) THEN
        u := 'git';
    END IF;
    RETURN m[1] || u || '@' || m[3];
END
$$;
-- +goose StatementEnd

-- STRICT: a NULL would never compare equal in the loop below.
-- +goose StatementBegin
CREATE FUNCTION pg_temp.kukie_strip_repo_credentials(raw text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    -- Go's strings.TrimSpace: ASCII and Unicode white space at both ends.
    s text := regexp_replace(raw,
        '^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$',
        '', 'g');
    clean text := s;
    next text;
BEGIN
    -- Dropping a user part can join slashes and expose another authority:
    -- strip until nothing changes.
    LOOP
        next := pg_temp.kukie_strip_repo_user(clean);
        EXIT WHEN next = clean;
        clean := next;
    END LOOP;
    IF clean = s THEN
        RETURN raw;
    END IF;
    RETURN clean;
END
$$;
-- +goose StatementEnd

UPDATE clusters
SET gitops_repo = pg_temp.kukie_strip_repo_credentials(gitops_repo), updated_at = now()
WHERE gitops_repo <> pg_temp.kukie_strip_repo_credentials(gitops_repo);

-- One element of payload.argocd.applications with a string repo_url
-- stripped; any other element (not an object, no repo_url, a repo_url that
-- is not a string) comes back as it is. Without an "@" there is no user
-- part, so such URLs skip the plpgsql call. STABLE because to_jsonb is: a
-- truthful label lets PostgreSQL inline the body.
-- +goose StatementBegin
CREATE FUNCTION pg_temp.kukie_strip_app_repo_url(app jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(app) = 'object' AND jsonb_typeof(app -> 'repo_url') = 'string'
            AND strpos(app ->> 'repo_url', '@') > 0
        THEN jsonb_set(app, '{repo_url}', to_jsonb(pg_temp.kukie_strip_repo_credentials(app ->> 'repo_url')))
        ELSE app
    END
$$;
-- +goose StatementEnd

-- The payload is free-form: only a payload whose argocd.applications is an
-- array is read (-> yields NULL on any other shape, and the CASE keeps
-- jsonb_array_elements from seeing a non-array whatever order the planner
-- evaluates the conditions in), and only plans with an element that changes
-- are written. The rewrite replaces that array alone, elements in their
-- order; every other key and element stays as stored. plans.updated_at is
-- left alone: it is the plan's lifecycle time shown to users, and removing
-- credentials is not a step of the plan.
UPDATE plans
SET payload = jsonb_set(payload, '{argocd,applications}', (
    SELECT jsonb_agg(pg_temp.kukie_strip_app_repo_url(a.app) ORDER BY a.i)
    FROM jsonb_array_elements(payload -> 'argocd' -> 'applications') WITH ORDINALITY AS a (app, i)))
WHERE jsonb_typeof(payload -> 'argocd' -> 'applications') = 'array'
    AND EXISTS (
        SELECT FROM jsonb_array_elements(CASE
            WHEN jsonb_typeof(payload -> 'argocd' -> 'applications') = 'array'
            THEN payload -> 'argocd' -> 'applications'
        END) AS a (app)
        WHERE pg_temp.kukie_strip_app_repo_url(a.app) <> a.app);

DROP FUNCTION pg_temp.kukie_strip_app_repo_url(jsonb);
DROP FUNCTION pg_temp.kukie_strip_repo_credentials(text);
DROP FUNCTION pg_temp.kukie_strip_repo_user(text);
DROP FUNCTION pg_temp.kukie_plain_repo_user(text);

-- +goose Down
-- Nothing to undo: the credentials were removed on purpose and are not kept
-- anywhere, so going down leaves the cleaned URLs as they are.
