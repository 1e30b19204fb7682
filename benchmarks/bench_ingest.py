"""Benchmark: ingest throughput (chunks/s) against the embedder's own throughput on exactly the same texts.

For each data set and embedder, in one process:

1. the whole ingest through ``IngestService`` (discover, hash, load, chunk, embed, write with COPY, commit per
   document) into a fresh collection, timed from call to return;
2. the embedder alone on exactly the texts the ingest embedded, in the same batches, timed.

With ``--repeat N`` the two alternate N times and the medians are compared, so that drifting load from other
processes falls on both alike; ``cpu_ratio`` compares this process's CPU seconds (embedder alone / ingest),
which other processes cannot disturb. The ratio (1) / (2) says how much of the pipeline hides behind the
embedder; the goal is ≥ 0.9. With the ``hash`` embedder (nearly free) the same run shows the pipeline's own
ceiling.

Data sets: ``../shared/data/docs/`` (PDF, DOCX, HTML, Markdown, text; through ``ingest``) and the first
``--scifact`` abstracts of the SciFact corpus (through ``ingest_documents``, as the evaluation harness does).

    python benchmarks/bench_ingest.py                          # hash and e5-small, docs + 500 SciFact abstracts
    python benchmarks/bench_ingest.py --embedders hash --quick # a fast smoke run
    python benchmarks/bench_ingest.py --embedders e5-small --sets docs --include 'txt/**' 'docx/**' 'html/tr/**'

The database is a throwaway embedded server in a temporary folder unless ``KAYNAK_DATABASE_URL`` is set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kaynak.config import load_settings
from kaynak.embeddings import get_embedder
from kaynak.ingest import IngestService
from kaynak.store import Store
from kaynak.types import LoadedDocument, Page

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


class RecordingEmbedder:
    """Wraps an embedder and keeps every batch of passages it is given, in order (for the replay)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_chars = inner.max_chars
        self.batches: list[list[str]] = []

    @property
    def truncated(self) -> int:
        return int(self.inner.truncated)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return self.inner.embed_passages(texts)


def scifact_documents(limit: int) -> Iterator[tuple[str, str, LoadedDocument]]:
    path = SHARED / "retrieval" / "scifact" / "corpus.jsonl"
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= limit:
                break
            row = json.loads(line)
            text = (row.get("text") or "").strip()
            title = (row.get("title") or "").strip()
            sha = hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()
            yield str(row["_id"]), sha, LoadedDocument(title=title, pages=[Page(1, text)])


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def run_one(
    store: Store,
    set_name: str,
    embedder_name: str,
    scifact: int,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    repeat: int = 1,
) -> dict[str, Any]:
    """Alternate (whole ingest, embedder alone) ``repeat`` times; medians of each, so load drift cancels out."""
    settings = load_settings(embedder=embedder_name)
    inner = get_embedder(embedder_name)
    inner.embed_passages(["warm up: load the model before timing"])
    items = list(scifact_documents(scifact)) if set_name == "scifact" else []
    pipe_s: list[float] = []
    pipe_cpu: list[float] = []
    emb_s: list[float] = []
    emb_cpu: list[float] = []
    chunks = docs = failed = batches = 0
    for _ in range(repeat):
        rec = RecordingEmbedder(inner)
        service = IngestService(store, settings, lambda _name, rec=rec: rec)  # type: ignore[misc]
        name = f"bench_{set_name}_{embedder_name.replace(':', '_')}_{uuid.uuid4().hex[:6]}"
        c0 = _cpu()
        if set_name == "docs":
            report = service.ingest([SHARED / "docs"], name, include=include, exclude=exclude)
            docs = len(report.added) + len(report.failed)
        else:
            report = service.ingest_documents(name, items)
            docs = len(items)
        pipe_cpu.append(_cpu() - c0)
        pipe_s.append(report.seconds)
        chunks, failed, batches = report.embedded, len(report.failed), len(rec.batches)
        # The embedder alone: the same texts, the same batches.
        c0, t0 = _cpu(), time.perf_counter()
        for batch in rec.batches:
            inner.embed_passages(batch)
        emb_s.append(time.perf_counter() - t0)
        emb_cpu.append(_cpu() - c0)
        service.delete_collection(name)
    p_s, e_s = float(np.median(pipe_s)), float(np.median(emb_s))
    pipe_cps = chunks / p_s if p_s else 0.0
    emb_cps = chunks / e_s if e_s else 0.0
    sample = "(sample)" if include or exclude else ""
    return {
        "set": f"docs{sample}" if set_name == "docs" else f"scifact[:{scifact}]",
        "embedder": embedder_name,
        "documents": docs,
        "failed": failed,
        "chunks": chunks,
        "batches": batches,
        "runs": repeat,
        "ingest_s": round(p_s, 2),
        "embed_only_s": round(e_s, 2),
        "pipeline_cps": round(pipe_cps, 1),
        "embedder_cps": round(emb_cps, 1),
        "ratio": round(pipe_cps / emb_cps, 3) if emb_cps else None,
        # CPU seconds of this process: the pipeline's extra work, whatever the other load on the machine
        "cpu_ratio": round(float(np.median(emb_cpu)) / float(np.median(pipe_cpu)), 3) if pipe_cpu else None,
        "all_ingest_s": [round(x, 2) for x in pipe_s],
        "all_embed_only_s": [round(x, 2) for x in emb_s],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", nargs="+", default=["hash", "e5-small"])
    ap.add_argument("--sets", nargs="+", default=["docs", "scifact"], choices=["docs", "scifact"])
    ap.add_argument("--scifact", type=int, default=500, help="how many SciFact abstracts (default 500)")
    ap.add_argument("--include", nargs="*", help="only these globs of the docs set (a sample), e.g. 'txt/**'")
    ap.add_argument("--exclude", nargs="*", help="leave these globs of the docs set out, e.g. pdf")
    ap.add_argument("--quick", action="store_true", help="hash embedder, 100 SciFact abstracts")
    ap.add_argument("--repeat", type=int, default=1, help="alternate ingest / embedder-only runs this often")
    ap.add_argument("--json", type=Path, help="also write the rows to this file")
    args = ap.parse_args(argv)
    if args.quick:
        args.embedders, args.scifact = ["hash"], 100
    if not SHARED.is_dir():
        print(f"skipped: {SHARED} is not there", file=sys.stderr)
        return 0

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kaynak-bench-ingest-") as tmp:
        url = os.environ.get("KAYNAK_DATABASE_URL")
        data_dir = Path(tmp)
        store = Store.open(url, data_dir)
        try:
            for emb in args.embedders:
                for set_name in args.sets:
                    row = run_one(store, set_name, emb, args.scifact, args.include, args.exclude, args.repeat)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
        finally:
            store.close()
            if not url:
                from kaynak.store.server import stop_embedded

                stop_embedded(data_dir)

    cols = [
        "set",
        "embedder",
        "documents",
        "failed",
        "chunks",
        "runs",
        "ingest_s",
        "embed_only_s",
        "pipeline_cps",
        "embedder_cps",
        "ratio",
        "cpu_ratio",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    for r in rows:
        item = f"{r['set']} {r['embedder']}"
        for metric, unit in (("pipeline_cps", "chunks/s"), ("embedder_cps", "chunks/s"), ("ratio", "")):
            print("BENCH_RESULT " + json.dumps({"item": item, "metric": metric, "value": r[metric], "unit": unit}))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
