"""Retrieval quality beside LanceDB: the same chunks, vectors and queries, nDCG@10 of both, in one run.

For each BEIR set, kaynak's evaluation (``evaluate_beir``: the collection ``kaynak eval run`` ingests, every mode
through ``SearchService``) runs first; then the collection's chunks — text, e5-small passage vector, document —
are read from PostgreSQL into a LanceDB table with its native full-text index and exact (flat) vector search, and
the same queries, embedded by the same e5-small, go through LanceDB's full-text, vector and default hybrid (RRF)
search. Both rank chunks (top 100) and are scored alike: chunks → documents by best rank, nDCG@10 against the
qrels (``kaynak.evaluation.metrics``). Needs ``pip install -e '.[lancedb]'``.

    KAYNAK_DATA_DIR=… python benchmarks/studies/lancedb_quality.py xquad-tr xquad-en xquad-tr-en scifact --json out.json

The collections are ingested on first use (SciFact's full corpus takes minutes): use the data folder of an
earlier ``kaynak eval run`` to reuse them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from kaynak.config import Settings
from kaynak.context import Context
from kaynak.evaluation import metrics as M
from kaynak.evaluation.datasets import load_beir
from kaynak.evaluation.runner import evaluate_beir

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "retrieval"
SETS: dict[str, tuple[str, str | None, str | None]] = {  # name → (corpus folder, queries folder, split)
    "xquad-tr": ("xquad/tr", None, None),
    "xquad-en": ("xquad/en", None, None),
    "xquad-tr-en": ("xquad/en", "xquad/tr", None),
    "scifact": ("scifact", None, "train"),
}
K = 100


def chunks_of(ctx: Context, collection: str) -> tuple[list[str], list[str], list[str], np.ndarray]:
    """Every chunk's id, text, document source and vector of ``collection`` (the evaluation's ingest)."""
    from pgvector.psycopg import register_vector

    col = ctx.store.get_collection(collection)
    with ctx.store._conn() as conn:
        register_vector(conn)
        rows = conn.execute(
            f"SELECT c.id, c.text, d.source, c.embedding::vector({col.dim}) FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE c.collection_id = %s ORDER BY c.id",
            (col.id,),
            binary=True,
        ).fetchall()
    vecs = np.stack([np.asarray(r[3].to_numpy(), dtype=np.float32) for r in rows])
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], vecs


def lancedb_runs(
    ids: list[str], texts: list[str], sources: list[str], vecs: np.ndarray, queries: dict[str, str], qvecs: np.ndarray
) -> dict[str, dict[str, list[str]]]:
    """LanceDB's full-text, vector and hybrid (default RRF) rankings, chunks → documents, per query."""
    import lancedb
    import pyarrow as pa

    with tempfile.TemporaryDirectory(prefix="kaynak-lancedb-") as tmp:
        db = lancedb.connect(tmp)
        flat = pa.array(vecs.ravel())
        table = pa.table(
            {
                "id": ids,
                "source": sources,
                "text": texts,
                "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1]),
            }
        )
        tbl = db.create_table("chunks", data=table)
        tbl.create_fts_index("text", use_tantivy=False)
        runs: dict[str, dict[str, list[str]]] = {"keyword": {}, "vector": {}, "hybrid": {}}
        for (qid, text), v in zip(queries.items(), qvecs, strict=True):
            searches = {
                "keyword": lambda t=text: tbl.search(t, query_type="fts").limit(K).select(["source"]).to_list(),
                "vector": lambda v=v: tbl.search(v).distance_type("cosine").limit(K).select(["source"]).to_list(),
                "hybrid": lambda t=text, v=v: (
                    tbl.search(query_type="hybrid").vector(v).text(t).limit(K).select(["source"]).to_list()
                ),
            }
            for mode, search in searches.items():
                try:
                    hits = search()
                except Exception:  # a query LanceDB's full-text parser rejects counts as no hits
                    hits = []
                runs[mode][qid] = M.first_rank_per_document(h["source"] for h in hits)
    return runs


def one_set(ctx: Context, name: str) -> dict[str, Any]:
    corpus, queries_dir, split = SETS[name]
    dataset = load_beir(DATA / corpus, queries_dir=DATA / queries_dir if queries_dir else None, split=split)
    t0 = time.perf_counter()
    report = evaluate_beir(
        ctx, dataset, modes="keyword,vector,hybrid", progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True)
    )
    kaynak = {m["mode"]: m["metrics"]["nDCG@10"] for m in report["modes"]}
    ids, texts, sources, vecs = chunks_of(ctx, report["collection"]["name"])
    queries = {q: t for q, t in dataset.queries.items() if q in dataset.qrels}
    qvecs = np.asarray(ctx.embedder(ctx.settings.embedder).embed_queries(list(queries.values())), dtype=np.float32)
    runs = lancedb_runs(ids, texts, sources, vecs, queries, qvecs)
    lance = {mode: round(M.evaluate(run, dataset.qrels, 10)[0]["nDCG@10"], 4) for mode, run in runs.items()}
    row = {
        "set": name,
        "queries": len(queries),
        "chunks": len(ids),
        "kaynak nDCG@10": kaynak,
        "LanceDB nDCG@10": lance,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", choices=sorted(SETS))
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    ctx = Context(Settings(embedder="e5-small"))
    try:
        rows = [one_set(ctx, name) for name in args.sets]
    finally:
        ctx.close()
    print("| set | queries | kaynak keyword / vector / hybrid | LanceDB full-text / vector / hybrid (RRF) |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        k, lance = r["kaynak nDCG@10"], r["LanceDB nDCG@10"]
        print(
            f"| {r['set']} | {r['queries']} | {k.get('keyword')} / {k.get('vector')} / **{k.get('hybrid')}** | "
            f"{lance['keyword']} / {lance['vector']} / **{lance['hybrid']}** |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
