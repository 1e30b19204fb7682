-- Migration 4: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

        CREATE TABLE ingest_failures (
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            source        text NOT NULL,
            sha256        text NOT NULL,
            reason        text NOT NULL CHECK (reason <> ''),
            parser        text NOT NULL DEFAULT '',
            failed_at     timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (collection_id, source)
        );
