"""``/docs``: Swagger UI for the REST API, served from this machine under the web page's Content-Security-Policy.

FastAPI's own ``/docs`` loaded Swagger UI from a CDN (``cdn.jsdelivr.net``, a floating major version, no
integrity attribute) into the origin whose sessionStorage holds the web page's token, without a CSP or frame
options, and did not work offline (issue 53). Here the page is a fixed HTML file with no inline script; Swagger
UI's script and stylesheet come from the ``fastapi-offline`` package installed with kaynak (Swagger UI 5, MIT /
Apache-2.0), and a four-line start script of our own. ``/redoc`` is off.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

# The web page's policy (kaynak.web.routes.PAGE_CSP; api and web do not import each other: a test keeps them equal).
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
DOCS_HEADERS = {
    "Content-Security-Policy": DOCS_CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>kaynak REST API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
"""
START = """window.ui = SwaggerUIBundle({
  url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, persistAuthorization: false,
  presets: [SwaggerUIBundle.presets.apis], layout: "BaseLayout"
});
"""
ASSETS = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8", "swagger-ui.css": "text/css; charset=utf-8"}


@cache
def asset(name: str) -> bytes:
    """One of Swagger UI's files, read once from the installed package."""
    return (files("fastapi_offline") / "static" / name).read_bytes()


def router() -> APIRouter:
    """``GET /docs`` and its three files (none in the OpenAPI schema)."""
    r = APIRouter(include_in_schema=False)

    @r.get("/docs")
    def docs() -> HTMLResponse:
        return HTMLResponse(PAGE, headers=DOCS_HEADERS)

    @r.get("/docs/start.js")
    def start() -> Response:
        return Response(START, media_type=ASSETS["swagger-ui-bundle.js"], headers=DOCS_HEADERS)

    def serve(name: str) -> Any:
        def handler() -> Response:
            headers = {**DOCS_HEADERS, "Cache-Control": "public, max-age=86400"}
            return Response(asset(name), media_type=ASSETS[name], headers=headers)

        return handler

    for name in ASSETS:
        r.add_api_route(f"/docs/{name}", serve(name), methods=["GET"])
    return r
