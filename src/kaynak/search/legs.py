"""Run the legs of a search: the vector leg and the keyword leg side by side, and the cross-language rule.

* Vector leg: the query embedded with each collection's own embedder (``collection.embedder``), HNSW top
  ``candidates`` with ``ef_search`` raised and ``iterative_scan = relaxed_order`` (in ``Store.vector_search``);
  query vectors are kept in an LRU (``QueryVectorCache``).
* Keyword leg: one ranking per language (each collection's text search configuration): BM25 over the postings
  table by default (each chunk's postings also carry its document title's terms), or the specification's OR
  tsquery with ``ts_rank_cd(…, 1)``. It runs on its own connection while the vector leg embeds and scans.
  A collection whose documents are stemmed in several languages (each document in its own, issue 50) gets the
  query's lexemes in each of them from the plan (``Store.plan_facts``), ranked in one BM25 over its postings
  (docs/adr/0038).

Cross-language rule (collections mixing languages): when the query's language is known, the collections hold
documents in it, and yet the vector leg's best chunk lies in a document of another language, hybrid fuses the
vector leg only — the keyword leg can only match the query's own language there (docs/adr/0017).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from kaynak.config import Settings
from kaynak.errors import CollectionMismatch
from kaynak.search.plan import SearchPlan
from kaynak.store import SearchFilters, Store
from kaynak.types import Collection
from kaynak.vocabulary import Leg, SearchMode

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder

#: From this many chunks in a collection, the keyword leg is ranked in two parts at once (``keyword_parts``).
PARTS_FROM_CHUNKS = 300_000
QUERY_VECTOR_CACHE = 1024  # query vectors kept per service (LRU keyed by embedder name and query text)
CALLER_VECTORS = 128  # query vectors kept per caller of a team server (``QueryVectorCache.partition``)
CALLERS_KEPT = 1024  # callers whose own query-vector caches are kept (the least recent are dropped)
# Runs the keyword leg beside the vector leg (threads: both legs wait on PostgreSQL or a C embedder).
_LEGS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kaynak-leg")

# Embeds queries from the start of a search (``EarlyVector``): as many at once as a small machine has cores for.
_EMBED = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kaynak-embed")

Legs = dict[str, list[tuple[str, float]]]  # leg name → its ranked (chunk id, score) list


class QueryVectorCache:
    """A thread-safe LRU of query vectors keyed by (embedder name, query text).

    A team server gives every caller (token) a cache of its own (``partition``): a shared one answered a query
    someone else had searched faster (22 against 35 ms), so any token could time what the others searched."""

    def __init__(self, size: int = QUERY_VECTOR_CACHE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._parts: OrderedDict[str, QueryVectorCache] = OrderedDict()

    def partition(self, caller: str) -> QueryVectorCache:
        """The cache of one caller, apart from every other's: its vectors are never found, nor evicted, by another
        caller's searches (``CALLER_VECTORS`` each, for the ``CALLERS_KEPT`` most recent callers)."""
        with self._lock:
            part = self._parts.get(caller)
            if part is None:
                part = self._parts[caller] = QueryVectorCache(min(self.size, CALLER_VECTORS))
            self._parts.move_to_end(caller)
            while len(self._parts) > CALLERS_KEPT:
                self._parts.popitem(last=False)
            return part

    def get(self, embedder: str, text: str) -> Any | None:
        with self._lock:
            vec = self._items.get((embedder, text))
            if vec is not None:
                self._items.move_to_end((embedder, text))
            return vec

    def put(self, embedder: str, text: str, vector: Any) -> None:
        with self._lock:
            self._items[(embedder, text)] = vector
            self._items.move_to_end((embedder, text))
            while len(self._items) > self.size:
                self._items.popitem(last=False)


def run_legs(
    store: Store,
    settings: Settings,
    embedder_factory: Callable[[str], Embedder],
    query_vectors: QueryVectorCache,
    text: str,
    plan: SearchPlan,
    depth: int,
    flt: SearchFilters | None,
    ranking: str,
    forced: str | None,
    early: EarlyVector | None = None,
) -> tuple[Legs, dict[str, Any]]:
    """The legs the plan's mode asks for, ``depth`` deep, and the query's vector per embedder (for the fill-in).
    ``early``: the query's embedding, started before the plan (``embed_early``)."""
    legs: Legs = {}
    keyword: Future[list[tuple[str, float]]] | None = None
    if plan.mode in (SearchMode.HYBRID, SearchMode.KEYWORD) and plan.keyword_coverage > 0:
        # the keyword leg runs on its own connection while this thread embeds the query and scans HNSW
        keyword = _LEGS.submit(keyword_leg, store, settings, plan, depth, flt, ranking)
    vectors: dict[str, Any] = {}  # the query's vector per embedder (the vector leg fills it)
    if plan.mode in (SearchMode.HYBRID, SearchMode.VECTOR):
        try:
            legs[Leg.VECTOR] = vector_leg(
                store, settings, embedder_factory, query_vectors, text, plan, depth, flt, forced, vectors, early
            )
        except BaseException:
            if keyword is not None:
                keyword.cancel()
            raise
    if keyword is not None:
        legs[Leg.KEYWORD] = keyword.result()
    return legs, vectors


class EarlyVector:
    """The query's embedding by one embedder, computed on a leg thread from the start of a search, so that it
    overlaps the plan and the keyword leg instead of following them (issue 30: on two cores the query embedding
    and the keyword leg's backend each take one)."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self.name = embedder.name
        self._future: Future[Any] = _EMBED.submit(embedder.embed_queries, [text])

    def vector(self) -> Any:
        return self._future.result()[0]

    def cancel(self) -> None:
        self._future.cancel()


def embed_early(
    settings: Settings,
    embedder_factory: Callable[[str], Embedder],
    query_vectors: QueryVectorCache,
    text: str,
    mode: SearchMode,
    known_embedded: bool,
) -> EarlyVector | None:
    """Start the query's embedding with the configured embedder before the plan, when the search will most likely
    need it: mode ``vector`` or ``hybrid``, or ``auto`` once some collection is known to hold embeddings; None
    when the vector is cached or the embedder cannot be made here (the vector leg then embeds, as before)."""
    if mode == SearchMode.KEYWORD or (mode == SearchMode.AUTO and not known_embedded):
        return None
    try:
        emb = embedder_factory(settings.embedder)
    except Exception:  # an unknown or broken default embedder: the collections' own embedders decide later
        return None
    if query_vectors.get(emb.name, text) is not None:
        return None
    return EarlyVector(emb, text)


def vector_leg(
    store: Store,
    settings: Settings,
    embedder_factory: Callable[[str], Embedder],
    query_vectors: QueryVectorCache,
    text: str,
    plan: SearchPlan,
    depth: int,
    flt: SearchFilters | None,
    forced: str | None,
    vectors: dict[str, Any] | None = None,
    early: EarlyVector | None = None,
) -> list[tuple[str, float]]:
    """HNSW top ``depth`` over the plan's embedded collections as ``(chunk id, cosine similarity)``, best
    first; ``vectors`` (embedder name → the query's vector) is filled for the caller. ``early`` holds the query's
    vector from an embedder started before the plan; it is used for the collections built with that embedder."""
    vectors = {} if vectors is None else vectors
    results: list[tuple[str, float]] = []
    for col in plan.collections:
        if forced is not None and forced != col.embedder:
            raise CollectionMismatch(
                f"collection {col.name!r} was built with embedder {col.embedder!r}, but the search forces "
                f"{forced!r}; search without forcing an embedder, or re-ingest the collection with {forced!r}"
            )
        if col.id not in plan.embedded:
            continue
        if col.embedder not in vectors:
            emb = embedder_factory(col.embedder)
            if emb.dim != col.dim:
                raise CollectionMismatch(
                    f"collection {col.name!r} holds {col.dim}-dimensional vectors from {col.embedder!r}, but "
                    f"embedder {emb.name!r} gives {emb.dim}; re-ingest the collection"
                )
            vec = query_vectors.get(emb.name, text)
            if vec is None and early is not None and early.name == emb.name:
                vec = early.vector()
                query_vectors.put(emb.name, text, vec)
            if vec is None:
                vec = emb.embed_queries([text])[0]
                query_vectors.put(emb.name, text, vec)
            vectors[col.embedder] = vec
        hits = store.vector_search(col, vectors[col.embedder], depth, flt, settings.ef_search)
        results.extend((cid, 1.0 - dist) for cid, dist in hits)
    results.sort(key=lambda r: (-r[1], r[0]))
    return results[:depth]


def keyword_parts(settings: Settings, collections: Sequence[Collection], others_in_flight: int = 0) -> int:
    """In how many parts the keyword leg ranks ``collections`` at once (``Store.keyword_search(parts=…)``):
    ``keyword_parts`` when set; else 2 when one of them holds ``PARTS_FROM_CHUNKS`` chunks or more, this machine
    has two cores or more and no other keyword leg runs in this process (``others_in_flight``), 1 otherwise
    (docs/adr/0032). Below that size the leg takes about as long as the query's embedding beside it, and a
    second part only fights the embedding for the cores; beside other searches the cores are taken, and a
    part's extra work (each part takes θ itself) costs throughput instead of saving time."""
    if settings.keyword_parts:
        return settings.keyword_parts
    if others_in_flight or _cores() < 2 or max((c.chunk_count for c in collections), default=0) < PARTS_FROM_CHUNKS:
        return 1
    return 2


class _InFlight:
    """How many keyword legs this process runs now (``keyword_leg``)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def enter(self) -> int:
        """Count one more; returns how many others were running."""
        with self._lock:
            self.count += 1
            return self.count - 1

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


_KEYWORD_LEGS = _InFlight()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def keyword_leg(
    store: Store, settings: Settings, plan: SearchPlan, depth: int, flt: SearchFilters | None, ranking: str
) -> list[tuple[str, float]]:
    """The keyword ranking of each language's collections for the plan's lexemes, merged by score."""
    others = _KEYWORD_LEGS.enter()
    try:
        return _keyword_leg(store, settings, plan, depth, flt, ranking, others)
    finally:
        _KEYWORD_LEGS.leave()


def _keyword_leg(
    store: Store,
    settings: Settings,
    plan: SearchPlan,
    depth: int,
    flt: SearchFilters | None,
    ranking: str,
    others_in_flight: int,
) -> list[tuple[str, float]]:
    results: list[tuple[str, float]] = []
    for language, lexemes in plan.query_lexemes.items():
        if not lexemes:
            continue
        group = [c for c in plan.collections if c.language == language]
        results.extend(
            store.keyword_search(
                group,
                None,
                depth,
                ranking,
                flt,
                k1=settings.bm25_k1,
                b=settings.bm25_b,
                lexemes=lexemes,
                pruned=settings.bm25_pruning,
                per_collection=True,
                parts=keyword_parts(settings, group, others_in_flight),  # the store splits pruned BM25 only
            )
        )
    if len(plan.query_lexemes) > 1:
        results.sort(key=lambda r: (-r[1], r[0]))
    return results[:depth]


def probe_of(plan: SearchPlan, legs: Mapping[str, Sequence[tuple[str, float]]]) -> tuple[str, list[int], str] | None:
    """The cross-language probe a search needs (``cross_language``'s condition), as ``Store.hit_chunks`` takes it:
    (the vector leg's best chunk, the collections' ids, the query's language); None when none is needed."""
    if (
        plan.mode != SearchMode.HYBRID
        or not legs.get(Leg.KEYWORD)
        or not legs.get(Leg.VECTOR)
        or plan.query_language is None
    ):
        return None
    return legs[Leg.VECTOR][0][0], [c.id for c in plan.collections], plan.query_language


def cross_language(store: Store, plan: SearchPlan, best_vector_chunk: str) -> None:
    """Vector only when the answer is in another language: the query's language is known, the collections
    hold documents in it, and yet the vector leg's best chunk lies in a document of another language. The
    keyword leg can only match the query's own language there and would pull same-language documents over
    the answer (ADR 0017: doc-QA English questions about a Turkish law, hit@1 0 → 1)."""
    if plan.query_language is None:
        return
    ids = [c.id for c in plan.collections]
    found, has_query_language = store.language_probe(best_vector_chunk, ids, plan.query_language)
    apply_cross_language(plan, found, has_query_language)


def apply_cross_language(plan: SearchPlan, found: str | None, has_query_language: bool) -> bool:
    """The cross-language rule given the probe's answer (the language of the best vector chunk's document,
    whether the collections hold documents in the query's language): True when it applied to ``plan``."""
    if found is not None and found != plan.query_language and has_query_language:
        plan.weights = {**plan.weights, Leg.KEYWORD: 0.0}
        plan.cross_language = True
        plan.reason += f"; the best vector match is in {found}, the query in {plan.query_language}: vector only"
        return True
    return False
