-- Migration 7: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

        CREATE TABLE collection_sources (
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            root          text   NOT NULL CHECK (root LIKE '/%'),
            include       jsonb  NOT NULL DEFAULT '[]'::jsonb,
            exclude       jsonb  NOT NULL DEFAULT '[]'::jsonb,
            added_at      timestamptz NOT NULL DEFAULT now(),
            last_sync_at  timestamptz,
            last_sync     jsonb,
            PRIMARY KEY (collection_id, root)
        );

        ALTER TABLE documents ADD COLUMN file_size bigint;
        ALTER TABLE documents ADD COLUMN file_mtime_ns bigint;

        CREATE TABLE sync_watchers (
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            watcher       text   NOT NULL,
            host          text   NOT NULL,
            pid           int    NOT NULL,
            polling       boolean NOT NULL DEFAULT false,
            started_at    timestamptz NOT NULL DEFAULT now(),
            heartbeat_at  timestamptz NOT NULL DEFAULT now(),
            pending       int    NOT NULL DEFAULT 0,
            PRIMARY KEY (collection_id, watcher)
        );
