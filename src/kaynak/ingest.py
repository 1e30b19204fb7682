"""IngestService: the write side of kaynak — files in, searchable chunks out; collections and documents managed.

Only the CLI and the REST API's authenticated write endpoints (and the evaluation harness) use this class.

Pipeline (docs/adr/0006-ingest-pipeline.md)::

    discover files ──► [reader thread] hash → skip unchanged → load → chunk → header texts
                         │ bounded queue
                         ▼
                       [calling thread] embed in batches across documents (keeps the embedder busy);
                         a new collection is created here once 16 documents are in (language detection)
                         │ bounded queue
                         ▼
                       [2 writer threads] one transaction per document: replace_document(skip_if_unchanged=True)

Identity is (collection, source); ``source`` is the path relative to the ingest root (a folder argument's own
folder, or a file argument's parent). The sha256 of the file's bytes decides: unchanged → skipped before
loading; changed → replaced atomically; new → added. Every document commits on its own, so a killed ingest
leaves whole documents only and the next run completes the work.

Language of a new collection: the explicit ``language``, else ``settings.language``, else detected from the
first documents (``kaynak.langdetect``: Turkish vs English), else ``simple``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import re
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kaynak.config import Settings
from kaynak.errors import (
    CollectionMismatch,
    CollectionNotFound,
    DocumentNotFound,
    DocumentRejected,
    FileTooLarge,
    KaynakError,
    NoText,
    UsageError,
)
from kaynak.langdetect import detect_collection_language
from kaynak.store import Store
from kaynak.types import LANGUAGES, Chunk, Collection, LoadedDocument, Page

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder

log = logging.getLogger(__name__)

# Extensions picked up from folders when the loaders package cannot say (it always can once installed).
_FALLBACK_EXTENSIONS = frozenset({".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx"})

# How many documents a new collection's language is detected from, at most (or this many characters).
_DETECT_DOCS = 16
_DETECT_CHARS = 200_000
# How long the embedder waits for more texts to fill a batch before it embeds a partial one.
_FILL_WAIT = 0.2

EventKind = Literal["start", "document", "embedded", "removed", "stopping", "done"]


@dataclass
class IngestEvent:
    """What a progress callback receives. Callbacks run on worker threads, one at a time.

    ``document`` events carry ``source`` and ``status`` (added, updated, unchanged, failed; ``error`` for
    failed); ``embedded`` events follow every embedding batch; the counters are totals so far.
    ``files_total`` is None when the number of documents is not known in advance.
    """

    kind: EventKind
    source: str | None = None
    status: str | None = None
    error: str | None = None
    files_total: int | None = None
    files_done: int = 0
    chunks_embedded: int = 0
    chunks_written: int = 0


@dataclass
class IngestReport:
    """What an ingest did. ``to_dict()`` is what the CLI's ``--json``, the REST API and MCP return."""

    collection: str
    language: str | None = None
    embedder: str | None = None
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    ignored: int = 0
    seconds: float = 0.0
    truncated: int = 0
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d

    def summary(self) -> str:
        parts = [
            f"{len(self.added)} added",
            f"{len(self.updated)} updated",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.removed)} removed",
            f"{len(self.failed)} failed",
        ]
        return (
            f"{self.collection}: {', '.join(parts)}; {self.chunks} chunks written, {self.embedded} embedded "
            f"in {self.seconds:.1f} s"
        )


# ---------------------------------------------------------------------------------------------- file discovery
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` matches across folders, ``*`` within one, ``?`` one character; everything else is literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class PathFilter:
    """Include/exclude globs on sources (paths relative to the ingest root, with ``/``).

    A pattern with a ``/`` matches the whole relative path (``docs/**/*.md``); one without matches any single
    path segment, so ``*.pdf`` matches PDFs at any depth and ``drafts`` excludes everything under a ``drafts``
    folder. A source is taken when it matches some include (or there are none) and no exclude.
    """

    def __init__(self, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None) -> None:
        self.include = [p.strip().strip("/") for p in include or [] if p.strip()]
        self.exclude = [p.strip().strip("/") for p in exclude or [] if p.strip()]
        self._inc = [(("/" in p), _glob_regex(p)) for p in self.include]
        self._exc = [(("/" in p), _glob_regex(p)) for p in self.exclude]

    @staticmethod
    def _match(source: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
        segments = source.split("/")
        for whole, rx in patterns:
            if whole:
                if rx.match(source):
                    return True
            elif any(rx.match(seg) for seg in segments):
                return True
        return False

    def explicit_include(self, source: str) -> bool:
        return bool(self._inc) and self._match(source, self._inc)

    def __call__(self, source: str) -> bool:
        if self._inc and not self._match(source, self._inc):
            return False
        return not (self._exc and self._match(source, self._exc))


@dataclass
class FileJob:
    path: Path
    source: str


@dataclass
class Discovery:
    jobs: list[FileJob] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # every source present on disk in scope (jobs and failures)
    ignored: int = 0


def supported_extensions() -> frozenset[str]:
    try:
        from kaynak.loaders import SUPPORTED_EXTENSIONS
    except ImportError:
        return _FALLBACK_EXTENSIONS
    return frozenset(e.lower() if e.startswith(".") else "." + e.lower() for e in SUPPORTED_EXTENSIONS)


def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def discover(paths: Sequence[str | Path], path_filter: PathFilter) -> Discovery:
    """The files to ingest under ``paths``, sorted by source; raises UsageError for a path that does not exist.

    Folders are walked recursively; hidden files and folders (``.git``, ``.DS_Store`` …) are left out, and so
    are files whose extension no loader reads (counted in ``ignored``) unless an include pattern names them.
    Symbolic links are followed only when they lead to a place inside the ingest root; others are reported.
    """
    if not paths:
        raise UsageError("name at least one file or folder to ingest", "paths")
    exts = supported_extensions()
    found = Discovery()
    owners: dict[str, Path] = {}

    def add(path: Path, source: str, explicit: bool) -> None:
        if not explicit and not path_filter(source):
            return
        if source in owners:
            if owners[source].resolve() == path.resolve():  # the same file named twice
                return
            found.failed.append(
                {"source": source, "error": f"{path}: same source name as {owners[source]}; ingest them separately "
                 "or into different collections"}
            )
            return
        owners[source] = path
        if not explicit and path.suffix.lower() not in exts and not path_filter.explicit_include(source):
            found.ignored += 1
            return
        found.seen.add(source)
        found.jobs.append(FileJob(path, source))

    def fail(source: str, error: str) -> None:
        if path_filter(source):
            found.seen.add(source)
            found.failed.append({"source": source, "error": error})

    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists() and not p.is_symlink():
            raise UsageError(f"{p} does not exist; name an existing file or folder", "paths")
        if not p.is_dir():
            if not p.exists():
                fail(p.name, f"{p}: broken symbolic link (to {os.readlink(p)})")
            else:
                add(p, p.name, explicit=True)
            continue
        root = p.resolve()

        def walk_error(err: OSError, root: Path = root) -> None:
            where = Path(err.filename or root)
            source = where.relative_to(root).as_posix() if _within(where, root) else str(where)
            fail(source, f"{where}: cannot read the folder ({err.strerror or err})")

        for dirpath, dirnames, filenames in os.walk(root, onerror=walk_error, followlinks=False):
            here = Path(dirpath)
            dirnames.sort()
            keep = []
            for d in dirnames:
                if d.startswith("."):
                    continue
                full = here / d
                if full.is_symlink():
                    target = full.resolve()
                    if not _within(target, root):
                        fail(full.relative_to(root).as_posix(),
                             f"{full}: symbolic link to {target}, outside the ingest root {root}; not followed")
                    # A link to a folder inside the root: its files are reached through their real path.
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                full = here / name
                source = full.relative_to(root).as_posix()
                if full.is_symlink():
                    target = full.resolve()
                    if not target.exists():
                        fail(source, f"{full}: broken symbolic link (to {os.readlink(full)})")
                        continue
                    if not _within(target, root):
                        fail(source, f"{full}: symbolic link to {target}, outside the ingest root {root}; "
                             "not followed")
                        continue
                add(full, source, explicit=False)
    found.jobs.sort(key=lambda j: j.source)
    return found


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def embedding_text(title: str, section: str | None, text: str) -> str:
    """The contextual header the embedder sees before a chunk: ``title — section`` (the stored text stays as is)."""
    header = " — ".join(p for p in (title.strip(), (section or "").strip()) if p)
    return f"{header}\n{text}" if header else text


# ---------------------------------------------------------------------------------------------- pipeline items
@dataclass
class _Prepared:
    source: str
    sha256: str
    title: str
    metadata: dict[str, Any]
    pages: list[Page]
    chunks: list[Chunk]
    texts: list[str]
    warnings: list[str]
    vectors: np.ndarray | None = None
    filled: int = 0


@dataclass
class _Skip:
    source: str


@dataclass
class _Fail:
    source: str
    error: str


_Result = _Prepared | _Skip | _Fail
_DONE = object()


def _source_of(item: Any) -> str:
    if isinstance(item, FileJob):
        return item.source
    try:
        return str(item[0])
    except (TypeError, IndexError, KeyError):
        return repr(item)[:200]


def _describe(err: BaseException) -> str:
    if isinstance(err, KaynakError):
        return err.message
    if isinstance(err, OSError):
        where = f"{err.filename}: " if err.filename else ""
        return f"{where}cannot read the file ({err.strerror or err})"
    return f"{type(err).__name__}: {err}"


class _Run:
    """One ingest: the three stages, their queues, the report and the progress counters."""

    def __init__(
        self,
        service: IngestService,
        name: str,
        collection: Collection | None,
        language: str | None,
        explicit_language: str | None,
        emb: Embedder,
        known: dict[str, str],
        files_total: int | None,
        progress: Callable[[IngestEvent], None] | None,
        stop: threading.Event | None,
    ) -> None:
        self.svc = service
        self.name = name
        self.collection = collection
        self.language = language
        self.explicit_language = explicit_language
        self.emb = emb
        self.known = known
        self.progress = progress
        self.stop = stop or threading.Event()
        self.abort = threading.Event()  # a stage failed: everyone stops now
        self.closed = threading.Event()  # the embedder stopped reading: the reader stops too
        self.errors: list[BaseException] = []
        s = service.settings
        self.batch = s.embed_batch
        self.report = IngestReport(collection=name, embedder=emb.name, language=collection.language if collection
                                   else None)
        self.files_total = files_total
        self.files_done = 0
        self.chunks_embedded = 0
        self.chunks_written = 0
        self._lock = threading.Lock()
        self.ready: queue.Queue[Any] = queue.Queue(maxsize=32)
        self.to_write: queue.Queue[Any] = queue.Queue(maxsize=8)
        # Two writers overlap one document's commit with the next one's COPY; more only add lock traffic.
        self.n_writers = max(1, min(2, s.pool_size - 1))
        self.backlog: list[_Prepared] = []  # embedded documents waiting for a new collection's language
        self.backlog_chars = 0

    # ----------------------------------------------------------------- bookkeeping (any thread)
    def emit(self, kind: EventKind, **kw: Any) -> None:
        if self.progress is None:
            return
        ev = IngestEvent(kind, files_total=self.files_total, files_done=self.files_done,
                         chunks_embedded=self.chunks_embedded, chunks_written=self.chunks_written, **kw)
        try:
            self.progress(ev)
        except Exception:  # a broken progress display must not break the ingest
            log.exception("progress callback failed")

    def record(self, source: str, status: str, error: str | None = None, chunks: int = 0) -> None:
        with self._lock:
            r = self.report
            if status == "failed":
                error = error or "unknown error"
                if source not in error:
                    error = f"{source}: {error}"
                r.failed.append({"source": source, "error": error})
            else:
                getattr(r, status).append(source)
            r.chunks += chunks
            self.chunks_written += chunks
            self.files_done += 1
            self.emit("document", source=source, status=status, error=error)

    # ----------------------------------------------------------------- stage 1: read, load, chunk
    def produce(self, items: Iterable[Any], prepare: Callable[[Any], _Result]) -> None:
        try:
            for item in items:
                if self.stop.is_set() or self.abort.is_set():
                    break
                try:
                    result = prepare(item)
                except Exception as err:  # every bad file is reported and the run goes on
                    result = _Fail(_source_of(item), _describe(err))
                if not self._put(self.ready, result, self.closed):
                    break
        except BaseException as err:  # the items iterable itself failed (e.g. a bad data set)
            self.errors.append(err)
            self.abort.set()
        finally:
            self._put(self.ready, _DONE, self.closed)

    def _put(self, q: queue.Queue[Any], item: Any, cancel: threading.Event) -> bool:
        """Put ``item`` on ``q``, waiting while it is full, unless ``cancel`` is set first."""
        while not cancel.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    # ----------------------------------------------------------------- stage 2: embed (calling thread)
    def embed_loop(self) -> None:
        pending: deque[_Prepared] = deque()
        n_pending = 0
        producer_done = False
        truncated_before = self.emb.truncated
        try:
            while not self.abort.is_set():
                # Fill a batch; once something is pending, wait at most _FILL_WAIT for more, then embed a
                # partial batch rather than let the embedder idle behind a slow file.
                fill_until = None
                while not producer_done and n_pending < self.batch and not self.stop.is_set():
                    if n_pending and fill_until is None:
                        fill_until = time.monotonic() + _FILL_WAIT
                    wait = 0.1 if fill_until is None else fill_until - time.monotonic()
                    try:
                        item = self.ready.get(timeout=wait) if wait > 0 else self.ready.get_nowait()
                    except queue.Empty:
                        if n_pending == 0 and not self.abort.is_set():
                            continue
                        break
                    if item is _DONE:
                        producer_done = True
                    elif isinstance(item, _Skip):
                        self.record(item.source, "unchanged")
                    elif isinstance(item, _Fail):
                        self.record(item.source, "failed", item.error)
                    else:
                        pending.append(item)
                        n_pending += len(item.texts)
                if self.stop.is_set():
                    # Finish the documents already started; start no new ones.
                    dropped = [d for d in pending if d.filled == 0]
                    if dropped:
                        pending = deque(d for d in pending if d.filled > 0)
                        n_pending = sum(len(d.texts) - d.filled for d in pending)
                        self.report.interrupted = True
                if n_pending == 0:
                    if producer_done or self.stop.is_set():
                        break
                    continue
                texts: list[str] = []
                for d in pending:
                    take = min(len(d.texts) - d.filled, self.batch - len(texts))
                    texts.extend(d.texts[d.filled : d.filled + take])
                    if len(texts) >= self.batch:
                        break
                vecs = self.emb.embed_passages(texts)
                pos = 0
                while pending and pos < len(vecs):
                    d = pending[0]
                    if d.vectors is None:
                        d.vectors = np.empty((len(d.texts), vecs.shape[1]), dtype=np.float32)
                    take = min(len(d.texts) - d.filled, len(vecs) - pos)
                    d.vectors[d.filled : d.filled + take] = vecs[pos : pos + take]
                    d.filled += take
                    pos += take
                    if d.filled == len(d.texts):
                        pending.popleft()
                        self._forward(d)
                n_pending -= len(texts)
                with self._lock:
                    self.chunks_embedded += len(texts)
                    self.report.embedded += len(texts)
                    self.emit("embedded")
            if self.stop.is_set() and not producer_done:
                self.report.interrupted = True
            self._flush_backlog()
        finally:
            self.report.truncated = max(0, self.emb.truncated - truncated_before)
            for _ in range(self.n_writers):
                self._put(self.to_write, _DONE, self.abort)

    def _forward(self, d: _Prepared) -> None:
        """Hand an embedded document to the writers; a new collection is created once a sample is in."""
        if self.collection is not None:
            self._put(self.to_write, d, self.abort)
            return
        self.backlog.append(d)
        self.backlog_chars += sum(len(p.text) for p in d.pages)
        if len(self.backlog) >= _DETECT_DOCS or self.backlog_chars >= _DETECT_CHARS:
            self._flush_backlog()

    def _flush_backlog(self) -> None:
        if self.backlog and not self.abort.is_set():
            self._create_collection(self.backlog)
            for item in self.backlog:
                self._put(self.to_write, item, self.abort)
        self.backlog = []

    # ----------------------------------------------------------------- stage 3: write (writer threads)
    def write_loop(self) -> None:
        try:
            while True:
                try:
                    item = self.to_write.get(timeout=0.1)
                except queue.Empty:
                    if self.abort.is_set():
                        return
                    continue
                if item is _DONE or self.abort.is_set():
                    return
                self._write(item)
        except BaseException as err:
            self.errors.append(err)
            self.abort.set()

    def _create_collection(self, sample: list[_Prepared]) -> None:
        language = self.language
        if language is None:
            language = detect_collection_language(
                "\n".join(p.text for p in d.pages)[:20_000] for d in sample
            ) or "simple"
        col = self.svc.store.ensure_collection(self.name, language, self.emb.name, self.emb.dim)
        self.svc._check_collection(col, self.explicit_language, self.emb)
        self.collection = col
        self.report.language = col.language

    def _write(self, d: _Prepared) -> None:
        assert self.collection is not None
        for w in d.warnings:
            self.report.warnings.append({"source": d.source, "warning": w})
        try:
            doc_id = self.svc.store.replace_document(
                self.collection, d.source, d.sha256, d.title, d.metadata, d.pages, d.chunks, d.vectors,
                skip_if_unchanged=True,
            )
        except DocumentRejected as err:  # e.g. text PostgreSQL cannot hold; this document only
            self.record(d.source, "failed", str(err))
            return
        if doc_id is None:
            self.record(d.source, "unchanged")
        elif d.source in self.known:
            self.record(d.source, "updated", chunks=len(d.chunks))
        else:
            self.record(d.source, "added", chunks=len(d.chunks))
        d.vectors = None

    # ----------------------------------------------------------------- all together
    def run(self, items: Iterable[Any], prepare: Callable[[Any], _Result]) -> None:
        reader = threading.Thread(target=self.produce, args=(items, prepare), name="kaynak-ingest-read", daemon=True)
        writers = [
            threading.Thread(target=self.write_loop, name=f"kaynak-ingest-write-{i}", daemon=True)
            for i in range(self.n_writers)
        ]
        reader.start()
        for w in writers:
            w.start()
        try:
            self.embed_loop()
        except BaseException:
            self.abort.set()
            self.closed.set()
            reader.join(timeout=5)
            for w in writers:
                w.join(timeout=5)
            raise
        self.closed.set()
        for w in writers:
            w.join()
        reader.join(timeout=5)
        if self.errors:
            err = self.errors[0]
            raise err


# ---------------------------------------------------------------------------------------------- the service
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
            raise DocumentNotFound(f"collection {collection!r} has no document {source!r}")

    # ------------------------------------------------------------------ ingest
    def ingest(
        self,
        paths: Sequence[str | Path],
        collection: str | None = None,
        *,
        language: str | None = None,
        embedder: str | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        prune: bool = False,
        progress: Callable[[IngestEvent], None] | None = None,
        stop: threading.Event | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively) into ``collection`` (default: settings.collection).

        Unchanged files (same sha256 as stored) are skipped unread; changed ones are replaced atomically; new
        ones added. With ``prune``, documents whose files are no longer under ``paths`` (within the include /
        exclude selection) are removed — the collection then mirrors the paths. Per-file problems end up in
        ``report.failed`` and the run goes on; a missing path or a collection that exists with another
        language or embedder raises before anything changes. Setting ``stop`` ends the run after the documents
        being embedded are written (``report.interrupted``).
        """
        if isinstance(paths, str | Path):
            paths = [paths]
        t0 = time.perf_counter()
        name = collection or self.settings.collection
        path_filter = PathFilter(include, exclude)
        found = discover(paths, path_filter)
        col, lang, emb = self._resolve(name, language, embedder)
        known = self.store.document_hashes(col) if col is not None else {}
        max_bytes = int(self.settings.max_file_mb * 1024 * 1024)

        from kaynak.loaders import LoadOptions

        options = LoadOptions(lang, self.settings.data_dir, self.settings.ocr_languages)

        def prepare(job: FileJob) -> _Result:
            return self._prepare_file(job, known, max_bytes, options)

        run = _Run(self, name, col, lang, language, emb, known, len(found.jobs) + len(found.failed), progress, stop)
        run.report.ignored = found.ignored
        run.emit("start")
        for f in found.failed:
            run.record(f["source"], "failed", f["error"])
        run.run(found.jobs, prepare)
        report = run.report
        if prune and run.collection is not None and not report.interrupted:
            gone = [s for s in sorted(self.store.document_hashes(run.collection))
                    if s not in found.seen and path_filter(s)]
            for source in gone:
                if self.store.delete_document(run.collection, source):
                    report.removed.append(source)
                    run.emit("removed", source=source, status="removed")
        report.seconds = round(time.perf_counter() - t0, 3)
        run.emit("done")
        return report

    def ingest_documents(
        self,
        collection: str,
        documents: Iterable[tuple[str, str, LoadedDocument]],
        *,
        language: str | None = None,
        embedder: str | None = None,
        progress: Callable[[IngestEvent], None] | None = None,
        stop: threading.Event | None = None,
    ) -> IngestReport:
        """Ingest in-memory documents given as (source, sha256, LoadedDocument), through the same pipeline.

        A document whose sha256 equals the stored one is skipped without chunking or embedding. Used by the
        evaluation harness (BEIR corpora) and the REST upload.
        """
        t0 = time.perf_counter()
        col, lang, emb = self._resolve(collection, language, embedder)
        known = self.store.document_hashes(col) if col is not None else {}
        total = len(documents) if hasattr(documents, "__len__") else None

        def prepare(item: tuple[str, str, LoadedDocument]) -> _Result:
            source, sha, doc = item
            if not source or not isinstance(source, str):
                raise UsageError(f"document source must be a non-empty string, got {source!r}", "source")
            if known.get(source) == sha:
                return _Skip(source)
            return self._prepare_loaded(source, sha, doc)

        run = _Run(self, collection, col, lang, language, emb, known, total, progress, stop)
        run.emit("start")
        run.run(documents, prepare)
        run.report.seconds = round(time.perf_counter() - t0, 3)
        run.emit("done")
        return run.report

    # ------------------------------------------------------------------ internals
    def _resolve(
        self, name: str, language: str | None, embedder: str | None
    ) -> tuple[Collection | None, str | None, Embedder]:
        """The existing collection (checked against explicit choices) or None, the language, the embedder."""
        if language is not None and language not in LANGUAGES:
            raise UsageError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}", "language")
        try:
            col: Collection | None = self.store.get_collection(name)
        except CollectionNotFound:
            col = None
        if col is not None:
            if language is not None and language != col.language:
                raise CollectionMismatch(
                    f"collection {name!r} was built with language {col.language!r}, not the requested "
                    f"{language!r}; leave out --language, or ingest into another collection"
                )
            if embedder is not None and embedder != col.embedder:
                requested = self.embedder_factory(embedder)
                if requested.name != col.embedder:
                    raise CollectionMismatch(
                        f"collection {name!r} was built with embedder {col.embedder!r}, not the requested "
                        f"{embedder!r}; leave out --embedder, or ingest into another collection"
                    )
            emb = self.embedder_factory(col.embedder)
            self._check_collection(col, language, emb)
            return col, col.language, emb
        emb = self.embedder_factory(embedder or self.settings.embedder)
        return None, language or self.settings.language, emb

    @staticmethod
    def _check_collection(col: Collection, language: str | None, emb: Embedder) -> None:
        if language is not None and col.language != language:
            raise CollectionMismatch(
                f"collection {col.name!r} was built with language {col.language!r}, not the requested {language!r}"
            )
        if col.embedder != emb.name or col.dim != emb.dim:
            raise CollectionMismatch(
                f"collection {col.name!r} was built with embedder {col.embedder!r} (dim {col.dim}), not "
                f"{emb.name!r} (dim {emb.dim}); ingest into another collection"
            )

    def _prepare_file(self, job: FileJob, known: dict[str, str], max_bytes: int, options: Any = None) -> _Result:
        from kaynak.loaders import load

        st = os.stat(job.path)
        if not stat.S_ISREG(st.st_mode):
            return _Fail(job.source, f"{job.path}: not a regular file")
        if st.st_size > max_bytes:
            raise FileTooLarge(
                job.path,
                f"{st.st_size / 1048576:.1f} MB is over the limit of {self.settings.max_file_mb:g} MB "
                "(raise KAYNAK_MAX_FILE_MB to take it)",
            )
        sha = file_sha256(job.path)
        if known.get(job.source) == sha:
            return _Skip(job.source)
        doc = load(job.path, max_bytes=max_bytes, options=options)
        return self._prepare_loaded(job.source, sha, doc)

    def _prepare_loaded(self, source: str, sha: str, doc: LoadedDocument) -> _Prepared:
        from kaynak.chunking import chunk_pages

        chunks = chunk_pages(doc.pages, chunk_size=self.settings.chunk_size, overlap=self.settings.chunk_overlap)
        if not chunks:
            raise NoText(source, "no text to index")
        title = (doc.title or "").strip() or Path(source).stem
        texts = [embedding_text(title, c.section, c.text) for c in chunks]
        return _Prepared(source, sha, title, dict(doc.metadata), list(doc.pages), chunks, texts, list(doc.warnings))


__all__ = [
    "Discovery",
    "IngestEvent",
    "IngestReport",
    "IngestService",
    "PathFilter",
    "discover",
    "embedding_text",
]
