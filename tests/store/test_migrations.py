"""Migrations: frozen files, the same schema fresh or upgraded step by step, upgrades that stop and resume."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kaynak.config import Settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import MigrationRequired, SchemaTooNew
from kaynak.search import SearchService
from kaynak.store import Store, migrations
from kaynak.store.migrations import steps
from kaynak.store.server import embedded_bin_dir
from kaynak.store.upgrade import migrate, migration_status
from kaynak.types import Chunk, Page
from testkit.floats import assert_close
from testkit.migrating import copy_as_version_1 as _copy_as_version_1
from testkit.migrating import keyword_contents as _contents
from testkit.migrating import stored_analyses as _analyses

SQL_DIR = Path(migrations.__file__).parent / "sql"
HASH = HashEmbedder()
#: What a database at version 11 is upgraded by: migration 12 (a rewrite) and any schema-only ones after it.
UPGRADE = list(range(12, migrations.LATEST + 1))

#: SHA-256 of every frozen migration file. A shipped migration never changes: add a new one instead.
PINNED = {
    "0001_initial.sql": "ee41da6fccf3b4a66d9dbc2be7ca81ab5c6aa3e725d4dc7155241d15671ad83f",
    "0002_covering_postings.sql": "f2495891afdfc693aacd2366e2e001c2dcc3abd8c75a9f4b1b156e117f2740a5",
    "0003_document_warnings_origin.sql": "2e072cdaccf0015046d405a5bc6e5c0b4ff50567fb8edb3814ecadd3353c1df0",
    "0004_ingest_failures.sql": "84280511b41b9c2d575e3b21476ce8bbe36e770644eda8008c24c0b813fcea66",
    "0005_lexeme_stats.sql": "962efc4925170fd12fdc270dde8134222c31eec76b80eee785d490660db2cdcb",
    "0006_pruned_bm25.sql": "206196edbdd327010b030c2fb002d3ad7331b08aacb24c12368cc2c289bb25b9",
    "0007_sync_sources.sql": "224a286c497b64d5f4a9a32092c936e58aa8c951ba46b97272006ac20e159b24",
    "0008_collection_stats.sql": "855f2f6610dc40f0fce5ab9afd983967b3d043c58c1fb47a78d55293191f430f",
    "0009_bm25_topk.sql": "63f19f9051dca66e63985ca1b681d664b99879e6b7a3841bed70160203520d37",
    "0010_header_terms.sql": "d7c6ad5c24bef7ba9433c4771a7c802d55f6ec444b462db7fca387df20610bd5",
    "0012_chunk_keys.sql": "2a3607de63a4f4339077d4cba905b68fe0bb2780d1bd75f6399eaf91aa514eb1",
    "0012_chunk_keys_finish.sql": "fbcbb98ae575fc118fb89db6c91ee42ef64f33475425a28dd74dc06790f3bddb",
    "0013_team_access.sql": "8254bb7ab915bb1f54040d2e00613a277ed398364297c6bedceb1925d281c364",
    "0014_chunk_sentences.sql": "15b32609cb9f973fa65367f0eed0c9974f17a347f8468a569a90dee751e200d7",
    "0015_bm25_key_range.sql": "8cd350524c7a34e23075e060e1d1e334427122c66b3e8b7a91844c388fb5367e",
    "0016_bm25_array_probes.sql": "727db0af1594b7aed88efadc8d65abaa41ac9b56f353e767b8417a62f7c5f3ef",
    "0017_document_keyword_language.sql": "901aa1c91aa477d79f74662807b41bc1a887f024d6e941e3fa44c6f17933b8ca",
}

DOCS = {
    "kat.txt": [
        "Kat mülkiyeti kanunu, bir binanın bağımsız bölümleri üzerindeki mülkiyeti düzenler.\n\n"
        "Kat malikleri kurulu yılda en az bir kez toplanır. Toplantıda yönetici seçilir ve işletme projesi "
        "görüşülür.\n\nAidat, işletme projesine göre her ay ödenir.",
        "Yönetim planı bütün kat maliklerini bağlar.\n\nYönetici, kat malikleri kurulunun kararlarını uygular.",
    ],
    "boiler.txt": [
        "The boiler pressure should stay between one and two bar.\n\nBleed the radiators when the pressure drops.",
    ],
    "pump.md": ["Pump filters clog in winter.\n\nClean the pump filter every month."],
}
QUERIES = ["kat malikleri kurulu ne zaman toplanır", "boiler pressure", "pump filter", "yönetici", "aidat"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_migration_file_is_frozen() -> None:
    files = sorted(p.name for p in SQL_DIR.glob("*.sql"))
    assert files == sorted(PINNED), "a migration file was added or removed: pin it here (and never edit it after)"
    changed = [name for name, sha in PINNED.items() if _sha(SQL_DIR / name) != sha]
    assert not changed, f"shipped migrations changed: {changed}; revert them and add a new migration instead"
    assert [m.version for m in migrations.MIGRATIONS] == list(range(1, migrations.LATEST + 1))


def test_runtime_code_imports_no_migration() -> None:
    """Only the code that applies migrations imports them; nothing shares SQL with a frozen migration."""
    package = Path(migrations.__file__).parents[2]
    allowed = {"store/store.py", "store/upgrade.py"}
    for path in package.rglob("*.py"):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("store/migrations/") or rel in allowed:
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"store\.migrations|from kaynak\.store import .*\bmigrations\b", text), rel
    for path in (Path(migrations.__file__).parent).glob("*.py"):
        text = path.read_text(encoding="utf-8")
        imports = re.findall(r"^\s*(?:from|import) (kaynak\.[\w.]+)", text, re.M)
        assert all(m.startswith(("kaynak.store.migrations", "kaynak.errors", "kaynak.langdetect")) for m in imports), (
            path.name,
            imports,
        )


def _ingest(store: Store, name: str) -> None:
    col = store.create_collection(name, "turkish", "hash", HASH.dim)
    for source, texts in DOCS.items():
        pages, chunks = [], []
        for number, text in enumerate(texts, start=1):
            pages.append(Page(number, text))
            for m in re.finditer(r"[^\n]+", text):
                chunks.append(Chunk(len(chunks), number, None, m.start(), m.end(), m.group()))
        emb = HASH.embed_passages([c.text for c in chunks])
        store.replace_document(col, source, hashlib.sha256(source.encode()).hexdigest(), source, {}, pages, chunks, emb)


def _schema(url: str) -> list[str]:
    """``pg_dump --schema-only``, without comments, settings and the dump's random restrict key."""
    out = subprocess.run(
        [str(embedded_bin_dir() / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges", "-d", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    keep = []
    for line in out.splitlines():
        noise = ("--", "SET ", "SELECT pg_catalog.set_config", "\\restrict", "\\unrestrict")
        if not line.strip() or line.startswith(noise):
            continue
        keep.append(line.rstrip())
    return keep


def _answers(url: str, collection: str) -> list[list[dict[str, Any]]]:
    with Store(url, pool_size=1) as store:
        svc = SearchService(store, Settings(collection=collection, embedder="hash"), lambda name: HASH)
        return [
            [h.to_dict() for h in svc.search(q, collection, mode=mode, k=5)]
            for q in QUERIES
            for mode in ("keyword", "hybrid")
        ]


def test_fresh_and_upgraded_step_by_step_are_the_same(new_database: Callable[[], str]) -> None:
    fresh, old = new_database(), new_database()
    name = "mig_" + uuid.uuid4().hex[:6]
    with Store(fresh, pool_size=1) as store:
        _ingest(store, name)
    _copy_as_version_1(fresh, old)
    with psycopg.connect(old, autocommit=True) as conn:
        for version in range(2, migrations.LATEST + 1):
            assert migrations.apply(conn, upto=version) == [version]
        assert migrations.current_version(conn) == migrations.LATEST
    with Store(old, pool_size=1) as store:  # what `kaynak migrate` does next: analyses stemmed as ingest stems
        store.fill_sentences()
    assert _analyses(old) == _analyses(fresh)
    assert _schema(old) == _schema(fresh)
    assert _contents(old) == _contents(fresh)
    assert_close(_answers(old, name), _answers(fresh, name))
    assert all(_answers(fresh, name))


def _fresh_and_version_11(new_database: Callable[[], str]) -> tuple[str, str, str]:
    """A database filled by today's kaynak, one at schema 11 holding the same documents, and the collection."""
    fresh, old = new_database(), new_database()
    name = "mig_" + uuid.uuid4().hex[:6]
    with Store(fresh, pool_size=1) as store:
        _ingest(store, name)
    _at_version_11(fresh, old)
    return fresh, old, name


def _at_version_11(fresh: str, old: str) -> None:
    _copy_as_version_1(fresh, old)
    with psycopg.connect(old, autocommit=True) as conn:
        migrations.apply(conn, upto=11)


def test_an_upgrade_stopped_midway_resumes_to_the_same_state(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh, stopped, straight = new_database(), new_database(), new_database()
    with Store(fresh, pool_size=1) as store:
        _ingest(store, "mig_" + uuid.uuid4().hex[:6])
    _at_version_11(fresh, stopped)
    _at_version_11(fresh, straight)
    monkeypatch.setattr(steps, "BATCH_DOCUMENTS", 1)  # one document per committed batch

    seen: list[tuple[int, int, int]] = []

    def stop_after_two(m: migrations.Migration, done: int, total: int) -> None:
        seen.append((m.version, done, total))
        if len(seen) == 2:
            raise KeyboardInterrupt  # like Ctrl-C, or a kill: the batch in flight was committed or rolled back

    with pytest.raises(KeyboardInterrupt):
        migrate(stopped, progress=stop_after_two)
    st = migration_status(stopped)
    assert st.version == 11 and 12 in st.in_progress and st.in_progress[12][0] == 2
    with pytest.raises(MigrationRequired, match=r"under way.*kaynak migrate"):
        Store(stopped, pool_size=1)  # a half-done upgrade is never used, whatever its size
    assert migrate(stopped) == UPGRADE
    assert migrate(straight) == UPGRADE
    assert migration_status(stopped).in_progress == {}
    assert _contents(stopped) == _contents(straight) == _contents(fresh)


def _settled(url: str) -> dict[str, tuple[bool, bool]]:
    """Per table a data-rewriting migration rewrites: (every page marked all-visible, statistics present)."""
    with psycopg.connect(url) as conn:
        return {
            table: (
                bool(
                    conn.execute(
                        "SELECT relpages > 0 AND relallvisible = relpages FROM pg_class WHERE oid = %s::regclass",
                        (table,),
                    ).fetchone()[0]  # type: ignore[index]
                ),
                bool(conn.execute("SELECT count(*) FROM pg_stats WHERE tablename = %s", (table,)).fetchone()[0]),  # type: ignore[index]
            )
            for table in migrations.REWRITTEN_TABLES
        }


def test_a_data_rewriting_upgrade_leaves_the_rewritten_tables_vacuumed_and_analysed(
    new_database: Callable[[], str],
) -> None:
    # migration 12 builds postings anew: without the VACUUM its pages are not all-visible (the keyword leg's
    # index-only scans read the heap for every posting) and it has no statistics until autovacuum comes by
    _, old, _ = _fresh_and_version_11(new_database)
    assert migrate(old) == UPGRADE
    assert _settled(old) == {t: (True, True) for t in migrations.REWRITTEN_TABLES}


def test_a_schema_only_upgrade_vacuums_nothing(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, old, _ = _fresh_and_version_11(new_database)
    assert migrate(old, upto=12) == [12]
    called: list[str] = []
    monkeypatch.setattr(migrations, "settle", lambda conn: called.append("settle") or [])
    assert migrate(old, upto=16) == list(range(13, 17))  # 13-16 are schema only; 17 rewrites again
    assert called == []


def test_a_big_upgrade_is_refused_at_start_with_what_to_run(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, old, _ = _fresh_and_version_11(new_database)
    monkeypatch.setattr(migrations, "AUTO_MIGRATE_ROWS", 0)
    with pytest.raises(MigrationRequired, match=rf"schema 11 to {migrations.LATEST}.*kaynak migrate"):
        Store(old, pool_size=1)
    with pytest.raises(MigrationRequired):
        Store(old, pool_size=1, migrate="never")
    status = migration_status(old)
    assert [v for v, _, _ in status.pending] == UPGRADE and status.rows > 0
    with Store(old, pool_size=1, migrate="always") as store:
        assert store.applied_migrations == UPGRADE


def test_a_small_upgrade_runs_at_start(new_database: Callable[[], str]) -> None:
    _, old, _ = _fresh_and_version_11(new_database)
    with Store(old, pool_size=1) as store:
        assert store.applied_migrations == UPGRADE


def test_a_database_from_a_newer_kaynak_is_refused(new_database: Callable[[], str]) -> None:
    url = new_database()
    Store(url, pool_size=1).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO kaynak_migrations (version, name) VALUES (%s, 'from the future')", (99,))
    with pytest.raises(SchemaTooNew, match="newer kaynak"):
        Store(url, pool_size=1)
    with pytest.raises(SchemaTooNew):
        migrate(url)
    assert migration_status(url).version == 99


def test_cli_migrate_status_upgrade_and_doctor(
    new_database: Callable[[], str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from kaynak.cli import app

    fresh, old, name = _fresh_and_version_11(new_database)
    monkeypatch.setenv("KAYNAK_DATABASE_URL", old)
    monkeypatch.setattr(migrations, "AUTO_MIGRATE_ROWS", 0)  # this small database stands for a big one
    runner = CliRunner()
    res = runner.invoke(app, ["migrate", "--status"])
    assert res.exit_code == 0 and f"schema version 11, this kaynak needs {migrations.LATEST}" in res.stdout, res.output
    doctor = runner.invoke(app, ["doctor", "--json"])
    assert doctor.exit_code == 1 and "kaynak migrate" in doctor.stdout, doctor.output
    search = runner.invoke(app, ["search", "boiler pressure", "-c", name, "--mode", "keyword"])
    assert search.exit_code == 1 and "run `kaynak migrate`" in search.output, search.output
    res = runner.invoke(app, ["migrate", "--no-backup", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["applied"] == UPGRADE and '"pending": []' in res.stdout
    # the documents from before migration 14 get the sentence analyses a fresh ingest stores
    assert json.loads(res.stdout)["analyses_filled"] == len(DOCS) and json.loads(res.stdout)["analyses_pending"] == 0
    assert _analyses(old) == _analyses(fresh) and len(_analyses(fresh)) > len(DOCS)
    search = runner.invoke(app, ["search", "boiler pressure", "-c", name, "--mode", "keyword"])
    assert search.exit_code == 0 and "boiler.txt" in search.stdout, search.output


def test_cli_migrate_takes_a_backup_first(
    new_database: Callable[[], str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from kaynak.cli import app

    _, old, _ = _fresh_and_version_11(new_database)
    monkeypatch.setenv("KAYNAK_DATABASE_URL", old)
    res = CliRunner().invoke(app, ["migrate", "--backup", str(tmp_path / "before.dump")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "before.dump").stat().st_size > 0 and "applied migrations 12" in res.stdout
    out = " ".join(res.stdout.split())  # the terminal's width may wrap a line anywhere
    assert "VACUUM (ANALYZE) of the rewritten tables" in out and "vacuumed and analysed" in out


def test_a_server_told_to_migrate_always_backs_up_first(
    new_database: Callable[[], str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kaynak.context import Context

    _, old, _ = _fresh_and_version_11(new_database)
    with Context(database_url=old, data_dir=tmp_path, migrate="always") as ctx:
        assert ctx.store.applied_migrations == UPGRADE
    backups = list((tmp_path / "backups").glob(f"before-schema-{migrations.LATEST}-*.dump"))
    assert len(backups) == 1 and backups[0].stat().st_size > 0


def test_cli_migrate_stores_the_analyses_left_after_a_schema_only_upgrade(
    new_database: Callable[[], str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small database upgrades itself at start (migration 14 is schema only) and keeps its documents pending:
    ``kaynak migrate --status`` says so, and ``kaynak migrate`` stores them though no migration is pending."""
    from typer.testing import CliRunner

    from kaynak.cli import app

    fresh, old, _ = _fresh_and_version_11(new_database)
    Store(old, pool_size=1).close()
    monkeypatch.setenv("KAYNAK_DATABASE_URL", old)
    runner = CliRunner()
    res = runner.invoke(app, ["migrate", "--status"])
    assert res.exit_code == 0 and "up to date" in res.stdout, res.output
    assert f"quote analyses to store for {len(DOCS)} documents" in res.stdout, res.output
    res = runner.invoke(app, ["migrate"])
    assert res.exit_code == 0 and f"stored the quote analyses of {len(DOCS)} documents" in res.stdout, res.output
    assert _analyses(old) == _analyses(fresh)
    res = runner.invoke(app, ["migrate", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["analyses_filled"] == 0, res.output
