"""ASGI middleware that refuses a request before the app reads it: ``Guard``, the outermost layer of the app.

In this order, for every HTTP request:

1. Host and Origin (when bound to loopback): ``Host`` must name this machine (``127.0.0.1``, ``localhost``,
   ``[::1]``, any port) or one of ``KAYNAK_ALLOWED_HOSTS``; a browser's ``Origin``, when sent, likewise. A
   DNS-rebinding page therefore gets 421/403, never documents. The MCP endpoint uses the same list.
2. Auth: a route that needs the read or write right is checked before its body is read (401/403 for
   unauthenticated garbage, never 413 or 422; 404 for a write to a collection out of the token's scope).
3. Body size: ``Content-Length`` over the limit is refused unread (413); a body without one (chunked) is counted
   while streaming and cut off at the limit. Multipart uploads may be ``KAYNAK_MAX_UPLOAD_MB``, every other body
   ``KAYNAK_MAX_BODY_KB``.
4. Slow bodies: each part must arrive within ``KAYNAK_READ_TIMEOUT_S`` and the whole body within ten times that
   (408), so a trickling client cannot hold a connection and a worker thread forever.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kaynak.config import Settings
from kaynak.errors import AuthError, HostNotAllowed, KaynakError, RequestTimeout, RequestTooLarge

from .deps import read_access, write_access
from .problems import error_response
from .team import REFUSAL

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def extra_hosts(settings: Settings) -> list[str]:
    """``KAYNAK_ALLOWED_HOSTS`` as a list of lower-case host names (ports allowed after them)."""
    return [h.strip().lower() for h in (settings.allowed_hosts or "").split(",") if h.strip()]


def guards_hosts(settings: Settings) -> bool:
    """Host / Origin checks apply when the server is bound to a loopback address."""
    return settings.host in LOOPBACK


def mcp_transport_security(settings: Settings) -> Any:
    """The MCP SDK's DNS-rebinding settings with the same allow-list (None when not bound to loopback)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not guards_hosts(settings):
        return None
    names = [*LOOPBACK_HOSTS, *extra_hosts(settings)]
    hosts = [h for n in names for h in (n, f"{n}:*")]
    origins = [o for n in names for scheme in ("http", "https") for o in (f"{scheme}://{n}", f"{scheme}://{n}:*")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def _host_name(host: str) -> str:
    """``Host`` without its port, lower case (``[::1]:8765`` → ``[::1]``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host: str | None, settings: Settings) -> bool:
    return bool(host) and _host_name(host or "") in {*LOOPBACK_HOSTS, *extra_hosts(settings)}


def origin_allowed(origin: str | None, settings: Settings) -> bool:
    if not origin:
        return True  # not a browser, or a same-origin GET
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and host_allowed(parts.netloc, settings)


def too_large(limit_bytes: int, multipart: bool) -> RequestTooLarge:
    if multipart:
        return RequestTooLarge(
            f"the upload is larger than the limit of {limit_bytes / 1_048_576:g} MB; send fewer or smaller files, "
            "or raise KAYNAK_MAX_UPLOAD_MB"
        )
    return RequestTooLarge(
        f"the request body is larger than the limit of {limit_bytes // 1024} KB; send less, or raise KAYNAK_MAX_BODY_KB"
    )


def check_host(scope: Scope, headers: dict[str, str], settings: Settings) -> None:
    """Host and Origin on a loopback-bound server (HostNotAllowed: 421, or 403 for a foreign Origin). The team
    gate runs it before it looks at any token, so a refused request spends nobody's budget."""
    if not guards_hosts(settings) or (scope.get("client") or ("",))[0] == "testclient":
        return  # Starlette's TestClient is no network peer
    if not host_allowed(headers.get("host"), settings):
        raise HostNotAllowed(
            "this server answers only to Host 127.0.0.1, localhost or [::1] (DNS-rebinding protection); "
            "behind a reverse proxy, add its public name to KAYNAK_ALLOWED_HOSTS"
        )
    if not origin_allowed(headers.get("origin"), settings):
        err = HostNotAllowed(
            "requests from web pages of other sites are refused (Origin not allowed); add the site's host to "
            "KAYNAK_ALLOWED_HOSTS if it is yours"
        )
        err.status = 403
        raise err


class Guard:
    """The checks above, before the app runs (``routes``: the API's routes, to find the auth a request needs)."""

    def __init__(self, app: ASGIApp, settings: Settings, routes: Sequence[Any]) -> None:
        self.app = app
        self.settings = settings
        self.routes = list(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            self._check_host(scope, headers)
            self._check_auth(scope, headers)
            limited = self._limit(scope, headers, receive)
        except KaynakError as err:
            await self._refuse(send, err, scope)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking_send)
        except (RequestTooLarge, RequestTimeout) as err:  # raised in the receive channel and not handled inside
            if started:
                raise
            await self._refuse(send, err, scope)

    # ------------------------------------------------------------------ checks
    def _check_host(self, scope: Scope, headers: dict[str, str]) -> None:
        check_host(scope, headers, self.settings)

    def _check_auth(self, scope: Scope, headers: dict[str, str]) -> None:
        if scope.get("method") not in BODY_METHODS:
            return  # nothing to read before the dependencies run
        for route in self.routes:
            match, child = route.matches(scope)
            if match is Match.FULL:
                calls = {getattr(d, "dependency", None) for d in getattr(route, "dependencies", [])}
                if write_access in calls or read_access in calls:
                    request = Request({**scope, **child})  # the dependencies' own checks, path params included
                    try:
                        (write_access if write_access in calls else read_access)(request)
                    finally:
                        if REFUSAL in request.scope:  # a refused write, for the audit trail (kaynak.api.team)
                            scope[REFUSAL] = request.scope[REFUSAL]
                return

    def _limit(self, scope: Scope, headers: dict[str, str], receive: Receive) -> Receive:
        if scope.get("method") not in BODY_METHODS:
            return receive
        s = self.settings
        multipart = headers.get("content-type", "").lower().startswith("multipart/")
        limit = int(s.max_upload_mb * 1_048_576) if multipart else s.max_body_kb * 1024
        length = headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > limit:
            raise too_large(limit, multipart)
        timeout = s.read_timeout_s
        deadline = time.monotonic() + 10 * timeout
        seen = 0
        done = False

        async def guarded_receive() -> Message:
            nonlocal seen, done
            if done:
                return await receive()  # after the body: only http.disconnect, which may take any time
            wait = min(timeout, deadline - time.monotonic())
            try:
                message = await asyncio.wait_for(receive(), timeout=max(wait, 0.001))
            except TimeoutError:
                raise RequestTimeout(
                    f"the request body did not arrive in time (each part within {timeout:g} s, the whole within "
                    f"{10 * timeout:g} s); send it faster, or raise KAYNAK_READ_TIMEOUT_S"
                ) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise too_large(limit, multipart)
                done = not message.get("more_body", False)
            else:
                done = True
            return message

        return guarded_receive

    async def _refuse(self, send: Send, err: KaynakError, scope: Scope) -> None:
        response = error_response(err, scope.get("path"))
        if isinstance(err, RequestTooLarge | RequestTimeout):
            response.headers["Connection"] = "close"  # the rest of the body is not read
        await send({"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body})


__all__ = ["AuthError", "Guard", "check_host", "host_allowed", "mcp_transport_security", "origin_allowed", "too_large"]


def header_deadline_protocol(seconds: float) -> type:
    """uvicorn's h11 protocol with one addition: a request line and headers must arrive within ``seconds`` of the
    connection opening (or of the previous response), else the connection is closed. uvicorn itself waits for
    headers forever, so a client trickling them a byte at a time would hold a connection open (slowloris)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if self.cycle is None or self.cycle.response_complete:  # still waiting for a request's headers
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # the headers are in: the body has its own limits (Guard)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadline
