"""Request dependencies shared by the routers: the ``Context``, read and write auth, and the NUL-character guard.

The context lives on ``app.state.context`` (set by ``create_app``). Writes need ``Authorization: Bearer
<KAYNAK_API_TOKEN>`` (403 when no token is configured); reads are open unless ``KAYNAK_READ_TOKEN`` is set, then
they need it or the API token. ``ReadAuth`` applies the read rule to a plain ASGI app (the MCP endpoint).
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Depends, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from kaynak.context import Context
from kaynak.errors import AuthError, UsageError

from .problems import send_problem


def get_context(request: Request) -> Context:
    """The app's Context (``app.state.context``)."""
    return request.app.state.context


def bearer(headers: Any) -> str | None:
    """The bearer token of ``Authorization``, or None."""
    header = headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def matches(token: str | None, *expected: str | None) -> bool:
    """Constant-time comparison against each configured token."""
    return token is not None and any(
        e is not None and hmac.compare_digest(token.encode(), e.encode()) for e in expected
    )


def check_read(context: Context, headers: Any) -> None:
    s = context.settings
    if s.read_token and not matches(bearer(headers), s.read_token, s.api_token):
        raise AuthError("reads need Authorization: Bearer <KAYNAK_READ_TOKEN> on this server")


def check_write(context: Context, headers: Any) -> None:
    s = context.settings
    if not s.api_token:
        raise AuthError(
            "write endpoints are disabled: set KAYNAK_API_TOKEN (or api_token in kaynak.toml) when starting "
            "`kaynak serve`, then send Authorization: Bearer <token>",
            status=403,
        )
    token = bearer(headers)
    if token is None:
        raise AuthError("this endpoint writes: send Authorization: Bearer <KAYNAK_API_TOKEN>")
    if not matches(token, s.api_token):
        raise AuthError("wrong API token: send Authorization: Bearer <KAYNAK_API_TOKEN>", status=403)


def read_access(request: Request) -> None:
    check_read(get_context(request), request.headers)


def write_access(request: Request) -> None:
    check_write(get_context(request), request.headers)


Read = Depends(read_access)
Write = Depends(write_access)


def reject_nul(value: Any, where: str) -> Any:
    """PostgreSQL text cannot hold NUL characters: refuse them at the door with a 400, not a 500 later."""
    if isinstance(value, str):
        if "\x00" in value:
            raise UsageError(f"{where} contains a NUL character (\\u0000), which kaynak cannot store or search", where)
    elif isinstance(value, dict):
        for k, v in value.items():
            reject_nul(k, where)
            reject_nul(v, where)
    elif isinstance(value, list | tuple):
        for v in value:
            reject_nul(v, where)
    return value


def no_nul_params(request: Request) -> None:
    for key, value in [*request.query_params.multi_items(), *request.path_params.items()]:
        reject_nul(key, "a parameter name")
        reject_nul(value, key)


class ReadAuth:
    """ASGI wrapper for the MCP endpoint: when a read token is configured, require it (or the API token)."""

    def __init__(self, app: ASGIApp, context: Context) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:
                check_read(self.context, headers)
            except AuthError:
                await send_problem(
                    send, 401, "not authorised", "send Authorization: Bearer <KAYNAK_READ_TOKEN>", scope.get("path")
                )
                return
        await self.app(scope, receive, send)
