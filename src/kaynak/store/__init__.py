"""The store: PostgreSQL + pgvector. ``Store`` holds every SQL statement; ``server`` finds or starts the server."""

from kaynak.store.store import SearchFilters, Store, chunk_id

__all__ = ["SearchFilters", "Store", "chunk_id"]
