"""Plan a search: resolve the collections, stem the query's terms, pick the mode and weigh the legs.

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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kaynak.config import Settings
from kaynak.errors import CollectionNotFound, InvalidQuery
from kaynak.langdetect import detect_language
from kaynak.match import idf
from kaynak.store import Store
from kaynak.types import Collection
from kaynak.vocabulary import SEARCH_MODES, Leg, SearchMode

KEYWORD_PRECEDENCE = 0.01  # vector weight relative to keyword for identifier-like and quoted queries

_IDENTIFIER = re.compile(r"^(?=\S*[\d_.:/#])[\w.:/#\-]+$", re.UNICODE)
_QUOTED = re.compile(r'^\s*["“”„«](.+)["“”„»]\s*$', re.DOTALL)


@dataclass
class SearchPlan:
    """What a search will do: the collections, the resolved mode, the leg weights, and why."""

    collections: list[Collection]
    mode: SearchMode  # hybrid | vector | keyword (never auto: the plan resolves it)
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


def check_mode(mode: SearchMode | str) -> SearchMode:
    if mode not in SEARCH_MODES:
        raise InvalidQuery(f"unknown mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}", "mode")
    return SearchMode(mode)


def leg_weights(settings: Settings, coverage: float) -> dict[str, float]:
    """Each leg's fusion weight: ``vector_weight`` and ``keyword_weight`` × the query's keyword coverage, and
    for convex fusion also × the legs' shares (``1 − fusion_alpha`` and ``fusion_alpha``)."""
    s = settings
    vector, keyword = s.vector_weight, s.keyword_weight * coverage
    if s.fusion == "convex":
        vector, keyword = vector * (1.0 - s.fusion_alpha), keyword * s.fusion_alpha
    return {Leg.VECTOR: vector, Leg.KEYWORD: keyword}


def make_plan(
    store: Store,
    settings: Settings,
    has_embeddings: set[int],
    text: str,
    collections: str | Sequence[str] | None,
    mode: SearchMode,
) -> SearchPlan:
    """The plan for the checked query ``text``: one statement for the collections, the query's terms per language
    and the embedded collections (``plan_facts``), then the mode (``auto`` resolved) and the legs' weights."""
    check_embedded = mode in (SearchMode.AUTO, SearchMode.HYBRID, SearchMode.VECTOR)
    cols, found, embedded = plan_facts(store, settings, has_embeddings, collections, text, check_embedded)
    terms = {lang: found.get(lang, []) for lang in sorted({c.language for c in cols})}
    qlex = {lang: [lx for lx, _ in t] for lang, t in terms.items()}
    n_terms = sum(len(t) for t in terms.values())
    coverage = sum(df > 0 for t in terms.values() for _, df in t) / n_terms if n_terms else 0.0
    chunks = {lang: sum(c.chunk_count for c in cols if c.language == lang) for lang in terms}
    idfs = {lang: {lx: idf(df, chunks[lang]) for lx, df in t} for lang, t in terms.items()}
    kw = settings.keyword_weight
    weights = leg_weights(settings, coverage)

    def plan(mode: SearchMode, reason: str, weights: dict[str, float] = weights) -> SearchPlan:
        language = query_language(text)
        return SearchPlan(cols, mode, weights, reason, qlex, embedded, coverage, language, term_weights=idfs, text=text)

    if mode != SearchMode.AUTO:
        return plan(mode, f"mode {mode} requested")
    if not embedded:
        return plan(SearchMode.KEYWORD, "no embeddings in the collections")
    if not n_terms:
        return plan(SearchMode.VECTOR, "the query has no keyword terms")
    if is_identifier_like(text) or is_quoted(text):
        base = kw or 1.0
        why = "quoted phrase" if is_quoted(text) else "identifier-like query"
        precedence: dict[str, float] = {Leg.VECTOR: base * KEYWORD_PRECEDENCE, Leg.KEYWORD: base}
        return plan(SearchMode.HYBRID, f"{why}: keyword matches first", precedence)
    return plan(SearchMode.HYBRID, "embeddings and keyword terms present")


def plan_facts(
    store: Store,
    settings: Settings,
    has_embeddings: set[int],
    collections: str | Sequence[str] | None,
    text: str | None,
    check_embedded: bool,
    retry: bool = True,
) -> tuple[list[Collection], dict[str, list[tuple[str, int]]], set[int]]:
    """The collections (``None`` → the default collection, ``"*"`` → all, else the named ones), with ``text``'s
    terms per language (each with its document frequency) and, with ``check_embedded``, the ids of the collections
    that have embeddings — one statement (``Store.plan_facts``). A positive embeddings answer is remembered in
    ``has_embeddings``: it rarely changes back, and a collection emptied later only makes its vector leg return
    nothing. Errors: a missing name (in order) → CollectionNotFound listing all; a name that is not text →
    InvalidQuery."""
    bad: int | None = None
    if collections is None or (not isinstance(collections, str) and len(collections) == 0):
        names: list[str] | None = [settings.collection]
    else:
        given = [collections] if isinstance(collections, str) else list(collections)
        if "*" in given:
            names = None
        else:
            bad = next((i for i, n in enumerate(given) if not isinstance(n, str)), None)
            names = list(dict.fromkeys(given[:bad]))
    if names == [] and bad is not None:
        raise InvalidQuery(f"collection names must be strings, not {given[bad]!r}", "collections")
    known = sorted(has_embeddings.copy())  # a copy: other requests may add to it meanwhile
    cols, terms, embedded = store.plan_facts(names, text, known, check_embedded)
    has_embeddings.update(embedded)
    if names is None:
        if not cols:
            raise CollectionNotFound("there are no collections yet; ingest documents to create one")
        return cols, terms, embedded
    by_name = {c.name: c for c in cols}
    for name in names:
        if name not in by_name:
            store.get_collection(name)  # CollectionNotFound with the names that exist
            if retry:  # created meanwhile
                return plan_facts(store, settings, has_embeddings, collections, text, check_embedded, retry=False)
    if bad is not None:
        raise InvalidQuery(f"collection names must be strings, not {given[bad]!r}", "collections")
    return [by_name[n] for n in names if n in by_name], terms, embedded
