"""Read replicas with real servers: a primary and a streaming standby made by testkit/pgcluster.py.

Ingest writes on the primary, searches read on the standby, the standby's death sends searches to the primary
with a logged warning, and after a restart it catches up and takes reads again. Lag, failover and catch-up
timings are printed (``pytest -s``) for the closing note.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kaynak.context import Context
from kaynak.errors import StoreError
from testkit.pgcluster import Cluster

pytestmark = pytest.mark.slow

TEXTS = {
    "kat.md": "# Kat malikleri\n\nKat malikleri kurulu yılda en az bir kez toplanır ve yöneticiyi seçer.\n",
    "tenant.md": "# Tenancy\n\nThe tenant pays the rent monthly and the landlord repairs the roof.\n",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster(standbys=1)
    c.wait_streaming()
    yield c
    c.close()


@pytest.fixture
def ctx(cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Context]:
    monkeypatch.delenv("KAYNAK_CONFIG", raising=False)
    context = Context(
        database_url=cluster.primary.url(),
        read_database_url=cluster.standbys[0].url(),
        data_dir=tmp_path / "data",
        embedder="hash",
    )
    yield context
    context.close()


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _sources(hits: list) -> set[str]:
    return {h.source for h in hits}


def test_reads_go_to_the_standby_writes_to_the_primary_failover_and_catch_up(
    cluster: Cluster, ctx: Context, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kaynak.store")
    store = ctx.store
    primary, replica = store.db.primary, store.db.replicas[0]
    assert ctx.settings.read_database_urls == [cluster.standbys[0].url()]

    # ingest on the primary; then wait until the standby has replayed it
    report = ctx.ingest.ingest([_write(tmp_path / "docs", TEXTS)], "repl")
    assert report.ok and len(report.added) == 2
    lag = store.health(timeout=2.0)["replicas"][0]
    waited = store.wait_for_replicas(timeout=30)
    assert waited["ok"], waited
    print(
        f"\nlag right after ingest: {lag.get('lag_bytes')} bytes; standby caught up in "
        f"{waited['replicas'][0]['waited_s']:.3f} s"
    )
    health = store.health(timeout=1.0)
    row = health["replicas"][0]
    assert health["ok"] and row["ok"] and row["in_recovery"] and row["lag_bytes"] == 0 and row["in_rotation"]
    assert row["schema_version"] == health["primary"]["schema_version"]

    # searches and listings read from the standby
    before = (primary.served, replica.served)
    hits = ctx.search.search("kat malikleri kurulu", "repl", mode="keyword", k=5)
    assert "kat.md" in _sources(hits)
    assert [d.source for d in ctx.search.list_documents("repl")] == ["kat.md", "tenant.md"]
    assert replica.served > before[1] and primary.served == before[0]

    # the read view cannot write: writes belong to the primary
    with pytest.raises(StoreError, match="read-only"):
        ctx.search.store.create_collection("never", "english", "hash", 4)

    # lag made visible: pause replay on the standby, write, see the lag and the not-yet-visible document
    import psycopg

    with psycopg.connect(cluster.standbys[0].url(), autocommit=True) as sconn:
        sconn.execute("SELECT pg_wal_replay_pause()")
        try:
            assert ctx.ingest.ingest(
                [_write(tmp_path / "late", {"late.md": "# Geç\n\nGecikmeli çoğaltma.\n"})], "repl"
            ).ok
            row = store.health(timeout=1.0)["replicas"][0]
            assert row["ok"] and row["lag_bytes"] > 0
            assert "late.md" not in _sources(ctx.search.search("gecikmeli çoğaltma", "repl", mode="keyword"))
            assert store.wait_for_replicas(timeout=0.5)["ok"] is False
            print(f"lag while replay was paused: {row['lag_bytes']} bytes, {row.get('lag_seconds')} s")
        finally:
            sconn.execute("SELECT pg_wal_replay_resume()")
    assert store.wait_for_replicas(timeout=30)["ok"]
    assert "late.md" in _sources(ctx.search.search("gecikmeli çoğaltma", "repl", mode="keyword"))

    # kill the standby: searches go on, from the primary, with a logged warning
    cluster.standbys[0].stop("immediate")
    t0 = time.monotonic()
    hits = ctx.search.search("tenant rent", "repl", mode="keyword", k=5)
    failover_s = time.monotonic() - t0
    assert "tenant.md" in _sources(hits)
    assert replica.down
    assert any("read replica" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records)
    print(f"first search after the standby died answered from the primary in {failover_s:.3f} s")
    assert failover_s < 3.0
    health = store.health(timeout=1.0)
    assert health["ok"] and not health["replicas"][0]["ok"] and health["elapsed_ms"] < 1500

    # write while it is down, restart it: it catches up and takes reads again
    more = {f"new{i}.md": f"# Yeni belge {i}\n\nDepo yönetimi ve envanter sayımı {i}.\n" for i in range(5)}
    assert ctx.ingest.ingest([_write(tmp_path / "docs", more)], "repl").ok
    t_restart = time.monotonic()
    cluster.standbys[0].start()
    waited = store.wait_for_replicas(timeout=60)
    assert waited["ok"], waited
    catch_up_s = time.monotonic() - t_restart
    deadline = time.monotonic() + 40
    while True:  # the replica is retried with back-off (2 s, then 4 s …)
        served = replica.served
        hits = ctx.search.search("envanter sayımı", "repl", mode="keyword", k=10)
        if replica.served > served:
            break
        assert time.monotonic() < deadline, "the restarted standby never took reads again"
        time.sleep(0.2)
    back_s = time.monotonic() - t_restart
    assert {f"new{i}.md" for i in range(5)} <= _sources(hits)  # answered by the standby, caught up
    assert any("answers again" in r.getMessage() for r in caplog.records)
    print(f"restarted standby caught up in {catch_up_s:.2f} s and took reads again after {back_s:.2f} s")


def test_a_replica_behind_on_schema_is_reported_not_used(cluster: Cluster, ctx: Context) -> None:
    cluster.wait_streaming()
    store = ctx.store
    replica = store.db.replicas[0]
    real = store.db.schema_version
    assert real is not None
    try:
        store.db.schema_version = real + 1  # as if the primary had migrated further than the replica
        store.db.check_replica_schemas()
        assert replica.behind and "behind" in replica.reason
        row = store.health(timeout=1.0)["replicas"][0]
        assert row["schema_behind"] is True and row["in_rotation"] is False
        before = store.db.primary.served
        ctx.search.list_collections()  # answered by the primary, no error
        assert store.db.primary.served > before
    finally:
        store.db.schema_version = real


def test_doctor_and_ingest_wait_replicas_from_the_cli(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from typer.testing import CliRunner

    from kaynak.cli import app

    cluster.wait_streaming()
    for k, v in {
        "KAYNAK_DATABASE_URL": cluster.primary.url(),
        "KAYNAK_READ_DATABASE_URL": cluster.standbys[0].url(),
        "KAYNAK_DATA_DIR": str(tmp_path / "data"),
        "KAYNAK_EMBEDDER": "hash",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("KAYNAK_CONFIG", raising=False)
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "ingest",
            str(_write(tmp_path / "w", {"w.md": "# W\n\nBekleme testi.\n"})),
            "-c",
            "waitcli",
            "--wait-replicas",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    waited = json.loads(result.stdout)["replicas"]
    assert waited["ok"] and waited["replicas"][0]["ok"]
    report = json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)
    row = report["replicas"][0]
    assert row["ok"] and row["lag_bytes"] == 0 and row["schema_behind"] is False
    assert "last_backup" not in report  # a server by URL: its backups are not kaynak's to judge

    from fastapi.testclient import TestClient

    from kaynak.server import create_app

    with Context() as ctx, TestClient(create_app(ctx)) as http:
        body = http.get("/v1/health").json()
        row = body["database"]["replicas"][0]
        assert row["ok"] and row["lag_bytes"] == 0 and row["in_rotation"]


def test_wait_for_replicas_reports_a_dead_replica(cluster: Cluster, tmp_path: Path) -> None:
    from kaynak.store import Store

    dead = cluster.primary.url().replace(str(cluster.root), "/nonexistent")
    with Store(cluster.primary.url(), read_urls=[dead]) as s:
        res = s.wait_for_replicas(timeout=1)
        assert res["ok"] is False and res["replicas"][0]["error"]
        assert s.list_collections() is not None  # reads fall back to the primary
