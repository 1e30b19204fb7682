"""A small search corpus for tests: hash embeddings, one chunk per paragraph, a Turkish and an English document,
and a SearchService over them (used by the search, match and query-syntax tests)."""

from __future__ import annotations

import re
import uuid

from kaynak.config import Settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.search import SearchService
from kaynak.store import Store
from kaynak.types import Chunk, Collection, Page

HASH = HashEmbedder()


def factory(name: str) -> HashEmbedder:
    assert name == "hash", name
    return HASH


def paragraphs(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"[^\n]+(?:\n(?!\n)[^\n]+)*", text)]


def add_doc(
    store: Store,
    col: Collection,
    source: str,
    pages: list[str],
    metadata: dict | None = None,
    embed: bool = True,
    embedder: HashEmbedder = HASH,
) -> None:
    """One chunk per paragraph (blank-line separated), offsets into the page, hash embeddings."""
    page_objs, chunks = [], []
    for number, text in enumerate(pages, start=1):
        page_objs.append(Page(number, text))
        for s, e in paragraphs(text):
            chunks.append(Chunk(len(chunks), number, None, s, e, text[s:e]))
    emb = embedder.embed_passages([c.text for c in chunks]) if embed else None
    store.replace_document(col, source, uuid.uuid4().hex, source, metadata or {}, page_objs, chunks, emb)


def make_service(store: Store, default: str = "default", **settings: object) -> SearchService:
    return SearchService(store, Settings(collection=default, embedder="hash", **settings), factory)


TR_DOC = [
    "Kat mülkiyeti kanunu, bir binanın bağımsız bölümleri üzerindeki mülkiyeti düzenler.\n\n"
    "Kat malikleri kurulu yılda en az bir kez toplanır. Toplantıda yönetici seçilir ve işletme projesi "
    "görüşülür.\n\n"
    "Ortak giderlere her kat maliki arsa payı oranında katılır.",
    "Iğdır ilinde kayısı üretimi yaygındır. Iğdır ovası verimli topraklara sahiptir.\n\n"
    "İstanbul'daki binalarda asansör bakımı yılda bir kez yapılmalıdır.",
]
EN_DOC = [
    "The pump must be serviced every six months. Worn seals leak under high pressure.\n\n"
    "Replace the filter when the pressure gauge shows a drop of more than 20 percent.\n\n"
    "Error E11000 means a duplicate key was inserted; see hnsw.ef_search for tuning recall.",
]
