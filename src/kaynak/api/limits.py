"""ASGI middleware that refuses requests before the app reads them: body size caps (and, later, Host checks).

``UploadLimit`` caps multipart request bodies at ``max_upload_mb``: by ``Content-Length`` before anything is
read, and while streaming (a body that lies about its length is cut off when it passes the limit).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kaynak.errors import RequestTooLarge

from .problems import send_problem


def upload_too_large(limit_bytes: int) -> RequestTooLarge:
    return RequestTooLarge(
        f"the upload is larger than the limit of {limit_bytes / 1_048_576:g} MB; send fewer or smaller files, "
        "or raise KAYNAK_MAX_UPLOAD_MB"
    )


class UploadLimit:
    """ASGI wrapper: refuse request bodies over the limit on uploads, by Content-Length and while streaming."""

    def __init__(self, app: ASGIApp, limit_bytes: Callable[[], int]) -> None:
        self.app = app
        self.limit_bytes = limit_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not headers.get("content-type", "").startswith("multipart/"):
            await self.app(scope, receive, send)
            return
        limit = self.limit_bytes()
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            err = upload_too_large(limit)
            await send_problem(send, err.status, "file too large", err.message, scope.get("path"))
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise upload_too_large(limit)
            return message

        await self.app(scope, counting_receive, send)
