"""``router(context)``: the web page at ``/`` and its assets under ``/static/``; nothing under ``/v1``.

The page is a thin face like the others: everything it shows comes from the REST API (``kaynak.api``:
``/v1/search``, ``/v1/collections…``, ``/v1/chunks…``, ``/v1/access``, ``/v1/highlights``, a document's original
file and PDF page images, uploads and deletes), which the composition root (``kaynak.server``) serves beside it.

Every HTML response carries a Content-Security-Policy without inline script or style, ``nosniff``, no referrer and
no framing. Nothing here sets or reads a cookie.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response

from kaynak.context import Context
from kaynak.errors import KaynakError, NotFound
from kaynak.ingest.discovery import supported_extensions
from kaynak.originals.files import SAFE_HEADERS
from kaynak.web.i18n import choose_language
from kaynak.web.page import render_page

# What the page must know of the server for this request: (reads need a token, writes are enabled). The composition
# root (``kaynak.server``) supplies it from the REST API's access rules; it may raise a ``KaynakError``.
AccessFacts = Callable[[Request], tuple[bool, bool]]

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
COMMON_HEADERS = SAFE_HEADERS
STATIC_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


def load_assets() -> dict[str, tuple[bytes, str]]:
    """The page's static files (name → bytes, content type), read once from the package."""
    out: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files("kaynak.web").joinpath("static").iterdir():
        ext = os.path.splitext(entry.name)[1]
        if entry.is_file() and ext in STATIC_TYPES:
            out[entry.name] = (entry.read_bytes(), STATIC_TYPES[ext])
    return out


def router(context: Context, access_facts: AccessFacts) -> APIRouter:
    """The web page's routes for an app serving ``context`` (``kaynak.server.create_app`` includes them);
    ``access_facts`` says whether this request's reads need a token and whether writes are enabled."""
    settings = context.settings
    assets = load_assets()
    version = hashlib.sha256(b"".join(assets[n][0] for n in sorted(assets))).hexdigest()[:12]
    r = APIRouter()

    @r.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page(request: Request, lang: Annotated[str | None, Query(max_length=10)] = None) -> HTMLResponse:
        chosen = choose_language(lang, request.headers.get("accept-language"))
        try:  # tokens made with `kaynak tokens create` close reads and enable writes like the settings do
            needs_token, writes = access_facts(request)
        except KaynakError:  # the database is away: the page still loads, and asks for a token to be safe
            needs_token, writes = True, bool(settings.api_token)
        html = render_page(
            chosen,
            read_token=needs_token,
            write_enabled=writes,
            asset_version=version,
            extensions=supported_extensions(),  # the loader registry: one source of truth for file types
            max_upload_mb=settings.max_upload_mb,
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

    return r
