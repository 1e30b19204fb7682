"""SearchService: the read side of kaynak — hybrid search, and browsing collections, documents and chunks.

Every face (CLI, REST, MCP) reads through this class; it never writes, which is what makes the MCP server
read-only by construction.

The query pipeline (docs/adr/0005-keyword-ranking-and-fusion.md, docs/adr/0017-fusion-by-measurement.md):

1. Resolve collections: ``None`` → the configured default, a name or a list of names, ``"*"`` → all.
2. Vector leg: the query embedded with each collection's own embedder (``collection.embedder``), HNSW top
   ``candidates`` with ``ef_search`` raised and ``iterative_scan = relaxed_order`` (in ``Store.vector_search``).
3. Keyword leg: one ranking per language (each collection's text search configuration): BM25 over the postings
   table by default (each chunk's postings also carry its document title's terms), or the specification's OR
   tsquery with ``ts_rank_cd(…, 1)``.
4. Fusion (``fusion``): by default a convex combination of per-query normalised scores, keyword share
   ``fusion_alpha`` (theoretical-min-max normalisation), after the keyword leg's chunks that the vector leg did not
   return got their exact similarity (``fusion_fill``, docs/adr/0021-fusion-fill-in.md); or Reciprocal Rank Fusion
   (k = ``rrf_k``). Per-leg ranks and scores land in ``hit.scores``.
5. Optional rerank of the top ``rerank_top`` with the configured cross-encoder.
6. A query naming an article or section ("Madde 27", "md. 27", "Article 27", "Section 4.2"; ``kaynak.structure``)
   gets the chunks whose section names it first.
7. Quotes: the best sentence window of each chunk (``kaynak.quotes``), verbatim, with page offsets; hits whose
   quotes overlap in one document collapse; each hit gets its match strength (``kaynak.match``).

Query syntax (``kaynak.syntax``): ``"exact phrase"`` keeps only the candidates holding the phrase, ``-word`` drops
those with the word (the excluded words are left out of the text the legs search); both filter the fused
candidates, so at most both legs' depth of candidates is looked at.

``mode="auto"`` decides per query:

* no searched collection has embeddings → ``keyword``;
* the query has no keyword terms (only stop words or punctuation) → ``vector``;
* an identifier-like query (one token with a digit, ``_``, ``.``, ``:``, ``/`` or ``#``, such as ``E11000``,
  ``hnsw.ef_search``, ``RFC-9457``) or a query wholly in double quotes → ``hybrid`` with keyword precedence: the
  vector leg's weight drops to 1/100 of the keyword leg's, so every chunk that contains the terms ranks first
  and the vector leg only fills the remaining places;
* otherwise → ``hybrid``.

Keyword coverage (every hybrid search): the keyword leg's weight is ``keyword_weight`` times the share of the
query's terms that occur anywhere in the searched collections. A Turkish question against an English collection
shares only names and numbers with it (coverage 0.15 on XQuAD), so the vector leg, which carries cross-lingual
search, is not dragged down; a same-language query has coverage near 1 (0.91–0.95). Measured in
docs/adr/0005-keyword-ranking-and-fusion.md.

Cross-language rule (collections mixing languages): when the query's language is known, the collections hold
documents in it, and yet the vector leg's best chunk lies in a document of another language, hybrid fuses the
vector leg only — the keyword leg can only match the query's own language there (docs/adr/0017).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kaynak.config import Settings
from kaynak.errors import CollectionMismatch, CollectionNotFound, ConfigError, InvalidQuery
from kaynak.fusion import Fused, fuse
from kaynak.langdetect import detect_language
from kaynak.match import REFERENCE_RANK, features, idf, match_of, model_name, no_good_match, weighted_coverage
from kaynak.quotes import MAX_QUOTE_CHARS, highlight_spans, quotes_and_matches, word_spans
from kaynak.rules import check_filter_value, check_query_length
from kaynak.staleness import stale_chunks, stale_files
from kaynak.store import SearchFilters, Store
from kaynak.store.catalogue import HitChunk
from kaynak.structure import article_refs, promote_matching
from kaynak.syntax import ParsedQuery, parse_query
from kaynak.types import ChunkRecord, Collection, DocumentInfo, Hit, Quote
from kaynak.vocabulary import KEYWORD_RANKINGS, MAX_K, SEARCH_MODES

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder
    from kaynak.embeddings.rerank import Reranker

log = logging.getLogger(__name__)

MODES = SEARCH_MODES
RANKINGS = KEYWORD_RANKINGS
# Runs the keyword leg beside the vector leg (threads: both legs wait on PostgreSQL or a C embedder).
_LEGS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kaynak-leg")
FILTER_KEYS = ("source_prefix", "source_glob", "metadata")
KEYWORD_PRECEDENCE = 0.01  # vector weight relative to keyword for identifier-like and quoted queries
QUERY_VECTOR_CACHE = 1024  # query vectors kept per service (LRU keyed by embedder name and query text)
DUPLICATE_SPARE = 5  # candidates quoted beyond k, so that hits whose quotes overlap can collapse and k remain
GROUP_BY = ("chunk", "document")
SIMPLE_HIGHLIGHT = ("english", "turkish")  # how words in `simple` collections are matched for highlighting
LANGUAGE_NAMES = ("turkish", "english")  # collection languages a query's language can differ from ("simple": any)

_IDENTIFIER = re.compile(r"^(?=\S*[\d_.:/#])[\w.:/#\-]+$", re.UNICODE)
_QUOTED = re.compile(r'^\s*["“”„«](.+)["“”„»]\s*$', re.DOTALL)


@dataclass
class SearchPlan:
    """What a search will do: the collections, the resolved mode, the leg weights, and why."""

    collections: list[Collection]
    mode: str  # hybrid | vector | keyword
    weights: dict[str, float]
    reason: str
    query_lexemes: dict[str, list[str]] = field(default_factory=dict)  # language → lexemes
    embedded: set[int] = field(default_factory=set)  # collection ids that have embeddings
    keyword_coverage: float = 0.0  # share of the query's terms that occur in the collections
    query_language: str | None = None  # turkish | english | None (kaynak.langdetect; documents.language likewise)
    cross_language: bool = False  # the answer looks to be in another language: keyword leg not fused
    term_weights: dict[str, dict[str, float]] = field(default_factory=dict)  # language → lexeme → IDF
    vector_reference: float | None = None  # the vector leg's similarity at match.REFERENCE_RANK (match strength)
    text: str = ""  # the query as searched (quotes look at its question words)
    phrase_missing: bool = False  # no candidate holds the query's quoted phrase: the hits are shown without it


class SearchResults(list[Hit]):
    """The hits of one search (a list, best first) with the plan that produced them (``.plan``): faces show the
    mode and collections and highlight with the plan's lexemes instead of planning or stemming again.
    ``no_good_match``: no hit is likely to answer (every hit's match is ``weak``, or there are none)."""

    def __init__(
        self, hits: Sequence[Hit] = (), plan: SearchPlan | None = None, features: Sequence[dict[str, float]] = ()
    ) -> None:
        super().__init__(hits)
        self.plan = plan
        self.features = list(features)  # each hit's match-strength features (benchmarks/match_calibration.py)

    @property
    def no_good_match(self) -> bool:
        return no_good_match([h.match or {} for h in self])


class QueryVectorCache:
    """A thread-safe LRU of query vectors keyed by (embedder name, query text)."""

    def __init__(self, size: int = QUERY_VECTOR_CACHE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

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


def parse_metadata_pairs(pairs: Sequence[str] | None, field: str = "meta") -> dict[str, Any]:
    """``["lang=tr", "year=2024"]`` → ``{"lang": "tr", "year": "2024"}``: the metadata filter as faces receive it."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidQuery(f"metadata filter {pair!r} is not KEY=VALUE", field)
        out[key.strip()] = value
    return out


def is_identifier_like(query: str) -> bool:
    """One token containing a digit or one of ``_ . : / #`` (an error code, a setting, a version, a path)."""
    q = query.strip().rstrip("?.!,;")
    return bool(q) and bool(_IDENTIFIER.match(q)) and any(ch.isalnum() for ch in q)


def is_quoted(query: str) -> bool:
    return bool(_QUOTED.match(query))


def query_language(query: str) -> str | None:
    """The query's language (``turkish``, ``english``) from its words, or None when they do not tell (names,
    numbers, identifiers). The same detector as documents.language, asking for less evidence: queries are short."""
    return detect_language(query, min_evidence=1, min_share=0.6)


class SearchService:
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

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        collections: str | Sequence[str] | None = None,
        mode: str = "auto",
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        rerank: bool | None = None,
        keyword_ranking: str | None = None,
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
        text = self.check_query(query)
        k = self._check_k(k)
        group = self._check_group_by(group_by)
        syntax = parse_query(text)  # "exact phrase" and -word (kaynak.syntax)
        if syntax.excluded:
            if not syntax.text:
                raise InvalidQuery("the query only excludes words (-word); add the words to search for", "query")
            text = syntax.text
        plan, legs = self.legs(
            text, collections, mode, k, filters, keyword_ranking, embedder=embedder, cross_language=False
        )
        fused = self.fuse(plan, legs)
        own = legs.get("vector", [])[:REFERENCE_RANK]  # the index's own results (fill-ins come after them)
        plan.vector_reference = own[-1][1] if own else None

        reranker = self._reranker(rerank)
        rerank_scores: dict[str, float] = {}
        top_n = max(k, self.settings.rerank_top) if reranker is not None else k
        refs = article_refs(text)  # "Madde 27", "md. 27", "Article 27", "Section 4.2"
        # One statement fetches the hits' chunks with their OCR and file facts, and answers the cross-language
        # probe (``legs`` would ask it in a round trip of its own): both fusions' chunks are fetched, and the
        # probe's answer picks one (docs/performance-search.md, "Per-search overhead").
        probe = self._probe_of(plan, legs)
        vector_only = self.fuse(replace(plan, weights={**plan.weights, "keyword": 0.0}), legs) if probe else []
        # quoted beyond k: a few spare candidates replace hits that collapse as duplicates; grouping by document
        # reads every candidate (at most both legs' depth)
        deep = refs or group == "document" or syntax.restricts
        top_n += DUPLICATE_SPARE
        wanted = [f.id for f in (fused if deep else fused[:top_n])]
        wanted += [f.id for f in (vector_only if deep else vector_only[:top_n])]
        chunks, probed = self.store.hit_chunks(wanted, probe)
        if probed is not None and self._apply_cross_language(plan, *probed):
            fused = vector_only
        records = {cid: c.record for cid, c in chunks.items()}
        if syntax.restricts:  # only passages with every phrase and none of the excluded words
            kept = [f for f in fused if f.id in records and syntax.admits(records[f.id].text)]
            if not kept and syntax.phrases:  # as web search engines do: say so, and show the hits without it
                loose = ParsedQuery(syntax.text, [], syntax.excluded)
                kept = [f for f in fused if f.id in records and loose.admits(records[f.id].text)]
                plan.phrase_missing = True
                plan.reason += "; no passage holds the quoted phrase: hits without it"
            fused = kept
        if reranker is not None and fused:
            fused, rerank_scores = self._rerank(reranker, text, fused, records)
        if refs:  # the chunks of the article the query names come first, in their fused (or reranked) order
            fused = promote_matching(fused, refs, lambda f: records[f.id].section if f.id in records else None)
        grouped: dict[str, int] = {}
        if group == "document":
            fused, grouped = self._best_per_document(fused, records)
        top = [f for f in fused[: k + DUPLICATE_SPARE] if f.id in records]
        feats: list[dict[str, float]] = []
        hits = self._hits(top, records, plan, rerank_scores, chunks, k=k, features_out=feats)
        for h in hits:
            if h.chunk_id in grouped:
                h.scores["document_hits"] = grouped[h.chunk_id]
        return SearchResults(hits, plan, feats)

    @staticmethod
    def _best_per_document(
        fused: list[Fused], records: Mapping[str, ChunkRecord]
    ) -> tuple[list[Fused], dict[str, int]]:
        """Each document's best candidate, in order, and how many candidates each document had."""
        best: dict[int, Fused] = {}
        counts: dict[int, int] = {}
        for f in fused:
            if f.id not in records:
                continue
            doc = records[f.id].document_id
            best.setdefault(doc, f)
            counts[doc] = counts.get(doc, 0) + 1
        return list(best.values()), {f.id: counts[doc] for doc, f in best.items()}

    @staticmethod
    def _probe_of(
        plan: SearchPlan, legs: Mapping[str, Sequence[tuple[str, float]]]
    ) -> tuple[str, list[int], str] | None:
        """The cross-language probe a search needs (``_cross_language``'s condition), as ``hit_chunks`` takes it:
        (the vector leg's best chunk, the collections' ids, the query's language); None when none is needed."""
        if plan.mode != "hybrid" or not legs.get("keyword") or not legs.get("vector") or plan.query_language is None:
            return None
        return legs["vector"][0][0], [c.id for c in plan.collections], plan.query_language

    def legs(
        self,
        query: str,
        collections: str | Sequence[str] | None = None,
        mode: str = "auto",
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        keyword_ranking: str | None = None,
        *,
        embedder: str | None = None,
        cross_language: bool = True,
    ) -> tuple[SearchPlan, dict[str, list[tuple[str, float]]]]:
        """The plan and each leg's ranked ``(chunk id, score)`` list, ``max(candidates, k)`` deep, before fusion
        (``search`` fuses them; the fusion tuning harness keeps them to try fusions offline). With
        ``cross_language=False`` the cross-language rule is left to the caller (``search`` folds its probe into
        the chunk fetch)."""
        text = self.check_query(query)
        k = self._check_k(k)
        ranking = self._check_ranking(keyword_ranking)
        flt = self._filters(filters)
        plan = self.plan(text, collections, mode)
        depth = max(self.settings.candidates, k)

        legs: dict[str, list[tuple[str, float]]] = {}
        keyword: Future[list[tuple[str, float]]] | None = None
        if plan.mode in ("hybrid", "keyword") and plan.keyword_coverage > 0:
            # the keyword leg runs on its own connection while this thread embeds the query and scans HNSW
            keyword = _LEGS.submit(self._keyword_leg, plan, depth, flt, ranking)
        vectors: dict[str, Any] = {}  # the query's vector per embedder (the vector leg fills it)
        if plan.mode in ("hybrid", "vector"):
            try:
                legs["vector"] = self._vector_leg(text, plan, depth, flt, embedder, vectors)
            except BaseException:
                if keyword is not None:
                    keyword.cancel()
                raise
        if keyword is not None:
            legs["keyword"] = keyword.result()
        both = plan.mode == "hybrid" and bool(legs.get("keyword")) and bool(legs.get("vector"))
        if both and self.settings.fusion == "convex" and self.settings.fusion_fill:
            self._fill_vector(plan, legs, vectors)
        if cross_language and plan.mode == "hybrid" and legs.get("keyword") and legs.get("vector"):
            self._cross_language(plan, legs["vector"][0][0])
        return plan, legs

    def _fill_vector(
        self, plan: SearchPlan, legs: dict[str, list[tuple[str, float]]], vectors: Mapping[str, Any]
    ) -> None:
        """Convex fusion's fill-in (ADR 0021): the keyword leg's chunks that the vector leg did not return get their
        exact cosine similarity, appended after the vector leg's own results (best first among themselves), so the
        leg's own ranks and best chunk stay the index's. Without it such a chunk counts as the least similar chunk
        of the collection, and one the keyword leg ranks first can never beat a weak vector match."""
        seen = {cid for cid, _ in legs["vector"]}
        missing = [cid for cid, _ in legs["keyword"] if cid not in seen]
        found: dict[str, float] = {}
        for col in plan.collections:
            if missing and col.id in plan.embedded and col.embedder in vectors:
                found.update(self.store.vector_similarities(col, vectors[col.embedder], missing))
                missing = [cid for cid in missing if cid not in found]
        legs["vector"] = legs["vector"] + sorted(found.items(), key=lambda r: (-r[1], r[0]))

    def _cross_language(self, plan: SearchPlan, best_vector_chunk: str) -> None:
        """Vector only when the answer is in another language: the query's language is known, the collections
        hold documents in it, and yet the vector leg's best chunk lies in a document of another language. The
        keyword leg can only match the query's own language there and would pull same-language documents over
        the answer (ADR 0017: doc-QA English questions about a Turkish law, hit@1 0 → 1)."""
        if plan.query_language is None:
            return
        ids = [c.id for c in plan.collections]
        found, has_query_language = self.store.language_probe(best_vector_chunk, ids, plan.query_language)
        self._apply_cross_language(plan, found, has_query_language)

    @staticmethod
    def _apply_cross_language(plan: SearchPlan, found: str | None, has_query_language: bool) -> bool:
        """The cross-language rule given the probe's answer (the language of the best vector chunk's document,
        whether the collections hold documents in the query's language): True when it applied to ``plan``."""
        if found is not None and found != plan.query_language and has_query_language:
            plan.weights = {**plan.weights, "keyword": 0.0}
            plan.cross_language = True
            plan.reason += f"; the best vector match is in {found}, the query in {plan.query_language}: vector only"
            return True
        return False

    def fuse(self, plan: SearchPlan, legs: Mapping[str, Sequence[tuple[str, float]]]) -> list[Fused]:
        """The legs merged by the configured fusion (``fusion``: rrf or convex) with the plan's leg weights."""
        s = self.settings
        return fuse(legs, s.fusion, weights=plan.weights, k=s.rrf_k, normalization=s.fusion_normalization)

    def plan(self, query: str, collections: str | Sequence[str] | None = None, mode: str = "auto") -> SearchPlan:
        """Resolve collections and mode for ``query`` without searching (the CLI shows it; search uses it)."""
        text = self.check_query(query)
        if mode not in MODES:
            raise InvalidQuery(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}", "mode")
        # collections, the query's terms per language and the embedded collections: one statement
        cols, found, embedded = self._plan_facts(collections, text, mode in ("auto", "hybrid", "vector"))
        terms = {lang: found.get(lang, []) for lang in sorted({c.language for c in cols})}
        qlex = {lang: [lx for lx, _ in t] for lang, t in terms.items()}
        n_terms = sum(len(t) for t in terms.values())
        coverage = sum(df > 0 for t in terms.values() for _, df in t) / n_terms if n_terms else 0.0
        chunks = {lang: sum(c.chunk_count for c in cols if c.language == lang) for lang in terms}
        idfs = {lang: {lx: idf(df, chunks[lang]) for lx, df in t} for lang, t in terms.items()}
        kw = self.settings.keyword_weight
        weights = self.leg_weights(coverage)

        def plan(mode: str, reason: str, weights: dict[str, float] = weights) -> SearchPlan:
            return SearchPlan(
                cols,
                mode,
                weights,
                reason,
                qlex,
                embedded,
                coverage,
                query_language(text),
                term_weights=idfs,
                text=text,
            )

        if mode != "auto":
            return plan(mode, f"mode {mode} requested")
        if not embedded:
            return plan("keyword", "no embeddings in the collections")
        if not n_terms:
            return plan("vector", "the query has no keyword terms")
        if is_identifier_like(text) or is_quoted(text):
            base = kw or 1.0
            why = "quoted phrase" if is_quoted(text) else "identifier-like query"
            return plan(
                "hybrid",
                f"{why}: keyword matches first",
                {"vector": base * KEYWORD_PRECEDENCE, "keyword": base},
            )
        return plan("hybrid", "embeddings and keyword terms present")

    def leg_weights(self, coverage: float) -> dict[str, float]:
        """Each leg's fusion weight: ``vector_weight`` and ``keyword_weight`` × the query's keyword coverage, and
        for convex fusion also × the legs' shares (``1 − fusion_alpha`` and ``fusion_alpha``)."""
        s = self.settings
        vector, keyword = s.vector_weight, s.keyword_weight * coverage
        if s.fusion == "convex":
            vector, keyword = vector * (1.0 - s.fusion_alpha), keyword * s.fusion_alpha
        return {"vector": vector, "keyword": keyword}

    def resolve_collections(self, collections: str | Sequence[str] | None = None) -> list[Collection]:
        """``None`` → the default collection, ``"*"`` → all, else the named ones (CollectionNotFound lists all)."""
        return self._plan_facts(collections, None, False)[0]

    def _plan_facts(
        self, collections: str | Sequence[str] | None, text: str | None, check_embedded: bool, retry: bool = True
    ) -> tuple[list[Collection], dict[str, list[tuple[str, int]]], set[int]]:
        """``resolve_collections``, with ``text``'s terms per language (``Store.query_terms``) and, with
        ``check_embedded``, the ids of the collections that have embeddings — one statement (``Store.plan_facts``).
        A positive embeddings answer is remembered: it rarely changes back, and a collection emptied later only
        makes its vector leg return nothing. Errors as before: a missing name (in order) → CollectionNotFound
        listing all; a name that is not text → InvalidQuery."""
        bad: int | None = None
        if collections is None or (not isinstance(collections, str) and len(collections) == 0):
            names: list[str] | None = [self.settings.collection]
        else:
            given = [collections] if isinstance(collections, str) else list(collections)
            if "*" in given:
                names = None
            else:
                bad = next((i for i, n in enumerate(given) if not isinstance(n, str)), None)
                names = list(dict.fromkeys(given[:bad]))
        if names == [] and bad is not None:
            raise InvalidQuery(f"collection names must be strings, not {given[bad]!r}", "collections")
        known = sorted(self._has_embeddings.copy())  # a copy: other requests may add to it meanwhile
        cols, terms, embedded = self.store.plan_facts(names, text, known, check_embedded)
        self._has_embeddings.update(embedded)
        if names is None:
            if not cols:
                raise CollectionNotFound("there are no collections yet; ingest documents to create one")
            return cols, terms, embedded
        by_name = {c.name: c for c in cols}
        for name in names:
            if name not in by_name:
                self.store.get_collection(name)  # CollectionNotFound with the names that exist
                if retry:  # created meanwhile
                    return self._plan_facts(collections, text, check_embedded, retry=False)
        if bad is not None:
            raise InvalidQuery(f"collection names must be strings, not {given[bad]!r}", "collections")
        return [by_name[n] for n in names if n in by_name], terms, embedded

    # ------------------------------------------------------------------ checks
    @staticmethod
    def check_query(query: Any) -> str:
        if not isinstance(query, str):
            raise InvalidQuery(f"the query must be text, not {type(query).__name__}", "query")
        text = query.replace("\x00", " ")
        if not text.strip():
            raise InvalidQuery("the query is empty; type the words or question to search for", "query")
        return check_query_length(text.strip())

    @staticmethod
    def _check_group_by(group_by: Any) -> str:
        if group_by is None:
            return "chunk"
        if group_by not in GROUP_BY:
            raise InvalidQuery(f"unknown grouping {group_by!r}; choose one of {', '.join(GROUP_BY)}", "group_by")
        return str(group_by)

    @staticmethod
    def _check_k(k: Any) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InvalidQuery(f"k must be a whole number from 1 to {MAX_K}, not {k!r}", "k")
        return k

    def _check_ranking(self, ranking: str | None) -> str:
        ranking = ranking or self.settings.keyword_ranking
        if ranking not in RANKINGS:
            raise InvalidQuery(
                f"unknown keyword ranking {ranking!r}; choose one of {', '.join(RANKINGS)}", "keyword_ranking"
            )
        return ranking

    @staticmethod
    def _filters(filters: SearchFilters | Mapping[str, Any] | None) -> SearchFilters | None:
        if filters is None or isinstance(filters, SearchFilters):
            return filters
        if not isinstance(filters, Mapping):
            raise InvalidQuery("filters must be an object with source_prefix, source_glob or metadata", "filters")
        unknown = sorted(set(filters) - set(FILTER_KEYS))
        if unknown:
            raise InvalidQuery(
                f"unknown filter {', '.join(map(repr, unknown))}; use {', '.join(FILTER_KEYS)}", "filters"
            )
        for key in ("source_prefix", "source_glob"):
            if filters.get(key) is not None and not isinstance(filters[key], str):
                raise InvalidQuery(f"filter {key} must be text", "filters")
        metadata = filters.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise InvalidQuery("filter metadata must be an object of field: value pairs", "filters")
        check_filter_value(metadata)
        return SearchFilters(filters.get("source_prefix"), filters.get("source_glob"), dict(metadata))

    # ------------------------------------------------------------------ legs
    def _vector_leg(
        self,
        text: str,
        plan: SearchPlan,
        depth: int,
        flt: SearchFilters | None,
        forced: str | None,
        vectors: dict[str, Any] | None = None,
    ) -> list[tuple[str, float]]:
        """HNSW top ``depth`` over the plan's embedded collections as ``(chunk id, cosine similarity)``, best
        first; ``vectors`` (embedder name → the query's vector) is filled for the caller."""
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
                emb = self.embedder_factory(col.embedder)
                if emb.dim != col.dim:
                    raise CollectionMismatch(
                        f"collection {col.name!r} holds {col.dim}-dimensional vectors from {col.embedder!r}, but "
                        f"embedder {emb.name!r} gives {emb.dim}; re-ingest the collection"
                    )
                vec = self.query_vectors.get(emb.name, text)
                if vec is None:
                    vec = emb.embed_queries([text])[0]
                    self.query_vectors.put(emb.name, text, vec)
                vectors[col.embedder] = vec
            hits = self.store.vector_search(col, vectors[col.embedder], depth, flt, self.settings.ef_search)
            results.extend((cid, 1.0 - dist) for cid, dist in hits)
        results.sort(key=lambda r: (-r[1], r[0]))
        return results[:depth]

    def _keyword_leg(
        self, plan: SearchPlan, depth: int, flt: SearchFilters | None, ranking: str
    ) -> list[tuple[str, float]]:
        results: list[tuple[str, float]] = []
        for language, lexemes in plan.query_lexemes.items():
            if not lexemes:
                continue
            group = [c for c in plan.collections if c.language == language]
            results.extend(
                self.store.keyword_search(
                    group,
                    None,
                    depth,
                    ranking,
                    flt,
                    k1=self.settings.bm25_k1,
                    b=self.settings.bm25_b,
                    lexemes=lexemes,
                    pruned=self.settings.bm25_pruning,
                    per_collection=True,
                )
            )
        if len(plan.query_lexemes) > 1:
            results.sort(key=lambda r: (-r[1], r[0]))
        return results[:depth]

    # ------------------------------------------------------------------ rerank
    def _reranker(self, rerank: bool | None) -> Reranker | None:
        if rerank is False or self.reranker_factory is None:
            if rerank:
                raise ConfigError("reranking was asked for, but no reranker is available in this context")
            return None
        if rerank is None and not self.settings.reranker:
            return None
        reranker = self.reranker_factory(None)
        if reranker is None and rerank:
            raise ConfigError("reranking was asked for, but no reranker is configured; set KAYNAK_RERANKER")
        return reranker

    def _rerank(
        self, reranker: Reranker, text: str, fused: list[Fused], records: Mapping[str, ChunkRecord]
    ) -> tuple[list[Fused], dict[str, float]]:
        head = [f for f in fused[: self.settings.rerank_top] if f.id in records]
        passages = [
            (f"{records[f.id].section}\n{records[f.id].text}" if records[f.id].section else records[f.id].text)
            for f in head
        ]
        scores = [float(s) for s in reranker.score(text, passages)]
        by_id = {f.id: s for f, s in zip(head, scores, strict=True)}
        order = sorted(head, key=lambda f: -by_id[f.id])
        head_ids = set(by_id)
        return order + [f for f in fused if f.id not in head_ids], by_id

    # ------------------------------------------------------------------ hits and quotes
    def _lexemes_of(self, language: str) -> Callable[[list[str]], list[set[str]]]:
        return lambda texts: self.store.lexemes_of(language, texts)

    def _hits(
        self,
        top: list[Fused],
        records: Mapping[str, ChunkRecord],
        plan: SearchPlan,
        rerank_scores: Mapping[str, float],
        facts: Mapping[str, HitChunk] | None = None,
        k: int | None = None,
        features_out: list[dict[str, float]] | None = None,
    ) -> list[Hit]:
        """The hits of the candidates ``top`` (best first): quotes, match strength, OCR and stale marks; hits whose
        quotes overlap in one document collapse into the better one; at most ``k`` (default: all)."""
        language_of = {c.name: c.language for c in plan.collections}
        embedder_of = {c.name: c.embedder for c in plan.collections}
        quotes: dict[str, tuple[int, int]] = {}
        matched: dict[str, set[str]] = {}
        for language in sorted(set(language_of.values())):
            ids = [f.id for f in top if language_of.get(records[f.id].collection) == language]
            if not ids:
                continue
            spans, found = quotes_and_matches(
                [records[i].text for i in ids],
                set(plan.query_lexemes.get(language, [])),
                self._lexemes_of(language),
                MAX_QUOTE_CHARS,
                plan.term_weights.get(language),
                plan.text,
            )
            quotes.update(zip(ids, spans, strict=True))
            matched.update(zip(ids, found, strict=True))
        ids = [f.id for f in top]
        if facts is None:
            ocr = self.store.ocr_confidences(ids)  # pages read by OCR (kaynak.loaders.ocr)
            stale = stale_chunks(self.store, ids)  # files changed on disk since (kaynak.staleness)
        else:  # fetched with the chunks (Store.hit_chunks)
            ocr = {i: c for i in ids if i in facts and (c := facts[i].ocr) is not None}
            stale = stale_files({i: facts[i].file for i in ids if i in facts})
        hits: list[Hit] = []
        for rank, f in enumerate(top, start=1):
            rec = records[f.id]
            s, e = quotes.get(f.id, (0, min(len(rec.text), MAX_QUOTE_CHARS)))
            first = next((h for h in hits if _overlaps(h, rec, s, e)), None)
            if first is not None:  # the same passage as a better hit: remember where it ranked
                first.scores.setdefault("merged_rank", rank)
                continue
            if k is not None and len(hits) >= k:
                continue
            scores: dict[str, float | int | None] = {
                "vector": f.scores.get("vector"),
                "vector_rank": f.ranks.get("vector"),
                "keyword": f.scores.get("keyword"),
                "keyword_rank": f.ranks.get("keyword"),
                "fused": f.score,
                "rrf": f.score,  # the fused score under its first name (faces read it), whatever the fusion
                "rerank": rerank_scores.get(f.id),
            }
            language = language_of.get(rec.collection, "")
            coverage = weighted_coverage(matched.get(f.id, set()), plan.term_weights.get(language, {}))
            scores["coverage"] = round(coverage, 4)  # the IDF-weighted share of the query's terms in the chunk
            cross = plan.query_language is not None and language in LANGUAGE_NAMES and language != plan.query_language
            feats = features(scores, coverage, plan.keyword_coverage, plan.vector_reference, cross)
            has_vector = plan.mode != "keyword" and scores["vector"] is not None
            match = match_of(feats, model_name(embedder_of.get(rec.collection), has_vector))
            if features_out is not None:
                features_out.append(feats)
            hits.append(
                Hit(
                    chunk_id=rec.id,
                    collection=rec.collection,
                    source=rec.source,
                    title=rec.title,
                    page=rec.page,
                    section=rec.section,
                    char_start=rec.char_start,
                    char_end=rec.char_end,
                    score=rerank_scores.get(f.id, f.score) if rerank_scores else f.score,
                    scores=scores,
                    quote=Quote(rec.text[s:e], rec.char_start + s, rec.char_start + e),
                    text=rec.text,
                    document_id=rec.document_id,
                    ocr={"confidence": ocr[rec.id]} if rec.id in ocr else None,
                    stale=rec.id in stale,
                    match=match,
                )
            )
        return hits

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
        text = self.check_query(query)
        out: list[list[tuple[int, int]]] = [[] for _ in items]
        languages: dict[str, str] = {c.name: c.language for c in plan.collections} if plan else {}
        for collection, _ in items:
            if collection not in languages:
                languages[collection] = self.store.get_collection(collection).language
        for language in sorted(set(languages.values())):
            idx = [i for i, (collection, _) in enumerate(items) if languages[collection] == language]
            if not idx:
                continue
            if language == "simple":  # no stemming, no stop words: match as English and as Turkish words do
                texts = [items[i][1] for i in idx]
                words = [t[a:b] for t in texts for a, b in word_spans(t)]
                question = plan.text if plan else text
                qwords = [question[a:b] for a, b in word_spans(question)]
                lex = [_content(x) for x in self.store.lexemes_in(SIMPLE_HIGHLIGHT, [*qwords, *words])]
                qlex = set().union(*lex[: len(qwords)]) if qwords else set()

                def of_words(_words: list[str], lex: list[set[str]] = lex[len(qwords) :]) -> list[set[str]]:
                    return lex

                spans = highlight_spans(texts, qlex, of_words)
            else:
                if plan is not None and language in plan.query_lexemes:
                    qlex = set(plan.query_lexemes[language])
                else:
                    qlex = set(self.store.query_lexemes(language, text))
                spans = highlight_spans([items[i][1] for i in idx], qlex, self._lexemes_of(language))
            for i, sp in zip(idx, spans, strict=True):
                out[i] = sp
        return out

    # ------------------------------------------------------------------ browsing
    def list_collections(self) -> list[Collection]:
        return self.store.list_collections()

    def get_collection(self, name: str) -> Collection:
        return self.store.get_collection(name)

    def document_languages(self, names: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Collection name → the languages its documents are written in (detected at ingest), e.g. ``["english",
        "turkish"]`` for a collection holding both, whatever its text search configuration."""
        return self.store.document_languages(names)

    def list_documents(
        self, collection: str, prefix: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentInfo]:
        return self.store.list_documents(self.store.get_collection(collection), prefix, limit, offset)

    def get_document(self, collection: str, source: str) -> DocumentInfo:
        return self.store.get_document(self.store.get_collection(collection), source)

    def chunk_context(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]:
        """The chunk and its neighbours in the same document, in order."""
        return self.store.chunk_with_neighbours(chunk_id, max(0, before), max(0, after))

    def page_text(self, collection: str, source: str, page: int) -> str:
        return self.store.get_page(self.store.get_collection(collection), source, page)

    def document_origin(self, document_id: int) -> tuple[DocumentInfo, str | None]:
        """A document by id, with the path of the file it was ingested from (None if unknown; the web page)."""
        return self.store.document_origin(document_id)


def _overlaps(hit: Hit, rec: ChunkRecord, start: int, end: int) -> bool:
    """Whether the quote ``rec.text[start:end]`` overlaps ``hit``'s quote on the same page of the same document."""
    if hit.document_id != rec.document_id or hit.page != rec.page or hit.collection != rec.collection:
        return False
    a, b = rec.char_start + start, rec.char_start + end
    return a < hit.quote.char_end and hit.quote.char_start < b


def _content(tags: set[str]) -> set[str]:
    """A word's ``language:lexeme`` tags (``Store.lexemes_in``), or none when it is a stop word in any of the
    languages (it has no lexeme there)."""
    return tags if {t.split(":", 1)[0] for t in tags} >= set(SIMPLE_HIGHLIGHT) else set()
