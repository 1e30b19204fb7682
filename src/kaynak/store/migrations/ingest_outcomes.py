"""Migrations 3 and 4 (issue 11): per-document warnings and origin (3), and remembered ingest failures (4).

* ``documents.warnings``: what went wrong while reading a document that was still stored (a page that could not
  be read, NUL bytes dropped …); shown by ``documents list/show`` and reported again by a re-run.
* ``documents.origin``: the absolute path of the file at ingest time (NULL when unknown, or when the path is not
  valid UTF-8); the web page serves the original file from it after checking it (docs/adr/0013).
* ``ingest_failures``: the last failure of a file that could not be ingested, keyed by (collection, source), with
  the sha256 of the bytes and the parser limits it failed under, so an unchanged file that still fails is
  reported ("still failing: …") without being parsed again. A successful write of the source removes its row.
"""

from __future__ import annotations

import psycopg


def m3_document_warnings_origin(conn: psycopg.Connection) -> None:
    conn.execute(
        """
        ALTER TABLE documents ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]'::jsonb;
        ALTER TABLE documents ADD COLUMN origin text;
        """
    )


def m4_ingest_failures(conn: psycopg.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE ingest_failures (
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            source        text NOT NULL,
            sha256        text NOT NULL,
            reason        text NOT NULL CHECK (reason <> ''),
            parser        text NOT NULL DEFAULT '',
            failed_at     timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (collection_id, source)
        );
        """
    )
