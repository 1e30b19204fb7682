"""The store's connections: the primary and the read replicas, routing between them, outages and health.

- ``Database.connection(read=...)`` is the only way the store gets a connection; it is used inside the error
  boundary (``kaynak.store.boundary.map_errors``).
- Outages fail fast: when the primary's endpoint (``kaynak.store.endpoint``) finds the server down, the request
  gets ``DatabaseUnavailable`` at once (well under a second on a Unix socket or a refused port) instead of waiting
  for the pool. For the embedded server, the process that depends on it restarts it with back-off (a log line
  each time).
- Read replicas (``KAYNAK_READ_DATABASE_URL``, comma-separated): ``connection(read=True)`` goes to a healthy
  replica (round robin); a replica that fails is skipped with a logged warning and retried later with back-off,
  and reads go to the primary meanwhile. A replica whose schema version is behind the primary's is not used
  (reported, not crashed into). Writes always go to the primary, which is the only server migrations run on.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from kaynak.errors import (
    DatabaseUnavailable,
    KaynakError,
)
from kaynak.store.boundary import first_line, map_errors, one
from kaynak.store.endpoint import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    POOL_WAIT_S,
    REPLICA_RETRY_FIRST_S,
    REPLICA_RETRY_MAX_S,
    Endpoint,
    lsn_to_int,
)

log = logging.getLogger("kaynak.store")


class Database:
    """The primary and the read replicas. ``connection(read=...)`` is the only way the store gets a connection."""

    def __init__(
        self,
        url: str,
        pool_size: int = 4,
        read_urls: tuple[str, ...] | list[str] = (),
        restart: Callable[[], None] | None = None,
    ) -> None:
        self.primary = Endpoint(url, pool_size, "primary", wait=True)
        self.replicas: list[Endpoint] = []
        try:
            for i, r in enumerate(read_urls):
                self.replicas.append(Endpoint(r, pool_size, f"replica-{i + 1}", wait=False))
        except KaynakError:
            self.close()
            raise
        self.schema_version: int | None = None
        self._restart = restart
        self._restart_lock = threading.Lock()
        self._restart_thread: threading.Thread | None = None
        self._restart_delay = BACKOFF_FIRST_S
        self._restart_at = 0.0
        self._next = itertools.count()
        self._closed = False

    # ------------------------------------------------------------------ handing out connections
    @contextmanager
    def connection(self, read: bool = False, wait_s: float = POOL_WAIT_S) -> Iterator[psycopg.Connection]:
        """A checked connection (autocommit) inside the error boundary: a replica's when ``read`` and one is
        healthy, else the primary's."""
        with self.connections(1, read, wait_s) as conns:
            yield conns[0]

    @contextmanager
    def connections(
        self, n: int, read: bool = False, wait_s: float = POOL_WAIT_S
    ) -> Iterator[list[psycopg.Connection]]:
        """One connection as ``connection`` gives it, and up to ``n`` − 1 more from the same server that are free
        at once (none is waited for, so callers that hold one and ask for more cannot starve each other): for one
        piece of work split into parts that run side by side. Always at least one."""
        endpoint, pool, conn = self._acquire(read, wait_s)
        held = [(pool, conn)]
        try:
            while len(held) < n:
                spare = endpoint.try_acquire()
                if spare is None:
                    break
                held.append(spare)
            endpoint.served += len(held)
            with contextlib.ExitStack() as stack:
                stack.enter_context(map_errors(f"the {endpoint.role} database", on_unavailable=endpoint.mark_suspect))
                for _, c in held:
                    stack.enter_context(c)
                yield [c for _, c in held]
        finally:
            for p, c in held:
                endpoint.release(p, c)

    def _acquire(self, read: bool, wait_s: float) -> tuple[Endpoint, ConnectionPool, psycopg.Connection]:
        endpoint = self._pick_replica() if read else None
        acquired: tuple[ConnectionPool, psycopg.Connection] | None = None
        if endpoint is not None:
            try:
                acquired = endpoint.acquire(min(wait_s, 2.0))
            except DatabaseUnavailable as err:
                self._replica_failed(endpoint, endpoint.reason or err.message)
                endpoint = None
        if endpoint is None:
            endpoint = self.primary
            try:
                acquired = endpoint.acquire(wait_s)
            except DatabaseUnavailable:
                self._maybe_restart()
                raise
        assert acquired is not None
        return endpoint, *acquired

    def _pick_replica(self) -> Endpoint | None:
        """A replica in rotation (round robin); a failed one is probed again once its retry time has come."""
        if not self.replicas:
            return None
        n = len(self.replicas)
        start = next(self._next)
        for i in range(n):
            ep = self.replicas[(start + i) % n]
            if not (ep.down or ep.behind):
                return ep
            now = time.monotonic()
            if now < ep.retry_at:
                continue
            ep.retry_at = now + ep.retry_delay  # one background retry; requests use the primary meanwhile
            threading.Thread(target=self._retry_replica, args=(ep,), name="kaynak-replica-retry", daemon=True).start()
        return None

    def _retry_replica(self, ep: Endpoint) -> None:
        """Probe a failed replica (off the request path: a black-holed host may take seconds to refuse)."""
        ep._probed_at = 0.0
        if ep.probe(force=True) and self._schema_ok(ep):
            self._replica_back(ep)
        else:
            self._replica_failed(ep, ep.reason)

    @staticmethod
    def _replica_back(ep: Endpoint) -> None:
        if ep.announced:
            log.warning("read replica %s answers again; reads go to it", ep.name)
        ep.announced = False
        ep.down = False
        ep.retry_delay = REPLICA_RETRY_FIRST_S

    def _schema_ok(self, ep: Endpoint) -> bool:
        if self.schema_version is None or ep.schema_version is None or ep.schema_version >= self.schema_version:
            ep.behind = False
            return True
        ep.behind = True
        ep.reason = f"its schema version {ep.schema_version} is behind the primary's {self.schema_version}"
        return False

    def _replica_failed(self, ep: Endpoint, reason: str) -> None:
        ep.down = ep.down or not ep.behind
        ep.reason = reason or ep.reason
        ep.retry_at = time.monotonic() + ep.retry_delay
        if not ep.announced:
            log.warning(
                "read replica %s failed (%s); reads go to the primary, retrying the replica in %.0f s",
                ep.name,
                ep.reason,
                ep.retry_delay,
            )
            ep.announced = True
        ep.retry_delay = min(ep.retry_delay * 2, REPLICA_RETRY_MAX_S)

    def check_replica_schemas(self, wait_s: float = 0.0) -> None:
        """After migrations ran on the primary: take replicas that are down or behind on schema out of rotation
        (waiting up to ``wait_s`` for them to replay the migrations first)."""
        if wait_s > 0 and self.replicas:
            self.wait_for_replicas(wait_s)
        for ep in self.replicas:
            ep._probed_at = 0.0
            if not (ep.probe() and self._schema_ok(ep)):
                self._replica_failed(ep, ep.reason)

    # ------------------------------------------------------------------ the embedded server's restarts
    def _maybe_restart(self) -> None:
        """Restart the embedded server in the background, with back-off (1, 2, 4 … 30 s between attempts)."""
        if self._restart is None or self._closed:
            return
        with self._restart_lock:
            now = time.monotonic()
            running = self._restart_thread is not None and self._restart_thread.is_alive()
            if running or now < self._restart_at:
                return
            self._restart_at = now + self._restart_delay
            self._restart_delay = min(self._restart_delay * 2, BACKOFF_MAX_S)
            self._restart_thread = threading.Thread(target=self._restart_once, name="kaynak-pg-restart", daemon=True)
            self._restart_thread.start()

    def _restart_once(self) -> None:
        assert self._restart is not None
        log.warning("the embedded PostgreSQL server is not answering (%s); restarting it", self.primary.reason)
        t0 = time.monotonic()
        try:
            self._restart()
        except Exception as err:
            log.error(
                "restarting the embedded PostgreSQL server failed: %s (next try in %.0f s)",
                first_line(err),
                max(0.0, self._restart_at - time.monotonic()),
            )
            return
        if self.primary.probe(force=True):
            log.warning("the embedded PostgreSQL server was restarted in %.1f s", time.monotonic() - t0)
            with self._restart_lock:
                self._restart_delay = BACKOFF_FIRST_S
                self._restart_at = 0.0
        else:
            log.error("the embedded PostgreSQL server still does not answer after a restart (%s)", self.primary.reason)

    # ------------------------------------------------------------------ health and replication
    def health(self, timeout: float = 1.0) -> dict[str, Any]:
        """Whether each server answers, with replication lag, within about ``timeout`` seconds in all."""
        started = time.monotonic()
        out: dict[str, Any] = {"ok": False, "primary": {"name": self.primary.name}, "replicas": []}
        endpoints = [self.primary, *self.replicas]
        ex = ThreadPoolExecutor(max_workers=len(endpoints), thread_name_prefix="kaynak-health")
        futures = [ex.submit(self._server_facts, ep, timeout) for ep in endpoints]
        results: list[dict[str, Any]] = []
        for ep, fut in zip(endpoints, futures, strict=True):
            try:
                results.append(fut.result(timeout=max(0.05, timeout - (time.monotonic() - started))))
            except FutureTimeout:
                results.append({"ok": False, "error": f"no answer within {timeout:.1f} s"})
                if ep is self.primary:
                    ep.mark_suspect()
        ex.shutdown(wait=False, cancel_futures=True)  # late answers are not waited for: the deadline is met
        primary, replicas = results[0], results[1:]
        out["primary"].update(primary)
        if not primary.get("ok"):
            self._maybe_restart()
        primary_lsn = lsn_to_int(primary.get("wal_lsn"))
        for ep, facts in zip(self.replicas, replicas, strict=True):
            if facts.get("ok") and self._schema_ok(ep):
                self._replica_back(ep)
            elif not facts.get("ok") or ep.behind:
                self._replica_failed(ep, facts.get("error") or ep.reason)
            row: dict[str, Any] = {"name": ep.name, **facts, "in_rotation": not (ep.down or ep.behind)}
            replay = lsn_to_int(facts.get("replay_lsn"))
            if primary_lsn is not None and replay is not None:
                row["lag_bytes"] = max(0, primary_lsn - replay)
                if row["lag_bytes"] == 0:
                    row["lag_seconds"] = 0.0
            if self.schema_version is not None and facts.get("schema_version") is not None:
                row["schema_behind"] = facts["schema_version"] < self.schema_version
            out["replicas"].append(row)
        out["ok"] = bool(primary.get("ok"))
        out["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
        return out

    def _server_facts(self, ep: Endpoint, timeout: float) -> dict[str, Any]:
        try:
            pool, conn = ep.acquire(timeout)
        except DatabaseUnavailable as err:
            return {"ok": False, "error": err.message}
        try:
            with map_errors(f"the {ep.role} database", on_unavailable=ep.mark_suspect):
                row = one(
                    conn.execute(
                        "SELECT pg_is_in_recovery(), "
                        "CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END, "
                        "pg_last_wal_replay_lsn()::text, "
                        "extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, "
                        "coalesce((SELECT max(version) FROM kaynak_migrations), 0)"
                    )
                )
        except KaynakError as err:
            return {"ok": False, "error": err.message}
        finally:
            ep.release(pool, conn)
        facts: dict[str, Any] = {"ok": True, "in_recovery": bool(row[0]), "schema_version": int(row[4])}
        if row[1]:
            facts["wal_lsn"] = row[1]
        if row[2]:
            facts["replay_lsn"] = row[2]
            facts["lag_seconds"] = round(float(row[3]), 3) if row[3] is not None else None
        ep.schema_version = facts["schema_version"]
        return facts

    def primary_lsn(self) -> str:
        with self.connection() as conn:
            return str(one(conn.execute("SELECT pg_current_wal_lsn()::text"))[0])

    def wait_for_replicas(self, timeout: float = 30.0, lsn: str | None = None) -> dict[str, Any]:
        """Wait until every replica has replayed the primary's WAL up to ``lsn`` (default: now).

        Returns ``{"ok": bool, "lsn": ..., "replicas": [{"name", "ok", "waited_s" | "error"}]}``; a replica that
        is down or does not catch up within ``timeout`` is ``ok: False`` with the reason.
        """
        target = lsn or self.primary_lsn()
        goal = lsn_to_int(target) or 0
        started = time.monotonic()
        rows: list[dict[str, Any]] = []
        for ep in self.replicas:
            row: dict[str, Any] = {"name": ep.name, "ok": False}
            while True:
                try:
                    with psycopg.connect(ep.url, connect_timeout=2, autocommit=True) as conn:
                        replay = one(conn.execute("SELECT pg_last_wal_replay_lsn()::text"))[0]
                except psycopg.Error as err:
                    row["error"] = first_line(err)
                    break
                if replay is None or (lsn_to_int(replay) or 0) >= goal:  # None: not a standby, nothing to wait
                    row.update(ok=True, waited_s=round(time.monotonic() - started, 3))
                    row.pop("error", None)
                    break
                if time.monotonic() - started > timeout:
                    row["error"] = f"replayed up to {replay}, not {target}, after {timeout:.0f} s"
                    break
                time.sleep(0.05)
            rows.append(row)
        return {"ok": all(r["ok"] for r in rows), "lsn": target, "replicas": rows}

    def close(self) -> None:
        self._closed = True
        for ep in (self.primary, *self.replicas) if hasattr(self, "primary") else ():
            ep.pool.close()
