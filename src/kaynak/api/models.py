"""Request bodies of the REST API (pydantic models): search requests, filters and new collections."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from kaynak.errors import UsageError
from kaynak.rules import check_filter_value, parse_collections
from kaynak.vocabulary import MAX_K, MAX_QUERY_CHARS, KeywordRankingName, LanguageName, SearchModeName

from .deps import reject_nul


class NoNul(BaseModel):
    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, v: Any, info: Any) -> Any:
        try:
            return reject_nul(v, info.field_name)
        except UsageError as err:
            raise ValueError(err.message) from None


class SearchFiltersIn(NoNul):
    model_config = ConfigDict(extra="forbid")

    source_prefix: str | None = Field(None, max_length=1000, description="Only sources starting with this path.")
    source_glob: str | None = Field(None, max_length=1000, description="Only sources matching this glob (docs/*.pdf).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Only documents whose metadata contains this.")

    @field_validator("metadata")
    @classmethod
    def _finite(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            return check_filter_value(v, "metadata")
        except UsageError as err:
            raise ValueError(err.message) from None


class SearchRequest(NoNul):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    q: str = Field(
        ...,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        validation_alias=AliasChoices("q", "query"),
        description="The question or keywords.",
    )
    collections: list[str] | str | None = Field(
        None, description='Collection names (list or comma-separated); omit for the default, "*" for all.'
    )
    mode: SearchModeName = "auto"
    k: int = Field(10, ge=1, le=MAX_K)
    filters: SearchFiltersIn | None = None
    rerank: bool | None = Field(None, description="Rerank with the configured cross-encoder; omit for the default.")
    ranking: KeywordRankingName | None = Field(None, description="Keyword ranking; omit for the setting.")
    group_by: Literal["chunk", "document"] | None = Field(
        None, description="`document`: only each document's best hit; omit (or `chunk`) for every passage."
    )

    @field_validator("collections")
    @classmethod
    def _split(cls, v: list[str] | str | None) -> list[str] | str | None:
        return parse_collections(v)


class MatchOut(BaseModel):
    """How likely a hit answers the question (kaynak.match)."""

    probability: float = Field(..., ge=0, le=1, description="Calibrated probability that the hit answers.")
    label: Literal["strong", "partial", "weak"] = Field(
        ..., description="strong: likely answers; partial: may answer; weak: unlikely to answer."
    )


class QuoteOut(BaseModel):
    text: str
    char_start: int
    char_end: int


class HitOut(BaseModel):
    """One hit; further fields (`text`, `document_id`, `ocr`, `stale`, …) as the search returns them."""

    model_config = ConfigDict(extra="allow")

    chunk_id: str
    collection: str
    source: str
    title: str
    page: int
    section: str | None
    quote: QuoteOut
    score: float
    scores: dict[str, float | int | None]
    match: MatchOut | None = None


class SearchResponse(BaseModel):
    hits: list[HitOut] = Field(..., description="Best first.")
    no_good_match: bool = Field(
        ...,
        description="true when no hit is likely to answer (every hit's match is weak, or there are no hits): "
        "the documents searched probably do not say.",
    )


class CollectionIn(NoNul):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=200)
    language: LanguageName | None = None
    embedder: str | None = Field(None, max_length=200, description="embedder name (`kaynak models` lists them)")
