"""Search: the query pipeline as a package, one step per module, composed by ``SearchService``.

``plan`` (collections, terms, mode, weights) → ``legs`` (vector and keyword, cross-language rule) → ``fuse``
(fill-in, fusion) → ``rerank`` → ``hits`` (syntax, grouping, quotes, duplicates, match strength) and
``highlight``; ``browse`` reads what is indexed; ``service`` holds ``SearchService``. The names below are what
the faces, tests and benchmarks import from ``kaynak.search``.
"""

from kaynak.rules import FILTER_KEYS, GROUP_BY, parse_metadata_pairs
from kaynak.search.highlight import SIMPLE_HIGHLIGHT
from kaynak.search.hits import DUPLICATE_SPARE, LANGUAGE_NAMES, SearchResults
from kaynak.search.legs import QUERY_VECTOR_CACHE, QueryVectorCache
from kaynak.search.plan import KEYWORD_PRECEDENCE, SearchPlan, is_identifier_like, is_quoted, query_language
from kaynak.search.service import SearchService
from kaynak.vocabulary import KEYWORD_RANKINGS as RANKINGS
from kaynak.vocabulary import SEARCH_MODES as MODES

__all__ = [
    "DUPLICATE_SPARE",
    "FILTER_KEYS",
    "GROUP_BY",
    "KEYWORD_PRECEDENCE",
    "LANGUAGE_NAMES",
    "MODES",
    "QUERY_VECTOR_CACHE",
    "RANKINGS",
    "SIMPLE_HIGHLIGHT",
    "QueryVectorCache",
    "SearchPlan",
    "SearchResults",
    "SearchService",
    "is_identifier_like",
    "is_quoted",
    "parse_metadata_pairs",
    "query_language",
]
