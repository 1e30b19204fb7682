"""Match-strength calibration: fit ``kaynak.match``'s models on answerable vs unanswerable questions (issue 27).

XQuAD's 24 articles are split in two halves. For each half and each set (Turkish, English, Turkish questions about
the English paragraphs), the half's paragraphs are ingested into a collection of their own and every question of
the set is asked (``SearchService.search``, mode auto, k 10): a question about an ingested article is answerable,
one about the other half is not. ``collect`` saves each hit's scores, coverages and whether it is a relevant
paragraph; ``fit`` fits the logistic models on one half's collections and measures them on the other's (and the
other way round: two-fold by ingested half, so no figure is measured on what it was fitted on), then refits on
both and prints the constants to paste into ``src/kaynak/match.py``.

    export KAYNAK_DATA_DIR=/tmp/k27-data KAYNAK_THREADS=2
    python benchmarks/studies/match_calibration.py collect --embedder e5-small
    python benchmarks/studies/match_calibration.py collect --embedder hash
    python benchmarks/studies/match_calibration.py fit

Dev data only (``../shared/data/retrieval``); never the holdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (common)
from kaynak.match import wordless

from common import read_jsonl

D = Path(os.environ.get("KAYNAK_RETRIEVAL_DATA", Path(__file__).resolve().parents[3] / "shared/data/retrieval"))
CACHE = Path(os.environ.get("KAYNAK_MATCH_CACHE", "/tmp/kaynak-match-calibration"))
SETS = {"tr": ("xquad/tr", "xquad/tr", "turkish"), "en": ("xquad/en", "xquad/en", "english"),
        "tr-en": ("xquad/en", "xquad/tr", "english")}  # fmt: skip
HALVES = {"a": {f"{i:02d}" for i in range(0, 24, 2)}, "b": {f"{i:02d}" for i in range(1, 24, 2)}}
K = 10
NONSENSE = ["useEffect cleanup", "?!.,;:", "<script>", "asdf qwerty", "kubernetes pod eviction policy"]
# The threshold flags at most this share of each model's answerable dev questions. e5: 3 % (at 4 % fold b → a
# flagged 5.4 % of the answerable questions); lexical: 4 % (at 3 % its threshold falls below the nonsense
# queries' probabilities: 0 of 30 flagged).
TARGET_FLAGGED_ANSWERABLE = {"e5": 0.03, "lexical": 0.04}


def article(doc_id: str) -> str:
    return doc_id.split("_", 1)[0]


# ---------------------------------------------------------------------- collect
def collect(embedder: str) -> None:
    from kaynak.context import Context
    from kaynak.errors import CollectionNotFound
    from kaynak.types import LoadedDocument, Page

    CACHE.mkdir(parents=True, exist_ok=True)
    ctx = Context(embedder=embedder)
    try:
        for set_name, (corpus_dir, queries_dir, language) in SETS.items():
            corpus = read_jsonl(D / corpus_dir / "corpus.jsonl")
            queries = {q["_id"]: q["text"] for q in read_jsonl(D / queries_dir / "queries.jsonl")}
            qrels: dict[str, str] = {}
            for line in (D / queries_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
                qid, doc_id, _ = line.split("\t")
                qrels[qid] = doc_id
            for half, articles in HALVES.items():
                name = f"match_{corpus_dir.replace('/', '_')}_{half}_{embedder}".replace("-", "_")
                try:
                    ctx.search.get_collection(name)
                except CollectionNotFound:
                    docs = [
                        (d["_id"], d["_id"], LoadedDocument(d["title"], [Page(1, f"{d['title']}\n\n{d['text']}")]))
                        for d in corpus
                        if article(d["_id"]) in articles
                    ]
                    ctx.ingest.ingest_documents(name, docs, language=language, embedder=embedder)
                out = CACHE / f"{set_name}_{half}_{embedder}.jsonl"
                t0 = time.perf_counter()
                with out.open("w", encoding="utf-8") as fh:
                    for qid, text in [*queries.items(), *((f"nonsense-{i}", q) for i, q in enumerate(NONSENSE))]:
                        relevant = qrels.get(qid)
                        hits = ctx.search.search(text, name, mode="auto", k=K)
                        plan = hits.plan
                        row = {
                            "qid": qid,
                            "answerable": relevant is not None and article(relevant) in articles,
                            "mode": plan.mode if plan else None,
                            "hits": [
                                {
                                    "relevant": h.source == relevant,
                                    "scores": h.scores,
                                    "match": h.match,
                                    "features": f,
                                }
                                for h, f in zip(hits, hits.features, strict=True)
                            ],
                        }
                        fh.write(json.dumps(row) + "\n")
                print(f"{out.name}: {len(queries)} questions in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        ctx.close()


# ---------------------------------------------------------------------- fit
def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """The probability that a random positive scores above a random negative (ties count half)."""
    if not pos or not neg:
        return float("nan")
    scores = np.array([*pos, *neg])
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks over ties
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, steps: int = 50) -> np.ndarray:
    """Weights (intercept first) of an L2-regularised logistic regression, by Newton's method."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    reg = np.eye(len(w)) * l2
    reg[0, 0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -60, 60)))
        grad = xb.T @ (p - y) + reg @ w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def rows_of(files: Iterable[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        for row in read_jsonl(f):
            row["file"] = f.stem
            out.append(row)
    return out


def hit_matrix(rows: Sequence[Mapping[str, Any]], feats: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    x, y = [], []
    for row in rows:
        for h in row["hits"]:
            x.append([h["features"][f] for f in feats])
            y.append(1.0 if h["relevant"] else 0.0)
    return np.array(x, dtype=float).reshape(-1, len(feats)), np.array(y)


def query_scores(rows: Sequence[Mapping[str, Any]], feats: Sequence[str], w: np.ndarray) -> list[tuple[bool, float]]:
    """(answerable, the best hit's probability) per question (0 when there are no hits)."""
    out = []
    for row in rows:
        best = 0.0
        for h in row["hits"]:
            z = w[0] + sum(wi * h["features"][f] for wi, f in zip(w[1:], feats, strict=True))
            best = max(best, 1.0 / (1.0 + np.exp(-z)))
        out.append((bool(row["answerable"]), float(best)))
    return out


def report(scored: Sequence[tuple[bool, float]], threshold: float) -> dict[str, float]:
    pos = [p for a, p in scored if a]
    neg = [p for a, p in scored if not a]
    return {
        "questions": len(scored),
        "auc": round(auc(pos, neg), 4),
        "flagged_unanswerable": round(sum(p < threshold for p in neg) / max(len(neg), 1), 4),
        "flagged_answerable": round(sum(p < threshold for p in pos) / max(len(pos), 1), 4),
    }


def threshold_for(scored: Sequence[tuple[bool, float]], share: float) -> float:
    """The largest threshold that flags at most ``share`` of the answerable questions."""
    pos = sorted(p for a, p in scored if a)
    return float(pos[int(share * len(pos))]) if pos else 0.5


MODEL_FEATURES = {
    "e5": ("vector", "coverage", "known", "agree", "margin", "cross", "cross_vector"),
    "lexical": ("coverage", "known", "agree", "cross"),
}
MODEL_EMBEDDERS = {"e5": "e5-small", "lexical": "hash"}


def fit() -> None:
    final: dict[str, Any] = {}
    for model, feats in MODEL_FEATURES.items():
        emb = MODEL_EMBEDDERS[model]
        files = {half: sorted(CACHE.glob(f"*_{half}_{emb}.jsonl")) for half in HALVES}
        if not all(files.values()):
            print(f"{model}: no collected runs for {emb}; run collect --embedder {emb}", file=sys.stderr)
            continue
        data = {half: [r for r in rows_of(fs) if not r["qid"].startswith("nonsense")] for half, fs in files.items()}
        print(f"\n## model {model} ({emb}), features {', '.join(feats)}")
        print("| fitted on | measured on | set | questions | AUC | flagged unanswerable | flagged answerable |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for train, test in (("a", "b"), ("b", "a")):
            w = logistic(*hit_matrix(data[train], feats))
            thr = threshold_for(query_scores(data[train], feats, w), TARGET_FLAGGED_ANSWERABLE[model])
            for set_name in [*SETS, "all"]:
                rows = [r for r in data[test] if set_name == "all" or r["file"].startswith(f"{set_name}_")]
                rep = report(query_scores(rows, feats, w), thr)
                print(
                    f"| {train} | {test} | {set_name} | {rep['questions']} | {rep['auc']:.4f} | "
                    f"{rep['flagged_unanswerable']:.1%} | {rep['flagged_answerable']:.1%} |"
                )
        both = data["a"] + data["b"]
        w = logistic(*hit_matrix(both, feats))
        thr = threshold_for(query_scores(both, feats, w), TARGET_FLAGGED_ANSWERABLE[model])
        nonsense = [r for fs in files.values() for r in rows_of(fs) if r["qid"].startswith("nonsense")]
        ns = query_scores(nonsense, feats, w)
        asks = [not wordless(NONSENSE[int(r["qid"].rsplit("-", 1)[1])]) for r in nonsense]
        flagged = sum(p < thr or not a for (_, p), a in zip(ns, asks, strict=True))
        print(
            f"\nnonsense queries flagged: {flagged}/{len(ns)}, wordless ones always (best p: "
            f"{[round(p, 3) for _, p in ns]})"
        )
        coefs = dict(zip(feats, (round(float(v), 4) for v in w[1:]), strict=True))
        final[model] = {"intercept": round(float(w[0]), 4), "coefs": coefs, "partial_at": round(thr, 4)}
    print("\nconstants for src/kaynak/match.py:")
    print(json.dumps(final, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--embedder", default="e5-small")
    sub.add_parser("fit")
    args = ap.parse_args()
    if args.cmd == "collect":
        collect(args.embedder)
    else:
        fit()


if __name__ == "__main__":
    main()
