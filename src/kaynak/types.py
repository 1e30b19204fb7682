"""Plain data types that flow through the pipeline: Page, LoadedDocument, Chunk, Collection, Hit, …

Data flows one way: file → loader → LoadedDocument(pages) → chunker → Chunk → embedder → store;
query → search → Hit. These are dataclasses with no behaviour beyond small helpers, so every module can use them
without importing any other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Section:
    """A span of a page's text under one heading path (``Install › From source``)."""

    start: int
    end: int
    path: str


@dataclass
class Page:
    """One page of a document (PDF page, form-feed page; other formats have a single page 1).

    ``text`` is the single source of truth that chunk and quote offsets point into. ``sections`` are
    non-overlapping spans in text order; text outside every span has no section.
    """

    number: int
    text: str
    sections: list[Section] = field(default_factory=list)

    def section_at(self, offset: int) -> str | None:
        for s in self.sections:
            if s.start <= offset < s.end:
                return s.path
        return None


@dataclass
class LoadedDocument:
    """What a loader returns: a title, metadata (front matter, PDF info, …), pages, and non-fatal warnings.

    ``parts``: the other documents the file holds (a mailbox's messages, a message's attachments), each as
    ``(suffix, document)``, stored as a document of its own under the source ``<file's source><suffix>`` (the suffix
    starts with ``#``). A container whose own ``pages`` hold no text (a mailbox) is not stored itself. All the
    documents of one file are written in one transaction (Store.replace_document_set).
    """

    title: str
    pages: list[Page]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    parts: list[tuple[str, LoadedDocument]] = field(default_factory=list)


@dataclass(frozen=True)
class Chunk:
    """A piece of one page: ``page_text[char_start:char_end] == text``."""

    ord: int
    page: int
    section: str | None
    char_start: int
    char_end: int
    text: str


@dataclass
class Collection:
    id: int
    name: str
    language: str
    embedder: str
    dim: int
    document_count: int = 0
    chunk_count: int = 0
    created_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DocumentInfo:
    id: int
    collection: str
    source: str
    sha256: str
    title: str
    page_count: int
    chunk_count: int
    metadata: dict[str, Any] = field(default_factory=dict)
    ingested_at: str | None = None
    warnings: list[str] = field(default_factory=list)  # what went wrong while reading it (it was stored anyway)
    origin: str | None = None  # absolute path of the file at ingest time (None: unknown)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ChunkRecord:
    """A stored chunk with its document's identity, as the store returns it."""

    id: str
    collection: str
    document_id: int
    source: str
    title: str
    ord: int
    page: int
    section: str | None
    char_start: int
    char_end: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Quote:
    """A verbatim passage of a page: ``page_text[char_start:char_end] == text``. ``cut_start`` / ``cut_end``: it
    starts / ends inside a sentence (faces show "…" there; the offsets stay exact)."""

    text: str
    char_start: int
    char_end: int
    cut_start: bool = False
    cut_end: bool = False


@dataclass
class Hit:
    chunk_id: str
    collection: str
    source: str
    title: str
    page: int
    section: str | None
    char_start: int
    char_end: int
    score: float
    scores: dict[str, float | int | None]
    quote: Quote
    text: str = ""
    document_id: int | None = None  # the document's id (the web page opens the original file by it)
    ocr: dict[str, Any] | None = None  # {"confidence": 0–100} when the page was OCR'd: the quote is OCR text
    stale: bool = False  # the document's file changed on disk after it was indexed (kaynak.staleness)
    # {"probability": 0–1, "label": "strong" | "partial" | "weak"}: how likely the hit answers (kaynak.match)
    match: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
