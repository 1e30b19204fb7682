"""DOCX loader (python-docx): body paragraphs and tables in document order, headings as section paths.

The zip container is checked before python-docx opens it: not a zip, too many members, or members whose declared
uncompressed size is implausibly large (a zip bomb) are rejected without inflating anything; Python's zipfile
never inflates a member past its declared size, so the check bounds memory.

Text comes from the WordprocessingML runs themselves: ``w:t``, tabs, breaks, non-breaking hyphens, hyperlinks,
fields and content controls are read; deleted revisions, the fallback copies of ``mc:AlternateContent`` and
field codes are not; text boxes follow the paragraph that anchors them. Headings are the ``Heading N`` / ``Title``
styles or any style or paragraph with an outline level. Tables become one ``cell | cell`` line per row.

What a reader of the page sees beyond the body is kept too. List numbers are text ("1)", "a)", "Madde 3 -"), from
``word/numbering.xml``: level text and number format, counters per abstract list and level (a ``w:num`` with a
start override counts on its own), deeper levels restarting as ``w:lvlRestart`` says. A footnote or endnote
reference becomes its mark ("[1]", "[i]") and the notes follow the body under "Footnotes" / "Endnotes". A comment
follows the paragraph it is anchored in as "[Comment (author): text]". Headers and footers come once per document
(each distinct text once), after the notes, under "Headers and footers". Every extra part is refused like the main
one if it declares a DTD or entities.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import (
    MAX_TITLE,
    TextBuilder,
    collapse_whitespace,
    first_line_title,
    json_safe,
    meaningful_title,
    stem_title,
)
from .xmlsafe import parse_xml_bytes, refuse_ole
from .zipguard import check_inflated

MAX_MEMBERS = 10_000
MAX_TOTAL_UNCOMPRESSED = 512 * 1024 * 1024
MAX_MEMBER_UNCOMPRESSED = 256 * 1024 * 1024
MAX_RATIO = 100  # uncompressed / compressed, checked for members above RATIO_FLOOR
RATIO_FLOOR = 10 * 1024 * 1024

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_P, _TBL, _SDT, _SDT_CONTENT = _W + "p", _W + "tbl", _W + "sdt", _W + "sdtContent"
_TR, _TC, _T, _TAB, _BR, _CR = _W + "tr", _W + "tc", _W + "t", _W + "tab", _W + "br", _W + "cr"
_NB_HYPHEN, _SYM, _PPR, _PSTYLE = _W + "noBreakHyphen", _W + "sym", _W + "pPr", _W + "pStyle"
_OUTLINE, _VAL, _TXBX = _W + "outlineLvl", _W + "val", _W + "txbxContent"
_FOOTNOTE_REF, _ENDNOTE_REF = _W + "footnoteReference", _W + "endnoteReference"
_COMMENT_REF, _RUBY = _W + "commentReference", _W + "ruby"
_SKIP_SUBTREES = frozenset(
    {_W + "del", _W + "moveFrom", _W + "delText", _W + "instrText", _W + "footnoteRef", _W + "endnoteRef",
     _MC + "Fallback", _PPR, _W + "rPr"}
)  # fmt: skip
_HEADING_STYLE_RE = re.compile(r"^heading\s*(\d)$", re.I)


def check_zip(path: Path, data: bytes) -> None:
    """Reject what is not a sane DOCX container before anything is inflated."""
    refuse_ole(path, data, "DOCX")  # a password-protected .docx is an OLE compound file, not a zip
    if not data.startswith(b"PK"):
        raise CorruptFile(path, "not a DOCX file (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as err:
        raise CorruptFile(path, f"not a readable DOCX file (broken zip archive: {err})") from None
    if len(infos) > MAX_MEMBERS:
        raise CorruptFile(path, f"zip archive has {len(infos)} members (limit {MAX_MEMBERS}); refused")
    total = 0
    for info in infos:
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if (
            info.file_size > MAX_MEMBER_UNCOMPRESSED
            or total > MAX_TOTAL_UNCOMPRESSED
            or (info.file_size > RATIO_FLOOR and ratio > MAX_RATIO)
        ):
            raise CorruptFile(
                path,
                f"zip member {info.filename!r} would inflate to {info.file_size} bytes "
                f"(ratio {ratio:.0f}:1): refused as a possible zip bomb",
            )
    names = {info.filename for info in infos}
    if "word/document.xml" not in names and not any(n.endswith("/document.xml") for n in names):
        raise CorruptFile(path, "zip archive is not a Word document (no word/document.xml)")


class _Styles:
    """Heading level of a paragraph style (by name or outline level, following base styles)."""

    def __init__(self, document: Any) -> None:
        self._levels: dict[str, int | None] = {}
        self._linked: dict[str, tuple[str, int | None] | None] = {}
        self._doc = document

    def level(self, style_id: str | None) -> int | None:
        if not style_id:
            return None
        if style_id not in self._levels:
            self._levels[style_id] = self._compute(style_id)
        return self._levels[style_id]

    def numbering(self, style_id: str) -> tuple[str, int | None] | None:
        """The list a paragraph style numbers its paragraphs with (``w:numPr`` in the style or a base style)."""
        key = "#num:" + style_id
        if key not in self._linked:
            self._linked[key] = self._find_numbering(style_id)
        return self._linked[key]

    def _chain(self, style_id: str) -> Iterator[Any]:
        """The style named ``style_id`` and its base styles, nearest first (a loop in the chain ends it)."""
        try:
            styles = self._doc.styles
        except Exception:
            return
        seen: set[str] = set()
        current: str | None = style_id
        while current and current not in seen:
            seen.add(current)
            style = next((s for s in styles if getattr(s, "style_id", None) == current), None)
            if style is None:
                return
            yield style
            base = style.base_style
            current = base.style_id if base is not None else None

    def _find_numbering(self, style_id: str) -> tuple[str, int | None] | None:
        for style in self._chain(style_id):
            ppr = style.element.find(_PPR)
            numpr = ppr.find(_W + "numPr") if ppr is not None else None
            if numpr is not None:
                num_id = _val(numpr, "numId")
                level = _val(numpr, "ilvl")
                if num_id is not None:
                    return num_id, (_int(level, 0) if level is not None else None)
        return None

    def _compute(self, style_id: str) -> int | None:
        for style in self._chain(style_id):
            name = (style.name or "").strip()
            if name.lower() == "title":
                return 0
            m = _HEADING_STYLE_RE.match(name)
            if m:
                return int(m.group(1))
            ppr = style.element.find(_PPR)
            if ppr is not None:
                outline = ppr.find(_OUTLINE)
                if outline is not None and (outline.get(_VAL) or "").isdigit():
                    lvl = int(outline.get(_VAL))
                    return lvl + 1 if lvl < 9 else None
        return None


class _Numbering:
    """List numbers as Word shows them, from ``word/numbering.xml``: each ``w:num`` points at an abstract list
    whose levels carry a start, a number format and a level text ("%1)", "Madde %1", "%1.%2."). Lists sharing an
    abstract list count together, as Word does; a ``w:num`` with a start override counts on its own."""

    def __init__(self, root: Any | None) -> None:
        self.abstract: dict[str, dict[int, _Level]] = {}
        self.nums: dict[str, tuple[str, dict[int, _Level], dict[int, int]]] = {}
        self.counters: dict[tuple[str, str], list[int | None]] = {}
        if root is None:
            return
        for node in root:
            if node.tag == _W + "abstractNum":
                self.abstract[node.get(_W + "abstractNumId") or ""] = {
                    lvl.ilvl: lvl for lvl in (_Level(el) for el in node if el.tag == _W + "lvl")
                }
        for node in root:
            if node.tag != _W + "num":
                continue
            ref = node.find(_W + "abstractNumId")
            levels: dict[int, _Level] = {}
            starts: dict[int, int] = {}
            for override in node.iter(_W + "lvlOverride"):
                ilvl = _int(override.get(_W + "ilvl"), 0)
                start = override.find(_W + "startOverride")
                if start is not None:
                    starts[ilvl] = _int(start.get(_VAL), 0)
                lvl = override.find(_W + "lvl")
                if lvl is not None:  # a format override; it counts on with the abstract list
                    levels[ilvl] = _Level(lvl)
            abstract = (ref.get(_VAL) or "") if ref is not None else ""
            self.nums[node.get(_W + "numId") or ""] = (abstract, levels, starts)

    def level_of_style(self, num_id: str, style_id: str) -> int:
        abstract = self.nums.get(num_id, ("", {}, {}))[0]
        return next((i for i, lvl in self.abstract.get(abstract, {}).items() if lvl.style == style_id), 0)

    def label(self, num_id: str, ilvl: int) -> str:
        """The number shown before the next paragraph of list ``num_id`` at level ``ilvl`` (and count it)."""
        if num_id not in self.nums or not 0 <= ilvl < 9:
            return ""
        abstract_id, overrides, starts = self.nums[num_id]
        abstract = self.abstract.get(abstract_id, {})

        def level(i: int) -> _Level | None:
            return overrides.get(i) or abstract.get(i)

        key = ("num", num_id) if starts else ("abstract", abstract_id)
        counters = self.counters.setdefault(key, [None] * 9)
        lvl = level(ilvl)
        if lvl is None:
            return ""
        current = counters[ilvl]
        counters[ilvl] = starts.get(ilvl, lvl.start) if current is None else current + 1
        for above in range(ilvl):  # a level skipped over shows (and from then on counts from) its start
            upper = level(above)
            if counters[above] is None and upper is not None:
                counters[above] = starts.get(above, upper.start)
        for deeper in range(ilvl + 1, 9):
            below = level(deeper)
            if below is None or below.restart is None or ilvl <= below.restart:
                counters[deeper] = None
        if lvl.fmt == "bullet":
            return _bullet(lvl.text)

        def number(m: re.Match[str]) -> str:
            i = int(m.group(1)) - 1
            other = level(i)
            if other is None:
                return ""
            value = counters[i]
            value = starts.get(i, other.start) if value is None else value
            fmt = "decimal" if lvl.legal and i < ilvl else other.fmt
            return _format_number(value, fmt)

        return collapse_whitespace(re.sub(r"%([1-9])", number, lvl.text))


class _Level:
    __slots__ = ("fmt", "ilvl", "legal", "restart", "start", "style", "text")

    def __init__(self, el: Any) -> None:
        self.ilvl = _int(el.get(_W + "ilvl"), 0)
        self.start = _int(_val(el, "start"), 0)  # no w:start: the list starts at 0 (ECMA-376 §17.9.25)
        self.fmt = _val(el, "numFmt") or "decimal"
        self.text = _val(el, "lvlText") or ""
        restart = _val(el, "lvlRestart")
        # w:lvlRestart n: the level restarts when a level at or above the n-th (one-based) is used; 0: never
        self.restart = None if restart is None else _int(restart, 0) - 1
        self.legal = el.find(_W + "isLgl") is not None
        self.style = _val(el, "pStyle")


def _val(el: Any, name: str) -> str | None:
    child = el.find(_W + name)
    return child.get(_VAL) if child is not None else None


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


_BULLETS = {"\uf0b7": "•", "\uf0a7": "▪", "\uf076": "❖", "\uf0d8": "➢", "\uf0fc": "✓", "\uf06e": "■", "o": "o"}


def _bullet(text: str) -> str:
    text = text.strip()
    if not text:
        return "•"
    return "".join(_BULLETS.get(c, "•" if "\ue000" <= c <= "\uf8ff" else c) for c in text)


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))  # fmt: skip
_CARDINAL = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
)  # fmt: skip
_ORDINAL = (
    "zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
    "nineteenth", "twentieth",
)  # fmt: skip


def _format_number(n: int, fmt: str) -> str:
    """``n`` in a WordprocessingML number format (ST_NumberFormat); unknown formats are decimal."""
    if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
        out = ""
        for value, letters in _ROMAN:
            while n >= value:
                out += letters
                n -= value
        return out if fmt == "lowerRoman" else out.upper()
    if fmt in ("lowerLetter", "upperLetter") and n > 0:
        letter = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)  # Word: y, z, aa, bb
        return letter if fmt == "lowerLetter" else letter.upper()
    if fmt == "ordinal":
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"
    if fmt == "cardinalText" and 0 <= n <= 20:
        return _CARDINAL[n].capitalize()
    if fmt == "ordinalText" and 0 <= n <= 20:
        return _ORDINAL[n].capitalize()
    if fmt == "decimalZero":
        return f"{n:02d}"
    if fmt == "none":
        return ""
    return str(n)


class _Notes:
    """Footnotes or endnotes: each is numbered in the order the text cites it; their text follows the page."""

    def __init__(self, root: Any | None, roman: bool) -> None:
        self.notes: dict[str, Any] = {}
        self.roman = roman
        self.cited: list[tuple[str, str]] = []  # (mark, id) in citing order
        if root is not None:
            for node in root:
                kind = node.get(_W + "type")
                if kind in (None, "normal"):
                    self.notes[node.get(_W + "id") or ""] = node

    def cite(self, note_id: str) -> str:
        if note_id not in self.notes or any(i == note_id for _, i in self.cited):
            return ""
        n = len(self.cited) + 1
        mark = _format_number(n, "lowerRoman") if self.roman else str(n)
        self.cited.append((mark, note_id))
        return f"[{mark}]"


class _Comments:
    def __init__(self, root: Any | None) -> None:
        self.comments: dict[str, Any] = {}
        if root is not None:
            for node in root:
                if node.tag == _W + "comment":
                    self.comments[node.get(_W + "id") or ""] = node


class _Context:
    """What a paragraph's text depends on beyond its runs: the styles, list numbers, notes and comments."""

    def __init__(self, styles: _Styles, numbering: _Numbering, footnotes: _Notes, endnotes: _Notes,
                 comments: _Comments) -> None:  # fmt: skip
        self.styles = styles
        self.numbering = numbering
        self.footnotes = footnotes
        self.endnotes = endnotes
        self.comments = comments
        self.pending_comments: list[str] = []  # ids cited by the paragraph just read

    def paragraph_text(self, p: Any, boxes: list[Any]) -> str:
        """Text of a ``w:p`` element with its list number; text-box paragraphs inside it go into ``boxes``."""
        out: list[str] = []
        stack = [iter(p)]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            tag = node.tag
            if not isinstance(tag, str) or tag in _SKIP_SUBTREES:
                continue
            if tag == _T:
                out.append(node.text or "")
            elif tag == _TAB:
                out.append("\t")
            elif tag in (_BR, _CR):
                out.append("\n" if node.get(_W + "type") in (None, "textWrapping") else " ")
            elif tag == _NB_HYPHEN:
                out.append("-")
            elif tag == _SYM:
                out.append(_symbol(node))
            elif tag == _TXBX:
                boxes.extend(el for el in node.iter(_P))
            elif tag == _FOOTNOTE_REF:
                out.append(self.footnotes.cite(node.get(_W + "id") or ""))
            elif tag == _ENDNOTE_REF:
                out.append(self.endnotes.cite(node.get(_W + "id") or ""))
            elif tag == _COMMENT_REF:
                self.pending_comments.append(node.get(_W + "id") or "")
            elif tag == _RUBY:
                out.append(self.ruby(node, boxes))
            else:
                stack.append(iter(node))
        text = "".join(out)
        label = self.list_label(p)
        if label and text.strip():
            return f"{label} {text.lstrip()}"
        return text

    def ruby(self, node: Any, boxes: list[Any]) -> str:
        """A phonetic guide: the base text, its reading after it in parentheses."""
        base, guide = node.find(_W + "rubyBase"), node.find(_W + "rt")
        base_text = self.paragraph_text(base, boxes) if base is not None else ""
        guide_text = self.paragraph_text(guide, boxes).strip() if guide is not None else ""
        return f"{base_text} ({guide_text})" if guide_text and base_text else base_text or guide_text

    def list_label(self, p: Any) -> str:
        ppr = p.find(_PPR)
        num_id: str | None = None
        ilvl: int | None = None
        style_id: str | None = None
        if ppr is not None:
            pstyle = ppr.find(_PSTYLE)
            style_id = pstyle.get(_VAL) if pstyle is not None else None
            numpr = ppr.find(_W + "numPr")
            if numpr is not None:
                num_id = _val(numpr, "numId")
                level = _val(numpr, "ilvl")
                ilvl = _int(level, 0) if level is not None else None
        if num_id is None and style_id:
            linked = self.styles.numbering(style_id)
            if linked is not None:
                num_id, style_ilvl = linked
                ilvl = ilvl if ilvl is not None else style_ilvl
                if ilvl is None:
                    ilvl = self.numbering.level_of_style(num_id, style_id)
        if not num_id or num_id == "0":
            return ""
        return self.numbering.label(num_id, ilvl or 0)

    def cell_text(self, tc: Any, depth: int = 0) -> str:
        parts: list[str] = []
        for child in tc:
            if child.tag == _P:
                boxes: list[Any] = []
                parts.append(self.paragraph_text(child, boxes))
                parts.extend(self.paragraph_text(b, []) for b in boxes)
            elif child.tag == _TBL and depth < 5:
                parts.append("; ".join(self.table_rows(child, depth + 1)))
            elif child.tag in (_SDT, _SDT_CONTENT):
                parts.append(self.cell_text(child, depth))
        return collapse_whitespace(" ".join(parts))

    def table_rows(self, tbl: Any, depth: int = 0) -> list[str]:
        rows: list[str] = []
        for tr in _rows(tbl):
            cells = [self.cell_text(tc, depth) for tc in tr if tc.tag in (_TC, _SDT)]
            if any(cells):
                rows.append(" | ".join(cells))
        return rows

    def comment_text(self, comment_id: str) -> str | None:
        node = self.comments.comments.get(comment_id)
        if node is None:
            return None
        text = collapse_whitespace(" ".join(self.paragraph_text(p, []) for p in node.iter(_P)))
        if not text:
            return None
        author = collapse_whitespace(node.get(_W + "author") or "")
        return f"[Comment ({author}): {text}]" if author else f"[Comment: {text}]"

    def note_text(self, node: Any) -> str:
        return collapse_whitespace(" ".join(self.paragraph_text(p, []) for p in node.iter(_P)))


def _symbol(node: Any) -> str:
    """A ``w:sym`` character (Symbol/Wingdings code points in the private-use range mapped down)."""
    try:
        value = int(node.get(_W + "char") or "", 16)
    except ValueError:
        return ""
    if 0xF020 <= value <= 0xF0FF:
        return chr(value - 0xF000)
    return chr(value) if 0 < value < 0x110000 else ""


def _rows(tbl: Any) -> list[Any]:
    """The rows of a table, including those wrapped in content controls (not those of nested tables)."""
    out: list[Any] = []
    for child in tbl:
        if child.tag == _TR:
            out.append(child)
        elif child.tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                out.extend(_rows(content))
    return out


def _paragraph_level(p: Any, styles: _Styles) -> int | None:
    ppr = p.find(_PPR)
    if ppr is None:
        return None
    outline = ppr.find(_OUTLINE)
    if outline is not None and (outline.get(_VAL) or "").isdigit():
        lvl = int(outline.get(_VAL))
        return lvl + 1 if lvl < 9 else None
    pstyle = ppr.find(_PSTYLE)
    return styles.level(pstyle.get(_VAL) if pstyle is not None else None)


class _Body:
    def __init__(self, ctx: _Context, builder: TextBuilder, headings: bool = True) -> None:
        self.ctx = ctx
        self.builder = builder
        self.headings = headings
        self.first_title: str | None = None

    def walk(self, container: Any) -> None:
        for child in container:
            tag = child.tag
            if tag == _P:
                self.paragraph(child)
            elif tag == _TBL:
                rows = self.ctx.table_rows(child)
                if rows:
                    self.builder.block("\n".join(rows))
                self.comments()
            elif tag == _SDT:
                content = child.find(_SDT_CONTENT)
                if content is not None:
                    self.walk(content)

    def paragraph(self, p: Any) -> None:
        boxes: list[Any] = []
        text = self.ctx.paragraph_text(p, boxes)
        level = _paragraph_level(p, self.ctx.styles) if self.headings else None
        if level is not None and text.strip():
            if level == 0 and self.first_title is None:
                self.first_title = collapse_whitespace(text)[:MAX_TITLE]
            self.builder.heading(level, text)
        else:
            self.builder.block(text)
        self.comments()
        for box in boxes:
            self.paragraph(box)

    def comments(self) -> None:
        """The comments anchored in what was just read, marked as comments, right after it."""
        pending, self.ctx.pending_comments = self.ctx.pending_comments, []
        for comment_id in dict.fromkeys(pending):
            text = self.ctx.comment_text(comment_id)
            if text:
                self.builder.block(text)


def _part_roots(path: Path, document: Any) -> dict[str, list[Any]]:
    """The XML roots of the document's footnotes, endnotes, comments, numbering, headers and footers (by kind),
    each refused like the main part if it declares a DTD or entities."""
    out: dict[str, list[Any]] = {}
    seen: set[str] = set()
    rels = sorted(document.part.rels.values(), key=lambda r: str(getattr(r, "target_ref", "")))
    for rel in rels:
        kind = str(rel.reltype).rsplit("/", 1)[-1]
        if rel.is_external or kind not in _EXTRA_PARTS:
            continue
        part = rel.target_part
        name = str(part.partname)
        if name in seen:
            continue
        seen.add(name)
        out.setdefault(kind, []).append(_parse_part(path, part.blob, name.lstrip("/")))
    return out


def _parse_part(path: Path, blob: bytes, name: str) -> Any:
    """A part's XML: refused on any DTD or entity (defusedxml), then parsed by lxml as python-docx parses the main
    part, whose depth limit (256) bounds the walk over a hostile nesting of content controls."""
    from lxml import etree  # type: ignore[import-untyped]

    parse_xml_bytes(path, blob, name, "DOCX")
    try:
        return etree.fromstring(blob, parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.LxmlError as err:
        raise CorruptFile(path, f"not a readable DOCX file ({name} is not well-formed XML: {err})") from None


_NOTE_MARK = re.compile(r"\[(?:\d+|[ivxlcdm]+)\]")
_EXTRA_PARTS = frozenset({"footnotes", "endnotes", "comments", "numbering", "header", "footer"})


def load_docx(path: Path, data: bytes) -> LoadedDocument:
    check_zip(path, data)
    check_inflated(path, data)  # the real inflated size, within a running budget (kaynak.loaders.zipguard)
    import docx  # python-docx; imported here so that other formats do not pay for it

    try:
        document = docx.Document(io.BytesIO(_as_document(data)))
        body = document.element.body
    except Exception as err:
        raise CorruptFile(path, f"not a readable DOCX file ({type(err).__name__}: {err})") from None

    parts = _part_roots(path, document)

    def first(kind: str) -> Any | None:
        return parts.get(kind, [None])[0]

    ctx = _Context(
        _Styles(document),
        _Numbering(first("numbering")),
        _Notes(first("footnotes"), roman=False),
        _Notes(first("endnotes"), roman=True),
        _Comments(first("comments")),
    )
    builder = TextBuilder()
    walker = _Body(ctx, builder)
    walker.walk(body)
    body_headings = list(builder.headings)
    body_length = builder.length
    _notes_after(builder, ctx, ctx.footnotes, "Footnotes")
    _notes_after(builder, ctx, ctx.endnotes, "Endnotes")
    _headers_footers(builder, ctx, parts.get("header", []) + parts.get("footer", []))
    text, sections = builder.finish()

    metadata: dict[str, Any] = {"format": "docx"}
    core_title: str | None = None
    try:
        cp = document.core_properties
        core = {
            "title": cp.title,
            "author": cp.author,
            "subject": cp.subject,
            "keywords": cp.keywords,
            "category": cp.category,
            "language": cp.language,
            "created": cp.created,
            "modified": cp.modified,
            "last_modified_by": cp.last_modified_by,
        }
        metadata.update({k: json_safe(v) for k, v in core.items() if v not in (None, "")})
        core_title = cp.title
    except Exception:  # core properties are optional and sometimes malformed
        pass

    title = (
        meaningful_title(core_title)
        or walker.first_title
        or (body_headings[0][1] if body_headings else None)
        or first_line_title(_NOTE_MARK.sub("", text[:body_length]), max_len=120)
        or stem_title(path)
    )
    return LoadedDocument(title=title, pages=[Page(number=1, text=text, sections=sections)], metadata=metadata)


def _notes_after(builder: TextBuilder, ctx: _Context, notes: _Notes, label: str) -> None:
    """Footnotes or endnotes after the text that cites them, each with its mark: "[1] text"."""
    cited = {i for _, i in notes.cited}
    marks = list(notes.cited) + [("", i) for i in notes.notes if i not in cited]
    blocks = []
    for mark, note_id in marks:
        text = ctx.note_text(notes.notes[note_id])
        if text:
            blocks.append(f"[{mark}] {text}" if mark else text)
    if blocks:
        builder.heading(1, label)
        for block in blocks:
            builder.block(block, sep="\n")


def _headers_footers(builder: TextBuilder, ctx: _Context, roots: list[Any]) -> None:
    """The headers' and footers' text once for the whole document (each distinct text once), not per page."""
    seen: set[str] = set()
    texts: list[str] = []
    for root in roots:
        sub = TextBuilder()
        _Body(ctx, sub, headings=False).walk(root)
        text, _ = sub.finish()
        key = collapse_whitespace(text)
        if key and key not in seen:
            seen.add(key)
            texts.append(text)
    if texts:
        builder.heading(1, "Headers and footers")
        for text in texts:
            builder.block(text)


_MAIN = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
_OTHER_MAINS = (
    b"application/vnd.ms-word.document.macroEnabled.main+xml",  # .docm
    b"application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",  # .dotx
    b"application/vnd.ms-word.template.macroEnabledTemplate.main+xml",  # .dotm
)


def _as_document(data: bytes) -> bytes:
    """A macro-enabled document or a template is the same package with another content type for its main part,
    which python-docx refuses: the content type is rewritten (macros are never run or read)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        try:
            types = zf.read("[Content_Types].xml")
        except KeyError:
            return data
        if not any(other in types for other in _OTHER_MAINS):
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in zf.infolist():
                part = zf.read(info)
                if info.filename == "[Content_Types].xml":
                    for other in _OTHER_MAINS:
                        part = part.replace(other, _MAIN)
                dst.writestr(info, part)
    return out.getvalue()
