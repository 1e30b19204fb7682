-- Migration 13 (issue 31): access tokens stored as hashes, the audit trail of writes, and search counts.
--
-- * ``access_tokens``: one row per token made by ``kaynak tokens create``. ``secret_sha256`` is the SHA-256 of the
--   token text (the plaintext is never stored); ``read_scope`` / ``write_scope`` / ``admin_scope`` list collection
--   names or ``*``. A revoked token keeps its row (``revoked_at``) so the audit trail can still name it; only one
--   unrevoked token may carry a name.
-- * ``audit_log``: every write made over REST (upload, document delete, collection create/delete) and every token
--   create/revoke: when, by which token (its name), from which client address, on which collection and sources.
-- * ``token_search_counts``: searches per token and day, kept only when ``KAYNAK_AUDIT_SEARCHES`` is on; never the
--   query text.
--
-- Frozen: never edit this file once shipped; add a migration instead. tests/test_migrations.py pins its SHA-256.

CREATE TABLE access_tokens (
    id            bigserial PRIMARY KEY,
    name          text  NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    secret_sha256 bytea NOT NULL UNIQUE CHECK (octet_length(secret_sha256) = 32),
    read_scope    text[] NOT NULL DEFAULT '{}',
    write_scope   text[] NOT NULL DEFAULT '{}',
    admin_scope   text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
CREATE UNIQUE INDEX access_tokens_live_name ON access_tokens (name) WHERE revoked_at IS NULL;

CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    action      text NOT NULL,
    token_name  text,
    client      text,
    collection  text,
    sources     text[] NOT NULL DEFAULT '{}',
    request_id  text,
    detail      jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_collection ON audit_log (collection, at);

CREATE TABLE token_search_counts (
    token_name text   NOT NULL,
    day        date   NOT NULL,
    searches   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (token_name, day)
);
