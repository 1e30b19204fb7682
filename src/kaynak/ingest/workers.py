"""Parse workers: every file is loaded and chunked in a separate process under OS-enforced memory and time limits.

A ``ParsePool`` keeps up to ``workers`` processes (``KAYNAK_PARSE_WORKERS``, default: the usable cores), started
through multiprocessing's *forkserver* (the calling process has threads, so plain fork is unsafe) and only when
there is work. Each worker process lowers its own ``RLIMIT_AS`` to ``KAYNAK_PARSE_MEMORY_MB`` (default 2048)
before it parses anything, and the pool gives every file ``KAYNAK_PARSE_TIMEOUT_S`` seconds of wall time
(default 600: a 2,000-page PDF or a long OCR job fits; a parser stuck in a loop does not run forever).

What can go wrong in a worker becomes that file's error, and the run goes on:

* the loader refuses the file (LoaderError) → its reason;
* MemoryError under the limit → "needs more than N MB to parse (limit KAYNAK_PARSE_MEMORY_MB)"; the worker exits
  and is replaced (its heap may be in any state);
* the process dies (segfault in a C parser, abort, killed) → "the parser crashed …", worker replaced;
* no answer within the time limit → the worker is killed and replaced, "took longer than N s …".

Why not ``concurrent.futures.ProcessPoolExecutor``: one dead worker breaks that whole pool (every pending future
fails with BrokenProcessPool), which is the one thing this pool exists to survive. Here each worker slot is a
thread in the calling process that owns one worker process and restarts it when it dies; tasks come from one
queue, so any number of threads (the REST server's) may submit at once.

Library chatter is captured in the worker, never printed: Python warnings, log records of WARNING and above,
and anything C code writes to file descriptors 1 and 2 become the file's warnings.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing
import os
import queue
import signal
import sys
import tempfile
import threading
import time
import warnings
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from kaynak.types import Chunk, Page

log = logging.getLogger(__name__)

DEFAULT_MEMORY_MB = 2048
worker_restarts = 0  # worker processes started to replace one (crash, memory or time limit): GET /metrics
DEFAULT_TIMEOUT_S = 600.0

# Imported once in the fork server, so a new worker starts in milliseconds with the parsers already loaded.
_PRELOAD = [
    "kaynak.ingest.workers",
    "kaynak.loaders",
    "kaynak.loaders.text",
    "kaynak.loaders.markdown",
    "kaynak.loaders.html",
    "kaynak.loaders.docx",
    "kaynak.loaders.pdf",
    "kaynak.loaders.opendocument",  # issue 26: the zip + safe-XML formats (openpyxl is imported when needed)
    "kaynak.loaders.pptx",
    "kaynak.loaders.mail",
    "kaynak.chunking",
    "pypdf",
    "docx",
    "yaml",
]

#: Text one document may hold (characters): with the page text held once in the ingest process, this keeps a
#: single document well inside the 1 GiB the ingest process may use (docs/adr/0009-ingest-isolation.md).
MAX_DOCUMENT_CHARS = 50_000_000

#: Warnings kept per file, and characters per warning.
MAX_WARNINGS = 20
MAX_WARNING_CHARS = 300


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ParseTask:
    """One file to parse. ``path`` is the file system path (any bytes, as Python's str); ``options`` LoadOptions."""

    path: str
    max_bytes: int
    options: Any
    chunk_size: int
    chunk_overlap: int
    call: str | None = None  # "module:function(task)" run instead of parse_file: fault injection for tests
    #: loaders registered at run time in the submitting process (kaynak.loaders.added_loaders())
    loaders: tuple[tuple[str, str], ...] = ()


@dataclass
class Parsed:
    """A parsed file: the loader's document, chunked. ``sha256`` is of the bytes that were parsed."""

    sha256: str
    title: str
    metadata: dict[str, Any]
    pages: list[Page]
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)
    #: the other documents the file holds (LoadedDocument.parts), each chunked: (source suffix, Parsed)
    parts: list[tuple[str, Parsed]] = field(default_factory=list)


@dataclass
class ParseFailure:
    """The file could not be parsed; ``reason`` says why (without the file name) and what to do."""

    reason: str
    warnings: list[str] = field(default_factory=list)
    #: the same bytes may parse another time (a timeout on a busy machine, the system killing the worker, a
    #: shutdown): such a failure is not remembered, so the next run tries again
    transient: bool = False


def add_warning(out: list[str], text: str) -> None:
    """Append ``text`` (one line, capped) to ``out`` unless already there, keeping at most MAX_WARNINGS."""
    text = " ".join(str(text).split())
    if not text:
        return
    if len(text) > MAX_WARNING_CHARS:
        text = text[: MAX_WARNING_CHARS - 1] + "…"
    if text in out:
        return
    if len(out) < MAX_WARNINGS:
        out.append(text)
    elif len(out) == MAX_WARNINGS:
        out.append("more warnings left out")


# ---------------------------------------------------------------------------------------------- in the worker
class _Chatter(logging.Handler):
    """Collects log records (WARNING and above) from any library while a file is parsed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(f"{record.name}: {record.getMessage()}")
        except Exception:
            self.lines.append(f"{record.name}: {record.msg}")


def parse_file(task: ParseTask) -> Parsed | ParseFailure:
    """Load and chunk one file (what a worker does; also callable in-process for tests and tools)."""
    import hashlib
    from pathlib import Path

    from kaynak.chunking import chunk_pages
    from kaynak.errors import KaynakError, LoaderError
    from kaynak.ingest.paging import paginate
    from kaynak.loaders import load, use_added
    from kaynak.loaders.common import read_limited

    path = Path(task.path)
    chatter = _Chatter()
    root = logging.getLogger()
    root.addHandler(chatter)
    found: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                use_added(task.loaders)
                data = read_limited(path, task.max_bytes)
                sha = hashlib.sha256(data).hexdigest()
                del data
                doc = paginate(load(path, max_bytes=task.max_bytes, options=task.options), path.name)
                chunks = chunk_pages(doc.pages, chunk_size=task.chunk_size, overlap=task.chunk_overlap)
            except LoaderError as err:
                return ParseFailure(err.reason or type(err).__name__, _warnings(found, caught, chatter))
            except KaynakError as err:
                return ParseFailure(err.message or type(err).__name__, _warnings(found, caught, chatter))
            except RecursionError:
                return ParseFailure("structure nested too deeply to read", _warnings(found, caught, chatter))
            except OSError as err:
                return ParseFailure(f"cannot read the file ({err.strerror or err})", _warnings(found, caught, chatter))
            for w in doc.warnings:
                add_warning(found, w)
            parts = _chunk_parts(doc, sha, task, found)
            if not chunks and not parts:
                return ParseFailure("no text to index", _warnings(found, caught, chatter))
            chars = sum(len(p.text) for p in doc.pages) + sum(len(p.text) for _, d in parts for p in d.pages)
            if chars > MAX_DOCUMENT_CHARS:
                return ParseFailure(
                    f"{chars:,} characters of text is over the {MAX_DOCUMENT_CHARS:,} one document may hold; "
                    "split the file",
                    _warnings(found, caught, chatter),
                )
            # The text of a chunk is a slice of its page: the caller cuts it when needed instead of receiving it twice.
            chunks = [replace(c, text="") for c in chunks]
            notes = _warnings(found, caught, chatter)
            return Parsed(sha, doc.title, dict(doc.metadata), list(doc.pages), chunks, notes, parts)
    finally:
        root.removeHandler(chatter)


def _chunk_parts(doc: Any, sha: str, task: ParseTask, found: list[str]) -> list[tuple[str, Parsed]]:
    """The parts of a container (a mailbox's messages, attachments), chunked; parts without text are dropped."""
    from kaynak.chunking import chunk_pages

    out: list[tuple[str, Parsed]] = []
    for suffix, part in doc.parts:
        chunks = chunk_pages(part.pages, chunk_size=task.chunk_size, overlap=task.chunk_overlap)
        if not chunks:
            continue
        warnings: list[str] = []
        for w in part.warnings:
            add_warning(warnings, w)
        chunks = [replace(c, text="") for c in chunks]
        out.append((suffix, Parsed(sha, part.title, dict(part.metadata), list(part.pages), chunks, warnings)))
    return out


def _warnings(found: list[str], caught: list[warnings.WarningMessage], chatter: _Chatter) -> list[str]:
    for w in caught:
        add_warning(found, f"{w.category.__name__}: {w.message}")
    for line in chatter.lines:
        add_warning(found, line)
    return found


def _function(call: str | None) -> Any:
    if call is None:
        return parse_file
    import importlib

    module, _, name = call.partition(":")
    return getattr(importlib.import_module(module), name)


def _limit_resources(memory_bytes: int) -> None:
    """No core dumps, and at most ``memory_bytes`` of address space (where the system lets a process set it)."""
    try:
        import resource
    except ImportError:  # not a POSIX system: the time limit still holds, the memory limit cannot be set
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_bytes > 0:
        try:
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError, AttributeError):  # e.g. macOS refuses RLIMIT_AS: time limit only
            pass


def _capture_output() -> Any:
    """Send anything written to stdout/stderr (C libraries, stray prints) to a scratch file, returned, that is
    read after each task; quiet the logging."""
    scratch = tempfile.TemporaryFile()  # noqa: SIM115  (open for the worker's whole life)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(scratch.fileno(), 1)
    os.dup2(scratch.fileno(), 2)
    logging.getLogger().setLevel(logging.WARNING)
    for handler in list(logging.getLogger().handlers):
        logging.getLogger().removeHandler(handler)
    return scratch


def _stray_output(scratch: Any, warnings: list[str]) -> None:
    """What the task wrote to stdout/stderr, as warnings (the first 4 KiB); the scratch file is emptied."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        if scratch.tell():
            scratch.seek(0)
            stray = scratch.read(4096).decode("utf-8", errors="replace")
            scratch.seek(0)
            scratch.truncate()
            for line in stray.splitlines():
                add_warning(warnings, line)
    except Exception:
        pass


def _worker_main(conn: Any, memory_bytes: int) -> None:
    """A worker process: limit memory, capture stray output, then parse tasks until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    _limit_resources(memory_bytes)
    scratch = _capture_output()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if task is None:
            return
        fatal = False
        try:
            result: Parsed | ParseFailure = _function(task.call)(task)
        except MemoryError:
            result = ParseFailure("memory")
            fatal = True
        except BaseException as err:  # a bug in a loader: still an answer naming what happened
            result = ParseFailure(f"could not be read ({type(err).__name__}: {err})")
        _stray_output(scratch, result.warnings)
        try:
            conn.send(result)
        except MemoryError:
            conn.send(ParseFailure("memory"))
            fatal = True
        except (BrokenPipeError, EOFError, OSError):
            return
        if fatal:
            return


# ---------------------------------------------------------------------------------------------- in the caller
_POOLS: weakref.WeakSet[ParsePool] = weakref.WeakSet()
_CONTEXT_LOCK = threading.Lock()
_CONTEXT: Any = None


def _mp_context() -> Any:
    """The forkserver context (spawn where there is none), with the parsers preloaded in the server."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            methods = multiprocessing.get_all_start_methods()
            if "forkserver" in methods:
                forkserver = multiprocessing.get_context("forkserver")
                forkserver.set_forkserver_preload(_PRELOAD)
                _CONTEXT = forkserver
            else:
                _CONTEXT = multiprocessing.get_context("spawn")
        return _CONTEXT


class _Slot:
    """One worker process and the thread in this process that feeds it."""

    def __init__(self, pool: ParsePool, index: int) -> None:
        self.pool = pool
        self.index = index
        self.process: Any = None
        self.conn: Any = None
        self.busy_since: float | None = None
        self.started = False
        self.thread = threading.Thread(target=self.loop, name=f"kaynak-parse-{index}", daemon=True)

    def start_process(self) -> None:
        global worker_restarts
        if self.started:
            worker_restarts += 1
        self.started = True
        ctx = _mp_context()
        parent, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(
            target=_worker_main,
            args=(child, self.pool.memory_mb * 1024 * 1024),
            name=f"kaynak-parse-{self.index}",
            daemon=True,
        )
        proc.start()
        child.close()
        self.process, self.conn = proc, parent

    def stop_process(self, kill: bool = False) -> int | None:
        proc, conn = self.process, self.conn
        self.process = self.conn = None
        if proc is None:
            return None
        if kill:
            proc.kill()
        else:
            with contextlib.suppress(Exception):
                conn.send(None)
        proc.join(2 if not kill else 5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        with contextlib.suppress(Exception):
            conn.close()
        return proc.exitcode

    def loop(self) -> None:
        pool = self.pool
        while True:
            item = pool._tasks.get()
            if item is None:
                break
            task, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                result = self.run(task)
            except BaseException as err:  # never leave a caller waiting
                fut.set_exception(err)
            else:
                fut.set_result(result)
        self.stop_process()

    def run(self, task: ParseTask) -> Parsed | ParseFailure:
        pool = self.pool
        if self.process is None or not self.process.is_alive():
            if self.process is not None:
                self.stop_process(kill=True)
            self.start_process()
        try:
            self.conn.send(task)
        except (BrokenPipeError, EOFError, OSError):
            code = self.stop_process(kill=True)
            return self._crash(code)
        deadline = time.monotonic() + pool.timeout_s
        self.busy_since = time.monotonic()
        try:
            while True:
                if pool._closed.is_set():
                    self.stop_process(kill=True)
                    return ParseFailure(
                        "the ingest was shut down while this file was being parsed; run it again", transient=True
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stop_process(kill=True)
                    return ParseFailure(
                        f"parsing took longer than {pool.timeout_s:g} s and was stopped (limit KAYNAK_PARSE_TIMEOUT_S; "
                        "raise it to take this file)",
                        transient=True,
                    )
                try:
                    ready = self.conn.poll(min(left, 0.5))
                except (EOFError, OSError):
                    ready = True
                if not ready:
                    continue
                try:
                    result = self.conn.recv()
                except (EOFError, OSError, Exception):
                    code = self.stop_process(kill=True)
                    return self._crash(code)
                if isinstance(result, ParseFailure) and result.reason == "memory":
                    self.stop_process(kill=True)  # the worker exits after a MemoryError; make sure
                    result.reason = self._memory_reason()
                return result
        finally:
            self.busy_since = None

    def _memory_reason(self) -> str:
        mb = self.pool.memory_mb
        return f"needs more than {mb} MB to parse (limit KAYNAK_PARSE_MEMORY_MB; raise it to take this file)"

    def _crash(self, code: int | None) -> ParseFailure:
        killed = code is not None and code == -signal.SIGKILL  # by the system (out of memory) or a person
        return ParseFailure(self._crash_reason(code), transient=killed)

    def _crash_reason(self, code: int | None) -> str:
        mb = self.pool.memory_mb
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if -code == signal.SIGKILL:
                return (
                    f"the parser was killed ({name}) while reading this file, most likely because the system ran "
                    f"out of memory (per-file limit KAYNAK_PARSE_MEMORY_MB={mb})"
                )
            return (
                f"the parser crashed on this file ({name}): the file is probably damaged, or needs more than "
                f"{mb} MB (KAYNAK_PARSE_MEMORY_MB)"
            )
        return (
            f"the parser stopped unexpectedly on this file (exit code {code}): the file is probably damaged, or needs "
            f"more than {mb} MB (KAYNAK_PARSE_MEMORY_MB)"
        )


class ParsePool:
    """Parse files in worker processes under memory and time limits; thread-safe; ``close()`` when done.

    ``submit(task)`` returns a Future whose result is a Parsed or a ParseFailure (it never raises for a bad file).
    """

    def __init__(
        self, workers: int | None = None, memory_mb: int = DEFAULT_MEMORY_MB, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.workers = max(1, workers or default_workers())
        self.memory_mb = int(memory_mb)
        self.timeout_s = float(timeout_s)
        self._tasks: queue.Queue[tuple[ParseTask, Future[Parsed | ParseFailure]] | None] = queue.Queue()
        self._slots: list[_Slot] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        _POOLS.add(self)

    def submit(self, task: ParseTask) -> Future[Parsed | ParseFailure]:
        fut: Future[Parsed | ParseFailure] = Future()
        with self._lock:
            if self._closed.is_set():
                raise RuntimeError("the parse pool is closed")
            if not self._slots:
                self._slots = [_Slot(self, i) for i in range(self.workers)]
                for slot in self._slots:
                    slot.thread.start()
            self._tasks.put((task, fut))
        return fut

    def parse(self, task: ParseTask) -> Parsed | ParseFailure:
        """Submit and wait."""
        return self.submit(task).result()

    def close(self) -> None:
        """Stop the workers (a file being parsed is abandoned) and cancel what is still queued."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            slots = self._slots
        while True:
            try:
                item = self._tasks.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        for _ in slots:
            self._tasks.put(None)
        for slot in slots:
            slot.thread.join(10)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        with contextlib.suppress(Exception):
            pool.close()


__all__ = [
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT_S",
    "ParseFailure",
    "ParsePool",
    "ParseTask",
    "Parsed",
    "add_warning",
    "default_workers",
    "parse_file",
]
