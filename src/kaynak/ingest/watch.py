"""The watcher: collections kept current with their remembered folders continuously (``kaynak watch``,
``kaynak serve --watch``; docs/adr/0015-watch-and-sync.md).

File-system events (``watchfiles``: inotify, FSEvents, ReadDirectoryChangesW; polling with
``KAYNAK_WATCH_POLL=1``, and automatically for folders on network file systems) are only triggers: each batch of
settled changes runs ``kaynak.ingest.sync.sync`` on the collection, which compares stats (nothing unchanged is read)
and so sees the end state of whatever happened: an editor's save-rename-delete dance is one update, a rename is a
rename, a folder moved is its files moved.

* **Settling.** A changed path is held back until no event has touched it for ``KAYNAK_WATCH_SETTLE_S`` seconds and
  its size and mtime are the same at two looks; a file still being copied or written in pieces is not ingested
  half-written (the sync leaves held paths alone: neither ingested nor removed).
* **Batching.** Paths that settle together go in one sync; events arriving during a sync wait for the next one.
* **Restart-safe.** On start the watcher first syncs each collection (what changed while it was down), and every
  document commits on its own, so stopping it at any moment (SIGKILL included) loses nothing.
* **Status.** A heartbeat row per collection (``sync_watchers``) every ``HEARTBEAT_S`` seconds says it is running
  and how many changes wait; a clean stop deletes it.
* **Idle.** Between events the watching thread sleeps in the OS (or polls), the main loop blocks on a queue with
  a timeout of one heartbeat: no busy loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kaynak.errors import CollectionNotFound, KaynakError, UsageError

from .sync import HEARTBEAT_S, SyncReport, sync

if TYPE_CHECKING:
    from .service import IngestService

log = logging.getLogger(__name__)

#: A batch of more changed paths than this is synced by a full walk rather than path by path.
SCOPE_LIMIT = 1000
#: Even with events, every collection is walked whole this often (seconds): a safety net for events the OS dropped.
FULL_SYNC_S = 3600.0

#: File systems whose events do not reach this machine (changes made elsewhere): watched by polling.
NETWORK_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "fuse.sshfs",
        "sshfs",
        "9p",
        "afs",
        "ceph",
        "glusterfs",
        "fuse.rclone",
        "davfs",
        "fuse.davfs2",
        "virtiofs",
        "vboxsf",
        "fuse.s3fs",
    }
)


def network_fs(path: str | Path) -> bool:
    """Whether ``path`` lies on a network file system (Linux: by /proc/self/mounts; elsewhere False)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return False
    real = os.path.realpath(path)
    best, kind = "", ""
    for point, fstype in mounts:
        point = point.replace("\\040", " ")
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fstype
    return kind in NETWORK_FS


@dataclass
class _Pending:
    last_event: float
    snapshot: tuple[int, int] | None  # (size, mtime_ns) at the last look; None: not there


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


class Watcher:
    """Keeps ``names`` (default: every collection with remembered folders) in sync until ``stop`` is set.

    ``poll``: True polls, False uses OS events, None decides per setting (``KAYNAK_WATCH_POLL``) or, unset, polls
    when a folder is on a network file system. ``on_sync`` receives every sync's report (the CLI prints it).
    """

    def __init__(
        self,
        service: IngestService,
        names: Sequence[str] | None = None,
        *,
        poll: bool | None = None,
        settle_s: float | None = None,
        poll_ms: int | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        on_sync: Callable[[SyncReport], None] | None = None,
        on_ready: Callable[[Watcher], None] | None = None,
    ) -> None:
        s = service.settings
        self.service = service
        self.store = service.store
        self.names = list(names or [])
        self.poll = poll if poll is not None else getattr(s, "watch_poll", None)
        self.settle_s = settle_s if settle_s is not None else getattr(s, "watch_settle_s", 1.0)
        self.poll_ms = poll_ms if poll_ms is not None else getattr(s, "watch_poll_ms", 1000)
        self.heartbeat_s = heartbeat_s
        self.on_sync = on_sync
        self.on_ready = on_ready
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.roots: dict[str, list[str]] = {}  # collection → remembered roots
        self.ids: dict[str, int] = {}
        self.pending: dict[str, _Pending] = {}
        self.polling = False
        self.syncs = 0  # syncs run (tests)
        self._events: queue.Queue[set[tuple[object, str]]] = queue.Queue()
        self.ready = threading.Event()  # set once the first catch-up sync of every collection is done

    # ------------------------------------------------------------------ setup
    def _collections(self) -> None:
        names = self.names or [c.name for c in self.store.list_collections() if self.store.collection_sources(c)]
        if not names:
            raise UsageError(
                "no collection has remembered folders to watch; ingest a folder first: kaynak ingest FOLDER -c NAME",
                "collection",
            )
        for name in names:
            col = self.store.get_collection(name)
            roots = [s["root"] for s in self.store.collection_sources(col)]
            if not roots:
                raise UsageError(
                    f"collection {name!r} has no remembered folders; ingest one into it first: "
                    f"kaynak ingest FOLDER -c {name}",
                    "collection",
                )
            self.roots[name] = roots
            self.ids[name] = col.id

    def _watch_paths(self) -> list[str]:
        paths: set[str] = set()
        for roots in self.roots.values():
            for root in roots:
                p = Path(root)
                target = p if p.is_dir() else p.parent
                if target.is_dir():
                    paths.add(str(target))
                else:
                    log.warning("%s is not there (an unmounted drive?); not watched until the watcher restarts", root)
        # A folder inside another watched one is covered by it (watching is recursive).
        return sorted(p for p in paths if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in paths))

    # ------------------------------------------------------------------ the OS side
    def _watch_thread(self, paths: list[str], stop: threading.Event) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(
                *paths,
                watch_filter=None,
                debounce=200,
                step=200,
                stop_event=stop,
                rust_timeout=0,
                raise_interrupt=False,
                force_polling=self.polling,
                poll_delay_ms=self.poll_ms,
                ignore_permission_denied=True,
            ):
                batch: set[tuple[object, str]] = set(changes)
                self._events.put(batch)
        except Exception as err:  # the folder went away, too many watches …: say so, keep serving searches
            log.error("watching %s stopped: %s", ", ".join(paths), err)
            self._events.put({(None, "")})

    # ------------------------------------------------------------------ the main loop
    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set (returns then, after the sync in progress has written what it embedded)."""
        self._collections()
        paths = self._watch_paths()
        self.polling = bool(self.poll) if self.poll is not None else any(network_fs(p) for p in paths)
        watching = threading.Thread(target=self._watch_thread, args=(paths, stop), name="kaynak-watch", daemon=True)
        if paths:
            watching.start()  # before the catch-up, so changes made during it are seen too
        last_beat = 0.0
        try:
            self._beat()
            last_beat = time.monotonic()
            for name in list(self.roots):  # what changed while no watcher ran
                if stop.is_set():
                    break
                self._sync(name, stop, full=True)
            last_full = time.monotonic()
            self.ready.set()
            if self.on_ready is not None:
                self.on_ready(self)
            while not stop.is_set():
                wait = self.heartbeat_s - (time.monotonic() - last_beat)
                if self.pending:
                    wait = min(wait, self.settle_s / 2)
                with contextlib.suppress(queue.Empty):
                    self._take(self._events.get(timeout=max(0.01, wait)))
                self._drain()
                if time.monotonic() - last_beat >= self.heartbeat_s:
                    self._beat()
                    last_beat = time.monotonic()
                full = time.monotonic() - last_full >= FULL_SYNC_S
                for name in list(self.roots) if full else self._settled():
                    if stop.is_set():
                        break
                    self._sync(name, stop, full=full)
                if full:
                    last_full = time.monotonic()
        finally:
            stop.set()
            if watching.is_alive():
                watching.join(timeout=5)
            try:
                self.store.watcher_stopped(self.id)
            except KaynakError as err:
                log.warning("could not clear the watcher's heartbeat: %s", err)

    def _take(self, changes: set[tuple[object, str]]) -> None:
        now = time.monotonic()
        for _change, path in changes:
            if path:
                self.pending[path] = _Pending(now, _stat(path))

    def _settled(self) -> list[str]:
        """The collections with changes that have settled (their paths then leave ``pending`` once synced)."""
        now = time.monotonic()
        ready: list[str] = []
        for path, p in list(self.pending.items()):
            if now - p.last_event < self.settle_s:
                continue
            snap = _stat(path)
            if snap != p.snapshot:  # changed without an event we saw (polling, or mid-copy): look again later
                self.pending[path] = _Pending(now, snap)
                continue
            for name in self._owners(path):
                if name not in ready:
                    ready.append(name)
            if not self._owners(path):
                del self.pending[path]
        return ready

    def _owners(self, path: str) -> list[str]:
        """The collections a changed path belongs to (under a folder root, or a file root itself)."""
        out = []
        for name, roots in self.roots.items():
            for root in roots:
                if path == root or (os.path.isdir(root) and path.startswith(root.rstrip("/") + "/")):
                    out.append(name)
                    break
        return out

    def _held(self, now: float) -> Callable[[str], bool]:
        """``hold(path)`` for a sync starting now: paths (or under folders) whose changes have not settled, and
        files modified less than the settle time ago (written to right now, perhaps without our having seen the
        event yet). A held file not yet pending becomes pending, so it is looked at again."""
        unsettled = [p for p, v in self.pending.items() if now - v.last_event < self.settle_s]
        wall = time.time()

        def hold(path: str) -> bool:
            if any(path == u or path.startswith(u.rstrip("/") + "/") for u in unsettled):
                return True
            snap = _stat(path)
            if snap is not None and 0 <= wall - snap[1] / 1e9 < self.settle_s:
                self.pending.setdefault(path, _Pending(time.monotonic(), snap))
                return True
            return False

        return hold

    def _drain(self) -> None:
        try:
            while True:
                self._take(self._events.get_nowait())
        except queue.Empty:
            pass

    def _sync(self, name: str, stop: threading.Event, full: bool = False) -> None:
        """Sync ``name``: at its changed paths only, or (``full``, or a very large batch) by walking its roots."""
        self._drain()  # every event seen so far counts in what is held back
        started = time.monotonic()
        hold = self._held(started)
        scope = None if full else self._owners_paths(name)
        if scope is not None and len(scope) > SCOPE_LIMIT:
            scope = None
        try:
            report = sync(self.service, name, hold=hold, stop=stop, scope=scope)
        except CollectionNotFound:
            log.warning("collection %s was deleted; no longer watched", name)
            self.roots.pop(name, None)
            return
        except KaynakError as err:  # the database is down …: the changes stay pending and are tried again
            log.warning("sync of %s failed, will retry: %s", name, err)
            for p in self.pending.values():
                p.last_event = max(p.last_event, time.monotonic())
            return
        self.syncs += 1
        # With a removal deferred, every changed path stays pending for the next round (the deletion may be the
        # other half of a rename whose new name is still settling).
        mine = set(self._owners_paths(name)) if not report.deferred else set()
        for path in mine:
            seen = self.pending.get(path)
            if seen is not None and seen.last_event <= started and not hold(path):
                del self.pending[path]
        if self.on_sync is not None:
            try:
                self.on_sync(report)
            except Exception:  # a broken display must not stop the watcher
                log.exception("on_sync failed")

    def _owners_paths(self, name: str) -> list[str]:
        return [path for path in self.pending if name in self._owners(path)]

    def _beat(self) -> None:
        counts: dict[int, int] = {}
        for name, cid in self.ids.items():
            if name in self.roots:
                counts[cid] = len(self._owners_paths(name))
        try:
            self.store.watcher_heartbeat(self.id, socket.gethostname(), os.getpid(), self.polling, counts)
        except KaynakError as err:
            log.warning("watcher heartbeat failed: %s", err)


def start_watcher(
    service: IngestService, names: Sequence[str] | None = None, **kw: object
) -> tuple[threading.Thread, threading.Event, Watcher]:
    """Run a Watcher in a background thread (``kaynak serve --watch``); set the event to stop it, then join."""
    stop = threading.Event()
    watcher = Watcher(service, names, **kw)  # type: ignore[arg-type]

    def run() -> None:
        try:
            watcher.run(stop)
        except KaynakError as err:
            log.error("the watcher stopped: %s", err)
        except Exception:
            log.exception("the watcher stopped on an internal error")

    thread = threading.Thread(target=run, name="kaynak-watcher", daemon=True)
    thread.start()
    return thread, stop, watcher


__all__ = ["NETWORK_FS", "Watcher", "network_fs", "start_watcher"]
