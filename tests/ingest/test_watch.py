"""kaynak watch: a watcher follows a folder changed under it (add, edit, delete, rename, move, slow writes, atomic
saves, a burst of 1,000 files), the database checked against the folder by SQL after each step; SIGKILL mid-burst
and restart; status and heartbeats; polling (issue 19)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kaynak.config import Settings, load_settings
from kaynak.ingest import IngestService
from kaynak.ingest.sync import SyncReport, collection_status
from kaynak.ingest.watch import Watcher, network_fs
from kaynak.store import Store
from testkit.syncutil import Factory, db_mismatches, text_for, write

if not hasattr(__import__("kaynak.loaders").loaders, "load"):
    pytest.skip("the loaders are not in this tree yet", allow_module_level=True)
pytest.importorskip("watchfiles", reason="watchfiles is a dependency of kaynak watch")

SETTLE = 0.4


@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(chunk_size=200, parse_workers=2)


@pytest.fixture
def factory() -> Factory:
    return Factory()


def wait_for(cond: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or cond}")


class Running:
    """A Watcher in a thread of this process."""

    def __init__(self, service: IngestService, name: str, **kw: object) -> None:
        self.reports: list[SyncReport] = []
        self.watcher = Watcher(service, [name], settle_s=SETTLE, heartbeat_s=0.5, on_sync=self.reports.append, **kw)  # type: ignore[arg-type]
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.watcher.ready.wait(60), "the watcher's catch-up sync did not finish"

    def _run(self) -> None:
        try:
            self.watcher.run(self.stop)
        except BaseException as err:  # pragma: no cover - reported by close()
            self.errors.append(err)

    def settled(self, store: Store, name: str, root: Path, timeout: float = 60.0) -> None:
        """Wait until the database holds exactly the folder and nothing is pending, then check it once more."""
        wait_for(
            lambda: not self.watcher.pending and db_mismatches(store, name, root) == [],
            timeout,
            "the database to match the folder",
        )
        assert db_mismatches(store, name, root) == []

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive() and self.errors == []


def test_watcher_follows_every_kind_of_change(
    service: IngestService, store: Store, factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    root = tmp_path / "w"
    for i in range(4):
        write(root / (f"sub/a{i}.md" if i % 2 else f"a{i}.md"), text_for(i))
    service.ingest([root], unique_name, language="english", remember=True)
    write(root / "while_down.md", text_for(20))  # changed while no watcher ran: the catch-up takes it
    emb = factory.embedder
    w = Running(service, unique_name)
    try:
        w.settled(store, unique_name, root)
        status = collection_status(store, unique_name)
        assert status["watching"] is True and status["files_pending"] == 0

        write(root / "new.md", text_for(5))  # add
        w.settled(store, unique_name, root)
        write(root / "a0.md", text_for(0, version=1))  # edit
        w.settled(store, unique_name, root)
        (root / "sub/a1.md").unlink()  # delete
        w.settled(store, unique_name, root)

        before = len(emb.texts)
        (root / "new.md").rename(root / "renamed.md")  # rename: zero texts embedded
        w.settled(store, unique_name, root)
        (root / "other").mkdir()
        (root / "sub/a3.md").rename(root / "other/a3.md")  # move between subfolders
        w.settled(store, unique_name, root)
        (root / "other").rename(root / "other2")  # a whole folder moved
        w.settled(store, unique_name, root)
        assert len(emb.texts) == before, "a pure rename or move must not embed anything"
        # After the catch-up, a change is synced at its own path, not by walking the folder.
        assert w.reports[-1].roots[0]["files"] <= 2 and w.reports[-1].moved == [
            {"from": "other/a3.md", "to": "other2/a3.md"}
        ]

        # A file written slowly in pieces is taken once, whole.
        before = len(emb.texts)
        slow = root / "slow.md"
        pieces = [text_for(30 + k) for k in range(6)]
        with open(slow, "w", encoding="utf-8") as f:
            for piece in pieces:
                f.write(piece)
                f.flush()
                time.sleep(SETTLE / 3)
        w.settled(store, unique_name, root)
        col = store.get_collection(unique_name)
        assert len(emb.texts) - before == store.get_document(col, "slow.md").chunk_count

        # An editor's atomic save: write a temporary file, keep a backup, rename over the original.
        before = len(emb.texts)
        tmp = root / ".a2.md.swp"
        tmp.write_text(text_for(2, version=7), encoding="utf-8")
        os.link(root / "a2.md", root / "a2.md~")
        os.replace(tmp, root / "a2.md")
        (root / "a2.md~").unlink()
        w.settled(store, unique_name, root)
        assert len(emb.texts) - before == store.get_document(col, "a2.md").chunk_count

        # A burst of 1,000 small files.
        burst = root / "burst"
        burst.mkdir()
        for i in range(1000):
            (burst / f"f{i:04d}.txt").write_text(f"note {i} about the river and the town number {i}\n", "utf-8")
        w.settled(store, unique_name, root, timeout=240)
        assert store.get_collection(unique_name).document_count == 1000 + 6
    finally:
        w.close()
    assert collection_status(store, unique_name)["watching"] is False  # a clean stop clears the heartbeat


def test_polling_watcher_follows_changes(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    write(tmp_path / "p0.md", text_for(1))
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    w = Running(service, unique_name, poll=True, poll_ms=100)
    try:
        assert w.watcher.polling
        write(tmp_path / "p1.md", text_for(2))
        (tmp_path / "p0.md").unlink()
        w.settled(store, unique_name, tmp_path)
        [entry] = collection_status(store, unique_name)["watchers"]
        assert entry["polling"] is True
    finally:
        w.close()


def test_network_file_system_detection(tmp_path: Path) -> None:
    assert network_fs(tmp_path) is False or Path("/proc/self/mounts").exists()
    assert network_fs("/proc") is False


def _kaynak(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kaynak", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            **env,
            "KAYNAK_WATCH_SETTLE_S": str(SETTLE),
            "KAYNAK_PARSE_WORKERS": "2",
            "KAYNAK_CHUNK_SIZE": "200",
        },
    )


def test_sigkill_mid_burst_then_restart_catches_up(
    env: dict[str, str], store: Store, tmp_path: Path, unique_name: str
) -> None:
    from typer.testing import CliRunner

    from kaynak.cli import app

    root = tmp_path / "k"
    write(root / "first.md", text_for(1))
    res = CliRunner().invoke(app, ["ingest", str(root), "-c", unique_name, "--language", "english"])
    assert res.exit_code == 0, res.output
    proc = _kaynak(env, "watch", "-c", unique_name, "--json")
    try:
        wait_for(lambda: collection_status(store, unique_name, scan=False)["watching"], 60, "the watcher to start")
        burst = root / "burst"
        burst.mkdir()
        for i in range(400):
            (burst / f"b{i:03d}.txt").write_text(f"burst note {i} about the harbour and the island {i}\n", "utf-8")
        wait_for(lambda: store.get_collection(unique_name).document_count > 20, 120, "the burst to start going in")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    n = store.get_collection(unique_name).document_count
    # Whatever got in is whole: every stored document matches its file.
    assert [p for p in db_mismatches(store, unique_name, root) if not p.startswith("file without")] == []
    # The killed watcher's heartbeat is left behind; a new watcher catches up on start.
    proc = _kaynak(env, "watch", "-c", unique_name, "--json")
    try:
        wait_for(lambda: db_mismatches(store, unique_name, root) == [], 180, "the restarted watcher to catch up")
        assert store.get_collection(unique_name).document_count == 401 >= n
        write(root / "after.md", text_for(9))
        wait_for(lambda: db_mismatches(store, unique_name, root) == [], 60, "a change after the restart")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert any("after.md" in (r.get("ingest") or {}).get("added", []) for r in lines)
    assert all(w["pid"] != proc.pid for w in collection_status(store, unique_name, scan=False)["watchers"])


def test_watcher_sync_and_ingest_at_once_embed_each_change_once(
    store: Store, settings: Settings, tmp_path: Path, unique_name: str
) -> None:
    from kaynak.ingest.sync import sync

    factory = Factory()
    services = [IngestService(store, settings, factory) for _ in range(3)]
    write(tmp_path / "base.md", text_for(0))
    services[0].ingest([tmp_path], unique_name, language="english", remember=True)
    w = Running(services[0], unique_name)
    try:
        before = len(factory.embedder.texts)
        for i in range(1, 31):
            write(tmp_path / f"c{i:02d}.md", text_for(i))
        write(tmp_path / "base.md", text_for(0, version=2))
        runs = [
            threading.Thread(target=lambda: services[1].ingest([tmp_path], unique_name, remember=True)),
            threading.Thread(target=lambda: sync(services[2], unique_name)),
        ]
        for t in runs:
            t.start()
        for t in runs:
            t.join()
        w.settled(store, unique_name, tmp_path)
    finally:
        w.close()
        for s in services:
            s.close()
    col = store.get_collection(unique_name)
    changed = sum(d.chunk_count for d in store.list_documents(col))
    assert len(factory.embedder.texts) - before == changed  # each new or changed file embedded exactly once


def test_a_rename_whose_new_name_is_still_settling_is_still_a_rename(
    service: IngestService, store: Store, factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    from kaynak.ingest.sync import sync

    write(tmp_path / "old.md", text_for(1))
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    before = len(factory.embedder.texts)
    (tmp_path / "old.md").rename(tmp_path / "new.md")
    new = str(tmp_path / "new.md")
    # The old name's deletion has settled, the new name not yet: the document is kept, not removed …
    r = sync(service, unique_name, hold=lambda path: path == new, scope=[str(tmp_path / "old.md"), new])
    assert r.deferred == ["old.md"] and r.removed == [] and r.held == ["new.md"]
    # … and once the new name settles, it is a rename: nothing embedded.
    r = sync(service, unique_name, scope=[str(tmp_path / "old.md"), new])
    assert r.moved == [{"from": "old.md", "to": "new.md"}] and len(factory.embedder.texts) == before
    assert db_mismatches(store, unique_name, tmp_path) == []
