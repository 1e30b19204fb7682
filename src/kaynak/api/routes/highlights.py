"""``POST /v1/highlights``: the words of given texts that match a query, stemmed with each collection's language.

Thin over ``SearchService.highlight_texts``: the same highlighting as ``kaynak search`` on a terminal.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from ..deps import Read, get_context
from ..models import HighlightRequest, Highlights

router = APIRouter()


@router.post(
    "/v1/highlights",
    tags=["search"],
    dependencies=[Read],
    summary="Highlight query terms in texts",
    response_model=Highlights,
)
def highlights(body: HighlightRequest, request: Request) -> dict[str, Any]:
    """For each `{collection, text}` item, the `[start, end]` character spans of the words that match the
    query's terms, stemmed with the collection's language: the same highlighting as `kaynak search`.
    Example body: `{"q": "kat malikleri", "items": [{"collection": "hukuk", "text": "Kat malikleri kurulu…"}]}`.
    """
    search = get_context(request).search  # only the collections the caller may read
    spans = search.highlight_texts(body.q, [(i.collection, i.text) for i in body.items])
    return {"highlights": [[list(s) for s in item] for item in spans]}
