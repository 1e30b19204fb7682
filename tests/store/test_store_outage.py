"""The store's error boundary and outage handling (issue 12 item 5, issue 15's map_errors).

No psycopg error leaves the store; a dead embedded server makes requests fail fast with DatabaseUnavailable
(well under a second, never a pool wait), the store restarts it with a log line, and stale pooled connections are
replaced without a single extra error after recovery.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from kaynak.errors import DatabaseUnavailable, DataDirError, DataRejected, StoreError, WriteConflict
from kaynak.store import Store
from kaynak.store.boundary import map_errors, translate
from kaynak.store.server import check_major_version, embedded_major, embedded_uri, stop_embedded


def test_translate_maps_driver_errors_to_kaynak_errors() -> None:
    assert isinstance(translate(psycopg.errors.AdminShutdown("terminating")), DatabaseUnavailable)
    assert isinstance(translate(psycopg.OperationalError("connection refused")), DatabaseUnavailable)
    assert isinstance(translate(psycopg.errors.DeadlockDetected("deadlock")), WriteConflict)
    standby = translate(psycopg.errors.SerializationFailure("canceling statement due to conflict with recovery"))
    assert isinstance(standby, DatabaseUnavailable)
    assert isinstance(translate(psycopg.errors.NumericValueOutOfRange("nan")), DataRejected)
    other = translate(psycopg.errors.UndefinedTable("no such table"))
    assert type(other) is StoreError and "no such table" in other.message


def test_no_driver_error_leaves_the_store(store: Store) -> None:
    with pytest.raises(StoreError) as info:
        store.query_lexemes("no_such_text_search_config", "x")
    assert not isinstance(info.value, psycopg.Error)
    assert isinstance(info.value.__cause__, psycopg.Error)


def test_map_errors_calls_back_on_outage() -> None:
    seen: list[bool] = []
    with pytest.raises(DatabaseUnavailable), map_errors("x", on_unavailable=lambda: seen.append(True)):
        raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    assert seen == [True]


def test_health_reports_the_primary_quickly(store: Store) -> None:
    h = store.health(timeout=1.0)
    assert h["ok"] is True and h["primary"]["ok"] is True
    assert h["primary"]["schema_version"] >= 2 and h["replicas"] == []
    assert h["elapsed_ms"] < 1000


def test_a_data_folder_of_another_major_version_is_refused(tmp_path: Path) -> None:
    pgdata = tmp_path / "postgres"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text(f"{embedded_major() - 1}\n")
    with pytest.raises(DataDirError) as info:
        check_major_version(pgdata)
    msg = info.value.message
    assert f"PostgreSQL {embedded_major() - 1}" in msg and "kaynak backup" in msg and "kaynak restore" in msg
    with pytest.raises(DataDirError, match="kaynak backup"):
        embedded_uri(tmp_path)  # refused before anything starts or changes
    assert not (pgdata / "postmaster.pid").exists()
    (pgdata / "PG_VERSION").write_text(f"{embedded_major()}\n")
    check_major_version(pgdata)  # the same major version starts


@pytest.fixture
def own_embedded() -> Iterator[Path]:
    """A data folder with its own embedded server (this test kills it; the session's server must live on)."""
    path = Path(tempfile.mkdtemp(prefix="kaynak-outage-"))
    yield path
    stop_embedded(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_outage_fails_fast_then_the_embedded_server_is_restarted(
    own_embedded: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kaynak.store")
    store = Store.open(None, own_embedded, pool_size=3)
    try:
        assert store.list_collections() == []
        pid = int((own_embedded / "postgres" / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        t_kill = time.monotonic()
        time.sleep(0.3)
        # every request while it is away fails fast with DatabaseUnavailable, never a pool wait
        worst = 0.0
        failures = 0
        for _ in range(5):
            t0 = time.monotonic()
            try:
                store.list_collections()
            except DatabaseUnavailable:
                failures += 1
            worst = max(worst, time.monotonic() - t0)
        assert failures >= 1
        assert worst < 1.0, f"a request during the outage took {worst:.2f} s"
        h = store.health(timeout=1.0)
        assert h["elapsed_ms"] < 1500
        # the store restarts the embedded server by itself (with back-off) and requests succeed again
        killed_at = t_kill
        deadline = time.monotonic() + 40
        while True:
            try:
                store.list_collections()
                break
            except DatabaseUnavailable:
                assert time.monotonic() < deadline, "the embedded server was not restarted"
                time.sleep(0.2)
        recovered_s = time.monotonic() - killed_at
        print(
            f"\noutage: worst request {worst * 1000:.0f} ms (DatabaseUnavailable), "
            f"health {h['elapsed_ms']:.0f} ms, back {recovered_s:.1f} s after the kill"
        )
        # stale pooled connections were replaced: no further errors
        for _ in range(10):
            store.list_collections()
        assert store.health(timeout=1.0)["ok"] is True
        deadline = time.monotonic() + 5  # the restart thread logs its success just after the server answers
        while "was restarted" not in " ".join(r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
            time.sleep(0.05)
        messages = " ".join(r.getMessage() for r in caplog.records)
        assert "restarting it" in messages and "was restarted" in messages
    finally:
        store.close()


def test_small_helpers(store: Store) -> None:
    from kaynak.store.boundary import redact
    from kaynak.store.endpoint import lsn_to_int

    assert lsn_to_int("0/16B3748") == 0x16B3748 and lsn_to_int("1/0") == 1 << 32 and lsn_to_int(None) is None
    assert redact("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"
    assert "secret" not in redact("host=h user=u password=secret dbname=db")
    assert store.reader() is store  # no replicas: reads use the primary's store itself
