"""Many kaynak processes on one database: concurrent ingests of the same folder, sharded ingests, and two serve
processes answering searches meanwhile. Every document ends up stored exactly once with all its rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import psycopg
import pytest

from kaynak.context import Context
from kaynak.errors import UsageError
from kaynak.ingest.shard import parse_shard, select_shard, shard_of
from testkit.servers import free_port

N_FILES = 24


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(N_FILES):
        sub = root / f"part{i % 3}"
        sub.mkdir(exist_ok=True)
        (sub / f"doc{i:02d}.md").write_text(
            f"# Belge {i}\n\nKat malikleri kurulu {i}. toplantısında bütçeyi onayladı. "
            f"The board approved budget number {i} and the roof repair.\n\n" + "Ek paragraf. " * (i % 5),
            encoding="utf-8",
        )
    return root


def test_shard_spec_and_split() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)
    sources = [f"dir/file{i}.pdf" for i in range(1000)]
    counts = [sum(1 for s in sources if shard_of(s, 4) == k) for k in range(4)]
    assert sum(counts) == 1000 and min(counts) > 200  # every file in exactly one shard, roughly even
    assert [shard_of(s, 4) for s in sources] == [shard_of(s, 4) for s in sources]  # stable

    found = SimpleNamespace(
        jobs=[SimpleNamespace(source=s) for s in sources[:10]], failed=[{"source": sources[10], "error": "x"}]
    )
    with pytest.raises(UsageError, match="prune"):
        select_shard(found, (0, 2), prune=True)
    select_shard(found, (1, 2))
    assert all(shard_of(j.source, 2) == 1 for j in found.jobs)


def _kaynak(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kaynak", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow
def test_concurrent_ingests_sharded_ingests_and_two_servers(
    env: dict[str, str], database_url: str, unique_name: str, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "docs")
    same, sharded = unique_name + "_same", unique_name + "_shard"
    with Context() as ctx:  # the collections exist first, so searches answer 200 from the start
        ctx.ingest.create_collection(same, "turkish", "hash")
        ctx.ingest.create_collection(sharded, "turkish", "hash")
    penv = {**os.environ, **env, "KAYNAK_PARSE_WORKERS": "1"}

    servers = []
    for _ in range(2):
        port = free_port()
        servers.append(
            (_kaynak("serve", "--port", str(port), "--log-level", "warning", env=penv), f"http://127.0.0.1:{port}")
        )
    statuses: list[int] = []
    stop = threading.Event()

    def client(base: str) -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            while not stop.is_set():
                try:
                    r = http.post("/v1/search", json={"q": "kat malikleri bütçe", "collections": [same, sharded]})
                    statuses.append(r.status_code)
                except httpx.TransportError:
                    time.sleep(0.1)  # not listening yet

    try:
        clients = [threading.Thread(target=client, args=(b,)) for _, b in servers for _ in range(2)]
        for c in clients:
            c.start()
        ingests = [_kaynak("ingest", str(folder), "-c", same, "--json", env=penv) for _ in range(3)]
        ingests += [
            _kaynak("ingest", str(folder), "-c", sharded, "--shard", f"{i}/2", "--json", env=penv) for i in range(2)
        ]
        outs = []
        for p in ingests:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, err
            outs.append(json.loads(out))
        time.sleep(1.0)  # searches keep running against the finished data
    finally:
        stop.set()
        for c in clients:
            c.join(30)
        for p, _ in servers:
            p.terminate()
            p.wait(20)

    assert statuses and set(statuses) == {200}, {s: statuses.count(s) for s in set(statuses)}
    # the three same-folder ingests: every file added exactly once between them, the rest skipped as unchanged
    added = [s for o in outs[:3] for s in o["added"]]
    assert sorted(added) == sorted(set(added)) and len(added) == N_FILES
    # the two shards: disjoint, together the whole folder
    a, b = (set(o["added"]) for o in outs[3:])
    assert not a & b and len(a | b) == N_FILES and a and b

    with psycopg.connect(database_url) as conn:
        for name in (same, sharded):
            docs, chunk_sum, chunks, posted = conn.execute(
                """
                SELECT count(*), sum(d.chunk_count),
                       (SELECT count(*) FROM chunks c JOIN collections k ON k.id = c.collection_id WHERE k.name = %s),
                       (SELECT count(DISTINCT p.chunk_key) FROM postings p
                          JOIN collections k ON k.id = p.collection_id WHERE k.name = %s)
                FROM documents d JOIN collections k ON k.id = d.collection_id WHERE k.name = %s
                """,
                (name, name, name),
            ).fetchone()
            assert docs == N_FILES and chunk_sum == chunks == posted, (name, docs, chunk_sum, chunks, posted)
    print(f"\n{len(statuses)} searches on 2 serve processes during 5 ingest processes: all 200")
