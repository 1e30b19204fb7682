"""The store's connections: the primary's pool, the read replicas' pools, routing, the error boundary, outages.

- ``map_errors()`` is the one place where psycopg errors become KaynakErrors (connection loss and outages →
  ``DatabaseUnavailable``; deadlocks → ``WriteConflict``; refused values → ``DataRejected``; the rest →
  ``StoreError``). Every connection the store hands out is used inside it.
- A pooled connection is checked before use without a round trip in the common case: one that was handed back
  less than ``CHECK_IDLE_S`` ago and whose socket has nothing to read (a server that closed the connection or
  ended the session leaves it readable) is used as it is; any other gets an empty query first. A broken one is
  dropped and replaced.
- Outages fail fast: when a connection or its check fails, one direct connection attempt (``probe``) decides
  whether the server is down; if it is, the request gets ``DatabaseUnavailable`` at once (well under a second on
  a Unix socket or a refused port) instead of waiting for the pool. While it stays down, probes are shared and
  throttled. For the embedded server, the process that depends on it restarts it with back-off (a log line each
  time).
- Read replicas (``KAYNAK_READ_DATABASE_URL``, comma-separated): ``connection(read=True)`` goes to a healthy
  replica (round robin); a replica that fails is skipped with a logged warning and retried later with back-off,
  and reads go to the primary meanwhile. A replica whose schema version is behind the primary's is not used
  (reported, not crashed into). Writes always go to the primary, which is the only server migrations run on.
"""

from __future__ import annotations

import itertools
import logging
import re
import select
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from kaynak.errors import (
    DatabaseUnavailable,
    DataRejected,
    KaynakError,
    StoreError,
    WriteConflict,
)

log = logging.getLogger("kaynak.store")

#: how long a request may wait for a free pooled connection while the server answers probes (busy, not down)
POOL_WAIT_S = 30.0
#: a request waits for a pooled connection in slices this long, probing the server between slices
_SLICE_S = 0.25
#: a probe result is reused for this long, so a burst of requests during an outage costs one connection attempt
_PROBE_CACHE_S = 0.5
#: first and largest delay between restarts of the embedded server, and between retries of a failed replica
_BACKOFF_FIRST_S = 1.0
_BACKOFF_MAX_S = 30.0
_REPLICA_RETRY_FIRST_S = 2.0
_REPLICA_RETRY_MAX_S = 60.0
#: a pooled connection idle longer than this gets an empty query before use (a round trip); a younger one is
#: checked by a zero-timeout poll of its socket only (docs/performance-search.md, "Per-search overhead")
CHECK_IDLE_S = 5.0

# SQLSTATEs meaning "the server is not there for you right now" (besides class 08, connection exceptions)
_UNAVAILABLE_STATES = {
    "57P01",  # admin_shutdown
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now (starting up, shutting down, in recovery)
    "57P05",  # idle_session_timeout
    "53300",  # too_many_connections
    "28000",  # invalid_authorization_specification
    "28P01",  # invalid_password
    "3D000",  # invalid_catalog_name (database does not exist)
}


def first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else err.__class__.__name__


def one(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The one row a statement always returns (an aggregate, SHOW, INSERT … RETURNING); none is a bug."""
    row = cursor.fetchone()
    if row is None:
        raise RuntimeError("the statement returned no row")
    return tuple(row)


def redact(url: str) -> str:
    """The URL (or key=value conninfo) without its password, for messages and logs."""
    if "://" not in url:
        return re.sub(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", "password=***", url)
    try:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        pass
    return url


def is_unavailable(err: BaseException) -> bool:
    """Whether a driver error means the server cannot be reached or used at all (an outage, not a bad query)."""
    if isinstance(err, PoolTimeout | PoolClosed):
        return True
    if not isinstance(err, psycopg.Error):
        return False
    state = err.sqlstate
    if state is None:
        # no SQLSTATE: the client library's own failure (connection refused, lost, closed)
        return isinstance(err, psycopg.OperationalError | psycopg.InterfaceError)
    return state.startswith("08") or state in _UNAVAILABLE_STATES


def translate(err: BaseException, where: str = "the database") -> KaynakError:
    """The KaynakError for a driver error (see the module docstring)."""
    if isinstance(err, KaynakError):
        return err
    reason = first_line(err)
    if is_unavailable(err):
        return DatabaseUnavailable(
            f"{where} is unavailable ({reason}); kaynak retries by itself, try again in a few seconds"
        )
    state = getattr(err, "sqlstate", None) or ""
    if state.startswith("40") and "conflict with recovery" in reason:  # a standby cancelled a read for replay
        return DatabaseUnavailable(f"{where} cancelled the query to replay the primary's changes ({reason}); try again")
    if state.startswith("40"):  # deadlock_detected, serialization_failure
        return WriteConflict(f"concurrent writes collided in {where} ({reason}); try again")
    if state.startswith("22") or isinstance(err, psycopg.DataError):  # a value PostgreSQL cannot hold or compare
        return DataRejected(f"{where} refused a value: {reason}")
    if state == "57014":
        return StoreError(f"{where} cancelled a statement that ran too long ({reason})")
    if state == "25006":
        return StoreError(f"{where} is read-only ({reason}); writes must go to the primary (KAYNAK_DATABASE_URL)")
    if state.startswith("53"):
        return StoreError(f"{where} is out of resources ({reason}): check its disk and memory")
    return StoreError(f"{where} failed: {reason}")


@contextmanager
def map_errors(where: str = "the database", on_unavailable: Callable[[], None] | None = None) -> Iterator[None]:
    """Turn any psycopg / pool error raised inside into a KaynakError (the store's one error boundary)."""
    try:
        yield
    except KaynakError:
        raise
    except (psycopg.Error, PoolTimeout, PoolClosed) as err:
        mapped = translate(err, where)
        if isinstance(mapped, DatabaseUnavailable) and on_unavailable is not None:
            on_unavailable()
        raise mapped from err


def _socket_readable(conn: psycopg.Connection) -> bool:
    """Whether an idle connection's socket has something to read (or failed): from a healthy server an idle
    connection receives nothing, so this means the server closed it, ended the session or sent a notice."""
    try:
        fd = conn.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        readable, _, failed = select.select([fd], [], [fd], 0)
        return bool(readable or failed)
    except (OSError, ValueError, psycopg.Error):
        return True


def needs_check(conn: psycopg.Connection, now: float | None = None) -> bool:
    """Whether a connection taken from the pool must answer an empty query before use: it was never handed back
    by kaynak, or more than ``CHECK_IDLE_S`` ago, or it is closed or broken, or its socket is readable."""
    released = getattr(conn, "_kaynak_released", None)
    if released is None or conn.closed or conn.broken:
        return True
    if (time.monotonic() if now is None else now) - released > CHECK_IDLE_S:
        return True
    return _socket_readable(conn)


def make_pool(url: str, size: int, name: str, *, wait: bool) -> ConnectionPool:
    """A psycopg 3 pool in autocommit mode with pgvector's types registered on every connection."""
    from pgvector.psycopg import register_vector

    def configure(conn: psycopg.Connection) -> None:
        register_vector(conn)
        conn.autocommit = True

    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=size,
        configure=configure,
        open=False,
        name=name,
        timeout=POOL_WAIT_S,
        # a peer that vanishes without closing (network partition) fails a request within ~10 s, not TCP's minutes
        kwargs={
            "connect_timeout": 5,
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
            "tcp_user_timeout": 10_000,
        },
    )
    try:
        pool.open(wait=wait, timeout=30)
    except Exception as err:
        pool.close()
        raise DatabaseUnavailable(f"cannot open a connection pool to {redact(url)}: {first_line(err)}") from None
    return pool


def lsn_to_int(lsn: str | None) -> int | None:
    """PostgreSQL's ``X/Y`` log position as one integer (bytes)."""
    if not lsn:
        return None
    hi, lo = str(lsn).split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


class Endpoint:
    """One server (the primary or a replica): its pool, whether it is up, and when to try it again."""

    def __init__(self, url: str, pool_size: int, role: str, *, wait: bool) -> None:
        self.url = url
        self.name = redact(url)
        self.role = role
        self.pool_size = pool_size
        self.pool = make_pool(url, pool_size, f"kaynak-{role}", wait=wait)
        self.down = False
        self.behind = False  # a replica whose schema version is behind the primary's: out of rotation
        self.reason = ""
        self.announced = False  # a replica's failure was logged (its return will be too)
        self.retry_at = 0.0
        self.retry_delay = _REPLICA_RETRY_FIRST_S
        self.schema_version: int | None = None
        self.served = 0  # connections handed out (approximate under threads; for tests and benchmarks)
        self._probe_lock = threading.Lock()
        self._probed_at = 0.0
        self._outage = False  # a probe failed since the pool was made: renew the pool when the server is back
        self._stale = False
        self._renew_lock = threading.Lock()

    def probe(self, force: bool = False) -> bool:
        """Whether the server accepts a new connection now (result shared for _PROBE_CACHE_S across threads;
        ``force`` always connects, waiting for another thread's probe)."""
        now = time.monotonic()
        if not force and (now - self._probed_at < _PROBE_CACHE_S or not self._probe_lock.acquire(blocking=False)):
            return not self.down
        if force:
            self._probe_lock.acquire()
        try:
            try:
                with psycopg.connect(self.url, connect_timeout=2, autocommit=True) as conn:
                    row = one(
                        conn.execute(
                            "SELECT coalesce(max(version), 0) FROM kaynak_migrations"
                            if one(conn.execute("SELECT to_regclass('kaynak_migrations')"))[0]
                            else "SELECT 0"
                        )
                    )
                    self.schema_version = int(row[0])
                self.down = False
                self.reason = ""
                if self._outage:  # the pool's connections died with the server and it may be in a long back-off
                    self._outage = False
                    self._stale = True
            except psycopg.Error as err:
                self.down = True
                self.reason = first_line(err)
                self._outage = True
            self._probed_at = time.monotonic()
            return not self.down
        finally:
            self._probe_lock.release()

    def _renew_pool(self) -> None:
        with self._renew_lock:
            if not self._stale:
                return
            old = self.pool
            self.pool = make_pool(self.url, self.pool_size, f"kaynak-{self.role}", wait=False)
            self._stale = False
        threading.Thread(target=old.close, kwargs={"timeout": 2}, daemon=True).start()

    def acquire(self, wait_s: float) -> tuple[ConnectionPool, psycopg.Connection]:
        """A checked connection and its pool; DatabaseUnavailable at once when the server is down."""
        if self.down and not self.probe():
            raise DatabaseUnavailable(self._unavailable_message())
        deadline = time.monotonic() + wait_s
        while True:
            if self._stale:
                self._renew_pool()
            pool = self.pool
            left = deadline - time.monotonic()
            try:
                conn = pool.getconn(timeout=max(0.01, min(_SLICE_S, left)))
            except PoolTimeout:
                if not self.probe():
                    raise DatabaseUnavailable(self._unavailable_message()) from None
                if time.monotonic() >= deadline:
                    raise DatabaseUnavailable(
                        f"the {self.role} database {self.name}: no free connection within {wait_s:.0f} s "
                        f"(all {self.pool_size} busy); raise KAYNAK_POOL_SIZE or try again"
                    ) from None
                continue
            except PoolClosed:
                if pool is not self.pool:  # renewed meanwhile
                    continue
                raise DatabaseUnavailable(f"the {self.role} database {self.name}: the store is closed") from None
            if not needs_check(conn):  # used moments ago and nothing arrived since: no round trip
                return pool, conn
            try:
                conn.execute("")  # the check before use: a stale connection fails here, not in the caller's query
                return pool, conn
            except psycopg.Error:
                pool.putconn(conn)  # a broken connection is discarded and replaced by the pool
                self.mark_suspect()
                if not self.probe():
                    raise DatabaseUnavailable(self._unavailable_message()) from None

    @staticmethod
    def release(pool: ConnectionPool, conn: psycopg.Connection) -> None:
        conn._kaynak_released = time.monotonic()  # type: ignore[attr-defined]  # see needs_check
        try:
            pool.putconn(conn)
        except PoolClosed:  # pragma: no cover - the pool was renewed or closed while a request ran
            conn.close()

    def mark_suspect(self) -> None:
        """A query failed as if the server went away: the next request probes before using the pool."""
        self.down = True
        self._probed_at = 0.0

    def _unavailable_message(self) -> str:
        reason = f" ({self.reason})" if self.reason else ""
        return (
            f"the {self.role} database {self.name} is unavailable{reason}; "
            "kaynak retries by itself, try again in a few seconds"
        )


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
        self._restart_delay = _BACKOFF_FIRST_S
        self._restart_at = 0.0
        self._next = itertools.count()
        self._closed = False

    # ------------------------------------------------------------------ handing out connections
    @contextmanager
    def connection(self, read: bool = False, wait_s: float = POOL_WAIT_S) -> Iterator[psycopg.Connection]:
        """A checked connection (autocommit) inside the error boundary: a replica's when ``read`` and one is
        healthy, else the primary's."""
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
        pool, conn = acquired
        endpoint.served += 1
        try:
            with map_errors(f"the {endpoint.role} database", on_unavailable=endpoint.mark_suspect), conn:
                yield conn
        finally:
            endpoint.release(pool, conn)

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
        ep.retry_delay = _REPLICA_RETRY_FIRST_S

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
        ep.retry_delay = min(ep.retry_delay * 2, _REPLICA_RETRY_MAX_S)

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
            self._restart_delay = min(self._restart_delay * 2, _BACKOFF_MAX_S)
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
                self._restart_delay = _BACKOFF_FIRST_S
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
