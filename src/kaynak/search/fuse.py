"""Fuse the legs: convex fusion's fill-in of the vector leg, then the configured fusion with the plan's weights.

By default a convex combination of per-query normalised scores, keyword share ``fusion_alpha``
(theoretical-min-max normalisation), after the keyword leg's chunks that the vector leg did not return got their
exact similarity (``fusion_fill``, docs/adr/0021-fusion-fill-in.md); or Reciprocal Rank Fusion (k = ``rrf_k``).
The fusion functions themselves are ``kaynak.fusion``; per-leg ranks and scores land in ``hit.scores``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kaynak.config import Settings
from kaynak.fusion import Fused, fuse
from kaynak.search.legs import Legs
from kaynak.search.plan import SearchPlan
from kaynak.store import Store
from kaynak.store.catalogue import HitChunk, SimilarityFill
from kaynak.vocabulary import Leg, SearchMode


def wants_fill(settings: Settings, plan: SearchPlan, legs: Legs) -> bool:
    """Whether the fill-in applies: a hybrid search whose legs both returned chunks, fused by convex fusion."""
    both = plan.mode == SearchMode.HYBRID and bool(legs.get(Leg.KEYWORD)) and bool(legs.get(Leg.VECTOR))
    return both and settings.fusion == "convex" and settings.fusion_fill


def fill_vector(store: Store, plan: SearchPlan, legs: Legs, vectors: Mapping[str, Any]) -> None:
    """Convex fusion's fill-in (ADR 0021): the keyword leg's chunks that the vector leg did not return get their
    exact cosine similarity, appended after the vector leg's own results (best first among themselves), so the
    leg's own ranks and best chunk stay the index's. Without it such a chunk counts as the least similar chunk
    of the collection, and one the keyword leg ranks first can never beat a weak vector match."""
    seen = {cid for cid, _ in legs[Leg.VECTOR]}
    missing = [cid for cid, _ in legs[Leg.KEYWORD] if cid not in seen]
    found: dict[str, float] = {}
    for col in plan.collections:
        if missing and col.id in plan.embedded and col.embedder in vectors:
            found.update(store.vector_similarities(col, vectors[col.embedder], missing))
            missing = [cid for cid in missing if cid not in found]
    legs[Leg.VECTOR] = legs[Leg.VECTOR] + sorted(found.items(), key=lambda r: (-r[1], r[0]))


def fill_request(plan: SearchPlan, legs: Legs, vectors: Mapping[str, Any]) -> SimilarityFill | None:
    """The fill-in as one request the chunk fetch can answer (``Store.hit_chunks(fill=…)``): the keyword leg's
    chunks the vector leg did not return, and the one query vector of the plan's embedded collections. None when
    those collections were built with several embedders (``fill_vector`` then asks per collection)."""
    embedded = [c for c in plan.collections if c.id in plan.embedded and c.embedder in vectors]
    if len({(c.embedder, c.dim) for c in embedded}) != 1:
        return None
    seen = {cid for cid, _ in legs[Leg.VECTOR]}
    missing = list(dict.fromkeys(cid for cid, _ in legs[Leg.KEYWORD] if cid not in seen))
    vec = vectors[embedded[0].embedder]
    return SimilarityFill([c.id for c in embedded], vec, embedded[0].dim, missing)


def add_similarities(legs: Legs, fill: SimilarityFill, fetched: Mapping[str, HitChunk]) -> None:
    """``fill_vector``'s result from the chunk fetch's answer: the missing chunks that are embedded, appended
    after the vector leg's own results, best first among themselves."""
    found = {cid: sim for cid in fill.chunk_ids if cid in fetched and (sim := fetched[cid].similarity) is not None}
    legs[Leg.VECTOR] = legs[Leg.VECTOR] + sorted(found.items(), key=lambda r: (-r[1], r[0]))


def fuse_legs(settings: Settings, plan: SearchPlan, legs: Mapping[str, Sequence[tuple[str, float]]]) -> list[Fused]:
    """The legs merged by the configured fusion (``fusion``: rrf or convex) with the plan's leg weights."""
    s = settings
    return fuse(legs, s.fusion, weights=plan.weights, k=s.rrf_k, normalization=s.fusion_normalization)
