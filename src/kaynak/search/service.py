"""SearchService: the read side of kaynak — hybrid search, and browsing collections, documents and chunks.

Every face (CLI, REST, MCP) reads through this class; it never writes, which is what makes the MCP server
read-only by construction. It composes the steps of the query pipeline (docs/adr/0005-keyword-ranking-and-fusion.md,
docs/adr/0017-fusion-by-measurement.md), one module each:

1. ``plan``: resolve collections (``None`` → the configured default, a name or a list of names, ``"*"`` → all),
   the query's terms per language, the mode (``auto`` decides per query) and the legs' weights.
2. ``legs``: the vector and keyword legs side by side, and the cross-language rule.
3. ``fuse``: convex fusion's fill-in, then the configured fusion.
4. ``rerank``: optionally, the top ``rerank_top`` rescored by the configured cross-encoder.
5. A query naming an article or section ("Madde 27", "md. 27", "Article 27", "Section 4.2"; ``kaynak.structure``)
   gets the chunks whose section names it first.
6. ``hits``: query syntax (``"exact phrase"``, ``-word``), grouping, verbatim quotes, duplicates collapsed, match
   strength; ``highlight`` marks the query's words in them.

Browsing (``browse``) lists and reads collections, documents, pages and a chunk's neighbours. Input checks are
``kaynak.rules``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kaynak import rules
from kaynak.config import Settings
from kaynak.errors import InvalidQuery
from kaynak.fusion import Fused
from kaynak.match import REFERENCE_RANK
from kaynak.search.browse import Browse
from kaynak.search.fuse import add_similarities, fill_request, fill_vector, fuse_legs, wants_fill
from kaynak.search.highlight import highlight_texts
from kaynak.search.hits import DUPLICATE_SPARE, SearchResults, admitted, best_per_document, build_hits, hit_marks
from kaynak.search.legs import Legs, QueryVectorCache, apply_cross_language, embed_early, probe_of, run_legs
from kaynak.search.legs import cross_language as cross_language_rule
from kaynak.search.plan import SearchPlan, check_mode, leg_weights, make_plan, plan_facts
from kaynak.search.rerank import pick_reranker, rerank_head
from kaynak.store import SearchFilters, Store
from kaynak.store.catalogue import HitChunk
from kaynak.structure import article_refs, promote_matching
from kaynak.syntax import parse_query
from kaynak.types import Collection, Hit
from kaynak.vocabulary import KeywordRanking, Leg, SearchMode

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder
    from kaynak.embeddings.rerank import Reranker


class SearchService(Browse):
    check_query = staticmethod(rules.check_query)

    def __init__(
        self,
        store: Store,
        settings: Settings,
        embedder_factory: Callable[[str], Embedder],
        reranker_factory: Callable[[str | None], Reranker | None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.embedder_factory = embedder_factory
        self.reranker_factory = reranker_factory
        self._has_embeddings: set[int] = set()
        self.query_vectors = QueryVectorCache()

    def search(
        self,
        query: str,
        collections: str | Sequence[str] | None = None,
        mode: SearchMode | str = SearchMode.AUTO,
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        rerank: bool | None = None,
        keyword_ranking: KeywordRanking | str | None = None,
        *,
        embedder: str | None = None,
        group_by: str | None = None,
    ) -> SearchResults:
        """The ``k`` best passages for ``query``, each with a verbatim quote (see the module docstring).

        One pass: the query is stemmed and the collections resolved once (``plan``); the plan's lexemes feed the
        keyword leg and the quotes, and come back with the hits (``SearchResults.plan``) for highlighting.
        ``embedder`` forces an embedder by name: a collection built with another one raises CollectionMismatch
        (without it, each collection is searched with the embedder it was built with).
        Hits whose quotes overlap in one document collapse into the better one (the other's rank lands in its
        ``scores["merged_rank"]``); ``group_by="document"`` keeps only each document's best hit (how many of the
        candidates came from it: ``scores["document_hits"]``).
        """
        text = rules.check_query(query)
        k = rules.check_k(k)
        group = rules.check_group_by(group_by)
        syntax = parse_query(text)  # "exact phrase" and -word (kaynak.syntax)
        if syntax.excluded:
            if not syntax.text:
                raise InvalidQuery("the query only excludes words (-word); add the words to search for", "query")
            text = syntax.text
        plan, legs, vectors = self._legs(text, collections, mode, k, filters, keyword_ranking, embedder, fill=False)
        # Convex fusion's fill-in rides on the chunk fetch (one statement, not two): every candidate of both legs is
        # fetched, the keyword leg's chunks the vector leg missed with their similarity (``fill_request``).
        probe = probe_of(plan, legs)
        fill = fill_request(plan, legs, vectors) if wants_fill(self.settings, plan, legs) else None
        fetched: tuple[dict[str, HitChunk], tuple[str | None, bool] | None] | None = None
        if fill is not None:
            every = [cid for cid, _ in legs[Leg.VECTOR]] + [cid for cid, _ in legs[Leg.KEYWORD]]
            fetched = self.store.hit_chunks(every, probe, fill)
            add_similarities(legs, fill, fetched[0])
        elif wants_fill(self.settings, plan, legs):  # collections of several embedders: one statement each
            fill_vector(self.store, plan, legs, vectors)
        fused = self.fuse(plan, legs)
        own = legs.get(Leg.VECTOR, [])[:REFERENCE_RANK]  # the index's own results (fill-ins come after them)
        plan.vector_reference = own[-1][1] if own else None

        reranker = pick_reranker(self.settings, self.reranker_factory, rerank)
        rerank_scores: dict[str, float] = {}
        refs = article_refs(text)  # "Madde 27", "md. 27", "Article 27", "Section 4.2"
        # One statement fetches the hits' chunks with their OCR and file facts, and answers the cross-language
        # probe (``legs`` would ask it in a round trip of its own): both fusions' chunks are fetched, and the
        # probe's answer picks one (docs/performance-search.md, "Per-search overhead").
        vector_only = self.fuse(replace(plan, weights={**plan.weights, Leg.KEYWORD: 0.0}), legs) if probe else []
        # quoted beyond k: a few spare candidates replace hits that collapse as duplicates; grouping by document
        # reads every candidate (at most both legs' depth)
        deep = bool(refs) or group == "document" or syntax.restricts
        top_n = (max(k, self.settings.rerank_top) if reranker is not None else k) + DUPLICATE_SPARE
        wanted = [f.id for f in (fused if deep else fused[:top_n])]
        wanted += [f.id for f in (vector_only if deep else vector_only[:top_n])]
        chunks, probed = fetched if fetched is not None else self.store.hit_chunks(wanted, probe)
        if probed is not None and apply_cross_language(plan, *probed):
            fused = vector_only
        records = {cid: c.record for cid, c in chunks.items()}
        if syntax.restricts:  # only passages with every phrase and none of the excluded words
            fused = admitted(fused, records, syntax, plan)
        if reranker is not None and fused:
            fused, rerank_scores = rerank_head(reranker, self.settings.rerank_top, text, fused, records)
        if refs:  # the chunks of the article the query names come first, in their fused (or reranked) order
            fused = promote_matching(fused, refs, lambda f: records[f.id].section if f.id in records else None)
        grouped: dict[str, int] = {}
        if group == "document":
            fused, grouped = best_per_document(fused, records)
        top = [f for f in fused[: k + DUPLICATE_SPARE] if f.id in records]
        feats: list[dict[str, float]] = []
        ocr, stale = hit_marks([f.id for f in top], chunks)
        analyses = {f.id: chunks[f.id].sentences for f in top}
        hits = build_hits(
            self.store, top, records, plan, rerank_scores, ocr, stale, k=k, features_out=feats, sentences=analyses
        )
        for h in hits:
            if h.chunk_id in grouped:
                h.scores["document_hits"] = grouped[h.chunk_id]
        return SearchResults(hits, plan, feats)

    def legs(
        self,
        query: str,
        collections: str | Sequence[str] | None = None,
        mode: SearchMode | str = SearchMode.AUTO,
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        keyword_ranking: KeywordRanking | str | None = None,
        *,
        embedder: str | None = None,
        cross_language: bool = True,
    ) -> tuple[SearchPlan, Legs]:
        """The plan and each leg's ranked ``(chunk id, score)`` list, ``max(candidates, k)`` deep, before fusion,
        with convex fusion's fill-in and the cross-language rule applied (the fusion tuning harness keeps them to
        try fusions offline; ``search`` folds the fill-in and the rule's probe into its chunk fetch). With
        ``cross_language=False`` the cross-language rule is left to the caller."""
        plan, legs, _ = self._legs(query, collections, mode, k, filters, keyword_ranking, embedder, fill=True)
        if cross_language and plan.mode == SearchMode.HYBRID and legs.get(Leg.KEYWORD) and legs.get(Leg.VECTOR):
            cross_language_rule(self.store, plan, legs[Leg.VECTOR][0][0])
        return plan, legs

    def _legs(
        self,
        query: str,
        collections: str | Sequence[str] | None,
        mode: SearchMode | str,
        k: int,
        filters: SearchFilters | Mapping[str, Any] | None,
        keyword_ranking: KeywordRanking | str | None,
        embedder: str | None,
        fill: bool,
    ) -> tuple[SearchPlan, Legs, dict[str, Any]]:
        """The plan, the legs and the query's vector per embedder; ``fill``: with the fill-in done here."""
        text = rules.check_query(query)
        k = rules.check_k(k)
        ranking = rules.check_ranking(keyword_ranking, self.settings.keyword_ranking)
        flt = _filters(filters)
        s = self.settings
        wanted_mode = check_mode(mode)
        early = None
        if embedder is None:  # the query embedding starts now, beside the plan and the keyword leg
            known = bool(self._has_embeddings)
            early = embed_early(s, self.embedder_factory, self.query_vectors, text, wanted_mode, known)
        try:
            plan = self.plan(text, collections, wanted_mode)
            depth = max(s.candidates, k)
            legs, vectors = run_legs(
                self.store,
                s,
                self.embedder_factory,
                self.query_vectors,
                text,
                plan,
                depth,
                flt,
                ranking,
                embedder,
                early,
            )
        except BaseException:
            if early is not None:
                early.cancel()
            raise
        if fill and wants_fill(s, plan, legs):
            fill_vector(self.store, plan, legs, vectors)
        return plan, legs, vectors

    def fuse(self, plan: SearchPlan, legs: Mapping[str, Sequence[tuple[str, float]]]) -> list[Fused]:
        """The legs merged by the configured fusion (``fusion``: rrf or convex) with the plan's leg weights."""
        return fuse_legs(self.settings, plan, legs)

    def plan(
        self, query: str, collections: str | Sequence[str] | None = None, mode: SearchMode | str = SearchMode.AUTO
    ) -> SearchPlan:
        """Resolve collections and mode for ``query`` without searching (the CLI shows it; search uses it)."""
        text = rules.check_query(query)
        return make_plan(self.store, self.settings, self._has_embeddings, text, collections, check_mode(mode))

    def leg_weights(self, coverage: float) -> dict[str, float]:
        """Each leg's fusion weight for a query's keyword coverage (``plan.leg_weights``)."""
        return leg_weights(self.settings, coverage)

    def resolve_collections(self, collections: str | Sequence[str] | None = None) -> list[Collection]:
        """``None`` → the default collection, ``"*"`` → all, else the named ones (CollectionNotFound lists all)."""
        return plan_facts(self.store, self.settings, self._has_embeddings, collections, None, False)[0]

    def highlights(self, query: str, hits: Sequence[Hit]) -> list[list[tuple[int, int]]]:
        """For each hit, the spans of its quote's words that match the query's terms (offsets into quote.text).
        Hits from ``search`` carry their plan, whose lexemes and collections are used as they are."""
        plan = hits.plan if isinstance(hits, SearchResults) else None
        return self.highlight_texts(query, [(h.collection, h.quote.text) for h in hits], plan)

    def highlight_texts(
        self, query: str, items: Sequence[tuple[str, str]], plan: SearchPlan | None = None
    ) -> list[list[tuple[int, int]]]:
        """For each ``(collection, text)``, the spans of the text's words that match the query's terms, stemmed
        with the collection's language (what ``highlights`` does for quotes; the web page uses it directly).
        With the search's ``plan``, its languages and lexemes are reused (no stemming of the query again)."""
        return highlight_texts(self.store, rules.check_query(query), items, plan)


def _filters(filters: SearchFilters | Mapping[str, Any] | None) -> SearchFilters | None:
    if filters is None or isinstance(filters, SearchFilters):
        return filters
    return SearchFilters(*rules.check_filters(filters))
