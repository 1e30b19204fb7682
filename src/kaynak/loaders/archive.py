"""Archives (ZIP, TAR and compressed TAR): the documents inside become documents of their own.

A file ``bundle.zip`` holding ``folder/report.pdf`` gives the document ``bundle.zip#folder/report.pdf``, read by
the loader of the member's extension, exactly as if it stood in a folder; the archive itself holds no text (like
an ``.mbox``). Members that are containers themselves (an ``.eml`` with attachments, another archive) give their
documents under the member's name: ``bundle.zip#mail.eml#report.pdf``, ``bundle.zip#old.zip/a.docx``.

Hostile archives stay bounded (the caps are per top-level file, nested archives included):
- at most ``MAX_ENTRIES`` entries are looked at and ``MAX_DOCUMENTS`` documents kept (a warning says so);
- every member is inflated through a running budget (``MAX_INFLATED`` bytes in all, no more than ``MAX_RATIO``
  times the archive's size once past ``RATIO_FLOOR``), counting bytes that really come out, never declared sizes;
- archives nest at most ``MAX_DEPTH`` levels (a zip in a zip in a zip is read; one level more is a warning);
- links, devices, absolute paths and ``..`` entries are never read (the file's name is only ever a label here:
  nothing is written to disk);
- a password-protected zip is EncryptedFile; a member that cannot be read is a warning and the others are kept.

``.gz``/``.bz2``/``.xz`` hold either a TAR archive or one compressed file (``report.txt.gz`` is read as
``report.txt``). 7-Zip is not read (docs/adr/0035-archives-and-outlook-mail.md says why).
"""

from __future__ import annotations

import bz2
import io
import lzma
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kaynak.errors import CorruptFile, EncryptedFile, LoaderError, NoText, UnsupportedFileType
from kaynak.types import LoadedDocument

MAX_ENTRIES = 20_000
MAX_DOCUMENTS = 5_000
MAX_DEPTH = 3
MAX_INFLATED = 1024 * 1024 * 1024
MAX_MEMBER = 100 * 1024 * 1024
RATIO_FLOOR = 64 * 1024 * 1024
MAX_RATIO = 200
CHUNK = 64 * 1024

ARCHIVE_EXTENSIONS = frozenset({".zip", ".tar", ".tgz", ".tbz2", ".txz", ".gz", ".bz2", ".xz"})
#: Files every archiver or desktop leaves behind: left out without a word.
_JUNK_NAMES = frozenset({".ds_store", "thumbs.db", "desktop.ini", ".localized"})
_COMPRESSED = {".gz": "gzip", ".tgz": "gzip", ".bz2": "bzip2", ".tbz2": "bzip2", ".xz": "xz", ".txz": "xz"}


class _Bomb(Exception):
    """The running budget was passed."""


@dataclass
class _Budget:
    """Bytes inflated so far for one top-level archive, shared by everything nested in it."""

    archive_size: int
    used: int = 0
    entries: int = 0
    documents: int = 0

    def spend(self, n: int) -> None:
        self.used += n
        if self.used > MAX_INFLATED or (self.used > RATIO_FLOOR and self.used > MAX_RATIO * self.archive_size):
            raise _Bomb()


@dataclass
class _Read:
    """What reading one archive gave: documents by member path, and warnings."""

    parts: list[tuple[str, LoadedDocument]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped_types: dict[str, int] = field(default_factory=dict)
    unsafe: int = 0
    encrypted: int = 0
    supported: int = 0


def load_archive(path: Path, data: bytes, options: Any) -> LoadedDocument:
    budget = _Budget(max(len(data), 1))
    kind = _kind(path, data)
    out = _Read()
    try:
        _read_archive(path, path.name, data, kind, options, budget, 1, out)
    except _Bomb:
        raise CorruptFile(
            path,
            f"archive inflates to more than {min(budget.used, MAX_INFLATED) // 1_048_576} MB "
            f"({len(data) // 1024} KB on disk): refused as a possible archive bomb",
        ) from None
    if out.encrypted and not out.parts and out.encrypted >= out.supported:
        raise EncryptedFile(path, f"{path.name} is password-protected; save it without a password first")
    warnings = list(out.warnings)
    if out.encrypted:
        warnings.append(f"{out.encrypted} password-protected file(s) in the archive were not read")
    if out.unsafe:
        warnings.append(f"{out.unsafe} link(s), device(s) or entries with unsafe paths ('..', absolute) left out")
    if out.skipped_types:
        kinds = ", ".join(f"{ext or 'no extension'} ({n})" for ext, n in sorted(out.skipped_types.items())[:12])
        warnings.append(f"files of types kaynak does not read were left out: {kinds}")
    if not out.parts:
        if out.supported:
            raise NoText(path, "no text in any file of the archive (" + "; ".join(warnings[:3]) + ")")
        raise NoText(path, "the archive holds no file that kaynak reads" + (f" ({warnings[-1]})" if warnings else ""))
    metadata = {"format": kind, "documents": len(out.parts), "entries": budget.entries}
    parts = [("#" + name, doc) for name, doc in out.parts]  # stored as ``bundle.zip#folder/report.pdf``
    return LoadedDocument(title=path.name, pages=[], metadata=metadata, warnings=warnings, parts=parts)


def _kind(path: Path, data: bytes) -> str:
    """'zip', 'tar', or a compression name ('gzip', 'bzip2', 'xz'), from the bytes first and the name second."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if data[:3] == b"BZh":
        return "bzip2"
    if data[:6] == b"\xfd7zXZ\x00":
        return "xz"
    ext = path.suffix.lower()
    if data[257:262] == b"ustar" or ext == ".tar":  # old (V7) tar files have no magic; tarfile checks checksums
        return "tar"
    if ext == ".zip":
        raise CorruptFile(path, "not a readable zip archive (it does not start like one)")
    if ext in _COMPRESSED:
        raise CorruptFile(path, f"not a readable {_COMPRESSED[ext]} file (it does not start like one)")
    if len(data) >= 512 and not data[:512].strip(b"\x00"):
        return "tar"  # an empty tar archive is all zero blocks
    raise CorruptFile(path, "not a readable tar archive (no tar header)")


def _read_archive(
    top: Path, label: str, data: bytes, kind: str, options: Any, budget: _Budget, depth: int, out: _Read
) -> None:
    """Read the archive ``data`` (its name in messages: ``label``) into ``out``, members named by their path."""
    if kind == "zip":
        members: Iterator[tuple[str, Callable[[], bytes] | None, bool]] = _zip_members(top, data, budget, out)
    elif kind == "tar":
        members = _tar_members(top, io.BytesIO(data), budget, out)
    else:
        members = _compressed_members(top, label, data, kind, budget, out)
    for name, read, encrypted in members:
        _take(top, label, name, read, encrypted, options, budget, depth, out)


def _take(
    top: Path,
    label: str,
    name: str,
    read: Callable[[], bytes] | None,
    encrypted: bool,
    options: Any,
    budget: _Budget,
    depth: int,
    out: _Read,
) -> None:
    from . import CONTAINER_EXTENSIONS, SUPPORTED_EXTENSIONS, loader_for

    ext = PurePosixPath(name).suffix.lower()
    base = PurePosixPath(name).name
    if base.lower() in _JUNK_NAMES or name.startswith("__MACOSX/") or base.startswith("._"):
        return
    if ext not in SUPPORTED_EXTENSIONS or ext == ".7z":
        out.skipped_types[ext] = out.skipped_types.get(ext, 0) + 1
        return
    out.supported += 1
    if encrypted:
        out.encrypted += 1
        return
    if read is None:
        return
    if budget.documents >= MAX_DOCUMENTS:
        if budget.documents == MAX_DOCUMENTS:
            out.warnings.append(f"only the first {MAX_DOCUMENTS:,} documents of the archive were read")
            budget.documents += 1
        return
    try:
        member = read()
    except LoaderError as err:
        out.warnings.append(f"{name} could not be read ({err.reason})")
        return
    if ext in ARCHIVE_EXTENSIONS:
        _take_nested(top, f"{label}/{name}", name, member, options, budget, depth, out)
        return
    try:
        doc = loader_for(name)(Path(base), member, options)
    except LoaderError as err:
        out.warnings.append(f"{name} could not be read ({err.reason})")
        return
    except (RecursionError, MemoryError) as err:
        out.warnings.append(f"{name} could not be read ({type(err).__name__})")
        return
    except Exception as err:  # one broken member does not lose the archive
        out.warnings.append(f"{name} could not be read ({type(err).__name__}: {err})")
        return
    budget.documents += 1
    if doc.pages or ext not in CONTAINER_EXTENSIONS:
        out.parts.append((name, doc))
    for suffix, part in doc.parts:  # an e-mail's attachments, a mailbox's messages
        out.parts.append((name + suffix, part))
    doc.parts = []
    out.warnings.extend(f"{name}: {w}" for w in doc.warnings)
    doc.warnings = []


def _take_nested(
    top: Path, label: str, name: str, member: bytes, options: Any, budget: _Budget, depth: int, out: _Read
) -> None:
    """An archive inside the archive: its documents under ``name/``, within the same budget."""
    if depth >= MAX_DEPTH:
        out.warnings.append(f"{name}: archives nested deeper than {MAX_DEPTH} levels were not read")
        return
    inner = _Read()
    try:
        _read_archive(top, label, member, _kind(Path(name), member), options, budget, depth + 1, inner)
    except LoaderError as err:
        out.warnings.append(f"{name} could not be read ({err.reason})")
        return
    out.parts.extend((f"{name}/{sub}", doc) for sub, doc in inner.parts)
    out.warnings.extend(f"{name}: {w}" for w in inner.warnings)
    out.unsafe += inner.unsafe
    out.encrypted += inner.encrypted
    out.supported += inner.supported
    for k, n in inner.skipped_types.items():
        out.skipped_types[k] = out.skipped_types.get(k, 0) + n


def _safe_name(raw: str) -> str | None:
    """The member's path as a clean relative POSIX path, or None for an absolute path or one climbing out."""
    name = raw.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return posixpath.join(*parts)


def _zip_members(
    top: Path, data: bytes, budget: _Budget, out: _Read
) -> Iterator[tuple[str, Callable[[], bytes] | None, bool]]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as err:
        raise CorruptFile(top, f"not a readable zip archive ({err})") from None
    with zf:
        for info in infos:
            budget.entries += 1
            if budget.entries > MAX_ENTRIES:
                out.warnings.append(f"only the first {MAX_ENTRIES:,} entries of the archive were looked at")
                return
            if info.is_dir():
                continue
            mode = info.external_attr >> 16
            name = _safe_name(_zip_name(info))
            if name is None or (stat.S_IFMT(mode) and not stat.S_ISREG(mode)):  # a link, a device, …
                out.unsafe += 1
                continue
            encrypted = bool(info.flag_bits & 0x1)

            def read(info: zipfile.ZipInfo = info, name: str = name) -> bytes:
                return _inflate_zip_member(top, zf, info, name, budget)

            yield name, read, encrypted


def _zip_name(info: zipfile.ZipInfo) -> str:
    """The member's name: UTF-8 when flagged or valid, else the Turkish DOS code page (cp857) that Windows'
    own zip tool writes on a Turkish system (zipfile reads unflagged names as cp437)."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        raw = info.filename.encode("cp437")
    except UnicodeEncodeError:
        return info.filename
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp857", errors="replace")


def _inflate_zip_member(top: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, budget: _Budget) -> bytes:
    pieces: list[bytes] = []
    size = 0
    try:
        with zf.open(info) as member:
            while piece := member.read(CHUNK):
                budget.spend(len(piece))
                size += len(piece)
                if size > MAX_MEMBER:
                    raise _MemberError(f"{name} is over {MAX_MEMBER // 1_048_576} MB inflated; not read")
                pieces.append(piece)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError, NotImplementedError, RuntimeError) as err:
        raise _MemberError(f"{name} could not be inflated ({err})") from None
    return b"".join(pieces)


class _MemberError(LoaderError):
    """One member could not be read (reported as a warning, the others go on)."""

    def __init__(self, reason: str) -> None:
        super().__init__(Path("member"), reason)


def _tar_members(
    top: Path, fileobj: Any, budget: _Budget, out: _Read
) -> Iterator[tuple[str, Callable[[], bytes] | None, bool]]:
    """Members of a TAR stream, read in order (stream mode: nothing is seeked, so a header's size can lie)."""
    try:
        tf = tarfile.open(fileobj=fileobj, mode="r|")  # noqa: SIM115 - closed below
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as err:
        raise CorruptFile(top, f"not a readable tar archive ({err})") from None
    try:
        while True:
            try:
                info = tf.next()
            except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as err:
                if budget.entries == 0:
                    raise CorruptFile(top, f"not a readable tar archive ({err})") from None
                out.warnings.append(f"the archive is damaged after {budget.entries} entries ({err}); the rest is lost")
                return
            if info is None:
                return
            budget.entries += 1
            if budget.entries > MAX_ENTRIES:
                out.warnings.append(f"only the first {MAX_ENTRIES:,} entries of the archive were looked at")
                return
            if info.isdir():
                continue
            name = _safe_name(info.name)
            if name is None or not info.isfile():
                out.unsafe += 1
                continue
            if info.size > MAX_MEMBER:
                out.warnings.append(f"{name} is over {MAX_MEMBER // 1_048_576} MB; not read")
                continue

            def read(info: tarfile.TarInfo = info, name: str = name) -> bytes:
                try:
                    fh = tf.extractfile(info)
                    return fh.read() if fh is not None else b""
                except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as err:
                    raise _MemberError(f"{name} could not be read ({err})") from None

            yield name, read, False
    finally:
        tf.close()


def _compressed_members(
    top: Path, label: str, data: bytes, kind: str, budget: _Budget, out: _Read
) -> Iterator[tuple[str, Callable[[], bytes] | None, bool]]:
    """A compressed TAR archive's members, or the one file a ``.gz``/``.bz2``/``.xz`` holds."""
    head = b""
    try:
        for piece in _inflated(data, kind):
            head += piece
            if len(head) >= 512:
                break
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as err:
        raise CorruptFile(top, f"not a readable {kind} file ({err})") from None
    if head[257:262] == b"ustar" or (len(head) >= 512 and not head[:512].strip(b"\x00")):
        yield from _tar_members(top, _Decompressing(data, kind, budget), budget, out)
        return
    inner = PurePosixPath(PurePosixPath(label).stem).name
    if PurePosixPath(inner).suffix.lower() in (".tar", ""):
        raise UnsupportedFileType(top, f"a {kind} file whose content kaynak cannot tell ({inner!r})")

    def read() -> bytes:
        pieces: list[bytes] = []
        size = 0
        try:
            for piece in _inflated(data, kind):
                budget.spend(len(piece))
                size += len(piece)
                if size > MAX_MEMBER:
                    raise _MemberError(f"{inner} is over {MAX_MEMBER // 1_048_576} MB decompressed; not read")
                pieces.append(piece)
        except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as err:
            raise _MemberError(f"{inner} could not be decompressed ({err})") from None
        return b"".join(pieces)

    yield inner, read, False


def _inflated(data: bytes, kind: str) -> Iterator[bytes]:
    """``data`` decompressed, in pieces of at most CHUNK bytes: memory stays bounded whatever the ratio."""
    view = memoryview(data)
    pos = 0
    if kind == "gzip":
        dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending: bytes = b""
        while not dec.eof:
            if pending:
                piece = dec.decompress(pending, CHUNK)
            elif pos < len(data):
                piece = dec.decompress(view[pos : pos + CHUNK], CHUNK)
                pos += CHUNK
            else:
                break
            pending = dec.unconsumed_tail
            if piece:
                yield piece
        return
    other: Any = bz2.BZ2Decompressor() if kind == "bzip2" else lzma.LZMADecompressor()
    while not other.eof:
        if not other.needs_input:
            piece = other.decompress(b"", CHUNK)
        elif pos < len(data):
            piece = other.decompress(view[pos : pos + CHUNK], CHUNK)
            pos += CHUNK
        else:
            break
        if piece:
            yield piece


class _Decompressing(io.RawIOBase):
    """A read-only stream of ``data`` decompressed piece by piece, each piece spent from the budget (for tarfile's
    stream mode, which reads through members it skips: a bomb is stopped there too)."""

    def __init__(self, data: bytes, kind: str, budget: _Budget) -> None:
        self._pieces = _inflated(data, kind)
        self._kind = kind
        self._budget = budget
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = CHUNK if size is None or size < 0 else size
        pieces = [self._buffer]
        have = len(self._buffer)
        try:
            while have < want:
                piece = next(self._pieces, b"")
                if not piece:
                    break
                self._budget.spend(len(piece))
                pieces.append(piece)
                have += len(piece)
        except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as err:
            raise tarfile.ReadError(f"broken {self._kind} data: {err}") from None
        joined = b"".join(pieces)
        taken, self._buffer = joined[:want], joined[want:]
        return taken
