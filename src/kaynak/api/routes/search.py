"""``GET /v1/search`` and ``POST /v1/search``: thin over ``SearchService.search``."""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from kaynak.context import Context
from kaynak.search import parse_metadata_pairs
from kaynak.vocabulary import MAX_K, MAX_QUERY_CHARS, KeywordRankingName, SearchModeName

from ..deps import Read, get_context
from ..models import SearchFiltersIn, SearchRequest, SearchResponse
from ..observe import METRICS
from ..problems import responses

log = logging.getLogger("kaynak.api")

router = APIRouter(
    prefix="/v1", tags=["search"], responses=responses(400, 401, 404, 408, 413, 422, 503), dependencies=[Read]
)


def run_search(ctx: Context, req: SearchRequest) -> dict[str, Any]:
    filters = req.filters.model_dump(exclude_none=True) if req.filters else None
    if filters is not None and not filters.get("metadata"):
        filters.pop("metadata", None)
    start = time.perf_counter()
    hits = ctx.search.search(
        req.q,
        collections=req.collections,
        mode=req.mode,
        k=req.k,
        filters=filters or None,
        rerank=req.rerank,
        keyword_ranking=req.ranking,
        group_by=req.group_by,
    )
    took = (time.perf_counter() - start) * 1000
    METRICS.observe_search(getattr(getattr(hits, "plan", None), "mode", None) or req.mode, took / 1000)
    log.info("search %r → %d hits in %.0f ms", req.q[:80], len(hits), took)
    plan = getattr(hits, "plan", None)
    return {
        "hits": [h.to_dict() for h in hits],
        "no_good_match": hits.no_good_match,
        "phrase_missing": bool(getattr(plan, "phrase_missing", False)),
    }


@router.get("/search", summary="Search (query string)", response_model=SearchResponse)
def search_get(
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="The question or keywords.")],
    ctx: Annotated[Context, Depends(get_context)],
    collections: Annotated[
        str | None, Query(max_length=4000, description='Comma-separated names; "*" for all.')
    ] = None,
    mode: SearchModeName = "auto",
    k: Annotated[int, Query(ge=1, le=MAX_K)] = 10,
    source_prefix: Annotated[str | None, Query(max_length=1000)] = None,
    source_glob: Annotated[str | None, Query(max_length=1000)] = None,
    meta: Annotated[
        list[str] | None, Query(max_length=1000, description="KEY=VALUE metadata filter (repeatable).")
    ] = None,
    rerank: bool | None = None,
    ranking: KeywordRankingName | None = None,
    group_by: Annotated[
        Literal["chunk", "document"] | None, Query(description="`document`: each document's best hit only.")
    ] = None,
) -> dict[str, Any]:
    """Hybrid search. Returns `{"hits": [...], "no_good_match": bool}`, hits best first: each hit has `source`,
    `title`, `page`, `section`, `quote` (verbatim, with offsets into the page), `text`, `score`, per-retriever
    `scores`, `chunk_id`, `ocr` (null, or `{"confidence": 0–100}` when the page is a scan read by OCR), and
    `match` (`{"probability": 0–1, "label": "strong" | "partial" | "weak"}`: how likely it answers).
    `no_good_match` is true when no hit is likely to answer. Query syntax: `"exact phrase"` requires the
    phrase, `-word` excludes passages with the word.

    Example: `GET /v1/search?q=kat%20malikleri%20kurulu&collections=hukuk&k=5`
    """
    metadata = parse_metadata_pairs(meta)
    filters = None
    if source_prefix or source_glob or metadata:
        filters = SearchFiltersIn(source_prefix=source_prefix, source_glob=source_glob, metadata=metadata)
    req = SearchRequest(
        q=q,
        collections=collections,
        mode=mode,
        k=k,
        filters=filters,
        rerank=rerank,
        ranking=ranking,
        group_by=group_by,
    )
    return run_search(ctx, req)


@router.post("/search", summary="Search (JSON body)", response_model=SearchResponse)
def search_post(req: SearchRequest, ctx: Annotated[Context, Depends(get_context)]) -> dict[str, Any]:
    """The same search with a JSON body: `{"q": "...", "collections": ["a"], "mode": "hybrid", "k": 10,
    "filters": {"source_prefix": "docs/"}, "group_by": "document"}`. Returns `{"hits": [...], "no_good_match": bool}`.
    """
    return run_search(ctx, req)
