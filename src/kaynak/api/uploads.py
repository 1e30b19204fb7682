"""Upload checks: which file types the server accepts and the declared content types that fit them (names:
``kaynak.rules.safe_relpath`` / ``upload_paths``)."""

from __future__ import annotations

from kaynak.ingest.discovery import supported_extensions
from kaynak.rules import safe_relpath

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


__all__ = ["CONTENT_TYPES", "GENERIC_TYPES", "MAX_UPLOAD_FILES", "safe_relpath", "supported_extensions"]
