"""The REST API (``/v1``): its routers, auth, limits and error answers; ``kaynak.server`` assembles the app.

A thin face over ``SearchService`` (reads) and ``IngestService`` (writes): request parsing, auth, uploads and error
translation live here; no SQL and no search logic. Blocking service calls run in the thread pool, so a long ingest
never stalls searches on the event loop. Layout (FastAPI's "bigger applications"):

- ``deps``: the Context dependency, read / write auth, the NUL guard.
- ``problems``: RFC 9457 ``application/problem+json`` answers and the exception handlers.
- ``limits``: ASGI middleware that refuses requests before they are read (body caps).
- ``models`` / ``uploads``: request and response bodies; accepted upload types and safe names.
- ``routes/``: one router per resource (search, collections, documents, health, sync, access, highlights,
  originals).

Writes need ``Authorization: Bearer <KAYNAK_API_TOKEN>`` (403 when none is configured); reads are open unless
``KAYNAK_READ_TOKEN`` is set. ``/v1/health``, ``/docs`` and ``/openapi.json`` stay open.
"""

from __future__ import annotations

from typing import Any

from kaynak.errors import AuthError

__all__ = ["AuthError", "problem", "safe_relpath"]


def __getattr__(name: str) -> Any:
    """``problem`` and ``safe_relpath`` on first use: importing ``kaynak.api.models`` (the MCP server's output
    schemas) must not load FastAPI and the ingest package, which would slow ``kaynak mcp``'s start."""
    if name == "problem":
        from .problems import problem

        return problem
    if name == "safe_relpath":
        from .uploads import safe_relpath

        return safe_relpath
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
