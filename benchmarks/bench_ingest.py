"""Benchmark: ingest throughput (chunks/s) against the embedder's own throughput on exactly the same texts.

For each data set and embedder, in one process:

1. the whole ingest through ``IngestService`` (discover, hash, load, chunk, embed, write with COPY, commit per
   document) into a fresh collection, timed from call to return;
2. the embedder alone on exactly the texts the ingest embedded, in the same batches, timed.

The ratio (1) / (2) says how much of the pipeline hides behind the embedder; the goal is ≥ 0.9. With the
``hash`` embedder (nearly free) the same run shows the pipeline's own ceiling.

Data sets: ``../shared/data/docs/`` (PDF, DOCX, HTML, Markdown, text; through ``ingest``) and the first
``--scifact`` abstracts of the SciFact corpus (through ``ingest_documents``, as the evaluation harness does).

    python benchmarks/bench_ingest.py                          # hash and e5-small, docs + 500 SciFact abstracts
    python benchmarks/bench_ingest.py --embedders hash --quick # a fast smoke run
    python benchmarks/bench_ingest.py --embedders e5-small --sets docs

The database is a throwaway embedded server in a temporary folder unless ``KAYNAK_DATABASE_URL`` is set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
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


def run_one(store: Store, set_name: str, embedder_name: str, scifact: int) -> dict[str, Any]:
    settings = load_settings(embedder=embedder_name)
    inner = get_embedder(embedder_name)
    inner.embed_passages(["warm up: load the model before timing"])
    rec = RecordingEmbedder(inner)
    service = IngestService(store, settings, lambda _name: rec)  # type: ignore[arg-type,return-value]
    name = f"bench_{set_name}_{embedder_name.replace(':', '_')}_{uuid.uuid4().hex[:6]}"
    if set_name == "docs":
        report = service.ingest([SHARED / "docs"], name)
        docs = len(report.added) + len(report.failed)
    else:
        items = list(scifact_documents(scifact))
        report = service.ingest_documents(name, items)
        docs = len(items)
    pipeline_s = report.seconds
    chunks = report.embedded
    # The embedder alone, same texts, same batches.
    t0 = time.perf_counter()
    for batch in rec.batches:
        inner.embed_passages(batch)
    embed_s = time.perf_counter() - t0
    service.delete_collection(name)
    pipe_cps = chunks / pipeline_s if pipeline_s else 0.0
    emb_cps = chunks / embed_s if embed_s else 0.0
    return {
        "set": set_name if set_name == "docs" else f"scifact[:{scifact}]",
        "embedder": embedder_name,
        "documents": docs,
        "failed": len(report.failed),
        "chunks": chunks,
        "batches": len(rec.batches),
        "ingest_s": round(pipeline_s, 2),
        "embed_only_s": round(embed_s, 2),
        "pipeline_cps": round(pipe_cps, 1),
        "embedder_cps": round(emb_cps, 1),
        "ratio": round(pipe_cps / emb_cps, 3) if emb_cps else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", nargs="+", default=["hash", "e5-small"])
    ap.add_argument("--sets", nargs="+", default=["docs", "scifact"], choices=["docs", "scifact"])
    ap.add_argument("--scifact", type=int, default=500, help="how many SciFact abstracts (default 500)")
    ap.add_argument("--quick", action="store_true", help="hash embedder, 100 SciFact abstracts")
    ap.add_argument("--json", type=Path, help="also write the rows to this file")
    args = ap.parse_args(argv)
    if args.quick:
        args.embedders, args.scifact = ["hash"], 100
    if not SHARED.is_dir():
        print(f"skipped: {SHARED} is not there", file=sys.stderr)
        return 0

    import os

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kaynak-bench-ingest-") as tmp:
        url = os.environ.get("KAYNAK_DATABASE_URL")
        data_dir = Path(tmp)
        store = Store.open(url, data_dir)
        try:
            for emb in args.embedders:
                for set_name in args.sets:
                    row = run_one(store, set_name, emb, args.scifact)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
        finally:
            store.close()
            if not url:
                from kaynak.store.server import stop_embedded

                stop_embedded(data_dir)

    cols = ["set", "embedder", "documents", "failed", "chunks", "ingest_s", "embed_only_s", "pipeline_cps",
            "embedder_cps", "ratio"]
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
