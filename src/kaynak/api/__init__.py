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

from kaynak.errors import AuthError

from .problems import problem
from .uploads import safe_relpath

__all__ = ["AuthError", "problem", "safe_relpath"]
