"""IngestService: the write side of kaynak — files in, searchable chunks out; collections and documents managed.

Only the CLI and the REST API's authenticated write endpoints use this class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kaynak.config import Settings
from kaynak.errors import UsageError
from kaynak.store import Store
from kaynak.types import LANGUAGES, Collection

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder


class IngestService:
    def __init__(self, store: Store, settings: Settings, embedder_factory: Callable[[str], Embedder]) -> None:
        self.store = store
        self.settings = settings
        self.embedder_factory = embedder_factory

    # ------------------------------------------------------------------ collections and documents
    def create_collection(self, name: str, language: str | None = None, embedder: str | None = None) -> Collection:
        language = language or self.settings.language or "simple"
        if language not in LANGUAGES:
            raise UsageError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}", "language")
        emb = self.embedder_factory(embedder or self.settings.embedder)
        return self.store.create_collection(name, language, emb.name, emb.dim)

    def delete_collection(self, name: str) -> None:
        self.store.delete_collection(name)

    def delete_document(self, collection: str, source: str) -> None:
        col = self.store.get_collection(collection)
        if not self.store.delete_document(col, source):
            from kaynak.errors import DocumentNotFound

            raise DocumentNotFound(f"collection {collection!r} has no document {source!r}")
