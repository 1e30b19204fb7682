"""IngestService: the write side of kaynak — files in, searchable chunks out; collections and documents managed.

Only the CLI, the REST API's authenticated write endpoints (and the evaluation harness) use this class. The work
itself happens in kaynak.ingest.pipeline (docs/adr/0006-ingest-pipeline.md).

Identity is (collection, source); ``source`` is the path relative to the ingest root (a folder argument's own
folder, or a file argument's parent). The sha256 of the file's bytes decides: unchanged → skipped before
loading; changed → replaced atomically; new → added. Every document commits on its own, so a killed ingest
leaves whole documents only and the next run completes the work.

Language of a new collection: the explicit ``language``, else ``settings.language``, else detected from the
first documents (``kaynak.langdetect``: Turkish vs English), else ``simple``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence, Sized
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from kaynak import upload_store
from kaynak.config import Settings
from kaynak.errors import CollectionMismatch, CollectionNotFound, DocumentNotFound, KaynakError, UsageError
from kaynak.loaders import CONTAINER_EXTENSIONS, LoadOptions
from kaynak.rules import check_collection_name
from kaynak.store import Store
from kaynak.types import Collection, LoadedDocument
from kaynak.vocabulary import LANGUAGES

from .discovery import Discovery, FileJob, PathFilter, discover
from .pipeline import Run, Target
from .prepare import _Pending, _Result, _Skip, check_collection, prepare_file, prepare_loaded
from .report import IngestCrashed, IngestEvent, IngestReport
from .shard import select_shard
from .sources import container_index, container_of
from .workers import ParsePool

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder


def _under_sync_lock(method: Callable[..., IngestReport]) -> Callable[..., IngestReport]:
    """An ingest holds its collection's sync lock shared (kaynak.ingest.sync takes it exclusively): ingests run side
    by side, a sync or watcher batch waits for them and they for it. ``locked=True``: the caller holds it."""

    @functools.wraps(method)
    def wrapper(self: IngestService, paths: Any, collection: str | None = None, **kw: Any) -> IngestReport:
        if kw.pop("locked", False):
            return method(self, paths, collection, **kw)
        with self.store.collection_lock(collection or self.settings.collection, exclusive=False):
            return method(self, paths, collection, **kw)

    return wrapper


class IngestService:
    """Collections and documents managed, files ingested. Thread-safe: the REST server calls ``ingest`` from
    several threads at once; they share one pool of parse workers (started on first use, stopped by ``close``)."""

    def __init__(self, store: Store, settings: Settings, embedder_factory: Callable[[str], Embedder]) -> None:
        self.store = store
        self.settings = settings
        self.embedder_factory = embedder_factory
        self._pool: ParsePool | None = None
        self._pool_lock = threading.Lock()

    # ------------------------------------------------------------------ parse workers
    @property
    def parse_pool(self) -> ParsePool:
        """The parse workers (KAYNAK_PARSE_WORKERS, KAYNAK_PARSE_MEMORY_MB, KAYNAK_PARSE_TIMEOUT_S)."""
        with self._pool_lock:
            if self._pool is None or self._pool.closed:
                s = self.settings
                self._pool = ParsePool(s.parse_workers, s.parse_memory_mb, s.parse_timeout_s)
            return self._pool

    def parser_key(self) -> str:
        """What a remembered failure is valid for: this kaynak and these parse limits."""
        from kaynak import __version__

        s = self.settings
        from kaynak.loaders.legacy import office_fingerprint  # likewise a .doc refused without LibreOffice
        from kaynak.loaders.ocr import ocr_fingerprint  # a scan refused without Tesseract is retried once it is there

        return (
            f"kaynak {__version__}; memory {s.parse_memory_mb} MB; timeout {s.parse_timeout_s:g} s; "
            f"max file {s.max_file_mb:g} MB; {ocr_fingerprint()}; ocr languages {s.ocr_languages or 'auto'}; "
            f"{office_fingerprint()}"
        )

    def close(self) -> None:
        """Stop the parse workers (a later ingest starts new ones)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    # ------------------------------------------------------------------ collections and documents
    def create_collection(self, name: str, language: str | None = None, embedder: str | None = None) -> Collection:
        check_collection_name(name)
        language = language or self.settings.language or "simple"
        if language not in LANGUAGES:
            raise UsageError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}", "language")
        emb = self.embedder_factory(embedder or self.settings.embedder)
        return self.store.create_collection(name, language, emb.name, emb.dim)

    def delete_collection(self, name: str) -> None:
        self.store.delete_collection(name)
        upload_store.remove_collection(self.settings.data_dir, name)  # uploaded copies go with it

    def delete_document(self, collection: str, source: str) -> None:
        """Delete one document; a mailbox's source (``archive.mbox``) deletes all its messages and attachments, in
        one transaction (kaynak.ingest.sources.container_of)."""
        col = self.store.get_collection(collection)
        if PurePosixPath(source).suffix.lower() in CONTAINER_EXTENSIONS:
            hashes = self.store.document_hashes(col)
            if source not in hashes and not container_index(hashes).get(source):
                raise DocumentNotFound(f"collection {collection!r} has no document {source!r}")
            self.store.replace_document_set(col, source, [])
        elif not self.store.delete_document(col, source):
            raise DocumentNotFound(f"collection {collection!r} has no document {source!r}")
        upload_store.remove_copy(self.settings.data_dir, collection, source)  # an uploaded copy goes with it

    # ------------------------------------------------------------------ ingest
    @_under_sync_lock
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
        shard: tuple[int, int] | None = None,
        remember: bool = False,
        discovered: Discovery | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively) into ``collection`` (default: settings.collection).

        ``shard=(i, n)`` takes only the files of shard i of n (kaynak.ingest.shard: n machines, n times faster).

        Unchanged files (same sha256 as stored) are skipped unread; changed ones are replaced atomically; new
        ones added. Files are parsed in the parse workers (kaynak.ingest.workers), under memory and time limits.
        With ``prune``, documents whose files are no longer under ``paths`` (within the include / exclude
        selection) are removed — the collection then mirrors the paths. Per-file problems end up in
        ``report.failed`` / ``report.partial`` and the run goes on; a missing path or a collection that exists
        with another language or embedder raises before anything changes. Setting ``stop`` ends the run after the
        documents being embedded are written (``report.interrupted``). An unexpected error raises IngestCrashed
        naming the file being processed and carrying the report so far; a KaynakError raised mid-run (the
        database went away) carries it as ``err.report``.

        ``remember`` (``kaynak ingest``): record ``paths`` with the globs as the collection's sources, for
        ``kaynak sync`` / ``kaynak watch``. ``discovered``: the files to take, already found (kaynak.ingest.sync
        passes the changed files of remembered folders; ``paths`` are then not walked).
        """
        if isinstance(paths, str | Path):
            paths = [paths]
        t0 = time.perf_counter()
        name = collection or self.settings.collection
        path_filter = PathFilter(include, exclude)
        found = discovered if discovered is not None else discover(paths, path_filter)
        if shard is not None:
            select_shard(found, shard, prune)
        col, lang, emb = self._resolve(name, language, embedder)
        known = self.store.document_states(col) if col is not None else {}
        failures = self.store.ingest_failures(col) if col is not None else {}
        max_bytes = int(self.settings.max_file_mb * 1024 * 1024)
        ocr_language = lang  # Tesseract's languages follow the collection's, and its Turkish documents' (issue 50)
        if col is not None and lang == "english" and "turkish" in self.store.document_languages([name]).get(name, []):
            ocr_language = None  # tur+eng
        options = LoadOptions(ocr_language, self.settings.data_dir, self.settings.ocr_languages)
        pool = self.parse_pool
        parser = self.parser_key()

        members = container_index(known)  # the documents of mailboxes (kaynak.ingest.sources.container_of)

        def prepare(job: FileJob) -> _Result | _Pending:
            return prepare_file(job, known, failures, max_bytes, self.settings, parser, pool.submit, options, members)

        total = len(found.jobs) + len(found.failed) + len(found.skipped)
        target = Target(name, col, lang, language, emb, known)
        run = Run(self.store, self.settings, target, files_total=total, progress=progress, stop=stop, parser=parser)
        run.report.ignored = found.ignored
        run.emit("start")
        for f in found.failed:
            run.record(f["source"], "failed", f["error"])
        for f in found.skipped:
            run.record(f["source"], "skipped", f["reason"])
        try:
            run.run(found.jobs, prepare, window=2 * pool.workers)
            report = run.report
            if prune and run.collection is not None and not report.interrupted:
                gone = [
                    s
                    for s in sorted(self.store.document_hashes(run.collection))
                    if (container_of(s) or s) not in found.seen and path_filter(container_of(s) or s)
                ]
                for source in gone:
                    if self.store.delete_document(run.collection, source):
                        report.removed.append(source)
                        run.emit("removed", source=source, status="removed")
                self.store.forget_failures(
                    run.collection, [s for s in failures if s not in found.seen and path_filter(s)]
                )
            if run.collection is not None and not report.interrupted:
                # Documents ingested before kaynak stored sentence analyses (migration 14) get theirs now, once.
                self.store.fill_sentences(run.collection, stop=stop)
        except KaynakError as err:
            run.report.seconds = round(time.perf_counter() - t0, 3)
            err.report = run.report  # type: ignore[attr-defined]
            raise
        except Exception as err:
            run.report.seconds = round(time.perf_counter() - t0, 3)
            raise IngestCrashed(run.current, run.report, err) from err
        if remember and run.collection is not None and not report.interrupted:
            from .sync import remember_roots

            remember_roots(self.store, run.collection, paths, include, exclude, report if shard is None else None)
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
        known = self.store.document_states(col) if col is not None else {}
        total = len(documents) if isinstance(documents, Sized) else None

        def prepare(item: tuple[str, str, LoadedDocument]) -> _Result:
            source, sha, doc = item
            if not source or not isinstance(source, str):
                raise UsageError(f"document source must be a non-empty string, got {source!r}", "source")
            stored = known.get(source)
            if stored is not None and stored[0] == sha:
                return _Skip(source, stored[1])
            return prepare_loaded(source, sha, doc, self.settings)

        target = Target(collection, col, lang, language, emb, known)
        run = Run(self.store, self.settings, target, files_total=total, progress=progress, stop=stop)
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
            check_collection(col, language, emb)
            return col, col.language, emb
        check_collection_name(name)  # a new collection: its name must follow the rules
        emb = self.embedder_factory(embedder or self.settings.embedder)
        return None, language or self.settings.language, emb
