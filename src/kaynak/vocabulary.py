"""The product's vocabulary, written once: search modes, legs, keyword rankings, languages and request limits.

Every face (CLI, REST, MCP, web page), the services and the evaluation harness import these names instead of
spelling the strings or numbers themselves, so adding a mode or changing a limit is a change in one place.
``StrEnum`` members compare equal to their strings, so ``mode == "hybrid"`` keeps working everywhere.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class SearchMode(StrEnum):
    """How a search ranks: ``auto`` picks one of the others per query (see ``SearchService.plan``)."""

    AUTO = "auto"
    HYBRID = "hybrid"
    VECTOR = "vector"
    KEYWORD = "keyword"


class Leg(StrEnum):
    """One leg of a search: its ranked list in ``Legs``, its fusion weight, its score and rank in ``hit.scores``."""

    VECTOR = "vector"
    KEYWORD = "keyword"


class KeywordRanking(StrEnum):
    """How the keyword leg scores chunks: Okapi BM25 (default) or the specification's OR tsquery + ts_rank_cd."""

    BM25 = "bm25"
    TS_RANK_CD = "ts_rank_cd"


class Language(StrEnum):
    """A collection's text-search language (a PostgreSQL text search configuration)."""

    TURKISH = "turkish"
    ENGLISH = "english"
    SIMPLE = "simple"


# Literal twins for places that need a static type (pydantic fields, typer options, MCP tool schemas).
SearchModeName = Literal["auto", "hybrid", "vector", "keyword"]
KeywordRankingName = Literal["bm25", "ts_rank_cd"]
LanguageName = Literal["turkish", "english", "simple"]

SEARCH_MODES: tuple[str, ...] = tuple(m.value for m in SearchMode)
KEYWORD_RANKINGS: tuple[str, ...] = tuple(r.value for r in KeywordRanking)
LANGUAGES: tuple[str, ...] = tuple(lang.value for lang in Language)

MAX_K = 100  # most hits one search returns, on every face
MAX_QUERY_CHARS = 4000  # longest query accepted, on every face
UI_LANGUAGES = ("tr", "en")  # the languages the web page and its messages speak (GET /v1/access lists them)
