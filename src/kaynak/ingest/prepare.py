"""What the ingest pipeline carries and how a file becomes it: one document made ready for embedding (``_Prepared``;
``_Group`` for a mailbox's messages), or skipped as unchanged, failed with a reason, or pending in a parse worker.

``prepare_file`` hashes a file, skips it when unchanged (or still failing with the same parser), and hands it to a
parse worker; ``prepare_loaded`` does the same for a document a program already loaded. ``pipeline.Run`` moves
what these return through embedding and writing.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kaynak.config import Settings
from kaynak.errors import CollectionMismatch, FileTooLarge, NoText
from kaynak.loaders import CONTAINER_EXTENSIONS, added_loaders
from kaynak.loaders.ocr import ocr_now_possible
from kaynak.store.writes import DocumentVersion
from kaynak.types import Chunk, Collection, LoadedDocument, Page

from .discovery import FileJob, file_sha256
from .workers import Parsed, ParseFailure, ParseTask

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder
    from kaynak.loaders import LoadOptions

#: Longest title kept (the title is part of every chunk's embedding text).
MAX_TITLE = 300


def embedding_text(title: str, section: str | None, text: str) -> str:
    """The contextual header the embedder sees before a chunk: ``title — section`` (the stored text stays as is)."""
    header = " — ".join(p for p in (title.strip(), (section or "").strip()) if p)
    return f"{header}\n{text}" if header else text


# ---------------------------------------------------------------------------------------------- pipeline items
@dataclass
class _Prepared:
    """A document ready to embed. Chunks from the parse workers come without their text (it is a slice of the page
    text, cut when needed), so a large document is held once, not three times (page, chunk, embedding text)."""

    source: str
    sha256: str
    title: str
    metadata: dict[str, Any]
    pages: list[Page]
    chunks: list[Chunk]
    warnings: list[str]
    origin: str | None = None
    file_stat: tuple[int, int] | None = None  # (size, mtime_ns) when hashed (kaynak.ingest.sync compares it)
    vectors: np.ndarray | None = None
    filled: int = 0
    chars: int = 0  # page text held in memory (the reader's budget)

    def chunk_text(self, i: int) -> str:
        c = self.chunks[i]
        if c.text or c.char_end <= c.char_start:
            return c.text
        return self._page(c.page).text[c.char_start : c.char_end]

    def embedding_text(self, i: int) -> str:
        c = self.chunks[i]
        return embedding_text(self.title, c.section, self.chunk_text(i))

    def with_chunk_texts(self) -> list[Chunk]:
        return [c if c.text else replace(c, text=self.chunk_text(i)) for i, c in enumerate(self.chunks)]

    def _page(self, number: int) -> Page:
        page = self.pages[number - 1] if 0 < number <= len(self.pages) else None
        if page is None or page.number != number:
            page = next(p for p in self.pages if p.number == number)
        return page


class _Group(_Prepared):
    """The documents one file holds (kaynak.types.LoadedDocument.parts), embedded as one item and written in one
    transaction (Store.replace_document_set): a mailbox is stored whole or not at all. ``chunks`` are all the
    members' chunks in order; the vectors are cut back per member when written."""

    def __init__(self, source: str, members: list[_Prepared], warnings: list[str], file_stat: tuple[int, int] | None):
        super().__init__(
            source,
            members[0].sha256,
            members[0].title,
            {},
            [p for m in members for p in m.pages],
            [c for m in members for c in m.chunks],
            warnings,
            members[0].origin,
            file_stat,
        )
        self.members = members
        self._where = [(i, j) for i, m in enumerate(members) for j in range(len(m.chunks))]

    def chunk_text(self, i: int) -> str:
        m, j = self._where[i]
        return self.members[m].chunk_text(j)

    def embedding_text(self, i: int) -> str:
        m, j = self._where[i]
        return self.members[m].embedding_text(j)

    def versions(self) -> list[DocumentVersion]:
        out: list[DocumentVersion] = []
        at = 0
        for m in self.members:
            vectors = None if self.vectors is None else self.vectors[at : at + len(m.chunks)]
            at += len(m.chunks)
            out.append(
                DocumentVersion(
                    m.source, m.sha256, m.title, m.metadata, m.pages, m.with_chunk_texts(), vectors,
                    m.warnings, m.origin, self.file_stat,
                )
            )  # fmt: skip
        return out


@dataclass
class _Queued:
    """What the embedding stage holds: documents waiting for (the rest of) their vectors, and their chunk count."""

    documents: deque[_Prepared] = field(default_factory=deque)
    chunks: int = 0  # chunks of ``documents`` not embedded yet
    producer_done: bool = False


@dataclass
class _Skip:
    """Unchanged since the stored version; ``warnings`` are the stored ones (reported again)."""

    source: str
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Fail:
    """Could not be ingested. ``sha256`` set: remember the failure (so an unchanged file is not parsed again)."""

    source: str
    error: str
    warnings: list[str] = field(default_factory=list)
    sha256: str | None = None


@dataclass
class _Pending:
    """A file handed to the parse workers; ``finish`` turns the worker's answer into a result."""

    source: str
    future: Future[Any]
    finish: Callable[[Any], _Prepared | _Skip | _Fail]
    size: int = 0  # bytes of the file (what its parsed text may come to, roughly)


_Result = _Prepared | _Skip | _Fail


# ---------------------------------------------------------------------------------------------- preparing
def check_collection(col: Collection, language: str | None, emb: Embedder) -> None:
    """Raise CollectionMismatch when ``col`` was built with another language or embedder."""
    if language is not None and col.language != language:
        raise CollectionMismatch(
            f"collection {col.name!r} was built with language {col.language!r}, not the requested {language!r}"
        )
    if col.embedder != emb.name or col.dim != emb.dim:
        raise CollectionMismatch(
            f"collection {col.name!r} was built with embedder {col.embedder!r} (dim {col.dim}), not "
            f"{emb.name!r} (dim {emb.dim}); ingest into another collection"
        )


def prepare_file(
    job: FileJob,
    known: dict[str, tuple[str, list[str]]],
    failures: dict[str, tuple[str, str, str]],
    max_bytes: int,
    settings: Settings,
    parser: str,
    submit: Callable[[ParseTask], Future[Any]],
    options: LoadOptions | None = None,
    members: dict[str, list[str]] | None = None,
) -> _Result | _Pending:
    """Stat and hash one file here; skip it when unchanged or when it failed before with the same bytes and
    limits; otherwise hand it to the parse workers (``submit``). Raises for a file that cannot be read.
    ``members``: kaynak.ingest.sources.container_index of ``known`` (a mailbox is unchanged when all the documents
    it gave are of its bytes)."""
    st = os.stat(job.path)
    if not stat.S_ISREG(st.st_mode):
        return _Fail(job.source, "not a regular file")
    if st.st_size > max_bytes:
        raise FileTooLarge(
            job.source,
            f"{st.st_size / 1048576:.1f} MB is over the limit of {settings.max_file_mb:g} MB "
            "(raise KAYNAK_MAX_FILE_MB to take it)",
        )
    sha = file_sha256(job.path)
    stored = known.get(job.source)
    if job.path.suffix.lower() in CONTAINER_EXTENSIONS and members is not None:
        held = [known[s] for s in [job.source, *members.get(job.source, [])] if s in known]
        if held and all(state[0] == sha for state in held):  # the file's documents are all of these bytes
            return _Skip(job.source, sorted({w for state in held for w in state[1]}))
    elif stored is not None and stored[0] == sha and not ocr_now_possible(stored[1]):
        return _Skip(job.source, stored[1])
    failed = failures.get(job.source)
    if failed is not None and failed[0] == sha and failed[2] == parser:
        reason = failed[1]
        if reason.startswith(job.source + ": "):
            reason = reason[len(job.source) + 2 :]
        return _Fail(job.source, f"still failing (unchanged since the last run): {reason}")
    task = ParseTask(
        os.fspath(job.path),
        max_bytes,
        options,
        settings.chunk_size,
        settings.chunk_overlap,
        loaders=added_loaders(),
    )
    origin = origin_of(job.path)

    def finish(answer: Parsed | ParseFailure) -> _Prepared | _Fail:
        if isinstance(answer, ParseFailure):
            return _Fail(job.source, answer.reason, answer.warnings, None if answer.transient else sha)
        title = bounded_title(answer.title) or bounded_title(Path(job.source).stem) or job.source[:MAX_TITLE]
        file_stat = (st.st_size, st.st_mtime_ns) if answer.sha256 == sha else None
        if answer.parts or job.path.suffix.lower() in CONTAINER_EXTENSIONS:
            return _group(job.source, title, answer, origin, file_stat)
        return _Prepared(
            job.source,
            answer.sha256,
            title,
            answer.metadata,
            answer.pages,
            answer.chunks,
            answer.warnings,
            origin,
            file_stat,
        )

    return _Pending(job.source, submit(task), finish, st.st_size)


def _group(source: str, title: str, answer: Parsed, origin: str | None, file_stat: tuple[int, int] | None) -> _Prepared:
    """The documents of a container file: itself (when it has text of its own) and its parts."""
    members: list[_Prepared] = []
    if answer.chunks:
        members.append(
            _Prepared(source, answer.sha256, title, answer.metadata, answer.pages, answer.chunks, [], origin, file_stat)
        )
    for suffix, part in answer.parts:
        part_title = bounded_title(part.title) or title
        members.append(
            _Prepared(
                source + suffix, part.sha256, part_title, part.metadata, part.pages, part.chunks, part.warnings, origin
            )
        )
    return _Group(source, members, answer.warnings, file_stat)


def origin_of(path: Path) -> str | None:
    """The file's absolute real path as stored text, or None when it is not valid UTF-8 (PostgreSQL text)."""
    real = os.path.realpath(path)
    try:
        real.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return real


def bounded_title(title: str | None) -> str:
    """A title on one line, at most MAX_TITLE characters (it is copied into every chunk's embedding text)."""
    text = " ".join((title or "").split())
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1].rstrip() + "…"


def prepare_loaded(source: str, sha: str, doc: LoadedDocument, settings: Settings) -> _Prepared:
    """Chunk a loaded document (in this process: used for in-memory documents)."""
    from kaynak.chunking import chunk_pages

    from .paging import paginate

    doc = paginate(doc, source)
    chunks = chunk_pages(doc.pages, chunk_size=settings.chunk_size, overlap=settings.chunk_overlap)
    if not chunks:
        raise NoText(source, "no text to index")
    title = bounded_title(doc.title) or bounded_title(Path(source).stem) or source[:MAX_TITLE]
    return _Prepared(source, sha, title, dict(doc.metadata), list(doc.pages), chunks, list(doc.warnings))
