"""Migration 7 (issue 19): remembered sources per collection, file stats of documents, and watcher heartbeats.

* ``collection_sources``: the folders (or files) a collection was ingested from, by absolute path, with the
  include/exclude globs of that ingest, so ``kaynak sync`` and ``kaynak watch`` can bring the collection up to date
  with them. ``last_sync_at`` / ``last_sync`` say when the last complete sync or ingest of that root ended and what
  it did (counts).
* ``documents.file_size`` / ``documents.file_mtime_ns``: the file's size and modification time when its bytes were
  hashed (NULL when unknown). A file whose stat still matches is unchanged without being read again; a search hit
  whose file's stat no longer matches is ``stale`` (docs/adr/0015-watch-and-sync.md).
* ``sync_watchers``: one row per running watcher (``kaynak watch``, ``kaynak serve --watch``) and collection,
  updated every few seconds (``heartbeat_at``, ``pending``); a clean stop deletes it, a killed watcher's row goes
  stale and ``kaynak status`` says it is not running.
"""

from __future__ import annotations

import psycopg


def m7_sync_sources(conn: psycopg.Connection) -> None:
    conn.execute(
        """
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
        """
    )
