"""Fusion tuning harness: each leg searched once per query, every fusion tried offline, chosen by cross-validation.

``collect`` runs each dev set's queries once through ``SearchService.legs`` (the service's own legs, top 100 each,
scores kept, hybrid plan with its keyword coverage) and saves them with the chunk → document map and the qrels to
``<cache>/<set>.json``. ``tune`` then evaluates any fusion function and parameter in pure Python on those lists —
no search runs again — and cross-validates the choice leave-one-set-out: for every set, the configuration that does
best on the other sets is measured on it (never one set both ways). docs/adr/0017-fusion-by-measurement.md.

    KAYNAK_DATA_DIR=/tmp/p17a-data KAYNAK_EMBEDDER=e5-small \\
        python benchmarks/studies/tune_fusion.py collect xquad-tr xquad-en xquad-tr-en scifact-pool
    python benchmarks/studies/tune_fusion.py tune xquad-tr xquad-en xquad-tr-en scifact-pool

``depth`` prints the shipped fusion's nDCG@10 with the keyword leg read 10 … 100 deep (the vector leg 40 deep,
its fill-in recomputed for the shorter keyword leg; docs/performance-search.md, round 10).
``collect --data-dir`` points at another KAYNAK_DATA_DIR (e.g. the full SciFact collection); ``--keyword-variant``
stores the keyword leg under another name (e.g. after a change to the postings) to compare keyword legs offline.
The fused figures equal ``kaynak eval run``'s hybrid row with the same settings (checked: RRF × coverage from the
baseline's legs gave 0.9734 / 0.9873 / 0.8903 / 0.8729 on XQuAD tr / en / tr→en / SciFact pool, as ``kaynak eval``
did; convex tmm 0.05 gave 0.9799 on XQuAD tr, ``kaynak eval`` 0.980). ``questions --collection docqa`` does the same
for benchmarks/docqa against an ingested collection (file hit@1 / hit@5 per language group).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaynak.evaluation import metrics as M
from kaynak.fusion import Fused, convex, rrf

D = Path(os.environ.get("KAYNAK_RETRIEVAL_DATA", Path(__file__).resolve().parents[3] / "shared/data/retrieval"))
CACHE = Path(os.environ.get("KAYNAK_TUNE_CACHE", "/tmp/kaynak-tune-fusion"))
DEPTH = 100
K = 10

# name → (corpus folder, queries folder or None, split or None, max_docs, max_queries)
SETS: dict[str, tuple[str, str | None, str | None, int | None, int | None]] = {
    "xquad-tr": ("xquad/tr", None, None, None, None),
    "xquad-en": ("xquad/en", None, None, None, None),
    "xquad-tr-en": ("xquad/en", "xquad/tr", None, None, None),
    "scifact-pool": ("scifact", None, "train", 500, 150),
    "scifact-full": ("scifact", None, "train", None, None),
}

Legs = dict[str, list[tuple[str, float]]]
QUESTIONS = Path(__file__).parents[1] / "docqa" / "questions.jsonl"  # `docqa`: questions about ../shared/data/docs


# ---------------------------------------------------------------------- collect (searches, once per leg)
def load_set(name: str) -> Any:
    from kaynak.evaluation.datasets import load_beir, pool

    corpus, queries, split, max_docs, max_queries = SETS[name]
    ds = load_beir(D / corpus, queries_dir=D / queries if queries else None, split=split)
    return pool(ds, max_docs, max_queries, 13)


def collect(name: str, variant: str | None, progress: Callable[[str], None]) -> Path:
    """Run every query of ``name`` once per leg (hybrid plan, top DEPTH) and save legs, coverage and qrels."""
    from kaynak.context import Context
    from kaynak.evaluation.runner import QueryVectorCache, ensure_corpus, infer_language
    from kaynak.search import SearchService

    ds = load_set(name)
    ctx = Context()
    try:
        info = ensure_corpus(ctx, ds, language=infer_language(ds), embedder=ctx.settings.embedder, progress=progress)
        caches: dict[str, QueryVectorCache] = {}

        def embedder(n: str) -> Any:
            return caches.setdefault(n, QueryVectorCache(ctx.embedder(n)))

        service = SearchService(ctx.store, ctx.settings, embedder)
        col = service.get_collection(info["name"])
        texts = {qid: SearchService.check_query(t) for qid, t in ds.queries.items() if t.strip()}
        embedder(col.embedder).prime(list(texts.values()))
        out = _run_legs(service, col.name, texts, variant, progress)
        ids = {cid for q in out.values() for leg in q["legs"].values() for cid, _ in leg}
        source = {cid: rec.source for cid, rec in ctx.store.get_chunks(sorted(ids)).items()}
    finally:
        ctx.close()
    return _save(name, ds, info["name"], out, source, variant)


def _run_legs(
    service: Any, collection: str, texts: Mapping[str, str], variant: str | None, progress: Callable[[str], None]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    for i, (qid, text) in enumerate(texts.items(), 1):
        plan, legs = service.legs(text, [collection], mode="hybrid", k=DEPTH)
        if variant:
            legs = {f"keyword:{variant}": legs.get("keyword", [])}
        # the service appends the keyword leg's chunks its HNSW search missed, exactly scored, after its own DEPTH
        # (ADR 0021's fill-in): "filled" counts them, so that a configuration can fuse without them
        filled = max(0, len(legs.get("vector", [])) - DEPTH)
        out[qid] = {
            "coverage": plan.keyword_coverage,
            "legs": legs,
            "lexemes": plan.query_lexemes,
            "cross": plan.cross_language,
            "filled": filled,
        }
        if i % 100 == 0:
            progress(f"  {i}/{len(texts)} queries, {time.perf_counter() - t0:.0f} s")
    return out


def collect_questions(collection: str, progress: Callable[[str], None]) -> Path:
    """``docqa``: every question of benchmarks/docqa once per leg against an ingested collection (mixed
    languages), saved with each chunk's file, page and document language (for hit@k by file)."""
    from kaynak.context import Context
    from kaynak.evaluation.datasets import load_questions
    from kaynak.evaluation.runner import QueryVectorCache
    from kaynak.search import SearchService

    questions = load_questions(QUESTIONS)
    ctx = Context()
    try:
        caches: dict[str, QueryVectorCache] = {}

        def embedder(n: str) -> Any:
            return caches.setdefault(n, QueryVectorCache(ctx.embedder(n)))

        service = SearchService(ctx.store, ctx.settings, embedder)
        out = _run_legs(service, collection, {q.id: q.question for q in questions}, None, progress)
        ids = sorted({cid for q in out.values() for leg in q["legs"].values() for cid, _ in leg})
        records = ctx.store.get_chunks(ids)
        with ctx.store._conn() as conn:
            lang = dict(
                conn.execute(
                    "SELECT c.id, d.language FROM chunks c JOIN documents d ON d.id = c.document_id "
                    "WHERE c.id = ANY(%s)",
                    (ids,),
                ).fetchall()
            )
    finally:
        ctx.close()
    data = {
        "set": "docqa",
        "collection": collection,
        "queries": out,
        "questions": {
            q.id: {
                "source": q.source,
                "pages": list(q.pages or ([q.page] if q.page else [])),
                "lang": getattr(q, "lang", None),
            }
            for q in questions
        },
        "chunks": {cid: [r.source, r.page, lang.get(cid)] for cid, r in records.items()},
    }
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "docqa.json"
    path.write_text(json.dumps(data))
    return path


def _save(
    name: str, ds: Any, collection: str, out: dict[str, Any], source: dict[str, str], variant: str | None
) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.json"
    data: dict[str, Any] = {
        "set": name,
        "key": ds.key,
        "collection": collection,
        "qrels": ds.qrels,
        "queries": {},
        "source": {},
    }
    if path.exists():
        data = json.loads(path.read_text())
    for qid, q in out.items():
        old = data["queries"].get(qid, {"legs": {}})
        old["legs"].update(q["legs"])
        if not variant:
            old.update(coverage=q["coverage"], lexemes=q["lexemes"], cross=q["cross"], filled=q["filled"])
        data["queries"][qid] = old
    data["source"].update(source)
    path.write_text(json.dumps(data))
    return path


# ---------------------------------------------------------------------- fusion configurations (pure Python)
@dataclass(frozen=True)
class Config:
    """One fusion: ``rrf`` (k, keyword weight) or ``convex`` (normalisation, keyword share alpha), with or
    without the keyword coverage factor, over the named keyword leg; convex with or without the vector leg's
    fill-in (the keyword leg's chunks the vector leg missed, exactly scored; ADR 0021)."""

    fusion: str
    param: float | str
    weight: float
    coverage: bool = True
    keyword: str = "keyword"
    fill: bool = False

    def label(self) -> str:
        cov = "·cov" if self.coverage else ""
        kw = "" if self.keyword == "keyword" else f" [{self.keyword}]"
        if self.fusion == "rrf":
            return f"rrf k={self.param} w_kw={self.weight:g}{cov}{kw}"
        return f"convex {self.param} α={self.weight:g}{cov}{' fill' if self.fill else ''}{kw}"

    def fuse(self, legs: Mapping[str, Sequence[tuple[str, float]]], coverage: float, filled: int = 0) -> list[Fused]:
        kw = legs.get(self.keyword, [])
        vector = legs.get("vector", [])
        if filled and not (self.fill and self.fusion == "convex"):
            vector = vector[: len(vector) - filled]
        use = {"vector": vector, "keyword": kw}
        c = coverage if self.coverage else 1.0
        if self.fusion == "rrf":
            return rrf(use, k=int(self.param), weights={"vector": 1.0, "keyword": self.weight * c})
        return convex(
            use, weights={"vector": 1.0 - self.weight, "keyword": self.weight * c}, normalization=str(self.param)
        )


def grid(keyword: str = "keyword") -> list[Config]:
    configs = [
        Config("rrf", k, w, cov, keyword)
        for k, w, cov in itertools.product((10, 20, 60), (0.3, 0.5, 0.7, 1.0), (True, False))
    ]
    alphas = [0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    configs += [
        Config("convex", n, a, cov, keyword, fill)
        for n, a, cov, fill in itertools.product(("tmm", "minmax"), alphas, (True, False), (False, True))
    ]
    return configs


# ---------------------------------------------------------------------- scoring
class Scored:
    """A collected set, ready to score rankings of chunks as documents (best chunk per document)."""

    def __init__(self, path: Path, part: str | None = None) -> None:
        """``part`` ``a`` or ``b``: one of two disjoint halves of the set's queries (by a hash of the query id), so
        that one large set can be tuned on one half and measured on the other."""
        data = json.loads(path.read_text())
        self.name: str = data["set"] + (f":{part}" if part else "")
        self.qrels: dict[str, dict[str, int]] = data["qrels"]
        self.queries: dict[str, Any] = {
            q: v for q, v in data["queries"].items() if q in self.qrels and (part is None or _half(q) == part)
        }
        self.source: dict[str, str] = data["source"]

    def ndcg(self, ranking_of: Callable[[Mapping[str, Any]], Iterable[str]]) -> float:
        run = {
            qid: M.first_rank_per_document(self.source[c] for c in ranking_of(q) if c in self.source)
            for qid, q in self.queries.items()
        }
        means, _ = M.evaluate(run, {q: self.qrels[q] for q in run}, K)
        return means[f"nDCG@{K}"]

    def leg(self, name: str) -> float:
        return self.ndcg(lambda q: [c for c, _ in q["legs"].get(name, [])])

    def fused(self, config: Config) -> float:
        return self.ndcg(lambda q: [f.id for f in config.fuse(q["legs"], _coverage(q), q.get("filled", 0))][:DEPTH])


def _half(qid: str) -> str:
    return "ab"[int(hashlib.md5(qid.encode()).hexdigest(), 16) % 2]


def scored(name: str) -> Scored:
    """``set`` or ``set:a`` / ``set:b`` (a half of its queries) from the cache."""
    base, _, part = name.partition(":")
    return Scored(CACHE / f"{base}.json", part or None)


def _coverage(q: Mapping[str, Any]) -> float:
    """The keyword coverage the service fused with: 0 where its cross-language rule left the keyword leg out."""
    return 0.0 if q.get("cross") else q.get("coverage", 1.0)


def question_table(configs: Sequence[Config]) -> dict[str, dict[str, tuple[float, float]]]:
    """docqa: (file hit@1, file hit@5) per question group and in all, for the legs and each configuration."""
    from kaynak.evaluation.runner import source_matches

    data = json.loads((CACHE / "docqa.json").read_text())
    chunks, questions = data["chunks"], data["questions"]

    def hits(ranking_of: Callable[[Mapping[str, Any]], Iterable[str]]) -> dict[str, tuple[float, float]]:
        ranks: dict[str, list[int | None]] = {}
        for qid, q in data["queries"].items():
            files = [chunks[c][0] for c in ranking_of(q) if c in chunks][:5]
            rank = next((i for i, f in enumerate(files, 1) if source_matches(f, questions[qid]["source"])), None)
            for group in ("all", str(questions[qid]["lang"])):
                ranks.setdefault(group, []).append(rank)
        return {g: (M.hit_metrics(r, 5)["hit@1"], M.hit_metrics(r, 5)["hit@5"]) for g, r in ranks.items()}

    out = {leg: hits(lambda q, leg=leg: [c for c, _ in q["legs"].get(leg, [])]) for leg in ("keyword", "vector")}
    for c in configs:
        out[c.label()] = hits(lambda q, c=c: [f.id for f in c.fuse(q["legs"], _coverage(q), q.get("filled", 0))])
    return out


def table(sets: Sequence[Scored], configs: Sequence[Config]) -> dict[Config, dict[str, float]]:
    return {c: {s.name: s.fused(c) for s in sets} for c in configs}


def cross_validate(
    sets: Sequence[Scored], scores: Mapping[Config, Mapping[str, float]], best_leg: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Leave one set out: pick the configuration with the best worst-case gain over the better leg on the other
    sets (ties: best mean gain), measure it on the left-out set."""
    rows = []
    for held in sets:
        train = [s.name for s in sets if s is not held]

        def crit(c: Config, train: list[str] = train) -> tuple[float, float]:
            gains = [scores[c][n] - best_leg[n] for n in train]
            return (min(gains), sum(gains) / len(gains))

        choice = max(scores, key=crit)
        rows.append(
            {
                "held_out": held.name,
                "chosen": choice.label(),
                "train_min_gain": crit(choice)[0],
                "held_out_ndcg": scores[choice][held.name],
                "held_out_better_leg": best_leg[held.name],
                "held_out_gain": scores[choice][held.name] - best_leg[held.name],
            }
        )
    return rows


def tune(names: Sequence[str], keyword: str, top: int) -> dict[str, Any]:
    """Every configuration on every set; cross-validated among those the service runs (the keyword leg's weight
    always × coverage, ADR 0005); the others are printed for comparison."""
    sets = [scored(n) for n in names]
    legs = {s.name: {"vector": s.leg("vector"), "keyword": s.leg(keyword)} for s in sets}
    best_leg = {n: max(v.values()) for n, v in legs.items()}
    scores = table(sets, grid(keyword))
    cv = cross_validate(sets, {c: v for c, v in scores.items() if c.coverage}, best_leg)

    def crit(c: Config) -> tuple[float, float]:  # as cross_validate: worst-case gain, then mean gain
        gains = [scores[c][n] - best_leg[n] for n in best_leg]
        return (-min(gains), -sum(gains) / len(gains))

    ranked = sorted(scores, key=crit)
    chosen = next(c for c in ranked if c.coverage)
    return {
        "legs": legs,
        "cv": cv,
        "top": [(c.label(), scores[c]) for c in ranked[:top]],
        "named": {c.label(): scores[c] for c in scores if _named(c)},
        "chosen": (chosen.label(), scores[chosen]),
    }


def _named(c: Config) -> bool:
    """The configurations always printed: today's default (RRF k 60 × coverage) and plain RRF."""
    return c.fusion == "rrf" and c.param == 60 and c.weight == 1.0


def print_tune(result: Mapping[str, Any]) -> None:
    names = list(result["legs"])
    print("| fusion | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for leg in ("keyword", "vector"):
        print(f"| {leg} leg | " + " | ".join(f"{result['legs'][n][leg]:.4f}" for n in names) + " |")
    for label, sc in list(result["named"].items()) + list(result["top"]):
        print(f"| {label} | " + " | ".join(f"{sc[n]:.4f}" for n in names) + " |")
    label, sc = result["chosen"]
    print(
        f"\nchosen on all sets (best worst-case gain over the better leg, then mean gain): {label}: "
        + ", ".join(f"{n} {sc[n]:.4f} ({sc[n] - max(result['legs'][n].values()):+.4f})" for n in names)
    )
    print("\nleave-one-set-out:")
    print("| held out | chosen on the others | min gain (train) | held-out nDCG@10 | better leg | gain |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in result["cv"]:
        print(
            f"| {r['held_out']} | {r['chosen']} | {r['train_min_gain']:+.4f} | {r['held_out_ndcg']:.4f} | "
            f"{r['held_out_better_leg']:.4f} | {r['held_out_gain']:+.4f} |"
        )


# ---------------------------------------------------------------------- leg depths (performance-search.md, round 10)
def shipped() -> Config:
    """The fusion kaynak ships: ``Settings``' defaults (not the environment's), with the coverage factor."""
    from kaynak.config import Settings

    default = {name: f.default for name, f in Settings.model_fields.items()}
    return Config(
        default["fusion"],
        default["fusion_normalization"],
        default["fusion_alpha"],
        True,
        "keyword",
        default["fusion_fill"],
    )


def legs_at_depth(q: Mapping[str, Any], keyword_depth: int, vector_depth: int = 40) -> Legs:
    """A collected query's legs as a search reading ``vector_depth`` and ``keyword_depth`` deep would fuse them: the
    pruned keyword leg's top d is the exact top d of the collected list, and the fill-in gives every keyword chunk
    the vector leg's own top missed its similarity (collected either further down the vector leg or as a fill-in)."""
    vector = q["legs"].get("vector", [])
    filled = q.get("filled", 0)
    own = vector[: len(vector) - filled] if filled else vector
    similarity = dict(vector)
    top = own[:vector_depth]
    seen = {c for c, _ in top}
    keyword = q["legs"].get("keyword", [])[:keyword_depth]
    return {
        "vector": top + [(c, similarity[c]) for c, _ in keyword if c not in seen and c in similarity],
        "keyword": keyword,
    }


def depth_table(names: Sequence[str], depths: Sequence[int] = (10, 15, 20, 30, 40, 100)) -> None:
    """nDCG@10 of the shipped fusion per keyword-leg depth, the vector leg 40 deep (what ``candidates`` = 40 reads)."""
    print("| set | " + " | ".join(str(d) for d in depths) + " |\n|---|" + "---|" * len(depths))
    fusion = shipped()
    assert fusion.fusion == "convex" and fusion.fill, "legs_at_depth builds the fill-in that convex fill fuses"
    for name in names:
        s = scored(name)
        row = [s.ndcg(lambda q, d=d: [f.id for f in fusion.fuse(legs_at_depth(q, d), _coverage(q))]) for d in depths]
        print(f"| {name} | " + " | ".join(f"{v:.4f}" for v in row) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("collect", "tune", "questions", "depth"))
    ap.add_argument("sets", nargs="*", help=f"dev sets: {', '.join(SETS)}; tune: SET:a / SET:b = halves of its queries")
    ap.add_argument("--keyword-variant", default=None, help="collect: store the keyword leg as keyword:<name>")
    ap.add_argument("--keyword", default="keyword", help="tune: which keyword leg to fuse (keyword:<name>)")
    ap.add_argument("--top", type=int, default=8, help="tune: how many of the best configurations to print")
    ap.add_argument("--json", type=Path, default=None, help="tune: also write the result here")
    ap.add_argument("--collection", default=None, help="questions: collect the docqa legs from this collection")
    args = ap.parse_args(argv)
    unknown = [n for n in args.sets if n.partition(":")[0] not in SETS or n.partition(":")[2] not in ("", "a", "b")]
    if unknown or (args.command != "questions" and not args.sets):
        ap.error(f"name one or more dev sets of {', '.join(SETS)} (unknown: {', '.join(unknown) or 'none'})")
    if args.command == "questions":  # docqa: collect once (--collection), then score the main configurations
        if args.collection:
            collect_questions(args.collection, lambda m: print(m, file=sys.stderr, flush=True))
        configs = [
            Config("rrf", 60, 1.0),
            Config("convex", "tmm", 0.05),
            Config("convex", "tmm", 0.05, fill=True),
            Config("convex", "tmm", 0.02, False),
            Config("convex", "minmax", 0.4),
        ]
        for label, groups in question_table(configs).items():
            print(f"| {label} | " + " | ".join(f"{g} {h1:.3f} / {h5:.3f}" for g, (h1, h5) in sorted(groups.items())))
        return 0
    if args.command == "depth":  # the shipped fusion with the keyword leg read 10 … 100 deep
        depth_table(args.sets)
        return 0
    if args.command == "collect":
        for name in dict.fromkeys(n.partition(":")[0] for n in args.sets):
            path = collect(name, args.keyword_variant, lambda m: print(m, file=sys.stderr, flush=True))
            print(f"{name}: {path}")
        return 0
    result = tune(args.sets, args.keyword, args.top)
    print_tune(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
