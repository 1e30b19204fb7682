"""Sync: a collection brought up to date with the folders it was ingested from (``kaynak sync``, the watcher,
``kaynak status``; docs/adr/0015-watch-and-sync.md).

``kaynak ingest`` remembers its folders (and files) with their include/exclude globs per collection
(``remember_roots``). ``sync`` walks them again and compares each file's stat (size, mtime) with the one stored
with its document: an equal stat is unchanged without reading the file; only files whose stat changed are hashed.
Then, under the collection's sync lock (exclusive; an ingest holds it shared):

* same sha256 as stored → unchanged, the new stat is recorded;
* a new source whose sha256 is that of a document whose file is gone → a rename or move: the document is re-pointed
  to the new source (``Store.move_document``), nothing parsed or embedded;
* anything else new or changed → ingested through the usual pipeline (``IngestService.ingest(discovered=…)``);
* documents of the remembered roots whose files are gone → removed (the ``--prune`` rule, per root; a root that is
  missing altogether, such as an unmounted drive, removes nothing and is reported ``missing``).

Files that are still changing (the watcher's ``hold``) are neither ingested nor removed in this run.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaynak.errors import UsageError
from kaynak.store import Store
from kaynak.types import Collection

from .discovery import Discovery, FileJob, PathFilter, discover, file_sha256, supported_extensions
from .prepare import origin_of
from .report import IngestEvent, IngestReport
from .sources import container_index, container_of, decode_source, encode_source

if TYPE_CHECKING:
    from .service import IngestService

log = logging.getLogger(__name__)

#: A watcher writes its heartbeat this often (seconds); one older than 3 beats is not running.
HEARTBEAT_S = 5.0


def root_of(path: str | Path) -> str | None:
    """The absolute text a root is remembered by: a folder's real path, a file's absolute path (its name kept, so
    its source stays the same); None when it is not valid UTF-8."""
    p = Path(path).expanduser()
    text = str(p.resolve()) if p.is_dir() else os.path.abspath(p)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


def remember_roots(
    store: Store,
    collection: Collection,
    paths: Sequence[str | Path],
    include: Sequence[str] | None,
    exclude: Sequence[str] | None,
    report: IngestReport | None = None,
) -> None:
    """Remember ``paths`` as sources of ``collection`` (``kaynak ingest``); with the run's ``report``, they count
    as synced now."""
    roots = []
    for p in paths:
        root = root_of(p)
        if root is None:
            log.warning("%s is not valid UTF-8 text; it is not remembered for kaynak sync", p)
            continue
        store.remember_source(collection, root, list(include or []), list(exclude or []))
        roots.append(root)
    if report is not None and roots:
        store.mark_synced(collection, roots, _counts(report))


def _counts(report: IngestReport, moved: int = 0) -> dict[str, int]:
    return {
        "added": len(report.added),
        "updated": len(report.updated),
        "moved": moved,
        "removed": len(report.removed),
        "failed": len(report.failed),
        "partial": len(report.partial),
    }


@dataclass
class SyncReport:
    """What a sync did. ``ingest`` holds the outcome of the files that were ingested (added, updated, failed …)."""

    collection: str
    roots: list[dict[str, Any]] = field(default_factory=list)  # {"root", "status": ok | missing, "files"}
    unchanged: int = 0
    hashed: int = 0  # files whose bytes were read to compare (their stat had changed)
    moved: list[dict[str, str]] = field(default_factory=list)  # {"from", "to"}: renamed, nothing re-embedded
    removed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # still being written: left for the next run
    deferred: list[str] = field(default_factory=list)  # gone, kept while a held file may be their new name
    ingest: IngestReport | None = None
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return self.ingest is None or self.ingest.ok

    @property
    def changes(self) -> int:
        r = self.ingest
        return len(self.moved) + len(self.removed) + (len(r.added) + len(r.updated) + len(r.partial) if r else 0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d

    def summary(self) -> str:
        r = self.ingest or IngestReport(self.collection)
        parts = [
            f"{len(r.added)} added",
            f"{len(r.updated)} updated",
            f"{len(self.moved)} moved",
            f"{len(self.removed)} removed",
            f"{self.unchanged + len(r.unchanged)} unchanged",
            f"{len(r.partial)} partial",
            f"{len(r.failed)} failed",
        ]
        held = f", {len(self.held)} still changing" if self.held else ""
        return (
            f"{self.collection}: {', '.join(parts)}{held}; {self.hashed} files read to compare, "
            f"{r.embedded} chunks embedded in {self.seconds:.1f} s"
        )


@dataclass
class _Root:
    path: Path
    text: str
    is_dir: bool
    filter: PathFilter


@dataclass
class Plan:
    """What the stat comparison found (nothing read but directory entries and stats)."""

    jobs: dict[str, FileJob] = field(default_factory=dict)
    changed: list[tuple[FileJob, os.stat_result | None]] = field(default_factory=list)  # new or stat changed
    unchanged: int = 0
    gone: dict[str, str | None] = field(default_factory=dict)  # source → origin of documents whose file is gone
    found: Discovery = field(default_factory=Discovery)
    roots: list[dict[str, Any]] = field(default_factory=list)
    available: list[_Root] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    held_sizes: set[int | None] = field(default_factory=set)
    states: dict[str, tuple[str, int | None, int | None, str | None]] = field(default_factory=dict)


def _under(path: str, root: _Root) -> bool:
    if root.is_dir:
        return path.startswith(root.text.rstrip("/") + "/")
    return path in (root.text, os.path.realpath(root.text))


def _file_root(root: str, states: dict[str, tuple[str, int | None, int | None, str | None]]) -> bool:
    real = os.path.realpath(root)
    return any(v[3] in (root, real) for v in states.values())


def plan(
    store: Store,
    collection: Collection,
    sources: list[dict[str, Any]],
    hold: Callable[[str], bool] | None = None,
    scope: Sequence[str] | None = None,
) -> Plan:
    """Walk the remembered roots and compare stats with the stored documents. ``hold(path)``, asked only for files
    whose stat changed and for documents whose file is gone: true when that file is still changing (leave it out).
    ``scope`` (the watcher): only these absolute paths (files or folders, present or gone) are looked at, not the
    whole roots; documents whose origin lies at or under them and whose file is no longer found there are gone."""
    p = Plan()
    states = p.states = store.file_states(collection)
    members = container_index(states)  # a mailbox's documents carry the mailbox file's stat
    for src in sources:
        path = Path(src["root"])
        is_dir = path.is_dir()
        # A folder that is not there (an unmounted drive?) removes nothing; a file that was ingested by name and is
        # gone from a folder that is still there was deleted (its document goes).
        if not is_dir and not path.is_file() and not (path.parent.is_dir() and _file_root(src["root"], states)):
            p.roots.append({"root": src["root"], "status": "missing", "files": 0})
            continue
        root = _Root(path, src["root"], is_dir, PathFilter(src["include"], src["exclude"]))
        p.available.append(root)
        if not path.exists():
            p.roots.append({"root": src["root"], "status": "ok", "files": 0})
            continue
        # Includes may name any file type: such a root is walked whole, as ingest walks it.
        full = scope is None or bool(root.filter.include)
        found = discover([path], root.filter) if full else _discover_scope(root, scope or [])
        p.found.failed.extend(found.failed)
        p.found.skipped.extend(found.skipped)
        p.found.seen |= found.seen
        p.found.ignored += found.ignored
        for job in found.jobs:
            p.jobs.setdefault(job.source, job)  # two roots giving one source: the first (by root) wins
        p.roots.append({"root": src["root"], "status": "ok", "files": len(found.jobs)})
    for source, job in sorted(p.jobs.items()):
        try:
            st: os.stat_result | None = os.stat(job.path)
        except OSError:
            st = None  # the ingest reports why it cannot be read
        stored = states.get(source) or next((states[m] for m in members.get(source, [])), None)
        if st is not None and stored is not None and stored[1] == st.st_size and stored[2] == st.st_mtime_ns:
            p.unchanged += 1
        elif hold is not None and hold(os.fspath(job.path)):
            p.held.append(source)
            p.held_sizes.add(st.st_size if st is not None else None)
        else:
            p.changed.append((job, st))
    for source, (_sha, _size, _mtime, origin) in states.items():
        file = container_of(source) or source  # a message of a mailbox goes with the mailbox
        if file in p.found.seen or file in p.jobs:
            continue
        if origin is None or not any(_under(origin, r) and r.filter(file) for r in p.available):
            continue  # not from a remembered root (an upload, an unknown origin, a missing drive): kept
        if scope is not None and not any(origin == s or origin.startswith(s.rstrip("/") + "/") for s in scope):
            continue  # outside the changed paths: not looked at
        if hold is not None and hold(origin):
            p.held.append(source)
            continue
        p.gone[source] = origin
    return p


def _discover_scope(root: _Root, scope: Sequence[str]) -> Discovery:
    """What ``discover`` would find of the root at the changed ``scope`` paths only (sources relative to the root)."""
    found = Discovery()
    base = root.text.rstrip("/") + "/"
    for path in sorted(set(scope)):
        if not root.is_dir:
            if path == root.text and os.path.lexists(path):
                _merge(found, discover([Path(path)], root.filter), "", None)
            continue
        if not path.startswith(base):
            continue
        rel = path[len(base) :]
        if any(part.startswith(".") for part in rel.split("/")):
            continue  # hidden, as in a full walk
        if os.path.isdir(path) and not os.path.islink(path):
            _merge(found, discover([Path(path)], PathFilter()), encode_source(rel) + "/", root.filter)
        elif os.path.lexists(path):
            source = encode_source(rel)
            if os.path.splitext(path)[1].lower() not in supported_extensions() or not root.filter(source):
                continue
            found.seen.add(source)
            real = os.path.realpath(path)
            if os.path.islink(path) and not (os.path.exists(real) and real.startswith(base)):
                found.skipped.append(
                    {
                        "source": source,
                        "reason": "symbolic link that leads nowhere or out of the ingest root; not followed",
                    }
                )
            elif not os.path.isfile(path):
                found.skipped.append({"source": source, "reason": "not a regular file; left out"})
            else:
                found.jobs.append(FileJob(Path(path), source))
    return found


def _merge(into: Discovery, sub: Discovery, prefix: str, keep: PathFilter | None) -> None:
    """Add ``sub``'s findings with ``prefix`` before their sources, those ``keep`` accepts."""
    for job in sub.jobs:
        source = prefix + job.source
        if keep is None or keep(source):
            into.jobs.append(FileJob(job.path, source))
            into.seen.add(source)
    for f in sub.failed:
        if keep is None or keep(prefix + f["source"]):
            into.failed.append({**f, "source": prefix + f["source"]})
            into.seen.add(prefix + f["source"])
    for f in sub.skipped:
        if keep is None or keep(prefix + f["source"]):
            into.skipped.append({**f, "source": prefix + f["source"]})
            into.seen.add(prefix + f["source"])
    into.ignored += sub.ignored


def _gone_in_scope(source: str, roots: list[_Root], scope: Sequence[str]) -> bool:
    """Whether the file of ``source`` lies at or under a changed path and is no longer there."""
    for r in roots:
        if r.is_dir:
            full = os.path.join(r.text, os.fsdecode(decode_source(source)))
            if any(full == s or full.startswith(s.rstrip("/") + "/") for s in scope) and not os.path.lexists(full):
                return True
    return False


def _still_gone(source: str, origin: str | None, roots: list[_Root]) -> bool:
    """Check again, just before removing, that the file has not come back."""
    if origin is not None and os.path.lexists(origin):
        return False
    for r in roots:
        if r.is_dir and os.path.lexists(os.path.join(os.fsencode(r.text), decode_source(source))):
            return False
    return True


def sync(
    service: IngestService,
    name: str,
    *,
    hold: Callable[[str], bool] | None = None,
    stop: threading.Event | None = None,
    progress: Callable[[IngestEvent], None] | None = None,
    on_wait: Callable[[], None] | None = None,
    scope: Sequence[str] | None = None,
) -> SyncReport:
    """Bring collection ``name`` up to date with its remembered roots (see the module's docstring); with ``scope``
    (the watcher's changed paths), only at those paths.

    Raises CollectionNotFound, or UsageError when the collection has no remembered roots. Waits for the
    collection's sync lock (``on_wait`` is told once); ``stop`` set while waiting returns an interrupted report.
    """
    t0 = time.perf_counter()
    store = service.store
    col = store.get_collection(name)
    sources = store.collection_sources(col)
    if not sources:
        raise UsageError(
            f"collection {name!r} has no remembered folders; ingest one into it first: kaynak ingest FOLDER -c {name}",
            "collection",
        )
    report = SyncReport(name)
    with store.collection_lock(name, exclusive=True, stop=(stop.is_set if stop else None), on_wait=on_wait) as got:
        if not got:
            report.interrupted = True
            return report
        col = store.get_collection(name)  # it may have been deleted while we waited
        _sync_locked(service, col, store.collection_sources(col), report, hold, stop, progress, scope)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _compare_changed(
    store: Store, col: Collection, p: Plan, report: SyncReport, stop: threading.Event | None
) -> list[FileJob]:
    """Read the files whose stat changed: same content → only the stat is recorded; content of a gone document →
    a rename (moved, nothing re-embedded); else the file is to be ingested (returned)."""
    states = p.states
    members = container_index(states)
    by_sha: dict[str, list[str]] = {}  # documents whose file is gone, by content: candidates for a rename
    for source in sorted(p.gone):
        if container_of(source) is None:  # a mailbox's documents are not moved one by one: it is read again
            by_sha.setdefault(states[source][0], []).append(source)
    to_ingest: list[FileJob] = []
    refresh: list[tuple[str, str, int, int, str | None]] = []
    for job, st in p.changed:
        if stop is not None and stop.is_set():
            report.interrupted = True
            break
        if st is None:
            to_ingest.append(job)
            continue
        try:
            sha = file_sha256(job.path)
        except OSError:
            to_ingest.append(job)
            continue
        report.hashed += 1
        stored = states.get(job.source) or next((states[m] for m in members.get(job.source, [])), None)
        stat = (st.st_size, st.st_mtime_ns)
        if stored is not None and stored[0] == sha:
            for source in [job.source, *members.get(job.source, [])]:
                refresh.append((source, sha, st.st_size, st.st_mtime_ns, origin_of(job.path)))
            report.unchanged += 1
            continue
        olds = by_sha.get(sha)
        if stored is None and olds:
            old = olds.pop(0)
            if store.move_document(col, old, job.source, sha, origin_of(job.path), stat):
                report.moved.append({"from": old, "to": job.source})
                p.gone.pop(old, None)
                continue
        to_ingest.append(job)
    store.set_file_stats(col, refresh)
    return to_ingest


def _remove_gone(store: Store, col: Collection, p: Plan, report: SyncReport) -> None:
    """Delete the documents whose file is gone (not renamed), unless a file still settling may be their new name."""
    for source, origin in sorted(p.gone.items()):
        size = p.states[source][1]
        if p.held and (size is None or size in p.held_sizes or None in p.held_sizes):
            # A file held back (still settling) has this document's size: it may be its new name. Keep the
            # document until that file has settled and can be matched by content (the watcher syncs again).
            report.deferred.append(source)
        elif _still_gone(container_of(source) or source, origin, p.available) and store.delete_document(col, source):
            report.removed.append(source)


def _forget_gone_failures(store: Store, col: Collection, p: Plan, n_sources: int, scope: Sequence[str] | None) -> None:
    """Forget the remembered failures of files no longer there (all roots walked, or within the watcher's scope)."""
    if scope is None and len(p.available) == n_sources:
        store.forget_failures(
            col,
            [
                f
                for f in store.ingest_failures(col)
                if f not in p.found.seen and f not in p.jobs and any(r.filter(f) for r in p.available)
            ],
        )
    elif scope is not None:
        store.forget_failures(
            col,
            [
                f
                for f in store.ingest_failures(col)
                if f not in p.found.seen and f not in p.jobs and _gone_in_scope(f, p.available, scope)
            ],
        )


def _sync_locked(
    service: IngestService,
    col: Collection,
    sources: list[dict[str, Any]],
    report: SyncReport,
    hold: Callable[[str], bool] | None,
    stop: threading.Event | None,
    progress: Callable[[IngestEvent], None] | None,
    scope: Sequence[str] | None = None,
) -> None:
    store = service.store
    p = plan(store, col, sources, hold, scope)
    report.roots, report.unchanged, report.held = p.roots, p.unchanged, p.held
    to_ingest = _compare_changed(store, col, p, report, stop)
    if not report.interrupted:
        _remove_gone(store, col, p, report)
        _forget_gone_failures(store, col, p, len(sources), scope)
    if to_ingest or p.found.failed:
        found = Discovery(jobs=to_ingest, failed=list(p.found.failed), seen={j.source for j in to_ingest})
        report.ingest = service.ingest(
            [r.path for r in p.available] or [sources[0]["root"]],
            col.name,
            discovered=found,
            locked=True,
            stop=stop,
            progress=progress,
        )
        report.ingest.removed = list(report.removed)
        report.interrupted = report.interrupted or report.ingest.interrupted
    if not report.interrupted:
        ok_roots = [r["root"] for r in p.roots if r["status"] == "ok"]
        summary = _counts(report.ingest or IngestReport(col.name), len(report.moved))
        summary["removed"] = len(report.removed)
        store.mark_synced(col, ok_roots, summary)


def sync_all(service: IngestService, names: Sequence[str] | None = None, **kw: Any) -> list[SyncReport]:
    """Sync the named collections, or every collection with remembered roots."""
    store = service.store
    if not names:
        names = [c.name for c in store.list_collections() if store.collection_sources(c)]
    return [sync(service, n, **kw) for n in names]


# ---------------------------------------------------------------------------------------------- status
def collection_status(store: Store, name: str, *, scan: bool = True) -> dict[str, Any]:
    """Per collection: remembered roots with their last sync, the last sync time, files pending (new, changed or
    deleted on disk and not yet in the index: a stat walk, nothing read), files failing with their reasons, and
    the watchers running (a heartbeat younger than 3 beats)."""
    col = store.get_collection(name)
    sources = store.collection_sources(col)
    state = store.sync_state(col, fresh_s=3 * HEARTBEAT_S)
    failing = state["failing"]
    pending: int | None = None
    pending_sources: list[str] = []
    roots = [dict(s) for s in sources]
    if scan and sources:
        p = plan(store, col, sources)
        failed = {f["source"] for f in failing}
        pending_sources = sorted({j.source for j, _ in p.changed if j.source not in failed} | set(p.gone))
        pending = len(pending_sources)
        status = {r["root"]: r["status"] for r in p.roots}
        for r in roots:
            r["status"] = status.get(r["root"], "ok")
    last = [s["last_sync_at"] for s in sources if s["last_sync_at"] is not None]
    return {
        "collection": col.name,
        "documents": col.document_count,
        "roots": [
            {
                "root": r["root"],
                "include": r["include"],
                "exclude": r["exclude"],
                "status": r.get("status"),
                "last_sync_at": _iso(r["last_sync_at"]),
                "last_sync": r["last_sync"],
            }
            for r in roots
        ],
        "last_sync_at": _iso(min(last)) if last and len(last) == len(sources) else None,
        "files_pending": pending,
        "pending": pending_sources[:100],
        "files_failing": len(failing),
        "failing": [
            {"source": f["source"], "reason": f["reason"], "failed_at": _iso(f["failed_at"])} for f in failing[:100]
        ],
        "watching": bool(state["watchers"]),
        "watchers": [
            {**w, "started_at": _iso(w["started_at"]), "heartbeat_at": _iso(w["heartbeat_at"])}
            for w in state["watchers"]
        ],
    }


def _iso(value: Any) -> str | None:
    """ISO 8601 in UTC (``2026-12-07T22:12:11.807212Z``), the timestamp format of every face."""
    if value is None:
        return None
    from datetime import UTC

    return str(value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


__all__ = [
    "HEARTBEAT_S",
    "Plan",
    "SyncReport",
    "collection_status",
    "plan",
    "remember_roots",
    "root_of",
    "sync",
    "sync_all",
]
