"""Finding the files to ingest: walking folders, include/exclude globs (kaynak.globs), symbolic links, hashing.

``discover(paths, PathFilter(include, exclude))`` returns the jobs (path + source) and the per-path failures found
while walking; nothing is read but directory entries. ``source`` is the path relative to the ingest root (a folder
argument's own folder, or a file argument's parent).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kaynak.errors import UsageError
from kaynak.globs import compile_glob

from .sources import display_path, encode_name, encode_source


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
    skipped: list[dict[str, str]] = field(default_factory=list)  # left out on purpose, with the reason
    seen: set[str] = field(default_factory=set)  # every source present on disk in scope (jobs and failures)
    ignored: int = 0


def supported_extensions() -> frozenset[str]:
    """The extensions (lower case, with the dot) some loader reads."""
    from kaynak.loaders import SUPPORTED_EXTENSIONS

    return frozenset(e.lower() if e.startswith(".") else "." + e.lower() for e in SUPPORTED_EXTENSIONS)


def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


_KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def _special(path: Path) -> str | None:
    """What a non-regular file is ('a named pipe' …), or None for a regular file (or one that cannot be stat'ed)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _link_problem(full: Path, root: Path | None) -> str | None:
    """Why a symbolic link is not followed, or None when it leads to an existing place inside the root."""
    try:
        target = full.resolve(strict=True)
    except FileNotFoundError:
        return f"broken symbolic link (to {display_path(os.readlink(full))}); not followed"
    except (OSError, RuntimeError):
        return "symbolic link loop; not followed"
    if root is not None and not _within(target, root):
        outside = f"outside the ingest root {display_path(root)}"
        return f"symbolic link to {display_path(target)}, {outside}; not followed"
    return None


class _Walk:
    """One discovery: what was found so far, and which path each source came from (to catch clashes)."""

    def __init__(self, path_filter: PathFilter) -> None:
        self.path_filter = path_filter
        self.exts = supported_extensions()
        self.found = Discovery()
        self.owners: dict[str, Path] = {}

    def add(self, path: Path, source: str, explicit: bool) -> None:
        found, path_filter = self.found, self.path_filter
        if not explicit and not path_filter(source):
            return
        if source in self.owners:
            if self.owners[source].resolve() == path.resolve():  # the same file named twice
                return
            found.seen.add(source)
            found.failed.append(
                {
                    "source": source,
                    "error": f"{display_path(path)}: same source name as "
                    f"{display_path(self.owners[source])}; ingest them separately or into different collections",
                }
            )
            return
        self.owners[source] = path
        if not explicit and path.suffix.lower() not in self.exts and not path_filter.explicit_include(source):
            found.ignored += 1
            return
        found.seen.add(source)
        kind = _special(path)
        if kind is not None:
            found.skipped.append({"source": source, "reason": f"{kind}, not a regular file; left out"})
            return
        found.jobs.append(FileJob(path, source))

    def fail(self, source: str, error: str) -> None:
        if self.path_filter(source):
            self.found.seen.add(source)
            self.found.failed.append({"source": source, "error": error})

    def skip(self, source: str, reason: str) -> None:
        if self.path_filter(source):
            self.found.seen.add(source)
            self.found.skipped.append({"source": source, "reason": reason})

    def argument(self, p: Path) -> None:
        """A path named on the command line: a file (taken whatever its extension) or a folder (walked)."""
        if not p.exists() and not p.is_symlink():
            raise UsageError(f"{display_path(p)} does not exist; name an existing file or folder", "paths")
        if p.is_dir():
            self.folder(p.resolve())
            return
        source = encode_name(p.name)
        problem = _link_problem(p, None) if p.is_symlink() else None
        if problem is not None:
            self.skip(source, problem)
        else:
            self.add(p, source, explicit=True)

    def folder(self, root: Path) -> None:
        def walk_error(err: OSError) -> None:
            where = Path(err.filename or root)
            source = encode_source(where.relative_to(root).as_posix()) if _within(where, root) else display_path(where)
            self.fail(source, f"{display_path(where)}: cannot read the folder ({err.strerror or err})")

        for dirpath, dirnames, filenames in os.walk(root, onerror=walk_error, followlinks=False):
            here = Path(dirpath)
            dirnames[:] = self._subfolders(here, sorted(dirnames), root)
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                full = here / name
                source = encode_source(full.relative_to(root).as_posix())
                problem = _link_problem(full, root) if full.is_symlink() else None
                if problem is not None:
                    self.skip(source, problem)
                else:
                    self.add(full, source, explicit=False)

    def _subfolders(self, here: Path, names: list[str], root: Path) -> list[str]:
        """The subfolders to walk into: not hidden, not a symbolic link (one that leads outside the root, or
        nowhere, is skipped with the reason; one to a folder inside the root is reached through its real path)."""
        keep = []
        for d in names:
            if d.startswith("."):
                continue
            full = here / d
            if full.is_symlink():
                problem = _link_problem(full, root)
                if problem is not None:
                    self.skip(encode_source(full.relative_to(root).as_posix()), problem)
                continue
            keep.append(d)
        return keep


def discover(paths: Sequence[str | Path], path_filter: PathFilter) -> Discovery:
    """The files to ingest under ``paths``, sorted by source; raises UsageError for a path that does not exist.

    Folders are walked recursively; hidden files and folders (``.git``, ``.DS_Store`` …) are left out, and so
    are files whose extension no loader reads (counted in ``ignored``) unless an include pattern names them.
    Symbolic links are followed only when they lead to a place inside the ingest root; others, broken links and
    special files (pipes, sockets, devices) are skipped with the reason. Sources are made from the names' bytes
    (kaynak.ingest.sources), so any name the OS gives is taken, and messages print paths in the same form.
    """
    if not paths:
        raise UsageError("name at least one file or folder to ingest", "paths")
    walk = _Walk(path_filter)
    for raw in paths:
        walk.argument(Path(raw).expanduser())
    walk.found.jobs.sort(key=lambda j: j.source)
    return walk.found


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


__all__ = ["Discovery", "FileJob", "PathFilter", "discover", "file_sha256", "supported_extensions"]
