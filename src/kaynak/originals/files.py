"""Serving a document's original file: only the file it was ingested from, found by document id, after checks.

``documents.origin`` holds the absolute path of the file at ingest time (uploads: the kept copy under
``<data_dir>/uploads``). A request names a document id, never a path. Before serving, the origin must still be a
regular file whose real path (symlinks and ``..`` resolved) equals the stored path exactly, so a file swapped for a
symlink, or a folder on the way replaced by one, is refused rather than followed; and its bytes must still hash to
the document's sha256, so what is served is exactly what was ingested (an edited file waits for a re-ingest).

What the browser gets: PDF inline (so ``#page=N`` opens it at the page); HTML inline under a sandboxing
Content-Security-Policy (no script, no forms, an opaque origin: it can never act in the page's origin, but a person
sees it as written); Markdown and plain text inline as ``text/plain`` (shown as text, never interpreted); DOCX
(which a browser cannot show) as an attachment. A text original is sent as UTF-8 whatever it was written in
(``text_as_utf8``: the encoding is found by the same rules the loader read it with, so a Windows-1254 file shows
its Turkish letters). Messages name the document, never the server's folders.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO
from urllib.parse import quote

from kaynak.errors import OriginalFileUnavailable

CONTENT_TYPES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".xhtml": "application/xhtml+xml",
    ".md": "text/plain; charset=utf-8",
    ".markdown": "text/plain; charset=utf-8",
    ".mdx": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".text": "text/plain; charset=utf-8",
}
#: originals read as text files by the loaders: sent re-encoded as UTF-8 (text_as_utf8)
TEXT_ORIGINALS = frozenset({".md", ".markdown", ".mdx", ".txt", ".text"})
INLINE = {".pdf", ".html", ".htm", ".xhtml", ".md", ".markdown", ".mdx", ".txt", ".text"}
#: the policy an inline HTML original is shown under: no script or plugin, no forms or navigation of the page,
#: nothing fetched but inline styles and data: images (a sandbox without allow-same-origin: an opaque origin)
# Headers on every answer that carries a file or a page: no sniffing, no referrer, no framing.
SAFE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
SANDBOX_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@dataclass(frozen=True)
class OriginalFile:
    path: Path
    size: int
    content_type: str
    disposition: str  # inline | attachment
    filename: str

    def content_disposition(self) -> str:
        """``inline``/``attachment`` with an ASCII fallback name and the UTF-8 name (RFC 6266 / RFC 5987)."""
        fallback = "".join(c if c.isascii() and (c.isalnum() or c in "._- ()") else "_" for c in self.filename)
        return f"{self.disposition}; filename=\"{fallback}\"; filename*=UTF-8''{quote(self.filename, safe='')}"


def _gone(source: str, why: str) -> OriginalFileUnavailable:
    return OriginalFileUnavailable(f"the original of {source!r} {why}; re-ingest it to open the original")


def open_original(source: str, origin: str | None, sha256: str | None = None) -> tuple[OriginalFile, BinaryIO]:
    """The checked, opened file behind a document (``source`` names it in messages and in the download name).

    Checks: ``origin`` is known and absolute, its real path is ``origin`` itself (no symbolic link anywhere on
    the way, no ``..``), the last part is opened without following a link, what was opened is a regular file,
    and (with ``sha256``) its bytes are still the ones that were ingested, so page numbers and quotes still fit.
    """
    if not origin:
        raise _gone(source, "was ingested before kaynak remembered file locations, so its file is unknown")
    if not os.path.isabs(origin) or os.path.realpath(origin) != origin:
        raise _gone(source, "is no longer where it was ingested from (the path now leads through a symbolic link)")
    try:
        fd = os.open(origin, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        raise _gone(source, "is gone from the folder it was ingested from") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _gone(source, "is no longer a regular file")
        if os.path.realpath(origin) != origin:  # a folder on the way swapped for a link while opening
            raise _gone(source, "is no longer where it was ingested from (the path now leads through a symbolic link)")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    if sha256 is not None:
        digest = hashlib.sha256()
        while block := handle.read(1 << 20):
            digest.update(block)
        if digest.hexdigest() != sha256:
            handle.close()
            raise _gone(source, "has changed since it was ingested (its pages may no longer match)")
        handle.seek(0)
    path = Path(origin)
    ext = path.suffix.lower()
    meta = OriginalFile(
        path=path,
        size=st.st_size,
        content_type=CONTENT_TYPES.get(ext, "application/octet-stream"),
        disposition="inline" if ext in INLINE else "attachment",
        filename=PurePosixPath(source).name or path.name,
    )
    return meta, handle


def text_as_utf8(handle: BinaryIO, limit: int) -> bytes:
    """A text original's bytes (at most ``limit``) as UTF-8: decoded by the text loader's rules (byte-order mark,
    UTF-8, UTF-16, Windows-1254), so the browser shows what kaynak read, whatever the file's encoding."""
    from kaynak.loaders.normalize import decode_with_encoding

    data = handle.read(limit)
    text, _ = decode_with_encoding(data)
    return text.encode("utf-8")
