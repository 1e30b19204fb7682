"""Pages for documents whose format has none: a long single-page document is split into pages at ingest.

Markdown, HTML, plain text without form feeds, and DOCX/ODT/RTF without page breaks load as one page, so "page 1"
would cite a whole book and reading a page would return all of it. ``paginate`` splits such a page into pages of
at most ``PAGE_CHARS`` characters, the rule being:

* only a document the loader returned as **one page** longer than ``PAGE_CHARS`` is split, and never a PDF or an
  image (their page is the file's own; the web page draws it); documents with pages (slides, sheets, chapters,
  explicit page breaks, form feeds) keep them;
* each page ends at the last heading (a section start) in the second half of its window, so a heading starts the
  next page; else after the last blank line there, else after the last line break, else after the last space,
  else at ``PAGE_CHARS``;
* the pages' texts are consecutive slices of the original (joined they are the text, nothing is dropped or added),
  sections are cut at the page boundaries with their heading path kept, and the split depends only on the text and
  its sections: the same file splits the same way at every ingest.

Called once per loaded document, in the parse worker before chunking (``kaynak.ingest.workers.parse_file``) and
for in-memory documents (``kaynak.ingest.prepare.prepare_loaded``); a container's parts are split the same way.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise
from pathlib import PurePosixPath

from kaynak.types import LoadedDocument, Page, Section

#: Longest page made by splitting (about 2,000 tokens: a page an agent reads in one or two calls).
PAGE_CHARS = 8000
#: Formats whose pages are the file's own (a PDF page, a scan, a sheet, a slide, a chapter): never split, even when
#: there is only one (a one-sheet workbook's page is its sheet, as the README's formats table says).
PAGED_SUFFIXES = frozenset(
    {".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".pnm"}
    | {".xlsx", ".xlsm", ".xltx", ".xltm", ".xls", ".ods", ".ots", ".fods", ".csv", ".tsv"}
    | {".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".ppt", ".odp", ".otp", ".fodp", ".epub"}
)

_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def paginate(doc: LoadedDocument, name: str, limit: int = PAGE_CHARS) -> LoadedDocument:
    """``doc`` with a long single page split into pages (see the module's rule); ``name`` is the file's name or
    source (its suffix says whether the format has pages of its own). Its parts are split likewise."""
    parts = [(suffix, paginate(part, suffix, limit)) for suffix, part in doc.parts]
    pages = doc.pages
    if len(pages) == 1 and len(pages[0].text) > limit and PurePosixPath(name).suffix.lower() not in PAGED_SUFFIXES:
        pages = split_page(pages[0], limit)
    if pages is doc.pages and all(new is old for (_, new), (_, old) in zip(parts, doc.parts, strict=True)):
        return doc
    return replace(doc, pages=pages, parts=parts)


def split_page(page: Page, limit: int = PAGE_CHARS) -> list[Page]:
    """``page`` as consecutive pages of at most ``limit`` characters, numbered from ``page.number``."""
    text = page.text
    starts = sorted({s.start for s in page.sections})
    bounds = [0]
    while len(text) - bounds[-1] > limit:
        bounds.append(_cut(text, starts, bounds[-1], limit))
    bounds.append(len(text))
    out: list[Page] = []
    for i, (a, b) in enumerate(pairwise(bounds)):
        sections = [
            Section(max(s.start, a) - a, min(s.end, b) - a, s.path) for s in page.sections if s.start < b and s.end > a
        ]
        out.append(Page(page.number + i, text[a:b], sections))
    return out


def _cut(text: str, heading_starts: list[int], start: int, limit: int) -> int:
    """Where the page that begins at ``start`` ends: the best break in ``(start + limit // 2, start + limit]``."""
    low, high = start + limit // 2, start + limit
    headings = [h for h in heading_starts if low < h <= high]
    if headings:
        return headings[-1]
    window = text[low:high]
    blank = None
    for m in _BLANK_LINE.finditer(window):
        blank = m.end()
    if blank is not None:
        return low + blank
    for sep in ("\n", " "):
        at = window.rfind(sep)
        if at >= 0:
            return low + at + 1
    return high
