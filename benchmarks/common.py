"""What the benchmarks share: where the data is, one JSONL reader, one nDCG (the evaluation harness's own), and
percentiles.

A benchmark runs as a script (``python benchmarks/bench_x.py``), so this folder is on its ``sys.path`` and
``import common`` finds this module; a study in ``studies/`` puts the folder above it there first. nDCG is
``kaynak.evaluation.metrics``'s (negative and zero grades gain nothing; a document counts at its first chunk), so
a benchmark's quality figures are ``kaynak eval``'s."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kaynak.evaluation.metrics import first_rank_per_document, ndcg_at_k

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"  # real documents and retrieval sets beside the checkout
RETRIEVAL = DATA / "retrieval"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every non-blank line of ``path`` as a JSON object."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def ndcg(ranked: Iterable[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one ranking of document ids (repeats count at their first place), as ``kaynak eval`` scores it."""
    return ndcg_at_k(first_rank_per_document(ranked), judged, k)


def mean_ndcg(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], k: int = 10) -> float:
    """Mean nDCG@k over every judged query (a query without a run scores 0)."""
    return statistics.fmean(ndcg(runs.get(q, []), judged, k) for q, judged in qrels.items())


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0–100), nearest rank: the smallest value with at least p % of the values at or below."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]
