"""Plain-text loader: one page per form-feed page; bytes decoded by ``decode_text`` (UTF-8, UTF-16, Windows-1254).

Every newline convention (CRLF, CR, LF, mixed) becomes ``\\n``. A form feed starts a new page; an empty page keeps
its number (so page N is still the N-th form-feed page) and a trailing form feed adds no page. Lines are kept as
they are: the sentence splitter knows a wrapped line from a paragraph break.
"""

from __future__ import annotations

import re
from pathlib import Path

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import first_line_title, stem_title
from .normalize import NotText, decode_text, normalize_text

_NEWLINES_RE = re.compile("\r\n|\r")


def _newline_style(text: str) -> str:
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    styles = [name for name, n in (("crlf", crlf), ("cr", cr), ("lf", lf)) if n]
    if not styles:
        return "none"
    return styles[0] if len(styles) == 1 else "mixed"


def load_text(path: Path, data: bytes) -> LoadedDocument:
    try:
        decoded = decode_text(data)
    except NotText as err:
        raise CorruptFile(path, str(err)) from None
    raw, encoding = decoded.text, decoded.encoding
    newline_style = _newline_style(raw)
    raw = _NEWLINES_RE.sub("\n", raw)
    chunks = raw.split("\f")
    while len(chunks) > 1 and not chunks[-1].strip():
        chunks.pop()  # a trailing form feed (or several) ends the last page, it does not open a new one
    pages = [Page(number=i + 1, text=normalize_text(chunk)) for i, chunk in enumerate(chunks)]
    warnings = list(decoded.warnings)
    first_text = next((p.text for p in pages if p.text), "")
    metadata = {"format": "text", "encoding": encoding, "newlines": newline_style, "page_count": len(pages)}
    return LoadedDocument(
        title=first_line_title(first_text, max_len=100) or stem_title(path),
        pages=pages,
        metadata=metadata,
        warnings=warnings,
    )
