"""The REST routers under ``/v1``, one module per resource: search, collections, documents (and chunks), health,
sync, access (what a token allows), highlights, and originals (a document's file and its PDF pages drawn)."""

from __future__ import annotations

from . import access, collections, documents, health, highlights, originals, search, sync

ROUTERS = [
    search.router,
    collections.router,
    documents.router,
    health.router,
    sync.router,
    access.router,
    highlights.router,
    originals.router,
]

__all__ = ["ROUTERS"]
