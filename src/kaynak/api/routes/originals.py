"""A document's original file (``GET /v1/documents/{id}/file``) and a PDF page drawn with a passage marked.

Both find the document by id only, in the caller's scope (``get_context``): a document of a collection out of
scope answers like a missing one. The checks on the file are ``kaynak.originals.files``'; the drawing is
``kaynak.originals.pdfpage``'s (pypdfium2, within pixel and scale caps, one render at a time).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse

from kaynak.context import Context
from kaynak.errors import FileTooLarge, UsageError
from kaynak.originals.files import CONTENT_TYPES, SAFE_HEADERS, SANDBOX_CSP, TEXT_ORIGINALS, open_original, text_as_utf8
from kaynak.originals.pdfpage import DEFAULT_WIDTH, MAX_WIDTH
from kaynak.originals.pdfpage import render_page as render_pdf_page

from ..deps import Read, get_context
from ..models import PageImage

FILE_RESPONSE: dict[str, Any] = {
    "description": "The original file: PDF, HTML (sandboxed) and text inline, DOCX as an attachment.",
    "content": {
        media: {"schema": {"type": "string", "format": "binary"}}
        for media in sorted({t.split(";")[0] for t in CONTENT_TYPES.values()} | {"application/octet-stream"})
    },
}

router = APIRouter()


def draw_page(
    ctx: Context, document_id: int, number: int, start: int | None, end: int | None, width: int
) -> dict[str, Any]:
    """A PDF page of a document drawn with the passage ``start:end`` of its stored text marked (see page_image).
    ``ctx`` is the request's (``get_context``): a document out of the caller's scope answers like a missing one."""
    settings = ctx.settings
    doc, origin = ctx.search.document_origin(document_id)
    if not doc.source.lower().endswith(".pdf"):
        raise UsageError(f"{doc.source!r} is not a PDF; only PDF pages can be drawn", "document_id")
    quote = None
    if start is not None or end is not None:
        text = ctx.search.page_text(doc.collection, doc.source, number)
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


@router.get(
    "/v1/documents/{document_id}/file",
    tags=["documents"],
    dependencies=[Read],
    summary="A document's original file",
    response_class=Response,
    responses={200: FILE_RESPONSE},
)
async def original(document_id: Annotated[int, PathParam(ge=1, le=2**62)], request: Request) -> Response:
    """The file a document was ingested from, found by the document's id (never by a path). PDFs come inline
    (open them at a page with `#page=N`); HTML inline in a sandbox (no script); Markdown and text inline as
    plain text; DOCX as an attachment. 404 when the file is gone, changed,
    or reached through a symbolic link since it was ingested."""
    search = get_context(request).search  # a document of a collection out of scope answers like a missing one
    doc, origin = await run_in_threadpool(search.document_origin, document_id)
    meta, handle = await run_in_threadpool(open_original, doc.source, origin, doc.sha256)
    headers = {
        **SAFE_HEADERS,
        "Content-Length": str(meta.size),
        "Content-Disposition": meta.content_disposition(),
        "Cache-Control": "no-store",
    }
    if meta.content_type.split(";")[0] != "application/pdf":
        headers["Content-Security-Policy"] = SANDBOX_CSP
    if meta.path.suffix.lower() in TEXT_ORIGINALS:  # sent as UTF-8, whatever it was written in
        with handle:
            data = await run_in_threadpool(text_as_utf8, handle, meta.size)
        headers["Content-Length"] = str(len(data))
        return Response(data, media_type=meta.content_type, headers=headers)

    def body() -> Iterator[bytes]:
        with handle:
            while chunk := handle.read(1 << 16):
                yield chunk

    return StreamingResponse(body(), media_type=meta.content_type, headers=headers)


@router.get(
    "/v1/documents/{document_id}/pages/{number}/image",
    tags=["documents"],
    dependencies=[Read],
    summary="A PDF page drawn, with a passage marked",
    response_model=PageImage,
)
async def page_image(
    request: Request,
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
    return await run_in_threadpool(draw_page, get_context(request), document_id, number, start, end, width)
