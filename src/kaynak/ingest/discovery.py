"""Finding the files to ingest: walking folders, include/exclude globs (kaynak.globs), symbolic links, hashing.

``discover(paths, PathFilter(include, exclude))`` returns the jobs (path + source) and the per-path failures found
while walking; nothing is read but directory entries. ``source`` is the path relative to the ingest root (a folder
argument's own folder, or a file argument's parent).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kaynak.errors import UsageError
from kaynak.globs import compile_glob

# Extensions picked up from folders when the loaders package cannot say (it always can once installed).
_FALLBACK_EXTENSIONS = frozenset({".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx"})


class PathFilter:
    """Include/exclude globs on sources (paths relative to the ingest root, with ``/``).

    A pattern with a ``/`` matches the whole relative path (``docs/**/*.md``); one without matches any single
    path segment, so ``*.pdf`` matches PDFs at any depth and ``drafts`` excludes everything under a ``drafts``
    folder. A source is taken when it matches some include (or there are none) and no exclude.
    """

    def __init__(self, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None) -> None:
        self.include = [p.strip().strip("/") for p in include or [] if p.strip()]
        self.exclude = [p.strip().strip("/") for p in exclude or [] if p.strip()]
        self._inc = [(("/" in p), compile_glob(p)) for p in self.include]
        self._exc = [(("/" in p), compile_glob(p)) for p in self.exclude]

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


__all__ = ["Discovery", "FileJob", "PathFilter", "discover", "file_sha256", "supported_extensions"]
