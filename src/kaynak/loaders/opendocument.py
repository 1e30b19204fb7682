"""OpenDocument loader (ODT/OTT/FODT text, ODS spreadsheets, ODP slides): zipfile + defusedxml, no ODF library.

Text (``office:text``): ``text:h`` headings (their outline level) become section paths, paragraphs and list items
blocks, tables one ``cell | cell`` line per row; footnotes and endnotes are kept after their paragraph as
``[n] note text``; tracked-change deletions (``text:tracked-changes``), comments and the index bodies' copies are
not read. A page starts where the document breaks one explicitly (a paragraph or table style with
``fo:break-before`` / ``fo:break-after="page"``) and where LibreOffice recorded a page break when it saved the file
(``text:soft-page-break`` between blocks), so page numbers follow the printed document; without either, one page.

Spreadsheets (``office:spreadsheet``): one page per sheet, rendered by kaynak.loaders.sheets (cached values, the
displayed text of each cell); repeated rows and columns are expanded only when they hold text.

Slides (``office:presentation``): one page per ``draw:page``, the section its title (the title placeholder, else
the page name), the text of its frames top to bottom, then its speaker notes after a ``Notes:`` line.

A password-protected file (encryption data in the manifest) is EncryptedFile; a DTD or entity in any part is refused
(kaynak.loaders.xmlsafe); the zip goes through the zip guard first.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.types import LoadedDocument, Page

from .common import PagedBuilder, collapse_whitespace, first_line_title, json_safe, meaningful_title, stem_title
from .sheets import MAX_CELLS, SheetText, pages_of
from .xmlsafe import has_member, open_zip, parse_xml, parse_xml_bytes, read_member

OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"
SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
PRES = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
DC = "{http://purl.org/dc/elements/1.1/}"

_SKIP = frozenset(
    {TEXT + "tracked-changes", OFFICE + "annotation", OFFICE + "annotation-end", TEXT + "note-citation",
     TEXT + "table-of-content-source", TEXT + "alphabetical-index-source", TEXT + "bibliography-source",
     TEXT + "illustration-index-source", TEXT + "sequence-decls", TEXT + "variable-decls", TEXT + "user-field-decls",
     OFFICE + "forms", TABLE + "table-header-columns", DRAW + "image", SVG + "desc", SVG + "title"}
)  # fmt: skip
_CONTAINERS = frozenset(
    {TEXT + "list", TEXT + "list-item", TEXT + "list-header", TEXT + "section", TEXT + "index-body",
     OFFICE + "text", TEXT + "table-of-content",
     TEXT + "alphabetical-index", TEXT + "illustration-index", TEXT + "bibliography"}
)  # fmt: skip
_MAX_REPEAT = 1_000
_KIND = "OpenDocument"


# ---------------------------------------------------------------------------------------------- the container
def _root(path: Path, data: bytes) -> tuple[Element, Element | None, Element | None]:
    """(content document, styles document or None, meta document or None) of a zipped or flat ODF file."""
    if data.lstrip()[:5] in (b"<?xml", b"<offi") or data.startswith(b"\xef\xbb\xbf"):
        root = parse_xml_bytes(path, data, "the flat XML document", _KIND)
        return root, root, root
    zf = open_zip(path, data, _KIND)
    if has_member(zf, "META-INF/manifest.xml"):
        manifest = parse_xml(path, zf, "META-INF/manifest.xml", _KIND)
        if manifest.find(f".//{MANIFEST}encryption-data") is not None:
            raise EncryptedFile(path, "OpenDocument file is password-protected; save it without a password first")
    if not has_member(zf, "content.xml"):
        raise CorruptFile(path, "zip archive is not an OpenDocument file (no content.xml)")
    content = parse_xml_bytes(path, read_member(path, zf, "content.xml", _KIND), "content.xml", _KIND)
    styles = parse_xml(path, zf, "styles.xml", _KIND) if has_member(zf, "styles.xml") else None
    meta = parse_xml(path, zf, "meta.xml", _KIND) if has_member(zf, "meta.xml") else None
    return content, styles, meta


def _metadata(meta: Element | None, fmt: str) -> tuple[dict[str, Any], str | None]:
    metadata: dict[str, Any] = {"format": fmt}
    title = None
    if meta is None:
        return metadata, None
    node = meta.find(f"{OFFICE}meta")
    if node is None:
        return metadata, None
    fields = {"title": DC + "title", "subject": DC + "subject", "author": DC + "creator", "language": DC + "language",
              "created": META + "creation-date", "modified": DC + "date", "keywords": META + "keyword"}  # fmt: skip
    for key, tag in fields.items():
        el = node.find(tag)
        if el is not None and el.text and el.text.strip():
            metadata[key] = json_safe(el.text.strip())
    title = metadata.get("title")
    return metadata, title if isinstance(title, str) else None


def _page_break_styles(*docs: Element | None) -> tuple[set[str], set[str]]:
    """Names of paragraph/table styles that break the page before, and after."""
    before: set[str] = set()
    after: set[str] = set()
    parents: dict[str, str] = {}
    for doc in docs:
        if doc is None:
            continue
        for style in doc.iter(STYLE + "style"):
            name = style.get(STYLE + "name") or ""
            parent = style.get(STYLE + "parent-style-name")
            if parent:
                parents[name] = parent
            for props in style:
                if props.get(FO + "break-before") == "page":
                    before.add(name)
                if props.get(FO + "break-after") == "page":
                    after.add(name)
    # a style inherits its parent's break (automatic styles are children of named ones)
    for name, parent in parents.items():
        seen = {name}
        while parent and parent not in seen:
            if parent in before:
                before.add(name)
            if parent in after:
                after.add(name)
            seen.add(parent)
            parent = parents.get(parent, "")
    return before, after


# ---------------------------------------------------------------------------------------------- inline text
def inline_text(el: Element, notes: list[str] | None = None, depth: int = 0) -> str:
    """The text of a paragraph-like element: spans, links, spaces (``text:s``), tabs, line breaks; notes' bodies go
    to ``notes`` (their citation stays as ``[n]``), frames' text boxes are read in place."""
    out: list[str] = [el.text or ""]
    for child in el:
        tag = child.tag
        if tag in _SKIP or depth > 50:
            pass
        elif tag == TEXT + "s":
            count = child.get(TEXT + "c") or "1"
            out.append(" " * (min(int(count), 100) if count.isdigit() else 1))
        elif tag == TEXT + "tab":
            out.append("\t")
        elif tag == TEXT + "line-break":
            out.append("\n")
        elif tag == TEXT + "note":
            cite = child.find(TEXT + "note-citation")
            mark = collapse_whitespace(cite.text or "") if cite is not None else ""
            body = child.find(TEXT + "note-body")
            if body is not None and notes is not None:
                note = [inline_text(p, None, depth + 1) for p in body.iter() if p.tag in (TEXT + "p", TEXT + "h")]
                notes.append(f"[{mark}] " + " ".join(note))
            out.append(f"[{mark}]" if mark else "")
        elif tag in (DRAW + "frame", DRAW + "text-box", DRAW + "a"):
            paras = [inline_text(p, notes, depth + 1) for p in child.iter() if p.tag in (TEXT + "p", TEXT + "h")]
            out.append(" " + " ".join(paras) + " ")
        else:
            out.append(inline_text(child, notes, depth + 1))
        out.append(child.tail or "")
    return "".join(out)


# ---------------------------------------------------------------------------------------------- text documents
class _TextWalker:
    def __init__(self, builder: PagedBuilder, before: set[str], after: set[str]) -> None:
        self.b = builder
        self.before = before
        self.after = after
        self.first_title: str | None = None

    def walk(self, container: Element, depth: int = 0) -> None:
        stack: list[Any] = [iter(container)]
        while stack:
            el = next(stack[-1], None)
            if el is None:
                stack.pop()
                continue
            tag = el.tag
            if tag in _SKIP:
                continue
            if tag == TEXT + "soft-page-break":
                self.b.page_break()
            elif tag in (TEXT + "p", TEXT + "h"):
                self.paragraph(el)
            elif tag == TABLE + "table":
                self.table(el)
            elif tag in _CONTAINERS and len(stack) < 200:
                stack.append(iter(el))

    def _break_before(self, el: Element) -> None:
        style = el.get(TEXT + "style-name") or el.get(TABLE + "style-name") or ""
        if style in self.before:
            self.b.page_break()

    def _break_after(self, el: Element) -> None:
        style = el.get(TEXT + "style-name") or el.get(TABLE + "style-name") or ""
        if style in self.after:
            self.b.page_break()

    def paragraph(self, el: Element) -> None:
        self._break_before(el)
        notes: list[str] = []
        text = inline_text(el, notes)
        if el.tag == TEXT + "h" and text.strip():
            level_raw = el.get(TEXT + "outline-level") or "1"
            level = int(level_raw) if level_raw.isdigit() else 1
            if self.first_title is None and level == 1:
                self.first_title = collapse_whitespace(text)
            self.b.heading(level, text)
        else:
            self.b.block(text)
        for note in notes:
            self.b.block(note, sep="\n")
        for soft in el.iter(TEXT + "soft-page-break"):  # LibreOffice recorded a page break inside the paragraph
            del soft
            self.b.page_break()
            break
        self._break_after(el)

    def table(self, el: Element) -> None:
        self._break_before(el)
        rows = table_rows(el)
        if rows:
            self.b.block("\n".join(rows))
        self._break_after(el)


def table_rows(table: Element, depth: int = 0) -> list[str]:
    rows: list[str] = []
    for row in table.iter(TABLE + "table-row"):
        cells = []
        for cell in row:
            if cell.tag != TABLE + "table-cell":
                continue
            parts = []
            for child in cell:
                if child.tag in (TEXT + "p", TEXT + "h"):
                    parts.append(inline_text(child))
                elif child.tag == TEXT + "list":
                    parts.extend(inline_text(p) for p in child.iter(TEXT + "p"))
            cells.append(collapse_whitespace(" ".join(parts)))
        if any(cells):
            rows.append(" | ".join(c for c in cells))
    return rows


def _load_text(path: Path, body: Element, styles: Element | None, content: Element) -> tuple[list[Page], str | None]:
    before, after = _page_break_styles(styles, content)
    builder = PagedBuilder()
    walker = _TextWalker(builder, before, after)
    walker.walk(body)
    pages = builder.pages()
    first = walker.first_title or (builder.headings[0][1] if builder.headings else None)
    return pages, first


# ---------------------------------------------------------------------------------------------- spreadsheets
def _repeat(el: Element, attr: str) -> int:
    raw = el.get(TABLE + attr) or "1"
    return int(raw) if raw.isdigit() else 1


def _load_sheets(body: Element, warnings: list[str]) -> list[Page]:
    budget = [MAX_CELLS]
    sheets: list[SheetText] = []
    for table in body.iter(TABLE + "table"):
        sheet = SheetText(table.get(TABLE + "name") or f"Sheet {len(sheets) + 1}", budget, warnings)
        sheets.append(sheet)
        for row in table.iter(TABLE + "table-row"):
            values: list[str] = []
            for cell in row:
                if cell.tag not in (TABLE + "table-cell", TABLE + "covered-table-cell"):
                    continue
                text = "\n".join(inline_text(p) for p in cell if p.tag == TEXT + "p")
                text = collapse_whitespace(text)
                n = _repeat(cell, "number-columns-repeated")
                values.extend([text] * (min(n, _MAX_REPEAT) if text else min(n, 2000)))
                if len(values) > 2000:
                    break
            while values and not values[-1]:
                values.pop()
            if not values:
                continue
            ok = True
            repeat = _repeat(row, "number-rows-repeated")
            if repeat > _MAX_REPEAT:
                warnings.append(f"sheet {sheet.name!r}: a row repeated {repeat:,} times was read {_MAX_REPEAT:,} times")
            for _ in range(min(repeat, _MAX_REPEAT)):
                ok = sheet.add(values)
                if not ok:
                    break
            if not ok:
                break
        if budget[0] <= 0:
            break
    return pages_of(sheets)


# ---------------------------------------------------------------------------------------------- slides
def _frame_pos(frame: Element) -> tuple[float, float]:
    def num(v: str | None) -> float:
        m = re.match(r"[-\d.]+", v or "")
        return float(m.group()) if m else 0.0

    return num(frame.get(SVG + "y")), num(frame.get(SVG + "x"))


def _slide_title(slide: Element, frames: list[Element]) -> str | None:
    """The title placeholder's text; without one (a deck saved through .ppt) the top frame's short text."""
    for frame in frames:
        if frame.get(PRES + "class") == "title":
            return collapse_whitespace(" ".join(inline_text(p) for p in frame.iter(TEXT + "p")))
    name = collapse_whitespace(slide.get(DRAW + "name") or "")
    auto_name = not name or re.fullmatch(r"(page|slide|sayfa|slayt)\s*\d+", name, re.I) is not None
    if frames and auto_name:
        top = collapse_whitespace(" ".join(inline_text(p) for p in frames[0].iter(TEXT + "p")))
        if 0 < len(top) <= 120:
            frames[0].set(PRES + "class", "title")
            return top
    return None


def _slide_page(number: int, slide: Element) -> Page:
    builder = PagedBuilder()
    frames = sorted((f for f in slide if f.tag in (DRAW + "frame", DRAW + "custom-shape", DRAW + "g")), key=_frame_pos)
    title = _slide_title(slide, frames)
    builder.heading(1, title or collapse_whitespace(slide.get(DRAW + "name") or "") or f"Slide {number}")
    for frame in frames:
        if frame.get(PRES + "class") == "title" and title:
            continue
        tables = list(frame.iter(TABLE + "table"))
        for t in tables:
            rows = table_rows(t)
            if rows:
                builder.block("\n".join(rows))
        if not tables:
            for p in frame.iter():
                if p.tag in (TEXT + "p", TEXT + "h"):
                    builder.block(inline_text(p), sep="\n")
    notes = slide.find(PRES + "notes")
    if notes is not None:
        texts = [
            inline_text(para)
            for box in notes.iter(DRAW + "frame")
            if box.get(PRES + "class") == "notes"
            for para in box.iter(TEXT + "p")
        ]
        if any(t.strip() for t in texts):
            builder.block("Notes:")
            for note_text in texts:
                builder.block(note_text, sep="\n")
    (page,) = builder.pages()
    return Page(number=number, text=page.text, sections=page.sections)


def _load_slides(body: Element) -> list[Page]:
    slides = (p for p in body if p.tag == DRAW + "page")
    return [_slide_page(number, slide) for number, slide in enumerate(slides, start=1)]


# ---------------------------------------------------------------------------------------------- the loader
def load_opendocument(path: Path, data: bytes) -> LoadedDocument:
    content, styles, meta = _root(path, data)
    body = content.find(f"{OFFICE}body")
    if body is None:
        raise CorruptFile(path, "not an OpenDocument file (no office:body in content.xml)")
    warnings: list[str] = []
    text_body = body.find(OFFICE + "text")
    sheet_body = body.find(OFFICE + "spreadsheet")
    slide_body = body.find(OFFICE + "presentation")
    first: str | None = None
    if text_body is not None:
        fmt = "odt"
        pages, first = _load_text(path, text_body, styles, content)
    elif sheet_body is not None:
        fmt = "ods"
        pages = _load_sheets(sheet_body, warnings)
    elif slide_body is not None:
        fmt = "odp"
        pages = _load_slides(slide_body)
    else:
        raise CorruptFile(path, "OpenDocument kind not supported (only text, spreadsheet and presentation)")
    if not pages:
        pages = [Page(1, "")]
    metadata, raw_title = _metadata(meta, fmt)
    metadata["page_count"] = len(pages)
    title = (
        meaningful_title(raw_title)
        or first
        or (pages[0].sections[0].path if fmt == "odp" and pages[0].sections else None)
        or (first_line_title(pages[0].text, max_len=120) if fmt == "odt" else None)
        or stem_title(path)
    )
    return LoadedDocument(title=title, pages=pages, metadata=metadata, warnings=warnings)
