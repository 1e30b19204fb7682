"""Upload checks: which file types the server accepts, declared content types that fit them, safe names."""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath

from kaynak.errors import UsageError

DEFAULT_EXTENSIONS = frozenset({".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx"})
GENERIC_TYPES = {"", "application/octet-stream", "binary/octet-stream", "application/x-www-form-urlencoded"}
# Declared content types that fit each extension (generic types above are always accepted).
CONTENT_TYPES: dict[str, set[str]] = {
    ".pdf": {"application/pdf", "application/x-pdf"},
    ".md": {"text/markdown", "text/x-markdown", "text/plain"},
    ".mdx": {"text/markdown", "text/x-markdown", "text/mdx", "text/plain"},
    ".xhtml": {"application/xhtml+xml", "text/html"},
    ".markdown": {"text/markdown", "text/x-markdown", "text/plain"},
    ".txt": {"text/plain"},
    ".text": {"text/plain"},
    ".html": {"text/html", "application/xhtml+xml"},
    ".htm": {"text/html", "application/xhtml+xml"},
    ".docx": {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip"},
}
MAX_UPLOAD_FILES = 1000


def safe_relpath(name: str | None) -> str:
    """A client's file name as a harmless relative path: no traversal, no absolute paths, no hidden parts."""
    raw = unicodedata.normalize("NFC", name or "").replace("\\", "/")
    parts: list[str] = []
    for part in raw.split("/"):
        clean = "".join(ch for ch in part if ch.isprintable() and ch not in '<>:"|?*').strip().lstrip(".").strip()
        if clean and clean not in (".", ".."):
            parts.append(clean[:200])
    if not parts:
        raise UsageError(f"upload has no usable file name ({name!r}); name the file, e.g. report.pdf", "files")
    return str(PurePosixPath(*parts[-8:]))


def supported_extensions() -> frozenset[str]:
    try:
        from kaynak.loaders import SUPPORTED_EXTENSIONS

        return frozenset(e.lower() for e in SUPPORTED_EXTENSIONS)
    except ImportError:  # pragma: no cover - loaders are a base module
        return DEFAULT_EXTENSIONS
