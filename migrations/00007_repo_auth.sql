-- +goose Up
-- How Kukie authenticates to a cluster's GitOps repository (issue 11). One
-- row per cluster that has credentials; none means anonymous. Secrets are
-- stored sealed (AES-256-GCM, service.SealRepoAuth with secretbox) and bound
-- to (team, cluster, field): a sealed value copied to another row does not
-- open. Nothing here is returned by the API except auth_type, username and
-- fingerprint.
CREATE TABLE cluster_repo_auth (
    team_id            text        NOT NULL,
    cluster_id         text        NOT NULL,
    -- none: anonymous; https_token: HTTP basic auth with a token;
    -- ssh_key: an SSH private key with pinned host keys.
    auth_type          text        NOT NULL CHECK (auth_type IN ('none', 'https_token', 'ssh_key')),
    -- The user name given with the credentials ('' lets the Git client
    -- choose: the URL's user for ssh, a placeholder for tokens).
    username           text        NOT NULL DEFAULT '',
    -- The token, sealed ("v1:<key id>:<base64>"); '' unless https_token.
    token_sealed       text        NOT NULL DEFAULT '',
    -- The SSH private key (PEM or OpenSSH), sealed; '' unless ssh_key.
    private_key_sealed text        NOT NULL DEFAULT '',
    -- known_hosts lines pinning the SSH host keys: public, not sealed.
    -- Required with ssh_key: no host key is ever accepted blindly.
    known_hosts        text        NOT NULL DEFAULT '',
    -- What users see to recognise the credentials: SHA256:… of the SSH
    -- public key, or "…" and a token's last 4 characters. Never a hash of
    -- a secret.
    fingerprint        text        NOT NULL DEFAULT '',
    -- The id of the KUKIE_SECRET_KEYS key that sealed this row's secrets
    -- ('' without secrets): `kukie-server secrets rekey` finds the rows an
    -- old key still opens by it.
    key_id             text        NOT NULL DEFAULT '',
    -- When an admin last set the credentials (a rekey leaves it).
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (team_id, cluster_id),
    FOREIGN KEY (team_id, cluster_id) REFERENCES clusters (team_id, id) ON DELETE CASCADE,
    CONSTRAINT cluster_repo_auth_token_check CHECK ((auth_type = 'https_token') = (token_sealed <> '')),
    CONSTRAINT cluster_repo_auth_private_key_check CHECK ((auth_type = 'ssh_key') = (private_key_sealed <> '')),
    CONSTRAINT cluster_repo_auth_known_hosts_check CHECK (auth_type = 'ssh_key' OR known_hosts = ''),
    CONSTRAINT cluster_repo_auth_ssh_known_hosts_check CHECK (auth_type <> 'ssh_key' OR known_hosts <> ''),
    CONSTRAINT cluster_repo_auth_key_id_check CHECK ((key_id = '') = (token_sealed = '' AND private_key_sealed = ''))
);

-- +goose Down
DROP TABLE cluster_repo_auth;
