"""Benchmark: how fast a watched collection follows a change, and what an idle watcher costs.

In a throwaway embedded database (hash embedder), a folder of ``--files`` small Markdown files is ingested, then:

1. ``sync`` with nothing changed: the stat walk alone (nothing read), and ``kaynak status``'s scan;
2. change-to-searchable latency: a watcher runs in this process (default settle time, ``KAYNAK_WATCH_SETTLE_S``);
   one file is rewritten with a new word, and the clock runs until a keyword search finds that word in it (polled
   every 20 ms). Repeated ``--edits`` times; the sync's own seconds (walk + hash + parse + embed + write) are
   reported beside it. The same for a rename (and the texts embedded for it: 0);
3. idle CPU: ``kaynak watch`` as its own process, after its catch-up sync, for ``--idle`` seconds: CPU seconds from
   /proc/<pid>/stat, with OS events and with polling (``--poll``, 1 s interval).

    python benchmarks/bench_watch.py                   # 10,000 files
    python benchmarks/bench_watch.py --files 500 --idle 10   # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

WORDS = [
    "river",
    "town",
    "lake",
    "bridge",
    "market",
    "water",
    "century",
    "people",
    "walk",
    "side",
    "street",
    "house",
    "garden",
    "road",
    "station",
    "tower",
    "window",
    "light",
    "morning",
    "evening",
    "winter",
    "summer",
    "harbour",
    "island",
    "mountain",
    "valley",
    "forest",
    "field",
    "village",
]


def text(i: int, extra: str = "") -> str:
    words = [WORDS[(i * 7 + k) % len(WORDS)] for k in range(30)]
    return f"# Note {i}\n\nNote {i} {extra}. " + " ".join(words) + ".\n"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(env: dict[str, str], name: str, seconds: float, poll: bool) -> dict[str, Any]:
    args = [sys.executable, "-m", "kaynak", "watch", "-c", name] + (["--poll"] if poll else [])
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "watching … ; Ctrl-C to stop": the catch-up sync is done
        if "watching" not in line:
            raise RuntimeError(f"kaynak watch did not start: {line}{proc.stderr.read()}")
        time.sleep(2)
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    finally:
        proc.terminate()
        proc.wait(60)
    return {
        "mode": "polling 1 s" if poll else "events",
        "seconds": round(t1 - t0, 1),
        "cpu_seconds": round(c1 - c0, 3),
        "cpu_percent": round(100 * (c1 - c0) / (t1 - t0), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--idle", type=float, default=30.0)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="kaynak-bench-watch-") as tmp:
        data_dir = Path(tmp) / "data"
        root = Path(tmp) / "docs"
        env = {**os.environ, "KAYNAK_DATA_DIR": str(data_dir), "KAYNAK_EMBEDDER": "hash"}
        env.pop("KAYNAK_DATABASE_URL", None)
        os.environ.update({"KAYNAK_DATA_DIR": str(data_dir), "KAYNAK_EMBEDDER": "hash"})
        os.environ.pop("KAYNAK_DATABASE_URL", None)
        from kaynak.context import Context
        from kaynak.ingest.sync import collection_status, plan, sync
        from kaynak.ingest.watch import Watcher

        for i in range(args.files):
            p = root / f"d{i % 100:02d}" / f"n{i:05d}.md"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text(i), encoding="utf-8")
        out: dict[str, Any] = {
            "files": args.files,
            "machine": f"{os.cpu_count()} cores, {platform.processor() or ''}"
            f" load {os.getloadavg()[0]:.1f} (shared with other engineers' work)",
        }
        name = "bench"
        ctx = Context()
        try:
            t = time.perf_counter()
            rep = ctx.ingest.ingest([root], name, language="english", remember=True)
            out["ingest_s"] = round(time.perf_counter() - t, 1)
            assert rep.ok and len(rep.added) == args.files, rep.summary()
            store = ctx.store
            col = store.get_collection(name)

            t = time.perf_counter()
            r = sync(ctx.ingest, name)
            out["sync_unchanged_s"] = round(time.perf_counter() - t, 3)
            assert r.hashed == 0 and r.changes == 0
            t = time.perf_counter()
            plan(store, col, store.collection_sources(col))
            out["stat_walk_s"] = round(time.perf_counter() - t, 3)
            t = time.perf_counter()
            collection_status(store, name)
            out["status_s"] = round(time.perf_counter() - t, 3)

            syncs: list[Any] = []
            w = Watcher(ctx.ingest, [name], on_sync=syncs.append)
            stop = threading.Event()
            th = threading.Thread(target=w.run, args=(stop,), daemon=True)
            th.start()
            assert w.ready.wait(120)
            latencies, sync_s = [], []
            for k in range(args.edits):
                i = (k * 997) % args.files
                src = f"d{i % 100:02d}/n{i:05d}.md"
                token = f"zqx{k}token"
                n_syncs = len(syncs)
                t = time.perf_counter()
                (root / src).write_text(text(i, token), encoding="utf-8")
                while True:
                    hits = ctx.search.search(token, collections=[name], mode="keyword", k=1)
                    if hits and hits[0].source == src:
                        break
                    time.sleep(0.02)
                latencies.append(time.perf_counter() - t)
                while len(syncs) == n_syncs:
                    time.sleep(0.01)
                sync_s.append(syncs[-1].seconds)
                time.sleep(0.5)
            out["edit_to_searchable_s"] = {
                "median": round(statistics.median(latencies), 3),
                "all": [round(x, 3) for x in latencies],
                "settle_s": w.settle_s,
            }
            out["sync_of_one_edit_s"] = {"median": round(statistics.median(sync_s), 3), "all": sync_s}

            n_syncs = len(syncs)
            t = time.perf_counter()
            (root / "d00/n00000.md").rename(root / "d01/renamed.md")
            while not (store.find_document(col, "d01/renamed.md")):
                time.sleep(0.02)
            out["rename_to_searchable_s"] = round(time.perf_counter() - t, 3)
            while len(syncs) == n_syncs:
                time.sleep(0.01)
            last = syncs[-1]
            out["rename_sync"] = {"moved": last.moved, "embedded": last.ingest.embedded if last.ingest else 0}
            stop.set()
            th.join(60)
        finally:
            ctx.close()

        out["idle"] = [idle_cpu(env, name, args.idle, poll=False), idle_cpu(env, name, args.idle, poll=True)]
        from kaynak.store.server import stop_embedded

        stop_embedded(data_dir)
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
