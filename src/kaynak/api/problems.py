"""RFC 9457 ``application/problem+json``: the one shape every error of the REST API takes, and its handlers.

``problem`` builds a response from a status, title and detail; ``install_handlers`` maps a ``KaynakError`` (its
``status``, ``title``, message and ``retry_after``), request validation errors (422), Starlette's HTTP errors
(404, 405 with ``Allow``, 413) and anything unexpected (500, logged, no internals in the answer) onto it.
``send_problem`` is the same answer for ASGI middleware that refuses a request before the app runs.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Send

from kaynak.errors import KaynakError, RequestTooLarge

log = logging.getLogger("kaynak.api")

PROBLEM = "application/problem+json"


def problem(
    status: int,
    title: str,
    detail: str,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """A problem+json response; 401 answers carry ``WWW-Authenticate``."""
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    if instance:
        body["instance"] = instance
    body.update({k: v for k, v in extra.items() if v is not None})
    all_headers = dict(headers or {})
    if status == 401:
        all_headers["WWW-Authenticate"] = 'Bearer realm="kaynak"'
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=all_headers or None)


def hide_paths(text: str, *folders: Any) -> str:
    """``text`` without the server's own folders (the data folder, an upload folder): no internal paths leak."""
    for folder in folders:
        if folder:
            text = text.replace(str(folder), "<data_dir>")
    return text


def error_response(err: KaynakError, instance: str | None = None, data_dir: Any = None) -> JSONResponse:
    """The problem+json answer for a KaynakError (``Retry-After`` when retrying may help)."""
    extra: dict[str, Any] = {"field": getattr(err, "field", None)}
    if hasattr(err, "path"):
        extra["file"] = hide_paths(str(err.path), data_dir)
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after else None
    return problem(err.status, err.title, hide_paths(err.message, data_dir), instance, headers=headers, **extra)


def _data_dir(request: Request) -> Any:
    context = getattr(request.app.state, "context", None)
    return getattr(getattr(context, "settings", None), "data_dir", None)


async def send_problem(
    send: Send, status: int, title: str, detail: str, instance: str | None, headers: dict[str, str] | None = None
) -> None:
    """Answer with a problem straight from ASGI middleware (before the app has read anything)."""
    response = problem(status, title, detail, instance, headers=headers)
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers at this path (for ``Allow`` on 405)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
            match, _ = route.matches({**request.scope, "method": method})
            if match is Match.FULL:
                methods.add(method)
    return sorted(methods)


class Problem(BaseModel):
    """An RFC 9457 problem: what went wrong (``detail``) and, for some, ``field`` / ``file`` / ``errors``."""

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    instance: str | None = None


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the problems a route can answer (problem+json)."""
    why = {
        400: "Invalid request (a parameter or name breaks a rule)",
        401: "Token missing",
        403: "Token wrong, or writes are off",
        404: "Not found",
        405: "Method not allowed (see Allow)",
        408: "Body sent too slowly",
        409: "Conflict",
        413: "Body over its limit",
        421: "Host not allowed",
        422: "Invalid request or files",
        429: "Over a rate budget (see Retry-After)",
        500: "Unexpected error (a bug; see the server log)",
        503: "Database unavailable (see Retry-After)",
    }
    return {
        status: {
            "description": why.get(status, "Problem"),
            "model": Problem,
            "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


def install_handlers(app: FastAPI) -> None:
    """Every error the app can raise becomes problem+json."""

    @app.exception_handler(KaynakError)
    async def _kaynak_error(request: Request, err: KaynakError) -> JSONResponse:
        return error_response(err, request.url.path, _data_dir(request))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in err.errors()
        ]
        detail = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors) or "invalid request"
        return problem(422, "invalid request", detail, request.url.path, errors=errors)

    OAUTH_PATHS = ("/.well-known/oauth-", "/.well-known/openid-configuration", "/register", "/authorize", "/token")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        cause = err.__cause__ or err.__context__
        if isinstance(cause, KaynakError):  # raised while FastAPI read the body (a size limit, say)
            return error_response(cause, request.url.path, _data_dir(request))
        titles = {404: "not found", 405: "method not allowed", 413: "request too large"}
        detail = str(err.detail) if err.detail else titles.get(err.status_code, "error")
        if err.status_code == 404 and detail == "Not Found":
            detail = f"no such endpoint {request.method} {request.url.path}; see /docs for the API"
            if request.url.path.startswith(OAUTH_PATHS):  # an MCP client trying OAuth (docs/adr/0036)
                detail = (
                    "kaynak does not use OAuth: send a kaynak token as a header, Authorization: Bearer <token> "
                    '(mcp-remote: --header "Authorization: Bearer ${TOKEN}"; see docs/interfaces.md)'
                )
        headers = dict(err.headers or {})
        if err.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
            detail = f"{request.method} is not allowed here; use {headers['Allow']}"
        return problem(
            err.status_code, titles.get(err.status_code, "error"), detail, request.url.path, headers=headers or None
        )

    @app.exception_handler(Exception)
    async def _crash(request: Request, err: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return problem(500, "internal error", f"unexpected {type(err).__name__}; see the server log", request.url.path)


__all__ = ["PROBLEM", "RequestTooLarge", "error_response", "install_handlers", "problem", "send_problem"]
