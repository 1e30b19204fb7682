"""kaynak backup / restore: an exact round trip (every row, id and vector; the same search answers), into another
database by URL and into an empty embedded data folder; refusals; doctor's never-backed-up warning."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from kaynak import backup as backups
from kaynak.cli import app
from kaynak.context import Context
from kaynak.errors import BackupError, UsageError
from kaynak.store.server import stop_embedded
from testkit.floats import assert_close

runner = CliRunner()

DOCS = {
    "kat.md": "# Kat mülkiyeti\n\nKat malikleri kurulu yılda en az bir kez toplanır. Yönetici kurulca seçilir.\n",
    "kira.md": "# Kira\n\nKiracı kira bedelini her ay öder; kiraya veren çatıyı onarır.\n",
    "notes.md": "# Notes\n\nThe tenant pays the rent monthly. The landlord repairs the roof.\n",
}
QUERIES = ["kat malikleri kurulu", "kira bedeli", "who repairs the roof"]


def _checksums(url: str) -> dict[str, tuple[int, str]]:
    """Rows and an md5 of every row's text, per table of the public schema (vectors included)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        out = {}
        for t in sorted(tables):
            n, digest = conn.execute(
                f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM \"{t}\" x"
            ).fetchone()
            out[t] = (int(n), digest)
        return out


def _answers(url: str, collection: str) -> list[list[tuple[str, float, str]]]:
    with Context(database_url=url, embedder="hash") as ctx:
        return [
            [(h.chunk_id, h.score, h.quote) for h in ctx.search.search(q, collection, mode="hybrid", k=5)]
            for q in QUERIES
        ]


@pytest.fixture
def other_db(database_url: str) -> Iterator[str]:
    """An empty database on the session's server, named by URL like any other server."""
    name = "restore_" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield make_conninfo(database_url, dbname=name)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def corpus(env: dict[str, str], unique_name: str, tmp_path: Path) -> str:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    with Context() as ctx:
        assert ctx.ingest.ingest([folder], unique_name).ok
    return unique_name


def test_round_trip_into_another_database_by_url(
    env: dict[str, str], database_url: str, corpus: str, other_db: str, tmp_path: Path
) -> None:
    file = tmp_path / "kaynak.dump"
    before = _answers(database_url, corpus)
    sums = _checksums(database_url)
    made = backups.backup(database_url, file)
    assert file.stat().st_size == made["bytes"] > 0
    assert made["tables"]["chunks"] == sums["chunks"][0]

    done = backups.restore(other_db, file)
    assert _checksums(other_db) == sums  # documents, pages, chunks with vectors, postings, migrations: exact
    assert done["tables"] == made["tables"]
    assert_close(_answers(other_db, corpus), before)  # the same hits, scores and quotes
    assert all(before)

    # a second restore is refused (the target holds documents) unless --replace
    with pytest.raises(BackupError, match="--replace"):
        backups.restore(other_db, file)
    backups.restore(other_db, file, replace=True)
    assert _checksums(other_db) == sums


def test_refusals(database_url: str, other_db: str, tmp_path: Path) -> None:
    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"not a dump")
    with pytest.raises(BackupError, match="pg_restore"):
        backups.restore(other_db, junk)
    with pytest.raises(UsageError, match="no backup file"):
        backups.restore(other_db, tmp_path / "missing.dump")
    with pytest.raises(BackupError, match="no kaynak database"):
        backups.backup(other_db, tmp_path / "x.dump")  # an empty database holds no kaynak tables
    with pytest.raises(UsageError, match="folder"):
        backups.backup(database_url, tmp_path)


@pytest.fixture
def empty_data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kaynak-restore-"))
    yield path
    stop_embedded(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_cli_restore_into_an_empty_embedded_data_folder_and_doctor(
    env: dict[str, str],
    database_url: str,
    corpus: str,
    empty_data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    file = tmp_path / "cli.dump"
    result = runner.invoke(app, ["backup", str(file)])
    assert result.exit_code == 0, result.output
    assert "backed up" in result.stdout and file.is_file()
    before = _answers(database_url, corpus)

    # into a fresh embedded data folder (no database URL)
    monkeypatch.delenv("KAYNAK_DATABASE_URL")
    monkeypatch.setenv("KAYNAK_DATA_DIR", str(empty_data_dir))
    result = runner.invoke(app, ["restore", str(file), "--json"])
    assert result.exit_code == 0, result.output
    restored = json.loads(result.stdout)
    assert restored["tables"]["documents"] >= len(DOCS) and restored["schema_version"] >= 2
    with Context() as ctx:
        url = ctx.store.url
    assert_close(_answers(url, corpus), before)

    # doctor warns: this data folder holds documents and was never backed up
    result = runner.invoke(app, ["doctor", "--json"])
    report = json.loads(result.stdout)
    assert report["last_backup"] is None
    assert any("never been backed up" in w for w in report["warnings"])
    assert runner.invoke(app, ["backup", str(tmp_path / "again.dump")]).exit_code == 0
    report = json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)
    assert report["last_backup"]["file"] == str(tmp_path / "again.dump")
    assert not any("never been backed up" in w for w in report.get("warnings", []))

    # restoring over it needs --replace (the embedded database is then dropped and made again)
    result = runner.invoke(app, ["restore", str(file)])
    assert result.exit_code == 1 and "--replace" in result.stderr
    result = runner.invoke(app, ["restore", str(file), "--replace"])
    assert result.exit_code == 0, result.output
    assert_close(_answers(url, corpus), before)
