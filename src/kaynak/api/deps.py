"""Request dependencies shared by the routers: the ``Context``, read and write auth, and the NUL-character guard.

The context lives on ``app.state.context`` (set by ``create_app``); routes get it through ``get_context``, as the
caller may use it. Who the caller is and what it may do is ``kaynak.api.team``'s (``Access``): writes need a write
right (``KAYNAK_API_TOKEN`` or a token with ``--write``; 403 when writes are not enabled at all), reads are open
unless ``KAYNAK_READ_TOKEN`` is set or tokens were created. ``ReadAuth`` applies the read rule to a plain ASGI app
(the MCP endpoint).
"""

from __future__ import annotations

from typing import Any, cast

from fastapi import Depends, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from kaynak.context import Context
from kaynak.errors import AuthError, KaynakError, NotFound, UsageError

from .problems import error_response, send_problem
from .team import caller, caller_context, check_collection, check_read, check_write, note_refusal, team_of


def get_context(request: Request) -> Context:
    """The app's Context as this request's caller may use it (``kaynak.api.team.CallerContext``): searches see
    only the collections the caller may read, writes are checked against its scope and audited."""
    return cast(Context, caller_context(request.scope))


def read_access(request: Request) -> None:
    check_read(caller(request.scope))


def write_access(request: Request) -> None:
    """The write right (and, for a write to one collection, on it), before the route reads anything; a refusal
    is noted for the audit trail."""
    access = caller(request.scope)
    name = request.path_params.get("name")
    try:
        check_write(access, team_of(request.scope).writes_enabled())
        if isinstance(name, str):
            check_collection(access, "write", name, request.app.state.context)
    except (AuthError, NotFound) as err:
        note_refusal(request.scope, f"{request.method} {request.url.path}", name, err.message)
        raise


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
    """ASGI wrapper for the MCP endpoint: the caller needs a read right (the tools then see only its collections)."""

    def __init__(self, app: ASGIApp, context: Context) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                check_read(caller(scope))
            except AuthError as err:
                await send_problem(send, err.status, "not authorised", err.message, scope.get("path"))
                return
            except KaynakError as err:
                response = error_response(err, scope.get("path"))
                await send(
                    {"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers}
                )
                await send({"type": "http.response.body", "body": response.body})
                return
        await self.app(scope, receive, send)
