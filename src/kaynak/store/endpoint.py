"""One database server (the primary or a read replica): its pool, whether it is up, and when to try it again.

A pooled connection is checked before use without a round trip in the common case: one that was handed back less
than ``CHECK_IDLE_S`` ago and whose socket has nothing to read (a server that closed the connection or ended the
session leaves it readable) is used as it is; any other gets an empty query first. A broken one is dropped and
replaced. When a connection or its check fails, one direct connection attempt (``probe``) decides whether the
server is down; while it stays down, probes are shared and throttled.
"""

from __future__ import annotations

import logging
import select
import threading
import time

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from kaynak.errors import (
    DatabaseUnavailable,
)
from kaynak.store.boundary import first_line, one, redact

log = logging.getLogger("kaynak.store")

#: how long a request may wait for a free pooled connection while the server answers probes (busy, not down)
POOL_WAIT_S = 30.0
#: a request waits for a pooled connection in slices this long, probing the server between slices
_SLICE_S = 0.25
#: a probe result is reused for this long, so a burst of requests during an outage costs one connection attempt
_PROBE_CACHE_S = 0.5
#: first and largest delay between restarts of the embedded server, and between retries of a failed replica
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
REPLICA_RETRY_FIRST_S = 2.0
REPLICA_RETRY_MAX_S = 60.0
#: a pooled connection idle longer than this gets an empty query before use (a round trip); a younger one is
#: checked by a zero-timeout poll of its socket only (docs/performance-search.md, "Per-search overhead")
CHECK_IDLE_S = 5.0
#: how long ``try_acquire`` waits for a pooled connection: long enough for an idle one, never for a busy pool
SPARE_WAIT_S = 0.002


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
        self.retry_delay = REPLICA_RETRY_FIRST_S
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

    def try_acquire(self) -> tuple[ConnectionPool, psycopg.Connection] | None:
        """A checked connection and its pool if one is free now; None when the pool is busy or the server is in
        doubt (no waiting, no probe): for work that can as well run on a connection the caller already holds."""
        if self.down or self._stale:
            return None
        pool = self.pool
        try:
            conn = pool.getconn(timeout=SPARE_WAIT_S)
        except (PoolTimeout, PoolClosed):
            return None
        if needs_check(conn):
            try:
                conn.execute("")
            except psycopg.Error:
                pool.putconn(conn)
                self.mark_suspect()
                return None
        return pool, conn

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
