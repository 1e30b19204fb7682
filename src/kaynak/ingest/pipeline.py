"""The ingest pipeline: prepared documents flow from a reader thread through embedding to writer threads.

Pipeline (docs/adr/0006-ingest-pipeline.md)::

    items ──► [reader thread] prepare: hash → skip unchanged → [parse worker: load → chunk]
                │ bounded queue
                ▼
              [calling thread] embed in batches across documents (keeps the embedder busy);
                a new collection is created here once 16 documents are in (language detection)
                │ bounded queue
                ▼
              [2 writer threads] one transaction per document: replace_document(skip_if_unchanged=True)

``Run`` is one ingest into one ``Target`` (the collection, its language and embedder, what it holds): the three
stages, their queues, the report and the progress counters. It talks to the store and the settings it is given,
never to the service.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kaynak.config import Settings
from kaynak.errors import DocumentRejected, KaynakError
from kaynak.langdetect import detect_collection_language
from kaynak.store import Store
from kaynak.types import Collection

from .discovery import FileJob
from .prepare import (
    _Fail,
    _Group,
    _Pending,
    _Prepared,
    _Queued,
    _Result,
    _Skip,
    check_collection,
)
from .report import EventKind, IngestEvent, IngestReport
from .sources import printable_text

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder

log = logging.getLogger(__name__)

# How many documents a new collection's language is detected from, at most (or this many characters).
_DETECT_DOCS = 16
_DETECT_CHARS = 200_000
# How long the embedder waits for more texts to fill a batch before it embeds a partial one.
_FILL_WAIT = 0.2
_DONE = object()

#: Page text the reader may hold in prepared documents not yet written (characters), so that many big files in a
#: row cannot add up in memory; one document is always let through whatever its size.
BUFFER_CHARS = 24_000_000
#: Bytes of files being parsed at once (their results come back into this process), unless it is a single file.
IN_FLIGHT_BYTES = 64 * 1024 * 1024


def _source_of(item: Any) -> str:
    if isinstance(item, FileJob):
        return item.source
    try:
        return str(item[0])
    except (TypeError, IndexError, KeyError):
        return repr(item)[:200]


def _describe(err: BaseException) -> str:
    """A reason a person can act on, never empty."""
    if isinstance(err, KaynakError):
        return err.message or type(err).__name__
    if isinstance(err, OSError):
        return f"cannot read the file ({err.strerror or err or type(err).__name__})"
    if isinstance(err, MemoryError):
        return "the ingest process ran out of memory on this file; ingest it on its own or on a larger machine"
    return f"{type(err).__name__}: {err}" if str(err) else f"{type(err).__name__} (no details)"


@dataclass(frozen=True)
class Target:
    """Where one ingest writes: the collection's name, the collection if it exists yet, its language (resolved, and
    as the caller gave it: ``None`` lets a new collection take the documents' language), the embedder, and what the
    collection already holds (source → (sha256, chunk ids))."""

    name: str
    collection: Collection | None
    language: str | None
    explicit_language: str | None
    embedder: Embedder
    known: dict[str, tuple[str, list[str]]]


class Run:
    """One ingest: the three stages, their queues, the report and the progress counters."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        target: Target,
        *,
        files_total: int | None,
        progress: Callable[[IngestEvent], None] | None,
        stop: threading.Event | None,
        parser: str = "",
    ) -> None:
        self.store = store
        self.name = target.name
        self.collection = target.collection  # set when the first document creates the collection
        self.language = target.language
        self.explicit_language = target.explicit_language
        self.emb = emb = target.embedder
        self.known = target.known
        self.progress = progress
        self.stop = stop or threading.Event()
        self.abort = threading.Event()  # a stage failed: everyone stops now
        self.closed = threading.Event()  # the embedder stopped reading: the reader stops too
        self.errors: list[BaseException] = []
        s = settings
        self.batch = s.embed_batch
        self.report = IngestReport(
            collection=self.name, embedder=emb.name, language=self.collection.language if self.collection else None
        )
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
        self.parser = parser  # the parse limits in force, remembered with failures
        self.current: str | None = None  # the file being read most recently (named by an internal error)
        self.buffered = 0  # characters of prepared, unwritten documents
        self._budget = threading.Condition()
        self._unremembered: list[_Fail] = []  # failures waiting for a new collection to exist

    # ----------------------------------------------------------------- bookkeeping (any thread)
    def emit(self, kind: EventKind, **kw: Any) -> None:
        if self.progress is None:
            return
        ev = IngestEvent(
            kind,
            files_total=self.files_total,
            files_done=self.files_done,
            chunks_embedded=self.chunks_embedded,
            chunks_written=self.chunks_written,
            **kw,
        )
        try:
            self.progress(ev)
        except Exception:  # a broken progress display must not break the ingest
            log.exception("progress callback failed")

    def record(
        self, source: str, status: str, error: str | None = None, chunks: int = 0, warnings: Iterable[str] = ()
    ) -> None:
        """One file's outcome: added, updated, unchanged, partial, failed (``error``) or skipped (``error``)."""
        warnings = [printable_text(w) for w in warnings]
        with self._lock:
            r = self.report
            if status in ("failed", "skipped"):
                error = printable_text((error or "").strip()) or "no reason was given (a bug; please report it)"
                if status == "failed":
                    if not error.startswith(source):
                        error = f"{source}: {error}"
                    r.failed.append({"source": source, "error": error})
                else:
                    r.skipped.append({"source": source, "reason": error})
            else:
                getattr(r, status).append(source)
            for w in warnings:
                r.warnings.append({"source": source, "warning": w})
            r.chunks += chunks
            self.chunks_written += chunks
            self.files_done += 1
            self.emit("document", source=source, status=status, error=error)

    def fail(self, f: _Fail) -> None:
        """Record a failure and remember it (with the bytes' sha256) so an unchanged file is not parsed again."""
        self.record(f.source, "failed", f.error, warnings=f.warnings)
        if f.sha256 is None:
            return
        if self.collection is None:
            with self._lock:
                self._unremembered.append(f)
            return
        self._remember(f)

    def _remember(self, f: _Fail) -> None:
        assert self.collection is not None and f.sha256 is not None
        try:
            self.store.remember_failure(self.collection, f.source, f.sha256, f.error, self.parser)
        except KaynakError as err:  # remembering is an optimisation: the outcome is already reported
            log.warning("could not remember the failure of %s: %s", f.source, err)

    # ----------------------------------------------------------------- memory budget (reader vs writers)
    def _reserve(self, chars: int) -> None:
        with self._budget:
            while (
                self.buffered > 0
                and self.buffered + chars > BUFFER_CHARS
                and not (self.abort.is_set() or self.closed.is_set() or self.stop.is_set())
            ):
                self._budget.wait(0.2)
            self.buffered += chars

    def _release(self, chars: int) -> None:
        with self._budget:
            self.buffered -= chars
            self._budget.notify_all()

    # ----------------------------------------------------------------- stage 1: read, load, chunk
    def produce(self, items: Iterable[Any], prepare: Callable[[Any], _Result | _Pending], window: int = 1) -> None:
        """Prepare every item; ``prepare`` may hand a file to the parse workers (a _Pending), and up to ``window``
        of those (and no more than IN_FLIGHT_BYTES of files, unless it is one) are in flight at once, their results
        taken as they complete."""
        inflight: dict[Future[Any], _Pending] = {}
        try:
            for item in items:
                if self.stop.is_set() or self.abort.is_set():
                    break
                self._settle(inflight, window - 1)
                self.current = _source_of(item)
                self.emit("reading", source=self.current)
                try:
                    result = prepare(item)
                except Exception as err:  # every bad file is reported and the run goes on
                    result = _Fail(_source_of(item), _describe(err))
                if isinstance(result, _Pending):
                    inflight[result.future] = result
                elif not self._hand_over(result):
                    break
            self._settle(inflight, 0)
        except BaseException as err:  # the items iterable itself failed (e.g. a bad data set)
            self.errors.append(err)
            self.abort.set()
        finally:
            for f in inflight:
                f.cancel()
            self._put(self.ready, _DONE, self.closed)

    def _settle(self, inflight: dict[Future[Any], _Pending], until: int) -> None:
        """Take finished parses until at most ``until`` are in flight (and they are not too heavy)."""

        def heavy() -> bool:
            return len(inflight) > 1 and sum(p.size for p in inflight.values()) > IN_FLIGHT_BYTES

        while len(inflight) > until or heavy():
            if self.abort.is_set() or self.closed.is_set() or (self.stop.is_set() and until == 0):
                for f in inflight:
                    f.cancel()
                inflight.clear()
                return
            done, _ = wait(list(inflight), timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                pending = inflight.pop(f)
                try:
                    result = pending.finish(f.result())
                except CancelledError:
                    continue
                except Exception as err:
                    result = _Fail(pending.source, _describe(err))
                self._hand_over(result)

    def _hand_over(self, result: _Result) -> bool:
        if isinstance(result, _Prepared):
            result.chars = sum(len(p.text) for p in result.pages)
            self._reserve(result.chars)
        return self._put(self.ready, result, self.closed)

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
        queued = _Queued()
        truncated_before = self.emb.truncated
        try:
            while not self.abort.is_set():
                self._fill(queued)
                if self.stop.is_set():
                    self._drop_unstarted(queued)
                if queued.chunks == 0:
                    if queued.producer_done or self.stop.is_set():
                        break
                    continue
                self._embed_batch(queued)
            if self.stop.is_set() and not queued.producer_done:
                self.report.interrupted = True
            self._flush_backlog()
        finally:
            self.report.truncated = max(0, self.emb.truncated - truncated_before)
            for _ in range(self.n_writers):
                self._put(self.to_write, _DONE, self.abort)

    def _fill(self, queued: _Queued) -> None:
        """Fill a batch; once something is pending, wait at most _FILL_WAIT for more, then embed a partial batch
        rather than let the embedder idle behind a slow file."""
        fill_until = None
        while not queued.producer_done and queued.chunks < self.batch and not self.stop.is_set():
            if queued.chunks and fill_until is None:
                fill_until = time.monotonic() + _FILL_WAIT
            wait = 0.1 if fill_until is None else fill_until - time.monotonic()
            try:
                item = self.ready.get(timeout=wait) if wait > 0 else self.ready.get_nowait()
            except queue.Empty:
                if queued.chunks == 0 and not self.abort.is_set():
                    continue
                break
            if item is _DONE:
                queued.producer_done = True
            elif isinstance(item, _Skip):
                self.record(item.source, "partial" if item.warnings else "unchanged", warnings=item.warnings)
            elif isinstance(item, _Fail):
                self.fail(item)
            else:
                queued.documents.append(item)
                queued.chunks += len(item.chunks)

    def _drop_unstarted(self, queued: _Queued) -> None:
        """After a stop: finish the documents already started; start no new ones."""
        dropped = [d for d in queued.documents if d.filled == 0]
        for d in dropped:
            self._release(d.chars)
        if dropped:
            queued.documents = deque(d for d in queued.documents if d.filled > 0)
            queued.chunks = sum(len(d.chunks) - d.filled for d in queued.documents)
            self.report.interrupted = True

    def _embed_batch(self, queued: _Queued) -> None:
        """Embed up to one batch of the queued chunks (across documents); finished documents go on to the writers."""
        pending = queued.documents
        texts: list[str] = []
        for d in pending:
            take = min(len(d.chunks) - d.filled, self.batch - len(texts))
            texts.extend(d.embedding_text(j) for j in range(d.filled, d.filled + take))
            if len(texts) >= self.batch:
                break
        vecs = self.emb.embed_passages(texts)
        pos = 0
        while pending and pos < len(vecs):
            d = pending[0]
            if d.vectors is None:
                d.vectors = np.empty((len(d.chunks), vecs.shape[1]), dtype=np.float32)
            take = min(len(d.chunks) - d.filled, len(vecs) - pos)
            d.vectors[d.filled : d.filled + take] = vecs[pos : pos + take]
            d.filled += take
            pos += take
            if d.filled == len(d.chunks):
                pending.popleft()
                self._forward(d)
        queued.chunks -= len(texts)
        with self._lock:
            self.chunks_embedded += len(texts)
            self.report.embedded += len(texts)
            self.emit("embedded")

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
            language = (
                detect_collection_language("\n".join(p.text for p in d.pages)[:20_000] for d in sample) or "simple"
            )
        col = self.store.ensure_collection(self.name, language, self.emb.name, self.emb.dim)
        check_collection(col, self.explicit_language, self.emb)
        self.collection = col
        self.report.language = col.language
        self.remember_waiting()

    def remember_waiting(self) -> None:
        """Remember the failures that happened before the new collection existed."""
        with self._lock:
            waiting, self._unremembered = self._unremembered, []
        if self.collection is not None:
            for f in waiting:
                self._remember(f)

    def _write(self, d: _Prepared) -> None:
        assert self.collection is not None
        self.current = d.source
        if isinstance(d, _Group):
            self._write_group(d)
            return
        try:
            doc_id = self.store.replace_document(
                self.collection,
                d.source,
                d.sha256,
                d.title,
                d.metadata,
                d.pages,
                d.with_chunk_texts(),
                d.vectors,
                # a file OCR has read replaces its stored version even with the same bytes: it was re-read because
                # its scans were not OCR'd before (ocr_now_possible)
                skip_if_unchanged="ocr" not in d.metadata,
                warnings=d.warnings,
                origin=d.origin,
                file_stat=d.file_stat,
            )
        except DocumentRejected as err:  # e.g. text PostgreSQL cannot hold; this document only
            self.fail(_Fail(d.source, str(err), d.warnings, d.sha256))
            return
        finally:
            self._release(d.chars)
        if doc_id is None:
            self.record(d.source, "unchanged")
        elif d.warnings:
            self.record(d.source, "partial", chunks=len(d.chunks), warnings=d.warnings)
        elif d.source in self.known:
            self.record(d.source, "updated", chunks=len(d.chunks))
        else:
            self.record(d.source, "added", chunks=len(d.chunks))
        d.vectors = None

    def _write_group(self, d: _Group) -> None:
        """All the documents of one file in one transaction; each is reported under its own source."""
        assert self.collection is not None
        try:
            ids = self.store.replace_document_set(self.collection, d.source, d.versions(), skip_if_unchanged=True)
        except DocumentRejected as err:
            self.fail(_Fail(d.source, str(err), d.warnings, d.sha256))
            return
        finally:
            self._release(d.chars)
        if ids is None:
            self.record(d.source, "unchanged", warnings=d.warnings)
            return
        for w in d.warnings:  # the file's own warnings (a broken message, an unreadable attachment)
            with self._lock:
                self.report.warnings.append({"source": d.source, "warning": printable_text(w)})
        for m in d.members:
            if m.warnings:
                self.record(m.source, "partial", chunks=len(m.chunks), warnings=m.warnings)
            elif m.source in self.known:
                self.record(m.source, "updated", chunks=len(m.chunks))
            else:
                self.record(m.source, "added", chunks=len(m.chunks))
        d.vectors = None

    # ----------------------------------------------------------------- all together
    def run(self, items: Iterable[Any], prepare: Callable[[Any], _Result | _Pending], window: int = 1) -> None:
        reader = threading.Thread(
            target=self.produce, args=(items, prepare, window), name="kaynak-ingest-read", daemon=True
        )
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
        self.remember_waiting()
        if self.errors:
            err = self.errors[0]
            raise err
