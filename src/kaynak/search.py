"""SearchService: the read side of kaynak — hybrid search, and browsing collections, documents and chunks.

Every face (CLI, REST, MCP) reads through this class; it never writes, which is what makes the MCP server
read-only by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kaynak.config import Settings
from kaynak.store import Store
from kaynak.types import ChunkRecord, Collection, DocumentInfo

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder
    from kaynak.rerank import Reranker


class SearchService:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        embedder_factory: Callable[[str], Embedder],
        reranker_factory: Callable[[str | None], Reranker | None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.embedder_factory = embedder_factory
        self.reranker_factory = reranker_factory

    # ------------------------------------------------------------------ browsing
    def list_collections(self) -> list[Collection]:
        return self.store.list_collections()

    def get_collection(self, name: str) -> Collection:
        return self.store.get_collection(name)

    def list_documents(
        self, collection: str, prefix: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentInfo]:
        return self.store.list_documents(self.store.get_collection(collection), prefix, limit, offset)

    def get_document(self, collection: str, source: str) -> DocumentInfo:
        return self.store.get_document(self.store.get_collection(collection), source)

    def chunk_context(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]:
        """The chunk and its neighbours in the same document, in order."""
        return self.store.chunk_with_neighbours(chunk_id, max(0, before), max(0, after))

    def page_text(self, collection: str, source: str, page: int) -> str:
        return self.store.get_page(self.store.get_collection(collection), source, page)
