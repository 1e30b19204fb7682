"""Pieces every loader shares: reading a file within a size limit, building page text from blocks with heading-path
sections, JSON-safe metadata, and deciding whether a title is worth keeping.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from pathlib import Path
from typing import Any

from kaynak.errors import FileTooLarge, LoaderError
from kaynak.types import Page, Section

from .normalize import collapse_whitespace, normalize_text

SECTION_SEPARATOR = " › "
MAX_SECTION_TITLE = 200
MAX_SECTION_PATH = 600  # a section path is stored with every chunk and embedded with it
MAX_TITLE = 300
MAX_METADATA_ITEMS = 2000  # values kept from front matter or document properties, in all


def read_limited(path: Path, max_bytes: int | None) -> bytes:
    """The whole file, refusing (before reading) anything larger than ``max_bytes``."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise LoaderError(path, "file not found") from None
    except OSError as err:
        raise LoaderError(path, f"cannot read the file ({err.strerror or err})") from None
    if path.is_dir():
        raise LoaderError(path, "is a directory, not a file")
    if max_bytes is not None and size > max_bytes:
        raise FileTooLarge(path, f"file is {_mb(size)}, over the {_mb(max_bytes)} limit (max_file_mb)")
    try:
        with path.open("rb") as fh:
            # Read one byte more than allowed so that a file growing after stat() is still caught.
            data = fh.read(max_bytes + 1) if max_bytes is not None else fh.read()
    except OSError as err:
        raise LoaderError(path, f"cannot read the file ({err.strerror or err})") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise FileTooLarge(path, f"file is over the {_mb(max_bytes)} limit (max_file_mb)")
    return data


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"


class TextBuilder:
    """Accumulates normalised blocks into one page text and records heading-path sections over it.

    ``heading(level, text)`` closes the running section and opens a new one whose path is the stack of enclosing
    headings; ``block(text)`` appends a block, separated from the previous one by a blank line (or ``sep``).
    Blocks are normalised here, so offsets computed while building stay valid.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._stack: list[tuple[int, str]] = []
        self._sections: list[Section] = []
        self._open: tuple[int, str] | None = None  # (start, path) of the running section
        self.headings: list[tuple[int, str]] = []

    @property
    def length(self) -> int:
        return self._length

    def _append(self, text: str, sep: str) -> int:
        if self._length:
            self._parts.append(sep)
            self._length += len(sep)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        return start

    def block(self, text: str, *, sep: str = "\n\n", keep_layout: bool = False) -> None:
        text = normalize_text(text, keep_layout=keep_layout)
        if text.strip():
            self._append(text, sep)

    def heading(self, level: int, text: str) -> None:
        title = collapse_whitespace(text)
        if not title:
            return
        if len(self.headings) < 10_000:
            self.headings.append((level, title[:MAX_TITLE]))
        self._close(self._length)
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, title[:MAX_SECTION_TITLE]))
        start = self._append(title, "\n\n")
        path = SECTION_SEPARATOR.join(t for _, t in self._stack)
        if len(path) > MAX_SECTION_PATH:
            path = "…" + path[-(MAX_SECTION_PATH - 1) :]
        self._open = (start, path)

    def _close(self, end: int) -> None:
        if self._open is not None:
            start, path = self._open
            if end > start:
                self._sections.append(Section(start, end, path))
            self._open = None

    def finish(self) -> tuple[str, list[Section]]:
        self._close(self._length)
        return "".join(self._parts), self._sections


class PagedBuilder:
    """TextBuilders for a document of several pages whose heading path runs on across page breaks.

    ``page_break()`` ends the current page (if it holds text) and opens the next one, still under the same section
    path; ``pages()`` returns the Pages, numbered from 1 (or their numbers from ``numbers``)."""

    def __init__(self) -> None:
        self.current = TextBuilder()
        self._done: list[tuple[str, list[Section]]] = []
        self.headings: list[tuple[int, str]] = []

    def block(self, text: str, *, sep: str = "\n\n", keep_layout: bool = False) -> None:
        self.current.block(text, sep=sep, keep_layout=keep_layout)

    def heading(self, level: int, text: str) -> None:
        self.current.heading(level, text)
        if self.current.headings and len(self.headings) < 10_000:
            self.headings.append(self.current.headings[-1])
            self.current.headings.clear()

    def page_break(self, *, keep_empty: bool = False) -> None:
        if not self.current.length and not keep_empty:
            return
        old = self.current
        new = TextBuilder()
        new._stack = list(old._stack)
        if old._open is not None:
            new._open = (0, old._open[1])
        self._done.append(old.finish())
        self.current = new

    def pages(self) -> list[Page]:
        done = list(self._done)
        if self.current.length or not done:
            done.append(self.current.finish())
        return [Page(number=i + 1, text=text, sections=sections) for i, (text, sections) in enumerate(done)]


def finish_slide(builder: PagedBuilder, number: int, notes: list[str], tail: list[str] | None) -> Page:
    """A slide's page (PPTX and ODP alike): its speaker notes after ``Notes:``, its header and footer lines under
    "Headers and footers", and a section named by a long first line cut at a word (80 characters; the line itself
    stays whole in the text)."""
    if any(t.strip() for t in notes):
        builder.block("Notes:")
        for t in notes:
            builder.block(t, sep="\n")
    if tail:
        builder.heading(1, "Headers and footers")
        for t in tail:
            builder.block(t, sep="\n")
    (page,) = builder.pages()
    sections = [
        Section(s.start, s.end, s.path if len(s.path) <= 100 else s.path[:80].rsplit(" ", 1)[0] + "…")
        for s in page.sections
    ]
    return Page(number=number, text=page.text, sections=sections)


def json_safe(value: Any, depth: int = 0, budget: list[int] | None = None) -> Any:
    """A JSON-serialisable copy of ``value`` (dates → ISO strings, bytes → text, others → str).

    Bounded: at most 20 levels deep and MAX_METADATA_ITEMS values in all (the rest is dropped), strings of at most
    10,000 characters, so a shared-reference structure (a YAML alias bomb) cannot blow up into billions of nodes."""
    if budget is None:
        budget = [MAX_METADATA_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if depth > 20:
        return str(value)[:1000]
    if isinstance(value, str) and len(value) > 10_000:
        value = value[:10_000] + "…"
    if value is None or isinstance(value, bool | int | str):
        return normalize_text(value, keep_layout=True) if isinstance(value, str) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return normalize_text(value.decode("utf-8", errors="replace"), keep_layout=True)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if budget[0] <= 0:
                break
            out[str(k)[:200]] = json_safe(v, depth + 1, budget)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        items: list[Any] = []
        for v in value:
            if budget[0] <= 0:
                break
            items.append(json_safe(v, depth + 1, budget))
        return items
    return str(value)[:1000]


_FILE_NAME_RE = re.compile(r"\.(docx?|pdf|tex|dvi|rtf|odt|indd|qxd|wpd|txt|html?|pptx?|xlsx?|ps|eps)$", re.I)
_APP_PREFIX_RE = re.compile(r"^(microsoft (word|powerpoint|excel)|word|powerpoint)\s*-\s*", re.I)
_PLACEHOLDERS = {
    "untitled",
    "untitled document",
    "title",
    "document",
    "document1",
    "doc",
    "pdf",
    "slide 1",
    "powerpoint presentation",
    "microsoft word",
    "no title",
    "başlıksız",
    "belge",
    "adsız",
    # producers' defaults: ReportLab writes "(anonymous)" / "untitled" / "(unspecified)" when the author set none
    "anonymous",
    "unspecified",
    "unknown",
    "untitled-1",
    "new document",
    "yeni belge",
}


def meaningful_title(raw: Any) -> str | None:
    """``raw`` cleaned if it reads like a real title, else None (numbers, file names, 'Untitled', …)."""
    if not isinstance(raw, str):
        return None
    title = collapse_whitespace(raw)
    title = _APP_PREFIX_RE.sub("", title)
    title = _FILE_NAME_RE.sub("", title).strip()
    if len(title) < 3 or sum(ch.isalpha() for ch in title) < 3:
        return None
    if title.lower() in _PLACEHOLDERS or re.fullmatch(r"[\W\d_]+", title):
        return None
    if title.lower().strip("()[]<> ") in _PLACEHOLDERS:  # "(anonymous)", "<untitled>"
        return None
    if re.search(r"[\\/]", title) and " " not in title:  # a path
        return None
    return title[:MAX_TITLE]


def first_line_title(text: str, max_len: int = 150) -> str | None:
    """The first non-empty line of ``text`` when it is short enough to be a title."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            if len(line) <= max_len and sum(ch.isalpha() for ch in line) >= 3:
                return line.rstrip(":").strip()
            return None
    return None


def stem_title(path: Path) -> str:
    """The file name without extension, readable: a name that is not UTF-8 is read as Windows-1254 (old Turkish
    archives), and bytes that fit neither show as U+FFFD; never a lone surrogate (PostgreSQL could not store it)."""
    import os

    raw = os.fsencode(path.stem or path.name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = raw.decode("cp1254")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
    return collapse_whitespace(text)[:MAX_TITLE] or "untitled"
