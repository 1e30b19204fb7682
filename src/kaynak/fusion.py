"""Reciprocal Rank Fusion: merge the ranked lists of several retrievers into one, keeping each leg's rank and score.

RRF (Cormack, Clarke & Büttcher 2009) scores an item ``sum_leg weight_leg / (k + rank_leg)`` with ranks counted
from 1; an item a leg did not return gets nothing from that leg. It needs no score calibration between legs, which
is why it suits cosine distances next to BM25 scores. See docs/adr/0005-keyword-ranking-and-fusion.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_RRF_K = 60


@dataclass
class Fused:
    """One fused item: its id, its RRF score, and per leg the 1-based rank and the leg's own score."""

    id: str
    rrf: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)


def rrf(
    legs: Mapping[str, Sequence[tuple[str, float]]],
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ``{leg: [(id, score), …] best first}`` into one list, best first.

    ``weights`` default to 1.0 per leg; a leg weighted 0 still records its ranks and scores but adds nothing.
    A duplicate id inside one leg keeps its first (best) position. Ties break on the best rank in any leg,
    then on the id, so the order is deterministic.
    """
    if k < 1:
        raise ValueError("RRF k must be at least 1")
    fused: dict[str, Fused] = {}
    for leg, ranking in legs.items():
        w = 1.0 if weights is None else float(weights.get(leg, 1.0))
        rank = 0
        for item_id, score in ranking:
            item = fused.get(item_id)
            if item is None:
                item = fused[item_id] = Fused(item_id, 0.0)
            if leg in item.ranks:
                continue
            rank += 1
            item.ranks[leg] = rank
            item.scores[leg] = float(score)
            item.rrf += w / (k + rank)
    return sorted(fused.values(), key=lambda f: (-f.rrf, min(f.ranks.values()), f.id))
