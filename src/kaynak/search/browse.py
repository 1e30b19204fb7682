"""Browse what is indexed: collections, their documents and languages, a document's pages, a chunk's context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kaynak.store import Store
from kaynak.types import ChunkRecord, Collection, DocumentInfo


class Browse:
    """The browsing half of ``SearchService`` (read-only, like the rest of it)."""

    store: Store

    def list_collections(self) -> list[Collection]:
        return self.store.list_collections()

    def get_collection(self, name: str) -> Collection:
        return self.store.get_collection(name)

    def document_languages(self, names: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Collection name → the languages its documents are written in (detected at ingest), e.g. ``["english",
        "turkish"]`` for a collection holding both, whatever its text search configuration."""
        return self.store.document_languages(names)

    def list_documents(
        self, collection: str, prefix: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentInfo]:
        return self.store.list_documents(self.store.get_collection(collection), prefix, limit, offset)

    def count_documents(self, collection: str, prefix: str | None = None) -> int:
        """How many documents ``list_documents`` pages through."""
        return self.store.count_documents(self.store.get_collection(collection), prefix)

    def get_document(self, collection: str, source: str) -> DocumentInfo:
        return self.store.get_document(self.store.get_collection(collection), source)

    def chunk_context(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]:
        """The chunk and its neighbours in the same document, in order."""
        return self.store.chunk_with_neighbours(chunk_id, max(0, before), max(0, after))

    def page_text(self, collection: str, source: str, page: int) -> str:
        return self.store.get_page(self.store.get_collection(collection), source, page)

    def document_origin(self, document_id: int) -> tuple[DocumentInfo, str | None]:
        """A document by id, with the path of the file it was ingested from (None if unknown; the web page)."""
        return self.store.document_origin(document_id)


def page_piece(text: str, offset: int, max_chars: int | None) -> dict[str, Any]:
    """``text[offset:offset + max_chars]`` with ``offset``, ``total_chars`` and ``next_offset`` (None at the end):
    the bounded page read of MCP's ``read_page`` and REST's ``GET …/page``."""
    total = len(text)
    start = min(offset, total)
    end = total if max_chars is None else min(total, start + max_chars)
    return {"text": text[start:end], "offset": start, "total_chars": total, "next_offset": end if end < total else None}
