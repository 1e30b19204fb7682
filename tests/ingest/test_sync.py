"""kaynak sync: remembered sources, stat-based change detection, renames without re-embedding, the prune rule per
root, the sync lock against concurrent ingests, status, and stale search hits (issue 19)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kaynak.config import Settings, load_settings
from kaynak.errors import UsageError
from kaynak.ingest import IngestService
from kaynak.ingest.sync import collection_status, sync
from kaynak.store import Store
from kaynak.store.store import chunk_id
from testkit.syncutil import Factory, db_mismatches, text_for, write

if not hasattr(__import__("kaynak.loaders").loaders, "load"):
    pytest.skip("the loaders are not in this tree yet", allow_module_level=True)


@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(chunk_size=200, parse_workers=1)


@pytest.fixture
def factory() -> Factory:
    return Factory()


def make_tree(root: Path, n: int = 6) -> None:
    for i in range(n):
        write(root / (f"sub/n{i}.md" if i % 2 else f"n{i}.md"), text_for(i))


def test_ingest_remembers_the_folder_and_sync_follows_every_kind_of_change(
    service: IngestService, store: Store, factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    root = tmp_path / "docs"
    make_tree(root)
    write(root / "skip.md", text_for(99))
    service.ingest([root], unique_name, language="english", remember=True, exclude=["skip.md"])
    col = store.get_collection(unique_name)
    [src] = store.collection_sources(col)
    assert src["root"] == str(root.resolve()) and src["exclude"] == ["skip.md"] and src["last_sync_at"] is not None
    (root / "skip.md").unlink()

    def check() -> None:
        assert db_mismatches(store, unique_name, root) == []

    check()
    emb = factory.embedder
    # Nothing changed: nothing read, nothing embedded.
    before = len(emb.texts)
    r = sync(service, unique_name)
    assert r.hashed == 0 and r.unchanged == 6 and r.changes == 0 and len(emb.texts) == before

    # add, edit, delete
    write(root / "new.md", text_for(10))
    write(root / "n0.md", text_for(0, version=1))
    (root / "n2.md").unlink()
    r = sync(service, unique_name)
    assert r.ingest is not None and r.ingest.added == ["new.md"] and r.ingest.updated == ["n0.md"]
    assert r.removed == ["n2.md"] and r.hashed == 2
    check()

    # A pure rename and a move between subfolders: nothing parsed, nothing embedded.
    before = len(emb.texts)
    (root / "new.md").rename(root / "renamed.md")
    (root / "other").mkdir()
    (root / "sub/n1.md").rename(root / "other/n1.md")
    r = sync(service, unique_name)
    assert sorted((m["from"], m["to"]) for m in r.moved) == [("new.md", "renamed.md"), ("sub/n1.md", "other/n1.md")]
    assert r.ingest is None and len(emb.texts) == before
    check()

    # A touched file (mtime only) is read once to compare, then its new stat is remembered.
    os.utime(root / "n4.md", ns=(1, 1))
    r = sync(service, unique_name)
    assert r.hashed == 1 and r.changes == 0 and len(emb.texts) == before
    assert sync(service, unique_name).hashed == 0
    check()

    # A whole folder moved.
    (root / "sub").rename(root / "moved")
    r = sync(service, unique_name)
    assert sorted(m["to"] for m in r.moved) == ["moved/n3.md", "moved/n5.md"] and len(emb.texts) == before
    check()


def test_renamed_document_is_searchable_under_its_new_name_and_the_old_name_can_come_back(
    service: IngestService, store: Store, env: dict[str, str], tmp_path: Path, unique_name: str
) -> None:
    from kaynak.context import Context

    write(tmp_path / "a.md", text_for(1))
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    (tmp_path / "a.md").rename(tmp_path / "b.md")
    assert [m["to"] for m in sync(service, unique_name).moved] == ["b.md"]
    shutil.copy(tmp_path / "b.md", tmp_path / "a.md")  # the same bytes at the old name: its old chunk ids again
    r = sync(service, unique_name)
    assert r.ingest is not None and r.ingest.added == ["a.md"]
    assert db_mismatches(store, unique_name, tmp_path) == []
    with Context(load_settings()) as ctx:
        hits = ctx.search.search("river town lake note 1", collections=[unique_name], k=5)
        assert {h.source for h in hits} == {"a.md", "b.md"}
        for h in hits:
            assert h.text[h.quote.char_start - h.char_start : h.quote.char_end - h.char_start] == h.quote.text
            assert ctx.search.chunk_context(h.chunk_id)[0].source == h.source


def test_a_missing_root_removes_nothing_and_other_documents_are_kept(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    from kaynak.loaders import load

    root = tmp_path / "drive"
    make_tree(root, 3)
    service.ingest([root], unique_name, language="english", remember=True)
    # A document from elsewhere (an upload, a data set) is not the folder's to prune.
    service.ingest_documents(unique_name, [("uploaded.md", "x" * 64, load(write(tmp_path / "u.md", text_for(7))))])
    root.rename(tmp_path / "unmounted")
    r = sync(service, unique_name)
    assert r.roots[0]["status"] == "missing" and r.removed == []
    assert len(store.file_states(store.get_collection(unique_name))) == 4
    status = collection_status(store, unique_name)
    assert status["roots"][0]["status"] == "missing"
    (tmp_path / "unmounted").rename(root)
    (root / "n0.md").unlink()
    r = sync(service, unique_name)
    assert r.removed == ["n0.md"]
    assert sorted(store.file_states(store.get_collection(unique_name))) == ["n2.md", "sub/n1.md", "uploaded.md"]


def test_a_file_ingested_by_name_is_its_own_root(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    f = write(tmp_path / "one.md", text_for(1))
    service.ingest([f], unique_name, language="english", remember=True)
    write(f, text_for(1, version=2))
    r = sync(service, unique_name)
    assert r.ingest is not None and r.ingest.updated == ["one.md"]
    f.unlink()
    assert sync(service, unique_name).removed == ["one.md"]


def test_sync_without_remembered_sources_is_a_usage_error(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    make_tree(tmp_path, 1)
    service.ingest([tmp_path], unique_name, language="english")  # not remembered (remember=False)
    with pytest.raises(UsageError, match="no remembered folders"):
        sync(service, unique_name)


def test_status_shows_pending_failing_and_last_sync(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    make_tree(tmp_path, 3)
    write(tmp_path / "empty.md", "")
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    s = collection_status(store, unique_name)
    assert s["files_pending"] == 0 and s["last_sync_at"] is not None and s["watching"] is False
    assert s["files_failing"] == 1 and s["failing"][0]["source"] == "empty.md" and s["failing"][0]["reason"]
    write(tmp_path / "later.md", text_for(5))
    (tmp_path / "n0.md").unlink()
    s = collection_status(store, unique_name)
    assert s["files_pending"] == 2 and s["pending"] == ["later.md", "n0.md"]
    sync(service, unique_name)
    assert collection_status(store, unique_name)["files_pending"] == 0
    (tmp_path / "empty.md").unlink()
    sync(service, unique_name)
    assert collection_status(store, unique_name)["files_failing"] == 0


def test_sync_and_ingests_at_once_end_like_one_after_another_and_embed_each_file_once(
    store: Store, settings: Settings, tmp_path: Path, unique_name: str
) -> None:
    make_tree(tmp_path, 4)
    factory = Factory()
    first = IngestService(store, settings, factory)
    first.ingest([tmp_path], unique_name, language="english", remember=True)
    for i in range(4, 14):
        write(tmp_path / f"c{i}.md", text_for(i))
    write(tmp_path / "n0.md", text_for(0, version=3))
    before = len(factory.embedder.texts)
    services = [IngestService(store, settings, factory) for _ in range(3)]
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            if k == 1:
                services[k].ingest([tmp_path], unique_name, remember=True)
            else:
                sync(services[k], unique_name)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in [first, *services]:
        s.close()
    assert errors == []
    assert db_mismatches(store, unique_name, tmp_path) == []
    col = store.get_collection(unique_name)
    with store.pool.connection() as conn:
        changed = conn.execute(
            "SELECT sum(chunk_count) FROM documents WHERE collection_id = %s "
            "AND (source LIKE 'c%%' OR source = 'n0.md')",
            (col.id,),
        ).fetchone()[0]
    assert len(factory.embedder.texts) - before == changed  # every changed file embedded exactly once


def test_cli_sync_and_status(env: dict[str, str], store: Store, tmp_path: Path, unique_name: str) -> None:
    from kaynak.cli import app

    runner = CliRunner()
    make_tree(tmp_path, 2)
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "english", "--json"])
    assert res.exit_code == 0, res.output
    write(tmp_path / "x.md", text_for(8))
    res = runner.invoke(app, ["status", "-c", unique_name, "--json"])
    assert res.exit_code == 0, res.output
    [st] = json.loads(res.stdout)["collections"]
    assert st["files_pending"] == 1 and st["roots"][0]["root"] == str(tmp_path.resolve())
    res = runner.invoke(app, ["sync", "-c", unique_name, "--json"])
    assert res.exit_code == 0, res.output
    [rep] = json.loads(res.stdout)["collections"]
    assert rep["ingest"]["added"] == ["x.md"]
    res = runner.invoke(app, ["sync", "-c", unique_name])
    assert res.exit_code == 0 and "0 added" in res.stdout
    res = runner.invoke(app, ["status", "-c", unique_name])
    assert res.exit_code == 0 and "pending 0" in res.stdout
    res = runner.invoke(app, ["sync", "-c", "no_such_collection_here"])
    assert res.exit_code == 1 and "no collection" in res.stderr


def test_chunk_ids_follow_the_new_source(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    write(tmp_path / "a.md", text_for(3))
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    col = store.get_collection(unique_name)
    doc = store.get_document(col, "a.md")
    (tmp_path / "a.md").rename(tmp_path / "z.md")
    sync(service, unique_name)
    moved = store.get_document(col, "z.md")
    assert moved.id == doc.id and moved.sha256 == doc.sha256
    ids = [chunk_id(unique_name, "z.md", doc.sha256, i) for i in range(doc.chunk_count)]
    assert len(store.get_chunks(ids)) == doc.chunk_count


def test_hits_of_a_file_changed_on_disk_say_stale(
    service: IngestService, store: Store, env: dict[str, str], tmp_path: Path, unique_name: str
) -> None:
    from kaynak.context import Context

    for i in range(3):
        write(tmp_path / f"s{i}.md", text_for(i))
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    with Context(load_settings()) as ctx:

        def stale_of(query: str) -> dict[str, bool]:
            return {h.source: h.stale for h in ctx.search.search(query, collections=[unique_name], k=10)}

        assert set(stale_of("river town lake note").values()) == {False}
        write(tmp_path / "s0.md", text_for(0, version=5))  # edited
        (tmp_path / "s1.md").unlink()  # deleted
        os.utime(tmp_path / "s2.md", ns=(10**18, 10**18))  # touched, same bytes: not stale
        flags = stale_of("river town lake note")
        assert flags["s0.md"] is True and flags["s1.md"] is True and flags["s2.md"] is False
        sync(service, unique_name)
        assert set(stale_of("river town lake note").values()) == {False}


def test_status_over_rest_and_mcp(
    service: IngestService, store: Store, env: dict[str, str], tmp_path: Path, unique_name: str
) -> None:
    import asyncio

    from fastapi.testclient import TestClient

    from kaynak.context import Context
    from kaynak.mcp_server import build_mcp
    from kaynak.server import create_app

    make_tree(tmp_path, 2)
    write(tmp_path / "empty.md", "")
    service.ingest([tmp_path], unique_name, language="english", remember=True)
    write(tmp_path / "pending.md", text_for(4))
    with Context(load_settings()) as ctx:
        with TestClient(create_app(ctx)) as client:
            r = client.get(f"/v1/collections/{unique_name}/status")
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["files_pending"] == 1 and body["pending"] == ["pending.md"]
            assert body["files_failing"] == 1 and body["failing"][0]["source"] == "empty.md"
            assert body["watching"] is False and body["last_sync_at"]
            assert client.get("/v1/collections/no_such_one_here/status").status_code == 404
            # typed (CollectionStatus in the OpenAPI document), and still the service's dict byte for byte
            expected = collection_status(ctx.search.store, unique_name)
            # a caller that is not an admin of the collection (TestClient's address is not local) sees each folder's
            # last name only (issue 53: the server's folders only to admins)
            expected["roots"] = [{**root, "root": Path(root["root"]).name} for root in expected["roots"]]
            assert r.content == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode()
            schema = client.get("/openapi.json").json()
            answer = schema["paths"]["/v1/collections/{name}/status"]["get"]["responses"]["200"]
            assert answer["content"]["application/json"]["schema"]["$ref"].endswith("/CollectionStatus")

        async def listed() -> Any:  # through a client, as the local user (stdio / in-process: full access)
            from mcp import Client

            async with Client(build_mcp(ctx.search)) as client:
                return await client.call_tool("list_collections", {})

        result = asyncio.run(listed())
        [mine] = [c for c in result.structured_content["collections"] if c["name"] == unique_name]
        assert mine["sync"]["files_pending"] == 1 and mine["sync"]["watching"] is False
        assert mine["sync"]["failing"][0]["source"] == "empty.md"


def test_serve_watch_keeps_the_collection_current(
    env: dict[str, str], store: Store, tmp_path: Path, unique_name: str
) -> None:
    import subprocess
    import sys
    import time

    from kaynak.cli import app

    make_tree(tmp_path, 2)
    assert CliRunner().invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "english"]).exit_code == 0
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaynak", "serve", "--watch", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env, "KAYNAK_WATCH_SETTLE_S": "0.3"},
    )
    try:
        end = time.monotonic() + 90
        while not collection_status(store, unique_name, scan=False)["watching"]:
            assert time.monotonic() < end and proc.poll() is None, "the server's watcher did not start"
            time.sleep(0.2)
        write(tmp_path / "served.md", text_for(12))
        while db_mismatches(store, unique_name, tmp_path):
            assert time.monotonic() < end, db_mismatches(store, unique_name, tmp_path)
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
