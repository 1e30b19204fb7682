"""Store: the database, composed of one part per job; every SQL statement kaynak runs lives in ``kaynak.store``.

- ``base``: the error-bounded connection every part uses (``_conn``; ``boundary.map_errors``).
- ``catalogue``: collections, documents, pages and chunks as stored (reads; collection create/delete).
- ``writes``: replace/delete/move a document in one transaction; remembered ingest failures.
- ``retrieval``: the vector and keyword legs of a search, query stemming, filters.
- ``scoring``: exact scores of named chunks (convex fusion's fill-in of a leg's missing candidates).
- ``sync_state``: remembered sources, file stats, the sync lock, watcher heartbeats.

This module holds what ties them together: opening (migrations, replicas), the read view, health, server facts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from psycopg_pool import ConnectionPool

from kaynak.store import migrations
from kaynak.store.boundary import map_errors, one
from kaynak.store.catalogue import CatalogueMixin
from kaynak.store.connections import Database
from kaynak.store.retrieval import MAX_QUERY_LEXEMES, RetrievalMixin, SearchFilters, tsquery_literal
from kaynak.store.scoring import ScoringMixin
from kaynak.store.server import check_connection, resolve_url, restart_embedded
from kaynak.store.sync_state import SyncStateMixin
from kaynak.store.writes import WritesMixin, chunk_id
from kaynak.vocabulary import LANGUAGES

__all__ = ["MAX_QUERY_LEXEMES", "SearchFilters", "Store", "chunk_id", "tsquery_literal"]


class Store(CatalogueMixin, WritesMixin, RetrievalMixin, ScoringMixin, SyncStateMixin):
    """The database. Create with ``Store.open(settings)``; close with ``close()`` (or use as a context manager).

    Connections come from ``kaynak.store.connections.Database``: the primary's pool, or a read replica's in the
    view ``reader()`` returns; every statement runs inside its error boundary (psycopg errors → KaynakErrors).
    """

    def __init__(
        self,
        url: str,
        pool_size: int = 4,
        *,
        read_urls: Sequence[str] = (),
        restart: Callable[[], None] | None = None,
        migrate: str = "auto",
    ) -> None:
        """``migrate``: ``auto`` applies pending migrations that rewrite fewer than
        ``migrations.AUTO_MIGRATE_ROWS`` rows and refuses bigger ones with MigrationRequired (``kaynak migrate``),
        ``always`` applies any, ``never`` none. A database from a newer kaynak is refused (SchemaTooNew)."""
        check_connection(url)
        self.url = url
        self.db = Database(url, pool_size, tuple(read_urls), restart=restart)
        self._read = False
        try:
            with self.db.connection() as conn:
                # migrations run on the primary only
                limit = {"auto": migrations.AUTO_MIGRATE_ROWS, "always": None, "never": -1}[migrate]
                self.applied_migrations = migrations.apply(conn, max_rows=limit)
                self.db.schema_version = migrations.current_version(conn)
        except BaseException:
            self.db.close()
            raise
        self.db.check_replica_schemas(wait_s=5.0 if self.applied_migrations else 0.0)
        # Test hook: called inside replace_document's transaction just before it commits.
        self._before_commit: Callable[[], None] | None = None

    @classmethod
    def open(
        cls,
        database_url: str | None,
        data_dir: Path,
        pool_size: int = 4,
        read_urls: Sequence[str] = (),
        migrate: str = "auto",
    ) -> Store:
        """The store for the settings: the server ``database_url`` names, else the embedded one (restarted by this
        process if it stops); ``read_urls`` are read replicas of it; ``migrate`` as in ``Store``."""
        restart = None if database_url else (lambda: restart_embedded(data_dir))
        url = resolve_url(database_url, data_dir)
        return cls(url, pool_size=pool_size, read_urls=read_urls, restart=restart, migrate=migrate)

    @property
    def pool(self) -> ConnectionPool:
        """The primary's current pool (replaced after an outage); for tests and diagnostics, not for queries."""
        return self.db.primary.pool

    def reader(self) -> Store:
        """This store for reads: the same object without replicas, else a view whose queries go to a replica
        (falling back to the primary while none is healthy). Give it to searches and listings, never to writes."""
        if not self.db.replicas:
            return self
        view = copy.copy(self)
        view._read = True
        return view

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ health, replication (the connection layer)
    def health(self, timeout: float = 1.0) -> dict[str, Any]:
        """Whether the primary and each replica answer, with replication lag, within about ``timeout`` seconds.

        ``{"ok": bool, "primary": {"ok", "error"?, "schema_version", ...}, "replicas": [{"name", "ok",
        "lag_bytes", "lag_seconds", "in_rotation", "schema_behind", "error"?}], "elapsed_ms"}``. Never raises for
        an outage (that is what it reports); a down embedded server is restarted in the background.
        """
        return self.db.health(timeout)

    def wait_for_replicas(self, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until every read replica has replayed the primary's writes so far (see ``Database``)."""
        with map_errors("the primary database"):
            return self.db.wait_for_replicas(timeout)

    # ------------------------------------------------------------------ server facts
    def server_info(self) -> dict[str, Any]:
        with self._conn() as conn:
            pg = one(conn.execute("SHOW server_version"))[0]
            vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            version = migrations.current_version(conn)
            ts = one(
                conn.execute(
                    "SELECT array_agg(cfgname ORDER BY cfgname) FROM pg_ts_config WHERE cfgname = ANY(%s)",
                    (list(LANGUAGES),),
                )
            )[0]
        return {
            "postgresql": pg,
            "pgvector": vec[0] if vec else None,
            "schema_version": version,
            "text_search_configs": ts or [],
        }
