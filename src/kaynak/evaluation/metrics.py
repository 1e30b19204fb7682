"""Retrieval metrics, computed the way trec_eval does: nDCG@k, Recall@k, MRR@k, MAP@k, recall curves, latency.

A *run* maps a query id to its ranked document ids (best first, each id once). *qrels* map a query id to
{document id: graded relevance}; a document is relevant when its grade is ≥ 1. Conventions (checked against
pytrec_eval in the tests): nDCG gain is the grade itself with a log2(rank + 1) discount and the ideal ranking
built from all judged grades; Recall@k divides by all relevant documents; MAP@k sums precision at each relevant
rank within k and divides by all relevant documents; MRR@k is 1/rank of the first relevant document within k.
Means are taken over every query with a relevant document; a query with no results scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Run = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg <= 0:
        return 0.0
    dcg = 0.0
    for i, doc in enumerate(ranking[:k]):
        g = judged.get(doc, 0)
        if g > 0:
            dcg += g / math.log2(i + 2)
    return dcg / idcg


def recall_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return sum(1 for d in ranking[:k] if d in relevant) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(ranking[:k]):
        if judged.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def average_precision_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    hits = 0
    total = 0.0
    for i, doc in enumerate(ranking[:k]):
        if doc in relevant:
            hits += 1
            total += hits / (i + 1)
    return total / len(relevant)


def metric_names(k: int = 10) -> list[str]:
    """The headline metrics in report order."""
    return [f"nDCG@{k}", f"Recall@{k}", "Recall@100", f"MRR@{k}", "MAP@100"]


def per_query(ranking: Sequence[str], judged: Mapping[str, int], k: int = 10) -> dict[str, float]:
    return {
        f"nDCG@{k}": ndcg_at_k(ranking, judged, k),
        f"Recall@{k}": recall_at_k(ranking, judged, k),
        "Recall@100": recall_at_k(ranking, judged, 100),
        f"MRR@{k}": mrr_at_k(ranking, judged, k),
        "MAP@100": average_precision_at_k(ranking, judged, 100),
    }


def evaluate(run: Run, qrels: Qrels, k: int = 10) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(mean of each headline metric, per-query values) over queries of ``qrels`` with a relevant document."""
    names = metric_names(k)
    per: dict[str, dict[str, float]] = {}
    for qid, judged in qrels.items():
        if not any(g > 0 for g in judged.values()):
            continue
        per[qid] = per_query(run.get(qid, ()), judged, k)
    means = {n: (sum(v[n] for v in per.values()) / len(per) if per else 0.0) for n in names}
    return means, per


def recall_curve(run: Run, qrels: Qrels, max_k: int = 100) -> list[float]:
    """Mean Recall@k for k = 1 … max_k (index 0 is Recall@1)."""
    qids = [q for q, j in qrels.items() if any(g > 0 for g in j.values())]
    if not qids:
        return [0.0] * max_k
    sums = [0.0] * max_k
    for qid in qids:
        relevant = {d for d, g in qrels[qid].items() if g > 0}
        found = 0
        ranking = list(run.get(qid, ()))[:max_k]
        for i in range(max_k):
            if i < len(ranking) and ranking[i] in relevant:
                found += 1
            sums[i] += found / len(relevant)
    return [s / len(qids) for s in sums]


def first_rank_per_document(doc_ids: Iterable[str]) -> list[str]:
    """Document ids in order of their first (best) appearance: chunk hits → a document ranking."""
    seen: set[str] = set()
    out: list[str] = []
    for d in doc_ids:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0–100) with linear interpolation, as numpy's default; 0 for no values."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# ---------------------------------------------------------------------- questions on one's own documents
def hit_rank(flags: Sequence[bool]) -> int | None:
    """1-based rank of the first True, or None."""
    for i, f in enumerate(flags):
        if f:
            return i + 1
    return None


def hit_metrics(ranks: Sequence[int | None], k: int) -> dict[str, float]:
    """hit@1, hit@5 (when k > 5), hit@k and MRR@k from the rank of the first correct result of each question
    (None: not found)."""
    n = len(ranks)
    cuts = [1, 5, k] if k > 5 else [1, k]
    if n == 0:
        return {**{f"hit@{c}": 0.0 for c in cuts}, f"MRR@{k}": 0.0}
    out = {f"hit@{c}": sum(1 for r in ranks if r is not None and r <= c) / n for c in cuts}
    out[f"MRR@{k}"] = sum(1.0 / r for r in ranks if r is not None and r <= k) / n
    return out
