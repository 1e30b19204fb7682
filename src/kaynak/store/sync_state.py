"""Sync state: remembered source folders, file stats of documents, the per-collection sync lock, watcher heartbeats.

What ``kaynak sync`` / ``kaynak watch`` (``kaynak.ingest.sync``, ``kaynak.ingest.watch``) keep in the database,
and the file facts a hit's ``stale`` flag is judged by (docs/adr/0015-watch-and-sync.md). Renames go through
``WritesMixin.move_document``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from kaynak.store.base import StoreBase
from kaynak.store.boundary import map_errors, one
from kaynak.types import Collection


class SyncStateMixin(StoreBase):
    """Remembered roots, file stats, the sync lock and watcher heartbeats."""

    def remember_source(
        self, collection: Collection, root: str, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> None:
        """Remember that ``collection`` mirrors the folder (or file) ``root`` (absolute) with these globs."""
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO collection_sources (collection_id, root, include, exclude) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (collection_id, root) DO UPDATE SET include = EXCLUDED.include, "
                "exclude = EXCLUDED.exclude",
                (collection.id, root, Jsonb(list(include)), Jsonb(list(exclude))),
            )

    def collection_sources(self, collection: Collection) -> list[dict[str, Any]]:
        """The remembered roots of ``collection``: root, include, exclude, added_at, last_sync_at, last_sync."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT root, include, exclude, added_at, last_sync_at, last_sync FROM collection_sources "
                "WHERE collection_id = %s ORDER BY root",
                (collection.id,),
            ).fetchall()
        return [
            {
                "root": r[0],
                "include": list(r[1] or []),
                "exclude": list(r[2] or []),
                "added_at": r[3],
                "last_sync_at": r[4],
                "last_sync": r[5],
            }
            for r in rows
        ]

    def mark_synced(self, collection: Collection, roots: Sequence[str], summary: dict[str, Any]) -> None:
        """Record that ``roots`` of ``collection`` were brought up to date now (``summary``: what was done)."""
        with self._conn() as conn:
            conn.execute(
                "UPDATE collection_sources SET last_sync_at = now(), last_sync = %s "
                "WHERE collection_id = %s AND root = ANY(%s)",
                (Jsonb(summary), collection.id, list(roots)),
            )

    def file_states(self, collection: Collection) -> dict[str, tuple[str, int | None, int | None, str | None]]:
        """source → (sha256, file_size, file_mtime_ns, origin) for every document of the collection."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, sha256, file_size, file_mtime_ns, origin FROM documents WHERE collection_id = %s",
                (collection.id,),
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def set_file_stats(self, collection: Collection, rows: Sequence[tuple[str, str, int, int, str | None]]) -> None:
        """For (source, sha256, size, mtime_ns, origin): record the stat of an unchanged file (only where the
        stored sha256 is still that one, so a concurrent replace is never overwritten with an old stat)."""
        if not rows:
            return
        with self._conn() as conn:
            conn.execute(
                "UPDATE documents d SET file_size = u.size, file_mtime_ns = u.mtime, "
                "origin = coalesce(u.origin, d.origin) "
                "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::text[]) "
                "AS u(source, sha, size, mtime, origin) "
                "WHERE d.collection_id = %s AND d.source = u.source AND d.sha256 = u.sha",
                (
                    [r[0] for r in rows],
                    [r[1] for r in rows],
                    [r[2] for r in rows],
                    [r[3] for r in rows],
                    [r[4] for r in rows],
                    collection.id,
                ),
            )

    @contextmanager
    def collection_lock(
        self,
        name: str,
        *,
        exclusive: bool,
        stop: Callable[[], bool] | None = None,
        on_wait: Callable[[], None] | None = None,
    ) -> Iterator[bool]:
        """Hold the collection's sync lock (a session advisory lock on a connection of its own, outside the pool)
        while the block runs: ``kaynak sync`` / ``kaynak watch`` take it exclusively, ``kaynak ingest`` shared, so
        a sync never overlaps an ingest of the same collection (no file embedded twice; the end state is that of
        one after the other) while ingests still run side by side. ``on_wait`` is called once when the lock is
        busy; ``stop()`` true gives up waiting (the block then runs with False and must do nothing)."""
        key = f"kaynak-sync\x1f{name}"
        fn = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"
        with map_errors("the primary database"):
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        try:
            with map_errors("the primary database"):
                got = bool(one(conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (key,)))[0])
                waited = False
                while not got:
                    if stop is not None and stop():
                        break
                    if not waited and on_wait is not None:
                        on_wait()
                    waited = True
                    time.sleep(0.2)
                    got = bool(one(conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (key,)))[0])
            yield got
        finally:
            conn.close()  # ends the session: the lock goes with it

    def watcher_heartbeat(self, watcher: str, host: str, pid: int, polling: bool, pending: dict[int, int]) -> None:
        """Record that ``watcher`` is alive and watches the collections (by id) in ``pending``, with how many
        changed files wait in each."""
        if not pending:
            return
        ids = sorted(pending)
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO sync_watchers (collection_id, watcher, host, pid, polling, pending) "
                "SELECT u.id, %s, %s, %s, %s, u.pending FROM unnest(%s::bigint[], %s::int[]) AS u(id, pending) "
                "WHERE EXISTS (SELECT 1 FROM collections c WHERE c.id = u.id) "
                "ON CONFLICT (collection_id, watcher) DO UPDATE SET heartbeat_at = now(), pending = EXCLUDED.pending",
                (watcher, host, pid, polling, ids, [pending[i] for i in ids]),
            )

    def watcher_stopped(self, watcher: str) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM sync_watchers WHERE watcher = %s", (watcher,))

    def sync_state(self, collection: Collection, fresh_s: float) -> dict[str, Any]:
        """Watchers whose heartbeat is younger than ``fresh_s`` seconds, and the remembered failures."""
        with self._conn() as conn:
            watchers = conn.execute(
                "SELECT watcher, host, pid, polling, started_at, heartbeat_at, pending FROM sync_watchers "
                "WHERE collection_id = %s AND heartbeat_at > now() - make_interval(secs => %s) ORDER BY started_at",
                (collection.id, fresh_s),
            ).fetchall()
            failures = conn.execute(
                "SELECT source, reason, failed_at FROM ingest_failures WHERE collection_id = %s ORDER BY source",
                (collection.id,),
            ).fetchall()
        return {
            "watchers": [
                {
                    "id": r[0],
                    "host": r[1],
                    "pid": r[2],
                    "polling": r[3],
                    "started_at": r[4],
                    "heartbeat_at": r[5],
                    "pending": r[6],
                }
                for r in watchers
            ],
            "failing": [{"source": r[0], "reason": r[1], "failed_at": r[2]} for r in failures],
        }
