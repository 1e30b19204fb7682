"""Benchmark: ingest throughput with 1 and 2 parse workers, in the same run.

For each worker count, alternating ``--repeat`` times so that drifting load from other processes falls on both:

1. ``parse``: every file of the folder parsed by a fresh ``ParsePool`` (load + chunk in worker processes, results
   back in this process), no database: the parallelism of parsing alone;
2. ``ingest``: the whole ``IngestService.ingest`` with the ``hash`` embedder (nearly free) into a fresh
   collection: discover, hash, parse in the workers, embed, write with COPY.

Medians of files/s and chunks/s are printed with the 2-worker / 1-worker ratios, the CPU model and flags, the
cores and the load average before and after (the machine may be shared).

    python benchmarks/bench_parse_workers.py                       # ../shared/data/docs, 3 repeats
    python benchmarks/bench_parse_workers.py --folder DIR --repeat 5 --json out.json

The database is a throwaway embedded server in a temporary folder unless ``KAYNAK_DATABASE_URL`` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kaynak.config import load_settings
from kaynak.embeddings import get_embedder
from kaynak.ingest import IngestService, PathFilter, discover
from kaynak.ingest.workers import Parsed, ParsePool, ParseTask
from kaynak.loaders import LoadOptions
from kaynak.store import Store

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO.parent / "shared" / "data" / "docs"


def cpu_facts() -> dict[str, Any]:
    model, flags = platform.processor(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "fma", "sse4_2")
    return {"model": model, "flags": [f for f in wanted if f in flags.split()], "cores": os.cpu_count()}


def parse_all(folder: Path, workers: int) -> dict[str, float]:
    jobs = discover([folder], PathFilter()).jobs
    t0 = time.perf_counter()
    chunks = 0
    with ParsePool(workers=workers) as pool:
        futures = [pool.submit(ParseTask(str(j.path), 100 * 1024 * 1024, LoadOptions(), 800, 1)) for j in jobs]
        for f in futures:
            r = f.result()
            chunks += len(r.chunks) if isinstance(r, Parsed) else 0
    s = time.perf_counter() - t0
    return {"seconds": s, "files_per_s": len(jobs) / s, "chunks_per_s": chunks / s, "files": len(jobs)}


def ingest_all(folder: Path, workers: int, store: Store) -> dict[str, float]:
    settings = load_settings(embedder="hash", parse_workers=workers)
    service = IngestService(store, settings, lambda name: get_embedder(name))
    name = "bench_" + uuid.uuid4().hex[:8]
    t0 = time.perf_counter()
    try:
        report = service.ingest([folder], name, language="simple")
    finally:
        service.close()
    s = time.perf_counter() - t0
    store.delete_collection(name)
    done = len(report.added) + len(report.partial)
    return {
        "seconds": s,
        "files_per_s": done / s,
        "chunks_per_s": report.chunks / s,
        "files": done,
        "failed": len(report.failed),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", type=Path, default=DOCS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]

    tmp = None
    url = os.environ.get("KAYNAK_DATABASE_URL")
    if not url:
        tmp = tempfile.mkdtemp(prefix="kaynak-bench-")
        os.environ["KAYNAK_DATA_DIR"] = tmp
    store = Store.open(url, Path(os.environ.get("KAYNAK_DATA_DIR", tmp or ".")), 4)
    load_before = os.getloadavg()
    results: dict[str, dict[int, list[dict[str, float]]]] = {"parse": {}, "ingest": {}}
    try:
        parse_all(args.folder, 1)  # warm the page cache and the fork server
        for _ in range(args.repeat):
            for w in counts:
                results["parse"].setdefault(w, []).append(parse_all(args.folder, w))
                results["ingest"].setdefault(w, []).append(ingest_all(args.folder, w, store))
    finally:
        store.close()
        if tmp:
            from kaynak.store.server import stop_embedded

            stop_embedded(Path(tmp))
    out: dict[str, Any] = {
        "machine": cpu_facts(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "folder": str(args.folder),
        "repeat": args.repeat,
        "python": sys.version.split()[0],
    }
    for stage, by_count in results.items():
        med = {
            w: {k: statistics.median(r[k] for r in runs) for k in ("seconds", "files_per_s", "chunks_per_s")}
            for w, runs in by_count.items()
        }
        out[stage] = {str(w): m for w, m in med.items()}
        if 1 in med and len(med) > 1:
            for w in med:
                if w != 1:
                    out[stage][f"ratio_{w}_vs_1"] = round(med[w]["files_per_s"] / med[1]["files_per_s"], 2)
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
