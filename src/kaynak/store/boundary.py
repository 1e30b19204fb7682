"""The store's error boundary: ``map_errors()`` is the one place where psycopg errors become KaynakErrors.

Connection loss and outages → ``DatabaseUnavailable``; deadlocks and serialisation failures → ``WriteConflict``;
values the server refuses → ``DataRejected``; the rest → ``StoreError``. Every connection the store hands out is
used inside it. Also the small helpers every store module shares: ``one`` (the row a statement always returns)
and ``redact`` (a URL without its password, for messages and logs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import PoolClosed, PoolTimeout

from kaynak.errors import (
    DatabaseUnavailable,
    DataRejected,
    KaynakError,
    StoreError,
    WriteConflict,
)

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
