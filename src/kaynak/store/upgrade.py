"""Upgrading a database's schema outside ``Store``: what ``kaynak migrate`` and ``kaynak doctor`` use.

``Store`` refuses a database whose upgrade is big (MigrationRequired) or that a newer kaynak wrote (SchemaTooNew);
these functions reach such a database anyway: ``migration_status`` tells where it stands without changing it,
``migrate`` applies what is pending with a progress callback. Both connect once, in autocommit mode (a
data-rewriting migration commits batch by batch, so a stopped upgrade resumes where it stopped).
"""

from __future__ import annotations

from typing import Any

import psycopg

from kaynak.store import migrations
from kaynak.store.boundary import map_errors, redact
from kaynak.store.migrations import Progress, Status
from kaynak.store.server import check_connection


def _connect(url: str) -> psycopg.Connection[Any]:
    check_connection(url)  # a clear error for an unreachable server or a missing pgvector
    with map_errors(f"the database {redact(url)}"):
        return psycopg.connect(url, autocommit=True)


def migration_status(url: str) -> Status:
    """The database's schema version, pending migrations (rows to rewrite, estimate) and unfinished ones."""
    with _connect(url) as conn, map_errors("reading the schema version"):
        return migrations.status(conn)


def analyses_pending(url: str) -> int:
    """Documents whose sentence analyses migration 14 left to kaynak (``Store.fill_sentences``); 0 before it."""
    with _connect(url) as conn, map_errors("reading the schema version"):
        if conn.execute("SELECT to_regclass('chunk_sentences_pending')").fetchone() == (None,):
            return 0
        row = conn.execute("SELECT count(*) FROM chunk_sentences_pending").fetchone()
        return int(row[0]) if row else 0


def migrate(url: str, progress: Progress | None = None, upto: int | None = None) -> list[int]:
    """Apply every pending migration (up to ``upto``), reporting batches to ``progress``; the versions applied."""
    with _connect(url) as conn, map_errors("upgrading the database"):
        return migrations.apply(conn, progress=progress, upto=upto)
