"""``router(context)``: the web page at ``/``, its assets under ``/static/``, and the three read endpoints it adds.

The page is a thin face like the others: everything it shows comes from the REST API (``/v1/search``,
``/v1/collections…``, ``/v1/chunks…``, uploads and deletes) and from these additions, all thin over
``SearchService``:

- ``GET /v1/access``: what the caller's bearer token allows (``read``, ``write``), and whether the server wants a
  token for reads or accepts writes at all: the page uses it to ask for a token once and to show write controls
  only when the token really is the write token.
- ``POST /v1/highlights``: the words of given texts that match a query, stemmed with each collection's language
  (``SearchService.highlight_texts``, the same highlighting as ``kaynak search`` on a terminal).
- ``GET /v1/documents/{id}/file``: a document's original file, by id only (``kaynak.web.files`` checks it).
- ``GET /v1/documents/{id}/pages/{n}/image``: a PDF page drawn as a PNG with a cited passage marked on it
  (``kaynak.web.pdfpage``: pypdfium2, within pixel and scale caps, one render at a time).

Every HTML response carries a Content-Security-Policy without inline script or style, ``nosniff``, no referrer and
no framing. Nothing here sets or reads a cookie.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from kaynak.api.deps import Read, bearer, matches
from kaynak.context import Context
from kaynak.errors import FileTooLarge, NotFound, UsageError
from kaynak.vocabulary import MAX_K, MAX_QUERY_CHARS
from kaynak.web.files import CONTENT_TYPES, SANDBOX_CSP, open_original
from kaynak.web.i18n import LANGS, choose_language
from kaynak.web.page import render_page
from kaynak.web.pdfpage import DEFAULT_WIDTH, MAX_WIDTH
from kaynak.web.pdfpage import render_page as render_pdf_page

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
COMMON_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
STATIC_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
MAX_HIGHLIGHT_TEXT = 20_000
FILE_RESPONSE: dict[str, Any] = {
    "description": "The original file: PDF, HTML (sandboxed) and text inline, DOCX as an attachment.",
    "content": {
        media: {"schema": {"type": "string", "format": "binary"}}
        for media in sorted({t.split(";")[0] for t in CONTENT_TYPES.values()} | {"application/octet-stream"})
    },
}


class HighlightItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    collection: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=MAX_HIGHLIGHT_TEXT)


class HighlightRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The query, as searched.")
    items: list[HighlightItem] = Field(max_length=MAX_K, description="Texts to highlight, with their collection.")


def load_assets() -> dict[str, tuple[bytes, str]]:
    """The page's static files (name → bytes, content type), read once from the package."""
    out: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files("kaynak.web").joinpath("static").iterdir():
        ext = os.path.splitext(entry.name)[1]
        if entry.is_file() and ext in STATIC_TYPES:
            out[entry.name] = (entry.read_bytes(), STATIC_TYPES[ext])
    return out


def draw_page(
    context: Context, document_id: int, number: int, start: int | None, end: int | None, width: int
) -> dict[str, Any]:
    """A PDF page of a document drawn with the passage ``start:end`` of its stored text marked (see page_image)."""
    settings = context.settings
    doc, origin = context.search.document_origin(document_id)
    if not doc.source.lower().endswith(".pdf"):
        raise UsageError(f"{doc.source!r} is not a PDF; only PDF pages can be drawn", "document_id")
    quote = None
    if start is not None or end is not None:
        text = context.search.page_text(doc.collection, doc.source, number)
        if start is None or end is None or not 0 <= start < end <= len(text):
            raise UsageError(
                f"start and end must mark a passage of page {number} (0 ≤ start < end ≤ its length)", "start"
            )
        quote = text[start:end]
    meta, handle = open_original(doc.source, origin, doc.sha256)
    with handle:
        limit = int(settings.max_file_mb * 1024 * 1024)
        if meta.size > limit:
            raise FileTooLarge(doc.source, f"the file is over the {settings.max_file_mb:g} MB limit to draw")
        data = handle.read(limit + 1)
    page = render_pdf_page(data, number, quote, width)
    return {
        "document_id": document_id,
        "source": doc.source,
        "page": number,
        "page_count": page.page_count,
        "width": page.width,
        "height": page.height,
        "found": page.found,
        "boxes": page.boxes,
        "image": "data:image/png;base64," + base64.b64encode(page.png).decode("ascii"),
    }


def router(context: Context) -> APIRouter:
    """The web page's routes for an app serving ``context`` (``create_app`` includes them)."""
    settings = context.settings
    assets = load_assets()
    version = hashlib.sha256(b"".join(assets[n][0] for n in sorted(assets))).hexdigest()[:12]
    r = APIRouter()

    def can_read(request: Request) -> bool:
        return not settings.read_token or matches(bearer(request.headers), settings.read_token, settings.api_token)

    read = [Read]

    @r.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page(request: Request, lang: Annotated[str | None, Query(max_length=10)] = None) -> HTMLResponse:
        chosen = choose_language(lang, request.headers.get("accept-language"))
        html = render_page(
            chosen,
            read_token=bool(settings.read_token),
            write_enabled=bool(settings.api_token),
            asset_version=version,
        )
        headers = {
            **COMMON_HEADERS,
            "Content-Security-Policy": PAGE_CSP,
            "Cache-Control": "no-cache",
            "Vary": "Accept-Language",
            "Content-Language": chosen,
        }
        return HTMLResponse(html, headers=headers)

    @r.api_route("/static/{name}", methods=["GET", "HEAD"], include_in_schema=False)
    def static(name: Annotated[str, PathParam(max_length=100)], v: str | None = None) -> Response:
        if name not in assets:
            raise NotFound(f"no page asset named {name!r}")
        body, content_type = assets[name]
        cache = "public, max-age=31536000, immutable" if v == version else "no-cache"
        headers = {**COMMON_HEADERS, "Cache-Control": cache, "ETag": f'"{version}"'}
        return Response(body, media_type=content_type, headers=headers)

    @r.get("/v1/access", tags=["web"], summary="What the bearer token allows")
    def access(request: Request) -> dict[str, Any]:
        """Whether the caller may read and write, whether reads need a token on this server, and whether writes
        are enabled at all (`KAYNAK_API_TOKEN` set). The web page uses it to ask for a token once."""
        return {
            "read": can_read(request),
            "write": bool(settings.api_token) and matches(bearer(request.headers), settings.api_token),
            "read_token_required": bool(settings.read_token),
            "writes_enabled": bool(settings.api_token),
            "languages": list(LANGS),
        }

    @r.post("/v1/highlights", tags=["search"], dependencies=read, summary="Highlight query terms in texts")
    def highlights(body: HighlightRequest) -> dict[str, Any]:
        """For each `{collection, text}` item, the `[start, end]` character spans of the words that match the
        query's terms, stemmed with the collection's language: the same highlighting as `kaynak search`.
        Example body: `{"q": "kat malikleri", "items": [{"collection": "hukuk", "text": "Kat malikleri kurulu…"}]}`.
        """
        spans = context.search.highlight_texts(body.q, [(i.collection, i.text) for i in body.items])
        return {"highlights": [[list(s) for s in item] for item in spans]}

    @r.get(
        "/v1/documents/{document_id}/file",
        tags=["documents"],
        dependencies=read,
        summary="A document's original file",
        response_class=Response,
        responses={200: FILE_RESPONSE},
    )
    async def original(document_id: Annotated[int, PathParam(ge=1, le=2**62)]) -> Response:
        """The file a document was ingested from, found by the document's id (never by a path). PDFs come inline
        (open them at a page with `#page=N`); HTML inline in a sandbox (no script); Markdown and text inline as
        plain text; DOCX as an attachment. 404 when the file is gone, changed,
        or reached through a symbolic link since it was ingested."""
        doc, origin = await run_in_threadpool(context.search.document_origin, document_id)
        meta, handle = await run_in_threadpool(open_original, doc.source, origin, doc.sha256)
        headers = {
            **COMMON_HEADERS,
            "Content-Length": str(meta.size),
            "Content-Disposition": meta.content_disposition(),
            "Cache-Control": "no-store",
        }
        if meta.content_type.split(";")[0] != "application/pdf":
            headers["Content-Security-Policy"] = SANDBOX_CSP

        def body() -> Iterator[bytes]:
            with handle:
                while chunk := handle.read(1 << 16):
                    yield chunk

        return StreamingResponse(body(), media_type=meta.content_type, headers=headers)

    @r.get(
        "/v1/documents/{document_id}/pages/{number}/image",
        tags=["documents"],
        dependencies=read,
        summary="A PDF page drawn, with a passage marked",
    )
    async def page_image(
        document_id: Annotated[int, PathParam(ge=1, le=2**62)],
        number: Annotated[int, PathParam(ge=1, le=1_000_000)],
        start: Annotated[int | None, Query(ge=0, le=100_000_000)] = None,
        end: Annotated[int | None, Query(ge=0, le=100_000_000)] = None,
        width: Annotated[int, Query(ge=200, le=MAX_WIDTH)] = DEFAULT_WIDTH,
    ) -> dict[str, Any]:
        """Page `number` of a PDF document drawn by pdfium as a PNG (a `data:` URL in `image`, about `width`
        pixels wide within the server's pixel cap). With `start`/`end` (code-point offsets into the stored page
        text, as a hit's `quote.char_start`/`char_end`), that passage is located in the page's text layer and
        highlighted; `boxes` are its rectangles as `[left, top, width, height]` fractions of the page and
        `found` says whether it was located. 422 for a document that is not a PDF; 404 as for the file."""
        return await run_in_threadpool(draw_page, context, document_id, number, start, end, width)

    return r
