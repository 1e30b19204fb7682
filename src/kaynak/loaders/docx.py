"""DOCX loader (python-docx): body paragraphs and tables in document order, headings as section paths.

The zip container is checked before python-docx opens it: not a zip, too many members, or members whose declared
uncompressed size is implausibly large (a zip bomb) are rejected without inflating anything; Python's zipfile
never inflates a member past its declared size, so the check bounds memory.

Text comes from the WordprocessingML runs themselves: ``w:t``, tabs, breaks, non-breaking hyphens, hyperlinks,
fields and content controls are read; deleted revisions, the fallback copies of ``mc:AlternateContent`` and
field codes are not; text boxes follow the paragraph that anchors them. Headers, footers, comments and
footnotes are not body text and stay out. Headings are the ``Heading N`` / ``Title`` styles or any style or
paragraph with an outline level. Tables become one ``cell | cell`` line per row.
"""

from __future__ import annotations

import io
import re
import zipfile
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
from .xmlsafe import refuse_ole
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
_SKIP_SUBTREES = frozenset(
    {_W + "del", _W + "moveFrom", _W + "delText", _W + "instrText", _W + "footnoteReference",
     _W + "endnoteReference", _W + "commentReference", _MC + "Fallback", _PPR, _W + "rPr"}
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
        self._doc = document

    def level(self, style_id: str | None) -> int | None:
        if not style_id:
            return None
        if style_id not in self._levels:
            self._levels[style_id] = self._compute(style_id)
        return self._levels[style_id]

    def _compute(self, style_id: str) -> int | None:
        try:
            styles = self._doc.styles
        except Exception:
            return None
        seen: set[str] = set()
        current: str | None = style_id
        while current and current not in seen:
            seen.add(current)
            style = next((s for s in styles if getattr(s, "style_id", None) == current), None)
            if style is None:
                return None
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
            base = style.base_style
            current = base.style_id if base is not None else None
        return None


def _paragraph_text(p: Any, boxes: list[Any]) -> str:
    """Text of a ``w:p`` element; text-box paragraphs inside it are collected into ``boxes`` instead."""
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
            code = node.get(_W + "char") or ""
            try:
                value = int(code, 16)
                out.append(chr(value - 0xF000) if 0xF020 <= value <= 0xF0FF else chr(value))
            except ValueError:
                pass
        elif tag == _TXBX:
            boxes.extend(el for el in node.iter(_P))
        else:
            stack.append(iter(node))
    return "".join(out)


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


def _cell_text(tc: Any, depth: int = 0) -> str:
    parts: list[str] = []
    for child in tc:
        if child.tag == _P:
            boxes: list[Any] = []
            parts.append(_paragraph_text(child, boxes))
            parts.extend(_paragraph_text(b, []) for b in boxes)
        elif child.tag == _TBL and depth < 5:
            parts.append("; ".join(_table_rows(child, depth + 1)))
        elif child.tag in (_SDT, _SDT_CONTENT):
            parts.append(_cell_text(child, depth))
    return collapse_whitespace(" ".join(parts))


def _table_rows(tbl: Any, depth: int = 0) -> list[str]:
    rows: list[str] = []
    for tr in tbl.iter(_TR):
        if tr.getparent() is not tbl and tr.getparent().tag != _SDT_CONTENT:
            continue  # rows of nested tables are read through their cell
        cells = [_cell_text(tc, depth) for tc in tr if tc.tag in (_TC, _SDT)]
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


class _Body:
    def __init__(self, styles: _Styles, builder: TextBuilder) -> None:
        self.styles = styles
        self.builder = builder
        self.first_title: str | None = None

    def walk(self, container: Any) -> None:
        for child in container:
            tag = child.tag
            if tag == _P:
                self.paragraph(child)
            elif tag == _TBL:
                rows = _table_rows(child)
                if rows:
                    self.builder.block("\n".join(rows))
            elif tag == _SDT:
                content = child.find(_SDT_CONTENT)
                if content is not None:
                    self.walk(content)

    def paragraph(self, p: Any) -> None:
        boxes: list[Any] = []
        text = _paragraph_text(p, boxes)
        level = _paragraph_level(p, self.styles)
        if level is not None and text.strip():
            if level == 0 and self.first_title is None:
                self.first_title = collapse_whitespace(text)[:MAX_TITLE]
            self.builder.heading(level, text)
        else:
            self.builder.block(text)
        for box in boxes:
            self.paragraph(box)


def load_docx(path: Path, data: bytes) -> LoadedDocument:
    check_zip(path, data)
    check_inflated(path, data)  # the real inflated size, within a running budget (kaynak.loaders.zipguard)
    import docx  # python-docx; imported here so that other formats do not pay for it

    try:
        document = docx.Document(io.BytesIO(data))
        body = document.element.body
    except Exception as err:
        raise CorruptFile(path, f"not a readable DOCX file ({type(err).__name__}: {err})") from None

    builder = TextBuilder()
    walker = _Body(_Styles(document), builder)
    walker.walk(body)
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
        or (builder.headings[0][1] if builder.headings else None)
        or first_line_title(text, max_len=120)
        or stem_title(path)
    )
    return LoadedDocument(title=title, pages=[Page(number=1, text=text, sections=sections)], metadata=metadata)
