"""The REST routers under ``/v1``, one module per resource: search, collections, documents (and chunks), health."""

from __future__ import annotations

from . import collections, documents, health, search, sync

ROUTERS = [search.router, collections.router, documents.router, health.router, sync.router]

__all__ = ["ROUTERS"]
