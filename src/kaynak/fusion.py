"""Fusion: merge the ranked lists of several retrievers into one, keeping each leg's rank and score.

Two fusion functions, chosen by the ``fusion`` setting (docs/adr/0017-fusion-by-measurement.md):

* ``rrf`` — Reciprocal Rank Fusion (Cormack, Clarke & Büttcher 2009): ``sum_leg weight_leg / (k + rank_leg)``
  with ranks counted from 1. It needs no score calibration between legs (the specification's fusion).
* ``convex`` — a convex combination of per-query normalised scores (Bruch, Gai & Ingber 2023):
  ``sum_leg weight_leg · norm_leg(score)``. ``minmax`` maps the leg's returned scores onto [0, 1] from their own
  minimum and maximum; ``tmm`` (theoretical-min-max) from the scoring function's lowest possible value
  (``THEORETICAL_MIN``: 0 for BM25, -1 for cosine similarity) and the leg's best score, so that it does not depend
  on how deep the leg was read.

An item a leg did not return gets nothing from that leg in either function (for convex fusion the search service
first gives the keyword leg's chunks their exact vector similarity: ``fusion_fill``, docs/adr/0021-fusion-fill-in.md).
Ties break on the best rank in any leg, then on the id, so the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kaynak.vocabulary import Leg

DEFAULT_RRF_K = 60
FUSIONS = ("rrf", "convex")
NORMALIZATIONS = ("tmm", "minmax")
# The lowest score each leg's scoring function can give: BM25 is a sum of non-negative terms; the vector leg
# reports cosine similarity (1 − cosine distance).
THEORETICAL_MIN: dict[str, float] = {Leg.KEYWORD: 0.0, Leg.VECTOR: -1.0}

Ranking = Sequence[tuple[str, float]]


@dataclass
class Fused:
    """One fused item: its id, its fused score, and per leg the 1-based rank and the leg's own score."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def rrf(self) -> float:
        """The fused score (the name from the time RRF was the only fusion)."""
        return self.score


def _collect(legs: Mapping[str, Ranking]) -> dict[str, Fused]:
    """Every item of every leg with its per-leg rank and score; a duplicate id in one leg keeps its first place."""
    fused: dict[str, Fused] = {}
    for leg, ranking in legs.items():
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
    return fused


def _ordered(fused: Mapping[str, Fused]) -> list[Fused]:
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def _weight(weights: Mapping[str, float] | None, leg: str) -> float:
    return 1.0 if weights is None else float(weights.get(leg, 1.0))


def rrf(
    legs: Mapping[str, Ranking],
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ``{leg: [(id, score), …] best first}`` by Reciprocal Rank Fusion, best first.

    ``weights`` default to 1.0 per leg; a leg weighted 0 still records its ranks and scores but adds nothing.
    """
    if k < 1:
        raise ValueError("RRF k must be at least 1")
    fused = _collect(legs)
    for item in fused.values():
        item.score = sum(_weight(weights, leg) / (k + rank) for leg, rank in item.ranks.items())
    return _ordered(fused)


def normalizer(scores: Sequence[float], method: str, floor: float | None = None) -> tuple[float, float]:
    """``(low, span)`` such that ``(score − low) / span`` maps a leg's scores onto [0, 1] (all 1 when flat).

    ``minmax``: low = the smallest returned score. ``tmm``: low = ``floor`` (the scoring function's theoretical
    minimum), falling back to the smallest returned score when the floor is unknown or not below it.
    """
    if method not in NORMALIZATIONS:
        raise ValueError(f"unknown normalisation {method!r}; choose one of {', '.join(NORMALIZATIONS)}")
    if not scores:
        return 0.0, 1.0
    top, bottom = max(scores), min(scores)
    low = bottom
    if method == "tmm" and floor is not None and floor <= bottom:
        low = floor
    span = top - low
    return (low, span) if span > 0 else (top - 1.0, 1.0)  # a flat leg: every item is its best (1)


def convex(
    legs: Mapping[str, Ranking],
    weights: Mapping[str, float] | None = None,
    normalization: str = "tmm",
    floors: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ``{leg: [(id, score), …] best first}`` by a weighted sum of per-query normalised scores, best first.

    ``floors`` give each leg's theoretical minimum for ``tmm`` (default ``THEORETICAL_MIN``). Callers make the
    weights sum to 1 for a convex combination; any non-negative weights work.
    """
    floors = THEORETICAL_MIN if floors is None else floors
    fused = _collect(legs)
    for leg in legs:
        values = [f.scores[leg] for f in fused.values() if leg in f.scores]
        low, span = normalizer(values, normalization, floors.get(leg))
        w = _weight(weights, leg)
        for item in fused.values():
            if leg in item.scores:
                item.score += w * (item.scores[leg] - low) / span
    return _ordered(fused)


def fuse(
    legs: Mapping[str, Ranking],
    method: str = "rrf",
    *,
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_RRF_K,
    normalization: str = "tmm",
) -> list[Fused]:
    """The fusion named by ``method`` (``rrf`` or ``convex``) with its parameters."""
    if method == "rrf":
        return rrf(legs, k=k, weights=weights)
    if method == "convex":
        return convex(legs, weights=weights, normalization=normalization)
    raise ValueError(f"unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}")
