"""OpenDocument loader (ODT/OTT/FODT text, ODS spreadsheets, ODP slides): zipfile + defusedxml, no ODF library.

Text (``office:text``): ``text:h`` headings (their outline level) become section paths, and so do ``text:p``
paragraphs whose style derives from a heading style (``style:default-outline-level``, or a ``Heading N`` name:
Writer writes imported headings that way); paragraphs and list items become blocks (a numbered item starts with its
number as LibreOffice shows it: "1)", "a.", "Madde 3.", "2.1."), tables one ``cell | cell`` line per row; footnotes
and endnotes are kept after their paragraph as ``[n] note text``; tracked-change deletions
(``text:tracked-changes``), comments and the index bodies' copies are not read; the page styles' headers and footers
come once per document (each distinct text once), after the body under "Headers and footers". A page starts where
the document breaks one explicitly (a paragraph or table style with ``fo:break-before`` / ``fo:break-after="page"``)
and where LibreOffice recorded a page break when it saved the file (``text:soft-page-break``: between blocks or
table rows, or inside a paragraph, whose text is then split between the two pages), so page numbers follow the
printed document; a paragraph that breaks the page by its style and also carries a soft break at its start is one
break, not two. Without either, one page.

Spreadsheets (``office:spreadsheet``): one page per sheet, rendered by kaynak.loaders.sheets (cached values, the
displayed text of each cell); repeated rows and columns are expanded only when they hold text.

Slides (``office:presentation``): one page per ``draw:page``, the section its title (the title placeholder, else a
frame named as a title, else the first line of the top text frame; the page name only on a slide without text),
the text of its frames top to bottom, then its speaker notes (the notes frame, or every text frame of
``presentation:notes`` when none is marked as one) after a ``Notes:`` line. Text repeated on every slide (footer and
header declarations, the footer/header and plain text frames of the master pages in use) comes once, after the last
slide, under "Headers and footers".

A password-protected file (encryption data in the manifest) is EncryptedFile ("<file> is password-protected; save it
without a password first"); a DTD or entity in any part is refused (kaynak.loaders.xmlsafe; the manifest may carry
the bare DOCTYPE OpenOffice.org 2 wrote); the zip goes through the zip guard first; a file that is no zip and no
flat ODF, or an OOXML/OLE file under an ODF name, says what it is.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple
from xml.etree.ElementTree import Element

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.types import LoadedDocument, Page

from .common import (
    PagedBuilder,
    collapse_whitespace,
    finish_slide,
    first_line_title,
    json_safe,
    meaningful_title,
    stem_title,
)
from .sheets import MAX_CELLS, SheetText, pages_of
from .xmlsafe import OLE_MAGIC, has_member, is_encrypted_ooxml, open_zip, parse_xml, parse_xml_bytes, read_member

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
     OFFICE + "text", TEXT + "table-of-content", TEXT + "index-title",
     TEXT + "alphabetical-index", TEXT + "illustration-index", TEXT + "bibliography"}
)  # fmt: skip
_MAX_REPEAT = 1_000
_OOXML_PARTS = (("word/document.xml", ".docx"), ("xl/workbook.xml", ".xlsx"), ("ppt/presentation.xml", ".pptx"))
_KIND = "OpenDocument"


# ---------------------------------------------------------------------------------------------- the container
_MAX_OBJECTS = 50


def _resolver(path: Path, zf: Any) -> Callable[[str], Element | None]:
    """Reads embedded objects' ``content.xml`` (at most _MAX_OBJECTS, each once), through the same guards."""
    cache: dict[str, Element | None] = {}

    def resolve(name: str) -> Element | None:
        if name not in cache and len(cache) < _MAX_OBJECTS:
            member = f"{name}/content.xml"
            cache[name] = None
            if has_member(zf, member):
                raw = read_member(path, zf, member, _KIND)
                # an object OpenOffice.org wrote may carry a bare DOCTYPE (its formulas: math.dtd); an object that
                # cannot be read (entities, broken XML) is left out, the document is still read
                with contextlib.suppress(CorruptFile):
                    cache[name] = parse_xml_bytes(path, raw, member, _KIND, allow_doctype=True)
        return cache.get(name)

    return resolve


def _root(path: Path, data: bytes) -> tuple[Element, Element | None, Element | None]:
    """(content document, styles document or None, meta document or None) of a zipped or flat ODF file."""
    if data.lstrip()[:5] in (b"<?xml", b"<offi") or data.startswith(b"\xef\xbb\xbf"):
        root = parse_xml_bytes(path, data, "the flat XML document", _KIND)
        return root, root, root
    if data.startswith(OLE_MAGIC):
        if is_encrypted_ooxml(data):
            raise EncryptedFile(path, f"{path.name} is password-protected; save it without a password first")
        raise CorruptFile(
            path,
            f"{path.name} is not an OpenDocument file: it is an old binary Office file (.doc, .xls or .ppt); "
            "give it its real extension",
        )
    if not data.startswith(b"PK"):
        raise CorruptFile(
            path,
            f"{path.name} is not an OpenDocument file: it is neither a zip package nor flat OpenDocument XML "
            "(damaged, or another format under this name)",
        )
    zf = open_zip(path, data, _KIND)
    if has_member(zf, "META-INF/manifest.xml"):
        # OpenOffice.org 2 wrote a bare DOCTYPE (naming Manifest.dtd) in the manifest; entities are still refused
        raw = read_member(path, zf, "META-INF/manifest.xml", _KIND)
        manifest = parse_xml_bytes(path, raw, "META-INF/manifest.xml", _KIND, allow_doctype=True)
        if manifest.find(f".//{MANIFEST}encryption-data") is not None:
            raise EncryptedFile(path, f"{path.name} is password-protected; save it without a password first")
    if not has_member(zf, "content.xml"):
        other = next((ext for part, ext in _OOXML_PARTS if has_member(zf, part)), None)
        if other:
            raise CorruptFile(
                path, f"{path.name} is not an OpenDocument file: it is a {other} file; give it the {other} extension"
            )
        raise CorruptFile(path, f"{path.name} is a zip archive but not an OpenDocument file (no content.xml)")
    _EMBEDDED.set(_resolver(path, zf))
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


_HEADING_NAME = re.compile(
    r"(?:heading|başlık|baslik|überschrift|titre|título|titolo|kop)[ _]*(?:_20_)?(\d)$", re.IGNORECASE
)


class _StyleInfo:
    """What the paragraph and table styles of a text document say about pages and headings, parents resolved.

    ``before`` / ``after``: styles that break the page before / after their paragraph or table (``fo:break-before``
    / ``fo:break-after="page"``, or a ``style:master-page-name`` that starts a new page style); ``levels``: the
    outline level of each heading style (``style:default-outline-level``, else a ``Heading N`` name), so a
    ``text:p`` whose automatic style derives from ``Heading_20_1`` (as LibreOffice writes imported headings) is a
    heading too."""

    def __init__(self, *docs: Element | None) -> None:
        self._own_before: dict[str, bool] = {}
        self._own_after: dict[str, bool] = {}
        self._own_level: dict[str, int] = {}
        self._parents: dict[str, str] = {}
        self._master: set[str] = set()
        for doc in docs:
            for style in doc.iter(STYLE + "style") if doc is not None else ():
                self._read(style)
        self.before: set[str] = set()
        self.after: set[str] = set()
        self.levels: dict[str, int] = {}
        for name in set(self._parents) | set(self._own_before) | set(self._own_after) | set(self._own_level):
            self._resolve(name)
        self.before |= self._master

    def _read(self, style: Element) -> None:
        name = style.get(STYLE + "name") or ""
        if not name:
            return
        parent = style.get(STYLE + "parent-style-name")
        if parent:
            self._parents[name] = parent
        if style.get(STYLE + "master-page-name"):
            self._master.add(name)  # a new page style starts a new page
        raw = style.get(STYLE + "default-outline-level") or ""
        named = _HEADING_NAME.match(name) or _HEADING_NAME.match(style.get(STYLE + "display-name") or "")
        if raw.isdigit() and 0 < int(raw) <= 10:
            self._own_level[name] = int(raw)
        elif named and int(named.group(1)) > 0:
            self._own_level[name] = int(named.group(1))
        for props in style:
            value = props.get(FO + "break-before")
            if value is not None:
                self._own_before[name] = value == "page"
            value = props.get(FO + "break-after")
            if value is not None:
                self._own_after[name] = value == "page"

    def _resolve(self, name: str) -> None:
        """A style's own setting, else its nearest ancestor's (an automatic style inherits its parent's)."""
        chain = [name]
        while (nxt := self._parents.get(chain[-1])) and nxt not in chain and len(chain) < 50:
            chain.append(nxt)
        if next((self._own_before[c] for c in chain if c in self._own_before), False):
            self.before.add(name)
        if next((self._own_after[c] for c in chain if c in self._own_after), False):
            self.after.add(name)
        level = next((self._own_level[c] for c in chain if c in self._own_level), None)
        if level is not None:
            self.levels[name] = level


# ---------------------------------------------------------------------------------------------- inline text
XLINK = "{http://www.w3.org/1999/xlink}"
CHART = "{urn:oasis:names:tc:opendocument:xmlns:chart:1.0}"
_EMBEDDED: ContextVar[Callable[[str], Element | None] | None] = ContextVar("odf_embedded", default=None)


def _embedded_text(obj: Element) -> list[str]:
    """The text of an OpenDocument object embedded in the package (``draw:object xlink:href="./Object 1"``): a
    spreadsheet's or chart's table rows (a chart's title first), a text object's paragraphs."""
    resolve = _EMBEDDED.get()
    href = (obj.get(XLINK + "href") or "").removeprefix("./").strip("/")
    root = resolve(href) if resolve and href and "/" not in href and ".." not in href else None
    if root is None:
        root = obj.find(OFFICE + "document")  # a flat file carries its objects inline
    body = root.find(OFFICE + "body") if root is not None else None
    if body is None:
        return []
    lines: list[str] = []
    for title in body.iter(CHART + "title"):
        lines.extend(collapse_whitespace(inline_text(p)) for p in title.iter(TEXT + "p"))
    if body.find(OFFICE + "text") is not None:
        lines.extend(inline_text(p) for p in body.iter() if p.tag in (TEXT + "p", TEXT + "h"))
    else:
        for table in body.iter(TABLE + "table"):
            lines.extend(table_rows(table))
    return [line for line in lines if line.strip()]


_SOFT_BREAK = "\x0c"  # where LibreOffice recorded a page break inside a paragraph (inline_text(..., breaks=True))


def inline_text(el: Element, notes: list[str] | None = None, depth: int = 0, breaks: bool = False) -> str:
    """The text of a paragraph-like element: spans, links, spaces (``text:s``), tabs, line breaks; notes' bodies go
    to ``notes`` (their citation stays as ``[n]``), frames' text boxes are read in place. With ``breaks``, a
    ``text:soft-page-break`` inside the paragraph is marked by ``_SOFT_BREAK``."""
    out: list[str] = [el.text or ""]
    for child in el:
        tag = child.tag
        if tag in _SKIP or depth > 50:
            pass
        elif tag == TEXT + "soft-page-break":
            out.append(_SOFT_BREAK if breaks else "")
        elif tag == TEXT + "s":
            count = child.get(TEXT + "c") or "1"
            out.append(" " * (min(int(count), 100) if count.isdigit() else 1))
        elif tag == TEXT + "tab":
            out.append("\t")
        elif tag == TEXT + "line-break":
            out.append("\n")
        elif tag == TEXT + "ruby":  # 東京 (とうきょう): the reading after the base, never glued to it
            base = child.find(TEXT + "ruby-base")
            ruby = child.find(TEXT + "ruby-text")
            reading = collapse_whitespace("".join(ruby.itertext())) if ruby is not None else ""
            out.append(inline_text(base, notes, depth + 1, breaks) if base is not None else "")
            out.append(f" ({reading})" if reading else "")
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
            for obj in child.iter(DRAW + "object"):  # an embedded spreadsheet, chart or text
                paras.extend(["\n", *(line + "\n" for line in _embedded_text(obj))])
            out.append(" " + " ".join(paras) + " ")
        else:
            out.append(inline_text(child, notes, depth + 1, breaks))
        out.append(child.tail or "")
    return "".join(out)


# ---------------------------------------------------------------------------------------------- text documents
LOEXT = "{urn:org:documentfoundation:names:experimental:office:xmlns:loext:1.0}"
_OUTLINE = "\x00outline"  # the key of the headings' numbering (text:outline-style) among the list styles


class _LevelFormat(NamedTuple):
    fmt: str  # style:num-format: "1", "a", "A", "i", "I", "1st", "01, 02, 03, ...", "" (no number)
    prefix: str
    suffix: str
    start: int
    display: int  # text:display-levels: how many levels the label shows ("1.2.")
    template: str = ""  # loext:num-list-format, LibreOffice's whole label: "%1%.%2%someText"


def _list_formats(*docs: Element | None) -> dict[str, dict[int, _LevelFormat]]:
    """List style name → level → how its items are numbered (numbered levels only; bullets are not text)."""
    out: dict[str, dict[int, _LevelFormat]] = {}
    for doc in docs:
        styles = [*doc.iter(TEXT + "list-style"), *doc.iter(TEXT + "outline-style")] if doc is not None else []
        for style in styles:
            levels: dict[int, _LevelFormat] = {}
            for lvl in style:
                raw = lvl.get(TEXT + "level") or ""
                numbered = (TEXT + "list-level-style-number", TEXT + "outline-level-style")
                if lvl.tag not in numbered or not raw.isdigit():
                    continue
                start = lvl.get(TEXT + "start-value") or "1"
                display = lvl.get(TEXT + "display-levels") or "1"
                levels[int(raw)] = _LevelFormat(
                    lvl.get(STYLE + "num-format") or "",
                    lvl.get(STYLE + "num-prefix") or "",
                    lvl.get(STYLE + "num-suffix") or "",
                    int(start) if start.isdigit() else 1,
                    int(display) if display.isdigit() else 1,
                    lvl.get(LOEXT + "num-list-format") or "",
                )
            name = _OUTLINE if style.tag == TEXT + "outline-style" else style.get(STYLE + "name") or ""
            out[name] = levels
    return out


def _roman(n: int) -> str:
    out = ""
    for value, numeral in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"),
                           (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):  # fmt: skip
        while n >= value:
            out += numeral
            n -= value
    return out


def _letters(n: int) -> str:
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = chr(ord("a") + rem) + out
    return out


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _format_number(n: int, fmt: str) -> str:
    if fmt == "1st":
        return _ordinal(n)
    if fmt.startswith("01"):
        return f"{n:02d}"
    if fmt.startswith("001"):
        return f"{n:03d}"
    if fmt in ("a", "A"):
        text = _letters(max(n, 1))
    elif fmt in ("i", "I"):
        text = _roman(max(min(n, 4999), 1))
    elif fmt == "1":
        return str(n)
    else:
        return ""
    return text.upper() if fmt.isupper() else text


class _ListState:
    def __init__(self, style: str, level: int, formats: dict[int, _LevelFormat], count: int) -> None:
        self.style = style
        self.level = level
        self.formats = formats
        self.count = count


class _Numbering:
    """List numbers as LibreOffice shows them ("1.", "a)", "2.1."), continued where a list says so."""

    def __init__(self, formats: dict[str, dict[int, _LevelFormat]]) -> None:
        self.formats = formats
        self.last: dict[tuple[str, int], int] = {}
        self.outline: dict[int, int] = {}

    def open(self, el: Element, outer: _ListState | None) -> _ListState:
        style = el.get(TEXT + "style-name") or (outer.style if outer else "")
        level = outer.level + 1 if outer else 1
        formats = self.formats.get(style, {})
        fmt = formats.get(level)
        start = fmt.start if fmt else 1
        cont = el.get(TEXT + "continue-numbering") == "true" or el.get(TEXT + "continue-list") is not None
        count = self.last.get((style, level), start - 1) if cont else start - 1
        return _ListState(style, level, formats, count)

    def heading(self, el: Element, level: int) -> str:
        """A numbered heading's number ("2.1"), from the outline style; its counters run through the document."""
        formats = self.formats.get(_OUTLINE, {})
        if el.get(TEXT + "is-list-header") == "true" or not formats.get(level) or not formats[level].fmt:
            return ""
        start = el.get(TEXT + "start-value") or ""
        if start.isdigit():
            self.outline[level] = int(start)
        elif el.get(TEXT + "restart-numbering") == "true":
            self.outline[level] = formats[level].start
        else:
            self.outline[level] = self.outline.get(level, formats[level].start - 1) + 1
        for deeper in [k for k in self.outline if k > level]:
            del self.outline[deeper]
        fmt = formats[level]
        shown = range(max(1, level - fmt.display + 1), level + 1)
        numbers = [
            _format_number(self.outline.get(k, (formats.get(k) or fmt).start), (formats.get(k) or fmt).fmt)
            for k in shown
        ]
        return fmt.prefix + ".".join(n for n in numbers if n) + fmt.suffix.rstrip()

    def close(self, state: _ListState) -> None:
        self.last[(state.style, state.level)] = state.count

    def item(self, el: Element, lists: list[_ListState]) -> str:
        state = lists[-1]
        start = el.get(TEXT + "start-value") or ""
        state.count = int(start) if start.isdigit() else state.count + 1
        fmt = state.formats.get(state.level)
        if fmt is None or not fmt.fmt:
            return ""
        if fmt.template:  # "%1%.%2%someText": each %k% is level k's number in level k's own format
            by_level = {s.level: s for s in lists}

            def number(m: re.Match[str]) -> str:
                s = by_level.get(int(m.group(1)))
                return _format_number(s.count, (s.formats.get(s.level) or fmt).fmt) if s else ""

            return re.sub(r"%(\d{1,2})%", number, fmt.template)
        shown = lists[max(0, len(lists) - fmt.display) :]
        numbers = [_format_number(s.count, (s.formats.get(s.level) or fmt).fmt) for s in shown]
        return fmt.prefix + ".".join(n for n in numbers if n) + fmt.suffix


class _TextWalker:
    def __init__(
        self, builder: PagedBuilder, styles: _StyleInfo, numbering: dict[str, dict[int, _LevelFormat]] | None = None
    ) -> None:
        self.b = builder
        self.styles = styles
        self.first_title: str | None = None
        self.numbering = _Numbering(numbering or {})
        self.label = ""  # the number of the list item whose first paragraph comes next ("1.", "a)")

    def walk(self, container: Element, depth: int = 0) -> None:
        # (children, the list this level opened or None): a list's numbering lives while its children are read
        stack: list[tuple[Any, _ListState | None]] = [(iter(container), None)]
        lists: list[_ListState] = []
        while stack:
            el = next(stack[-1][0], None)
            if el is None:
                _, opened = stack.pop()
                if opened is not None:
                    self.numbering.close(opened)
                    lists.pop()
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
            elif tag == TEXT + "list" and len(stack) < 200:
                state = self.numbering.open(el, lists[-1] if lists else None)
                lists.append(state)
                stack.append((iter(el), state))
            elif tag in (TEXT + "list-item", TEXT + "list-header") and len(stack) < 200:
                if lists and tag == TEXT + "list-item":
                    self.label = self.numbering.item(el, lists)
                stack.append((iter(el), None))
            elif tag in _CONTAINERS and len(stack) < 200:
                stack.append((iter(el), None))

    def _style(self, el: Element) -> str:
        return el.get(TEXT + "style-name") or el.get(TABLE + "style-name") or ""

    def _level(self, el: Element) -> int | None:
        """The outline level of a heading paragraph (``text:h``, or a ``text:p`` in a heading style), else None."""
        raw = el.get(TEXT + "outline-level") or ""
        if raw.isdigit() and int(raw) > 0:
            return min(int(raw), 10)
        level = self.styles.levels.get(self._style(el))
        if level is not None:
            return level
        return 1 if el.tag == TEXT + "h" else None

    def paragraph(self, el: Element) -> None:
        if self._style(el) in self.styles.before:
            self.b.page_break()  # a no-op on an empty page: with a soft break at the start it is ONE break
        notes: list[str] = []
        parts = inline_text(el, notes, breaks=True).split(_SOFT_BREAK)
        level = self._level(el)
        label, self.label = self.label, ""
        if label and level is None and "".join(parts).strip():
            parts[0] = label + " " + parts[0].lstrip()
        if level is not None and "".join(parts).strip():
            text = "".join(parts)
            for note in notes:  # a note's citation is not part of the heading's title (its body follows)
                mark = note.split("] ", 1)[0] + "]"
                text = text.replace(mark, "", 1)
            if not parts[0].strip() and len(parts) > 1:
                self.b.page_break()
            number = self.numbering.heading(el, level) if el.tag == TEXT + "h" else ""
            if self.first_title is None and level == 1:
                self.first_title = collapse_whitespace(text)
            self.b.heading(level, f"{number} {text.lstrip()}" if number else text)
            if len(parts) > 1 and parts[0].strip():
                self.b.page_break()
        else:
            # the paragraph's text up to a recorded page break stays on this page, the rest starts the next
            for i, part in enumerate(parts):
                if i:
                    self.b.page_break()
                self.b.block(part, sep="\n\n" if i == 0 else "\n")
        for note in notes:
            self.b.block(note, sep="\n")
        if self._style(el) in self.styles.after:
            self.b.page_break()

    def table(self, el: Element) -> None:
        if self._style(el) in self.styles.before:
            self.b.page_break()
        rows: list[str] = []
        for row, soft in _rows_and_breaks(el):
            if soft and rows:
                self.b.block("\n".join(rows))
                rows = []
                self.b.page_break()
            elif soft:
                self.b.page_break()
            if row:
                rows.append(row)
        if rows:
            self.b.block("\n".join(rows))
        if self._style(el) in self.styles.after:
            self.b.page_break()


def _rows_and_breaks(table: Element) -> list[tuple[str, bool]]:
    """(row text, whether LibreOffice recorded a page break before the row) for the rows of a table."""
    out: list[tuple[str, bool]] = []
    soft = False
    stack: list[Any] = [iter(table)]
    while stack:
        el = next(stack[-1], None)
        if el is None:
            stack.pop()
            continue
        if el.tag == TEXT + "soft-page-break":
            soft = True
        elif el.tag == TABLE + "table-row":
            row = _row_text(el)
            if row or soft:
                out.append((row, soft))
                soft = False
        elif (
            el.tag in (TABLE + "table-rows", TABLE + "table-header-rows", TABLE + "table-row-group") and len(stack) < 50
        ):
            stack.append(iter(el))
    return out


def _row_text(row: Element, depth: int = 0) -> str:
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
            elif child.tag == TABLE + "table" and depth < 10:
                parts.extend(_row_text(r, depth + 1) for r in child.iter(TABLE + "table-row"))
        cells.append(collapse_whitespace(" ".join(parts)))
    while cells and not cells[-1]:
        cells.pop()
    return " | ".join(cells)


def table_rows(table: Element, depth: int = 0) -> list[str]:
    """One ``cell | cell`` line per row with text (a table nested in a cell is read inside its cell)."""
    return [row for row, _ in _rows_and_breaks(table) if row]


def _load_text(path: Path, body: Element, styles: Element | None, content: Element) -> tuple[list[Page], str | None]:
    builder = PagedBuilder()
    walker = _TextWalker(builder, _StyleInfo(styles, content), _list_formats(styles, content))
    walker.walk(body)
    first = walker.first_title or (builder.headings[0][1] if builder.headings else None)
    extra = _headers_footers(styles)
    if extra:
        builder.heading(1, "Headers and footers")
        for text in extra:
            builder.block(text, sep="\n")
    return builder.pages(), first


_PAGE_FIELDS = frozenset({TEXT + "page-number", TEXT + "page-count", TEXT + "date", TEXT + "time"})
_HEADER_FOOTER = frozenset(
    STYLE + kind for kind in ("header", "header-left", "header-first", "footer", "footer-left", "footer-first")
)


def _headers_footers(styles: Element | None) -> list[str]:
    """The page styles' header and footer text, each distinct text once (not once per page), page numbers, dates
    and times left out."""
    if styles is None:
        return []
    seen: dict[str, None] = {}
    for master in styles.iter(STYLE + "master-page"):
        for part in master:
            if part.tag not in _HEADER_FOOTER or part.get(STYLE + "display") == "false":
                continue
            for p in part.iter():
                if p.tag not in (TEXT + "p", TEXT + "h"):
                    continue
                for field in [c for c in p.iter() if c.tag in _PAGE_FIELDS]:
                    field.text = ""
                text = collapse_whitespace(inline_text(p))
                if sum(ch.isalnum() for ch in text) >= 2 and len(seen) < 100:
                    seen.setdefault(text)
    return list(seen)


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


def _frame_text(frame: Element) -> str:
    return "\n".join(inline_text(p) for p in frame.iter() if p.tag in (TEXT + "p", TEXT + "h"))


def _slide_title(slide: Element, frames: list[Element]) -> tuple[str | None, Element | None]:
    """(the slide's title, the frame it came from): the title placeholder (``presentation:class`` title), else a
    frame named as a title, else the first line of the top text frame when it is short (Impress decks whose title
    is a plain text box, decks converted from other formats)."""
    for frame in frames:
        if frame.get(PRES + "class") == "title":
            title = collapse_whitespace(_frame_text(frame))
            if title:
                return title, frame
    for frame in frames:
        name = (frame.get(DRAW + "name") or "").lower()
        if re.match(r"(title|başlık|baslik)\b", name):
            title = collapse_whitespace(_frame_text(frame))
            if title:
                return title, frame
    for frame in frames:
        if frame.get(PRES + "class") in ("page-number", "footer", "date-time", "header"):
            continue
        lines = [line.strip() for line in _frame_text(frame).splitlines() if line.strip()]
        if lines:
            first = collapse_whitespace(lines[0])
            return first, None
    return None, None


def _notes_texts(notes: Element) -> list[str]:
    """The speaker notes' paragraphs: the ``notes`` frame, else every text frame of ``presentation:notes`` (decks
    whose notes frame lost its class), never the slide thumbnail."""
    frames = [f for f in notes.iter() if f.tag in (DRAW + "frame", DRAW + "custom-shape")]
    classed = [f for f in frames if f.get(PRES + "class") == "notes"]
    texts: list[str] = []
    for frame in classed or frames:
        if frame.get(PRES + "class") in ("page", "page-number", "header", "footer", "date-time"):
            continue
        texts.extend(inline_text(p) for p in frame.iter(TEXT + "p"))
    return texts


def _frame_paragraphs(frame: Element, numbering: _Numbering) -> list[str]:
    """A frame's paragraphs in order, a numbered list item's with its number ("1.", "a)"), then the text of an
    OpenDocument object embedded in it (a spreadsheet, chart or text)."""
    out: list[str] = []
    label = ""
    stack: list[tuple[Any, _ListState | None]] = [(iter(frame), None)]
    lists: list[_ListState] = []
    while stack:
        el = next(stack[-1][0], None)
        if el is None:
            _, opened = stack.pop()
            if opened is not None:
                numbering.close(opened)
                lists.pop()
            continue
        if el.tag in _SKIP or len(stack) > 100:
            continue
        if el.tag in (TEXT + "p", TEXT + "h"):
            text = inline_text(el)
            out.append(f"{label} {text.lstrip()}" if label and text.strip() else text)
            label = ""
        elif el.tag == TEXT + "list":
            state = numbering.open(el, lists[-1] if lists else None)
            lists.append(state)
            stack.append((iter(el), state))
        elif el.tag == TEXT + "list-item":
            label = numbering.item(el, lists) if lists else ""
            stack.append((iter(el), None))
        elif el.tag == DRAW + "object":
            out.extend(_embedded_text(el))
        else:
            stack.append((iter(el), None))
    return out


def _slide_page(
    number: int, slide: Element, tail: list[str] | None = None, numbering: _Numbering | None = None
) -> Page:
    numbering = numbering or _Numbering({})
    builder = PagedBuilder()
    frames = sorted((f for f in slide if f.tag in (DRAW + "frame", DRAW + "custom-shape", DRAW + "g")), key=_frame_pos)
    title, title_frame = _slide_title(slide, frames)
    name = collapse_whitespace(slide.get(DRAW + "name") or "")
    auto_name = not name or re.fullmatch(r"(page|slide|sayfa|slayt|s)\s*\d+", name, re.I) is not None
    builder.heading(1, title or (name if not auto_name else "") or f"Slide {number}")
    skip_title_line = title is not None and title_frame is None
    for frame in frames:
        if frame is title_frame or frame.get(PRES + "class") in ("page-number", "footer", "date-time", "header"):
            continue
        tables = list(frame.iter(TABLE + "table"))
        for t in tables:
            rows = table_rows(t)
            if rows:
                builder.block("\n".join(rows))
        if not tables:
            for text in _frame_paragraphs(frame, numbering):
                if skip_title_line and text.strip():
                    skip_title_line = False  # the first line, already the heading
                    rest = text.strip().split("\n", 1)
                    if title and collapse_whitespace(rest[0]) == title:
                        text = rest[1] if len(rest) > 1 else ""
                builder.block(text, sep="\n")
    notes = slide.find(PRES + "notes")
    return finish_slide(builder, number, _notes_texts(notes) if notes is not None else [], tail)


_REPEATED_CLASSES = frozenset({"footer", "header"})
_PROMPT_CLASSES = frozenset({"title", "subtitle", "outline", "notes", "page", "page-number", "date-time", "graphic",
                             "object", "chart", "table", "orgchart", "handout"})  # fmt: skip


def _repeated_texts(slides: list[Element], *docs: Element | None) -> list[str]:
    """Text a deck repeats on its slides, kept once: footer and header declarations, and on the master pages in use
    their footer/header frames and plain text frames (not the placeholders' prompts, not page numbers or dates)."""
    used = {s.get(DRAW + "master-page-name") or "" for s in slides}
    seen: dict[str, None] = {}

    def add(text: str) -> None:
        text = collapse_whitespace(text)
        if sum(ch.isalnum() for ch in text) >= 2 and len(seen) < 200:
            seen.setdefault(text)

    for doc in docs:
        if doc is None:
            continue
        for decl in doc.iter():
            if decl.tag in (PRES + "footer-decl", PRES + "header-decl"):
                add("".join(decl.itertext()))
        for master in doc.iter(STYLE + "master-page"):
            if (master.get(STYLE + "name") or "") not in used:
                continue
            for frame in master:
                cls = frame.get(PRES + "class")
                if frame.tag not in (DRAW + "frame", DRAW + "custom-shape") or cls in _PROMPT_CLASSES:
                    continue
                if cls is None or cls in _REPEATED_CLASSES:
                    add(" ".join(inline_text(p) for p in frame.iter(TEXT + "p")))
    return list(seen)


def _load_slides(body: Element, *docs: Element | None) -> list[Page]:
    slides = [p for p in body if p.tag == DRAW + "page"]
    formats = _list_formats(*docs)
    pages = [_slide_page(number, slide, None, _Numbering(formats)) for number, slide in enumerate(slides, start=1)]
    tail = _repeated_texts(slides, *docs)
    if pages and tail:  # once, after the last slide
        pages[-1] = _slide_page(len(slides), slides[-1], tail, _Numbering(formats))
    return pages


# ---------------------------------------------------------------------------------------------- the loader
def load_opendocument(path: Path, data: bytes) -> LoadedDocument:
    token = _EMBEDDED.set(None)
    try:
        return _load(path, data)
    finally:
        _EMBEDDED.reset(token)


def _load(path: Path, data: bytes) -> LoadedDocument:
    content, styles, meta = _root(path, data)
    body = content.find(f"{OFFICE}body")
    if body is None:
        raise CorruptFile(path, f"{path.name} is not a readable OpenDocument file (no office:body in content.xml)")
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
        pages = _load_slides(slide_body, styles if styles is not content else None, content)
    else:
        raise CorruptFile(path, "OpenDocument kind not supported (only text, spreadsheet and presentation)")
    if not pages:
        pages = [Page(1, "")]
    metadata, raw_title = _metadata(meta, fmt)
    metadata["page_count"] = len(pages)
    title = (
        meaningful_title(raw_title)
        or first
        or (
            pages[0].sections[0].path
            if fmt == "odp" and pages[0].sections and not re.fullmatch(r"Slide \d+", pages[0].sections[0].path)
            else None
        )
        or (first_line_title(pages[0].text, max_len=120) if fmt == "odt" else None)
        or stem_title(path)
    )
    return LoadedDocument(title=title, pages=pages, metadata=metadata, warnings=warnings)
