"""Fusion candidates measured offline with every chunk's exact score in both legs (ADR 0021).

``dump SET`` runs each query once through ``SearchService.legs`` (hybrid plan, top 100 per leg, as
``tune_fusion.py collect``) and saves, with the legs, what lets any candidate be scored without searching again:
the query vectors, every chunk's embedding and document, and the postings of the query lexemes (exact BM25 of any
chunk, Lucene's formula as the keyword leg computes it; chunk lengths are counted from the tsvector, so these
scores are within about 0.3 % of the SQL leg's); the legs are dumped without the service's fill-in.
``table SET…`` then scores the candidates, nDCG@10 by document on the BEIR sets
(SciFact full also per half of its queries, ``:a``/``:b`` as in ``tune_fusion.py``) and file hit@1 / hit@5 of
the top five chunks on ``docqa``; each leg read 100 deep (what ``kaynak eval`` reads) and 40 deep (what a search
with k = 10 reads).

    KAYNAK_DATA_DIR=/tmp/p17c-data KAYNAK_EMBEDDER=e5-small \
        python benchmarks/studies/fusion_candidates.py dump scifact-full
    python benchmarks/studies/fusion_candidates.py table xquad-tr xquad-en xquad-tr-en scifact-full docqa
    KAYNAK_DATA_DIR=/tmp/p17c-data python benchmarks/studies/fusion_candidates.py cost scifact-full  # fill-in cost

Candidates (all convex tmm, keyword share α × coverage unless said): the service before ADR 0021; the vector leg
filled in (the keyword leg's chunks the vector leg missed get their exact cosine similarity: shipped), the keyword
leg filled in too, missing scores set to the leg's lowest returned one; cross-leg document evidence (a chunk's
normalised score in a leg raised to λ × the best of its document's chunks in that leg); per-leg z-scores; dense
pseudo-relevance feedback (Rocchio: the query vector plus β × the mean of the first m chunk vectors, searched
again exactly).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import pickle
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tune_fusion import DEPTH, QUESTIONS, load_set
from tune_keyword import postings_of

from kaynak.evaluation import metrics as M

CACHE = Path(os.environ.get("KAYNAK_TUNE_CACHE", "/tmp/kaynak-tune-fusion"))
K1, B = 0.9, 0.4
FLOOR = {"keyword": 0.0, "vector": -1.0}


# ---------------------------------------------------------------------- dump (searches once)
def dump(name: str) -> Path:
    from tune_fusion import _run_legs

    from kaynak.context import Context
    from kaynak.evaluation.runner import QueryVectorCache, ensure_corpus, infer_language
    from kaynak.search import SearchService

    ctx = Context()
    try:
        caches: dict[str, QueryVectorCache] = {}

        def embedder(n: str) -> Any:
            return caches.setdefault(n, QueryVectorCache(ctx.embedder(n)))

        # the legs as they come from the index: the candidates fill in missing scores themselves
        service = SearchService(ctx.store, ctx.settings.model_copy(update={"fusion_fill": False}), embedder)
        extra: dict[str, Any] = {}
        if name == "docqa":
            from kaynak.evaluation.datasets import load_questions

            questions = load_questions(QUESTIONS)
            collection, qrels = "docqa", None
            texts = {q.id: q.question for q in questions}
            extra["questions"] = {q.id: {"source": q.source, "lang": q.lang} for q in questions}
        else:
            ds = load_set(name)
            info = ensure_corpus(ctx, ds, language=infer_language(ds), embedder=ctx.settings.embedder)
            collection, qrels = info["name"], ds.qrels
            texts = {qid: SearchService.check_query(t) for qid, t in ds.queries.items() if t.strip()}
        col = service.get_collection(collection)
        emb = embedder(col.embedder)
        emb.prime(list(texts.values()))
        out = _run_legs(service, collection, texts, None, lambda m: print(m, file=sys.stderr))
        qv = {qid: np.asarray(emb.embed_queries([t])[0], dtype=np.float32) for qid, t in texts.items()}
        lexemes = sorted({lx for q in out.values() for lxs in q["lexemes"].values() for lx in lxs})
        with ctx.store._conn() as conn:
            rows = conn.execute(
                "SELECT c.id, d.source, c.embedding::text, (SELECT coalesce(sum(cardinality(positions)), 0) "
                "FROM unnest(c.tsv)) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.collection_id = %s ORDER BY c.id",
                (col.id,),
            ).fetchall()
            postings = postings_of(conn, col.id, lexemes)
    finally:
        ctx.close()
    post: dict[str, dict[str, int]] = defaultdict(dict)
    for lx, cid, tf in postings:
        post[lx][cid] = int(tf)
    data = {
        "name": name,
        "out": out,
        "qrels": qrels,
        "texts": texts,
        "qv": qv,
        "ids": [r[0] for r in rows],
        "doc": {r[0]: r[1] for r in rows},
        "dl": {r[0]: int(r[3]) for r in rows},
        "postings": dict(post),
        "E": np.array([np.array(r[2].strip("[]").split(","), dtype=np.float32) for r in rows]),
        **extra,
    }
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.candidates.pkl"
    with path.open("wb") as fh:
        pickle.dump(data, fh)
    return path


# ---------------------------------------------------------------------- candidates (pure Python)
class DumpedSet:
    def __init__(self, name: str) -> None:
        with (CACHE / f"{name}.candidates.pkl").open("rb") as fh:
            self.__dict__.update(pickle.load(fh))
        self.idx = {c: i for i, c in enumerate(self.ids)}
        self.En = self.E / np.linalg.norm(self.E, axis=1, keepdims=True)
        self.n_chunks = float(len(self.dl))
        self.avgdl = max(sum(self.dl.values()) / self.n_chunks, 1.0)
        judged = self.qrels or {}
        self.qids = [q for q in self.out if self.qrels is None or any(g > 0 for g in judged.get(q, {}).values())]

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        return self.En @ (vector / np.linalg.norm(vector))

    def bm25(self, qid: str) -> dict[str, float]:
        scores: dict[str, float] = defaultdict(float)
        for lexemes in self.out[qid]["lexemes"].values():
            for lx in lexemes:
                tfs = self.postings.get(lx, {})
                idf = math.log(1 + (self.n_chunks - len(tfs) + 0.5) / (len(tfs) + 0.5)) if tfs else 0.0
                for c, tf in tfs.items():
                    scores[c] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.dl[c] / self.avgdl))
        return scores

    def score(self, rankings: Mapping[str, Sequence[str]], qids: Sequence[str]) -> tuple[float, float]:
        """(nDCG@10, Recall@100) by document, or on docqa (file hit@1, file hit@5) of the top five chunks."""
        if self.qrels is None:
            from kaynak.evaluation.runner import source_matches

            ranks = []
            for q in qids:
                files = [self.doc[c] for c in rankings[q]][:5]
                want = self.questions[q]["source"]
                ranks.append(next((i for i, f in enumerate(files, 1) if source_matches(f, want)), None))
            return float(np.mean([r == 1 for r in ranks])), float(np.mean([r is not None for r in ranks]))
        run = {q: M.first_rank_per_document(self.doc[c] for c in rankings[q]) for q in qids}
        means, _ = M.evaluate(run, {q: self.qrels[q] for q in run}, 10)
        return means["nDCG@10"], means["Recall@100"]


def half(qid: str) -> str:
    return "ab"[int(hashlib.md5(qid.encode()).hexdigest(), 16) % 2]


def fuse(
    s: DumpedSet,
    qid: str,
    *,
    alpha: float = 0.05,
    depth: int = DEPTH,
    fill: str = "",
    doc_lambda: float = 0,
    zscore: bool = False,
    prf: tuple[int, float] | None = None,
    leg: str | None = None,
) -> list[str]:
    """One query's fused chunk ids (best first, 100 at most) under one candidate; ``leg`` returns one leg alone."""
    q = s.out[qid]
    legs = {name: list(items[:depth]) for name, items in q["legs"].items()}
    vector = s.qv[qid]
    if prf is not None and legs.get("vector"):
        m, beta = prf
        top = [s.idx[c] for c, _ in legs["vector"][:m]]
        vector = vector / np.linalg.norm(vector) + beta * s.En[top].mean(axis=0)
        sims = s.cosines(vector)
        legs["vector"] = [(s.ids[i], float(sims[i])) for i in np.argsort(-sims)[:depth]]
    if leg is not None:
        return [c for c, _ in legs.get(leg, [])][:DEPTH]
    coverage = 0.0 if q.get("cross") else q.get("coverage", 1.0)
    weights = {"vector": 1 - alpha, "keyword": alpha * coverage}
    union = {c for items in legs.values() for c, _ in items}
    fused: dict[str, float] = defaultdict(float)
    for name, items in legs.items():
        if not items:
            continue
        values = np.array([x for _, x in items])
        if zscore:
            low, span = float(values.mean()), float(values.std()) or 1.0
        else:
            low = FLOOR[name]
            span = float(values.max()) - low or 1.0
        norm = {c: (x - low) / span for c, x in items}
        if name == "vector" and fill in ("vector", "both"):
            sims = s.cosines(vector)
            norm.update({c: (float(sims[s.idx[c]]) - low) / span for c in union - norm.keys()})
        if name == "keyword" and fill == "both":
            bm25 = s.bm25(qid)
            norm.update({c: (bm25.get(c, 0.0) - low) / span for c in union - norm.keys()})
        if fill == "lowest":
            norm.update({c: min(norm.values()) for c in union - norm.keys()})
        missing = min(norm.values()) if zscore else 0.0
        if doc_lambda:
            best: dict[str, float] = {}
            for c, x in norm.items():
                best[s.doc[c]] = max(best.get(s.doc[c], x), x)
            norm = {
                c: max(norm.get(c, missing), doc_lambda * best[s.doc[c]]) if s.doc[c] in best else norm.get(c, missing)
                for c in union
            }
        for c in union:
            fused[c] += weights[name] * norm.get(c, missing)
    return [c for c, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))][:DEPTH]


CANDIDATES: dict[str, dict[str, Any]] = {
    "vector leg": {"leg": "vector"},
    "keyword leg": {"leg": "keyword"},
    "convex α 0.05 (before)": {},
    "+ vector fill-in (shipped)": {"fill": "vector"},
    "+ vector fill-in, α 0.03": {"fill": "vector", "alpha": 0.03},
    "+ vector fill-in, α 0.07": {"fill": "vector", "alpha": 0.07},
    "+ both legs filled in": {"fill": "both"},
    "missing = the leg's lowest returned score": {"fill": "lowest"},
    "document evidence λ 0.9": {"doc_lambda": 0.9},
    "document evidence λ 1": {"doc_lambda": 1.0},
    "vector fill-in + document evidence λ 0.9": {"fill": "vector", "doc_lambda": 0.9},
    "z-scores, α 0.2": {"zscore": True, "alpha": 0.2},
    "z-scores, α 0.4": {"zscore": True, "alpha": 0.4},
    "dense PRF m 3 β 0.3: vector leg": {"leg": "vector", "prf": (3, 0.3)},
    "dense PRF m 3 β 0.3 + vector fill-in": {"fill": "vector", "prf": (3, 0.3)},
    "dense PRF m 10 β 0.3 + vector fill-in": {"fill": "vector", "prf": (10, 0.3)},
}


def table(names: Sequence[str], depths: Sequence[int]) -> None:
    sets = {n: DumpedSet(n) for n in names}
    columns: list[tuple[str, str, list[str]]] = []
    for n, s in sets.items():
        columns.append((n, n, s.qids))
        if n == "scifact-full":
            columns += [(n, f"{n}:{p}", [q for q in s.qids if half(q) == p]) for p in "ab"]
    for depth in depths:
        print(f"\nlegs read {depth} deep\n\n| candidate | " + " | ".join(c for _, c, _ in columns) + " |")
        print("| --- |" + " --- |" * len(columns))
        for label, kw in CANDIDATES.items():
            cells = []
            for n, _, qids in columns:
                s = sets[n]
                a, b = s.score({q: fuse(s, q, depth=depth, **kw) for q in qids}, qids)
                cells.append(f"{a:.3f} / {b:.3f}" if s.qrels is None else f"{a:.4f}")
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def cost(name: str, n: int = 300) -> None:
    """The fill-in's cost: ``n`` queries of ``name`` searched (k = 10) with and without it, interleaved per query
    (order alternating), on the service's own path; the fill-in step timed on its own too."""
    import random
    import statistics
    import time

    from kaynak.context import Context
    from kaynak.evaluation.runner import QueryVectorCache, ensure_corpus, infer_language
    from kaynak.search import SearchService

    ds = load_set(name)
    ctx = Context()
    try:
        caches: dict[str, QueryVectorCache] = {}

        def embedder(e: str) -> Any:
            return caches.setdefault(e, QueryVectorCache(ctx.embedder(e)))

        collection = ensure_corpus(ctx, ds, language=infer_language(ds), embedder=ctx.settings.embedder)["name"]
        on = SearchService(ctx.store, ctx.settings, embedder)
        off = SearchService(ctx.store, ctx.settings.model_copy(update={"fusion_fill": False}), embedder)
        texts = [SearchService.check_query(t) for t in ds.queries.values() if t.strip()]
        random.Random(13).shuffle(texts)
        texts = texts[:n]
        embedder(on.get_collection(collection).embedder).prime(texts)
        step: list[float] = []
        filled: list[int] = []
        fill = on._fill_vector

        def timed(plan: Any, legs: dict[str, list[tuple[str, float]]], vectors: Mapping[str, Any]) -> None:
            before, t0 = len(legs["vector"]), time.perf_counter()
            fill(plan, legs, vectors)
            step.append((time.perf_counter() - t0) * 1000)
            filled.append(len(legs["vector"]) - before)

        on._fill_vector = timed  # type: ignore[method-assign]
        for t in texts[:20]:  # warm up
            on.search(t, collection)
            off.search(t, collection)
        step.clear()
        filled.clear()
        wall: dict[bool, list[float]] = {True: [], False: []}
        for i, t in enumerate(texts):
            for with_fill in (True, False) if i % 2 else (False, True):
                t0 = time.perf_counter()
                (on if with_fill else off).search(t, collection)
                wall[with_fill].append((time.perf_counter() - t0) * 1000)
    finally:
        ctx.close()

    def pct(xs: list[float], p: float) -> float:
        return sorted(xs)[int(p * (len(xs) - 1))]

    diff = [a - b for a, b in zip(wall[True], wall[False], strict=True)]
    print(
        f"{len(texts)} queries of {name}, k = 10; the fill-in step p50 {pct(step, 0.5):.2f} ms, p95 "
        f"{pct(step, 0.95):.2f} ms; chunks filled per search median {statistics.median(filled)}, most {max(filled)}"
    )
    print(
        f"search p50 {pct(wall[True], 0.5):.1f} ms with, {pct(wall[False], 0.5):.1f} ms without; paired difference "
        f"per query median {statistics.median(diff):+.2f} ms, mean {statistics.mean(diff):+.2f} ms"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("dump", "table", "cost"))
    ap.add_argument("sets", nargs="+")
    ap.add_argument("--depths", default="100,40")
    args = ap.parse_args(argv)
    if args.command == "cost":
        for name in args.sets:
            cost(name)
        return 0
    if args.command == "dump":
        for name in args.sets:
            print(dump(name))
        return 0
    table(args.sets, [int(d) for d in args.depths.split(",")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
