"""PowerPoint loader (PPTX/PPTM): zipfile + defusedxml over PresentationML, one page per slide.

Slides are read in the order of ``ppt/presentation.xml``'s slide list (hidden slides too, marked in a warning); page
number = slide number. The section is the slide title (the ``title`` / ``ctrTitle`` placeholder, else a shape named
as a title, else the first line of the top text shape, else a chart's or diagram's first words; ``Slide N`` only for
a slide without text). Shapes are read top to bottom, left to right (their offsets), groups flattened; tables give
one ``cell | cell`` line per row; after the slide's text come its charts' words (titles, series names, category
labels, from ``ppt/charts/``), its SmartArt nodes' text (``ppt/diagrams/data*.xml``) and the text of
Office/OpenDocument files embedded as OLE objects (read by their own loaders, one level deep, at most 20 per deck);
the speaker notes (the ``notesSlide`` the slide's relationships name: its body placeholder, else its text boxes)
follow after a ``Notes:`` line. Text repeated on the slides (footer/header placeholders, the text boxes of the
layouts and masters in use, not their prompts) comes once, after the last slide, under "Headers and footers". A DTD
or entity in any part is refused (kaynak.loaders.xmlsafe); the zip goes through the zip guard; an encrypted file is
EncryptedFile."""

from __future__ import annotations

import posixpath
import zipfile
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from kaynak.errors import CorruptFile, LoaderError
from kaynak.types import LoadedDocument, Page

from .common import PagedBuilder, collapse_whitespace, finish_slide, json_safe, meaningful_title, stem_title
from .xmlsafe import has_member, open_zip, parse_xml, read_member

A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
DC = "{http://purl.org/dc/elements/1.1/}"
CP = "{http://schemas.openxmlformats.org/package/2006/metadata/core-properties}"
DCT = "{http://purl.org/dc/terms/}"
MAX_SLIDES = 10_000
_KIND = "PPTX"


def _rels(path: Path, zf: zipfile.ZipFile, part: str) -> dict[str, str]:
    """Relationship id → target part name, for ``part``."""
    folder, name = posixpath.split(part)
    rels_name = posixpath.join(folder, "_rels", name + ".rels")
    if not has_member(zf, rels_name):
        return {}
    out: dict[str, str] = {}
    for rel in parse_xml(path, zf, rels_name, _KIND).iter(REL + "Relationship"):
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External" or not target:
            continue
        full = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        out[rel.get("Id") or ""] = full
    return out


def _paragraphs(el: Element) -> list[str]:
    paras = []
    for p in el.iter(A + "p"):
        parts = []
        for node in p.iter():
            if node.tag == A + "t":
                parts.append(node.text or "")
            elif node.tag == A + "br":
                parts.append("\n")
            elif node.tag == A + "tab":
                parts.append("\t")
        paras.append("".join(parts))
    return paras


def _offset(shape: Element) -> tuple[int, int]:
    off = shape.find(f".//{A}off")
    if off is None:
        return (0, 0)
    try:
        return int(off.get("y") or 0), int(off.get("x") or 0)
    except ValueError:
        return (0, 0)


def _placeholder(shape: Element) -> str | None:
    ph = shape.find(f".//{P}nvPr/{P}ph")
    return None if ph is None else (ph.get("type") or "body")


def _shapes(tree: Element) -> list[Element]:
    """Leaf shapes of a shape tree, groups flattened (at most 20 levels)."""
    out: list[Element] = []
    stack: list[tuple[Element, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        for child in node:
            if child.tag == P + "grpSp" and depth < 20:
                stack.append((child, depth + 1))
            elif child.tag == MC + "AlternateContent" and depth < 20:  # an OLE object or newer shape, with a fallback
                branch = child.find(MC + "Choice")
                if branch is None:
                    branch = child.find(MC + "Fallback")
                stack.append((branch if branch is not None else child, depth + 1))
            elif child.tag in (P + "sp", P + "graphicFrame", P + "cxnSp"):
                out.append(child)
    return out


def _table_rows(frame: Element) -> list[str]:
    rows = []
    for tr in frame.iter(A + "tr"):
        cells = [collapse_whitespace(" ".join(_paragraphs(tc))) for tc in tr if tc.tag == A + "tc"]
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


_NOT_CONTENT = ("sldNum", "dt", "ftr", "hdr", "sldImg")


def _shape_name(shape: Element) -> str:
    for tag in ("nvSpPr", "nvGraphicFramePr", "nvCxnSpPr"):
        c_nv = shape.find(f"{P}{tag}/{P}cNvPr")
        if c_nv is not None:
            return (c_nv.get("name") or "").strip()
    return ""


def _title(shapes: list[Element]) -> tuple[str | None, Element | None]:
    """(the slide's title, the shape it came from): the title placeholder, else a shape named as a title, else the
    first line of the top text shape (decks whose title is a plain text box, as LibreOffice writes some)."""
    for shape in shapes:
        if _placeholder(shape) in ("title", "ctrTitle"):
            title = collapse_whitespace(" ".join(_paragraphs(shape)))
            if title:
                return title, shape
    for shape in shapes:
        if shape.tag == P + "sp" and _placeholder(shape) is None:
            name = _shape_name(shape).lower()
            if name.startswith(("title", "başlık", "baslik")):
                title = collapse_whitespace(" ".join(_paragraphs(shape)))
                if title:
                    return title, shape
    for shape in sorted(shapes, key=_offset):
        if shape.tag != P + "sp" or _placeholder(shape) in _NOT_CONTENT:
            continue
        lines = [line.strip() for para in _paragraphs(shape) for line in para.splitlines() if line.strip()]
        if lines:
            first = collapse_whitespace(lines[0])
            return first, None
    return None, None


C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
DGM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"


def _chart_text(chart: Element) -> list[str]:
    """A chart's words: its title, axis titles, series names and category labels (not the numbers)."""
    lines: list[str] = []
    for title in chart.iter(C + "title"):
        text = collapse_whitespace(" ".join(_paragraphs(title)))
        if not text:
            text = collapse_whitespace(" ".join(v.text or "" for v in title.iter(C + "v")))
        if text:
            lines.append(text)
    for ser in chart.iter(C + "ser"):
        tx = ser.find(C + "tx")
        if tx is not None:
            name = collapse_whitespace(" ".join([v.text or "" for v in tx.iter(C + "v")] + _paragraphs(tx)))
            if name:
                lines.append(name)
    seen: set[str] = set()
    for cat in chart.iter(C + "cat"):
        labels = [collapse_whitespace(v.text or "") for v in cat.iter(C + "v")]
        labels = [x for x in labels if x]
        key = "\x00".join(labels)
        if labels and key not in seen:
            seen.add(key)
            lines.append(", ".join(labels))
    return lines


def _diagram_text(data: Element) -> list[str]:
    """A SmartArt diagram's node texts, in the order of its data model."""
    lines: list[str] = []
    for pt in data.iter(DGM + "pt"):
        if pt.get("type") in ("parTrans", "sibTrans", "pres", "doc"):
            continue
        t = pt.find(DGM + "t")
        if t is not None:
            lines.extend(x for x in _paragraphs(t) if x.strip())
    return lines


def _graphic_parts(shapes: list[Element], rels: dict[str, str]) -> list[tuple[str, str]]:
    """(kind, part) of the charts and SmartArt diagrams the slide's graphic frames show, in reading order."""
    out: list[tuple[str, str]] = []
    for shape in sorted(shapes, key=_offset):
        if shape.tag != P + "graphicFrame":
            continue
        for node in shape.iter():
            if node.tag == C + "chart" and rels.get(node.get(R + "id") or ""):
                out.append(("chart", rels[node.get(R + "id") or ""]))
            elif node.tag == DGM + "relIds" and rels.get(node.get(R + "dm") or ""):
                out.append(("diagram", rels[node.get(R + "dm") or ""]))
            elif node.tag == P + "oleObj" and rels.get(node.get(R + "id") or "", "").lower().endswith(_EMBEDDED):
                out.append(("embedded", rels[node.get(R + "id") or ""]))
    return out


_EMBEDDED = (".docx", ".docm", ".xlsx", ".xlsm", ".pptx", ".odt", ".ods", ".odp")
_MAX_EMBEDDED_CHARS = 100_000
_READING_EMBEDDED: ContextVar[bool] = ContextVar("pptx_reading_embedded", default=False)


def _embedded_document(path: Path, zf: zipfile.ZipFile, part: str) -> list[str]:
    """The text of an Office or OpenDocument file embedded in the deck (a Word document or a worksheet shown on a
    slide), read by its own loader; one level deep (an embedding inside it is not opened), damaged ones left out."""
    if _READING_EMBEDDED.get():
        return []
    from . import LoadOptions, loader_for

    token = _READING_EMBEDDED.set(True)
    try:
        name = Path(posixpath.basename(part))
        doc = loader_for(name)(path.parent / f"{path.name}#{name}", read_member(path, zf, part, _KIND), LoadOptions())
    except LoaderError:
        return []
    finally:
        _READING_EMBEDDED.reset(token)
    text = "\n".join(p.text for p in doc.pages)[:_MAX_EMBEDDED_CHARS]
    return [line for line in text.split("\n") if line.strip()]


class _Repeated:
    """Text a deck repeats on its slides, kept once: the slides' footer and header placeholders, and the text boxes
    of the layouts and masters they use (not their placeholders' prompts, "Click to edit Master title style")."""

    def __init__(self) -> None:
        self.texts: dict[str, None] = {}
        self._parts: set[str] = set()

    def _add(self, shape: Element) -> None:
        text = collapse_whitespace(" ".join(_paragraphs(shape)))
        if sum(ch.isalnum() for ch in text) >= 2 and len(self.texts) < 200:
            self.texts.setdefault(text)

    def collect(self, path: Path, zf: zipfile.ZipFile, slide: Element, rels: dict[str, str]) -> None:
        tree = slide.find(f"{P}cSld/{P}spTree")
        for shape in _shapes(tree) if tree is not None else []:
            if _placeholder(shape) in ("ftr", "hdr"):
                self._add(shape)
        todo = [t for t in rels.values() if "slideLayout" in t]
        while todo and len(self._parts) < 100:
            part = todo.pop()
            if part in self._parts or not has_member(zf, part):
                continue
            self._parts.add(part)
            root = parse_xml(path, zf, part, _KIND)
            ptree = root.find(f"{P}cSld/{P}spTree")
            for shape in _shapes(ptree) if ptree is not None else []:
                if shape.tag == P + "sp" and _placeholder(shape) is None:
                    self._add(shape)
            todo.extend(t for t in _rels(path, zf, part).values() if "slideMaster" in t)


def _notes_texts(notes: Element) -> list[str]:
    """The speaker notes: the notes slide's body placeholder; without one (LibreOffice writes a plain text box) every
    text shape but the slide image, number, header and footer."""
    ntree = notes.find(f"{P}cSld/{P}spTree")
    nshapes = _shapes(ntree) if ntree is not None else []
    body = [s for s in nshapes if _placeholder(s) == "body"]
    return [para for shape in body or [s for s in nshapes if _placeholder(s) not in _NOT_CONTENT]
            for para in _paragraphs(shape)]  # fmt: skip


def _slide_page(
    number: int, slide: Element, notes: Element | None, extra: list[str] | None = None, tail: list[str] | None = None
) -> Page:
    builder = PagedBuilder()
    tree = slide.find(f"{P}cSld/{P}spTree")
    shapes = _shapes(tree) if tree is not None else []
    title, title_shape = _title(shapes)
    extra = list(extra or [])
    if title is None and extra:  # a slide holding only a chart or diagram: its first words name it
        title = collapse_whitespace(extra.pop(0))[:150]
        title_shape = tree
    builder.heading(1, title or f"Slide {number}")
    skip_title_line = title is not None and title_shape is None
    for shape in sorted(shapes, key=_offset):
        if shape is title_shape or _placeholder(shape) in _NOT_CONTENT:
            continue
        if shape.tag == P + "graphicFrame":
            rows = _table_rows(shape)
            if rows:
                builder.block("\n".join(rows))
            continue
        for para in _paragraphs(shape):
            if skip_title_line and para.strip():
                skip_title_line = False  # its first line is the heading already
                rest = para.strip().split("\n", 1)
                if title and collapse_whitespace(rest[0]) == title:
                    para = rest[1] if len(rest) > 1 else ""
            builder.block(para, sep="\n")
    for line in extra:
        builder.block(line, sep="\n")
    return finish_slide(builder, number, _notes_texts(notes) if notes is not None else [], tail)


_MAX_EMBEDDED = 20  # embedded documents read per deck


def _graphics_text(
    path: Path, zf: zipfile.ZipFile, slide: Element, rels: dict[str, str], embedded: dict[str, list[str]]
) -> list[str]:
    tree = slide.find(f"{P}cSld/{P}spTree")
    lines: list[str] = []
    for kind, part in _graphic_parts(_shapes(tree) if tree is not None else [], rels)[:50]:
        if not has_member(zf, part):
            continue
        if kind == "embedded":
            if part not in embedded and len(embedded) < _MAX_EMBEDDED:
                embedded[part] = _embedded_document(path, zf, part)
            lines.extend(embedded.get(part, []))
            continue
        root = parse_xml(path, zf, part, _KIND)
        lines.extend(_chart_text(root) if kind == "chart" else _diagram_text(root))
    return lines


def load_pptx(path: Path, data: bytes) -> LoadedDocument:
    zf = open_zip(path, data, _KIND)
    if not has_member(zf, "ppt/presentation.xml"):
        raise CorruptFile(path, "zip archive is not a PowerPoint presentation (no ppt/presentation.xml)")
    pres = parse_xml(path, zf, "ppt/presentation.xml", _KIND)
    rels = _rels(path, zf, "ppt/presentation.xml")
    ids = pres.find(f"{P}sldIdLst")
    slide_parts = [rels.get(s.get(R + "id") or "", "") for s in (ids if ids is not None else [])]
    warnings: list[str] = []
    if len(slide_parts) > MAX_SLIDES:
        warnings.append(f"only the first {MAX_SLIDES:,} of {len(slide_parts):,} slides were read")
        slide_parts = slide_parts[:MAX_SLIDES]
    pages: list[Page] = []
    hidden = 0
    repeated = _Repeated()
    embedded: dict[str, list[str]] = {}
    last: tuple[int, Element, Element | None, list[str]] | None = None
    for number, part in enumerate(slide_parts, start=1):
        if not part or not has_member(zf, part):
            warnings.append(f"slide {number} is missing from the file")
            continue
        slide = parse_xml(path, zf, part, _KIND)
        if slide.get("show") in ("0", "false"):
            hidden += 1
        slide_rels = _rels(path, zf, part)
        notes_part = next((t for t in slide_rels.values() if "notesSlide" in t), None)
        notes = parse_xml(path, zf, notes_part, _KIND) if notes_part and has_member(zf, notes_part) else None
        last = (number, slide, notes, _graphics_text(path, zf, slide, slide_rels, embedded))
        pages.append(_slide_page(*last))
        repeated.collect(path, zf, slide, slide_rels)
    if pages and last is not None and repeated.texts:  # footers and master text once, after the last slide
        pages[-1] = _slide_page(*last, tail=list(repeated.texts))
    if hidden:
        warnings.append(f"{hidden} hidden slide{'s' if hidden > 1 else ''} read as well")
    metadata: dict[str, Any] = {"format": "pptx", "slides": len(slide_parts)}
    raw_title = None
    if has_member(zf, "docProps/core.xml"):
        core = parse_xml(path, zf, "docProps/core.xml", _KIND)
        for key, tag in (("title", DC + "title"), ("author", DC + "creator"), ("subject", DC + "subject"),
                         ("created", DCT + "created"), ("modified", DCT + "modified")):  # fmt: skip
            el = core.find(tag)
            if el is not None and el.text and el.text.strip():
                metadata[key] = json_safe(el.text.strip())
        raw_title = metadata.get("title")
    first = next(
        (p.sections[0].path for p in pages if p.sections and not p.sections[0].path.startswith("Slide ")), None
    )
    title = meaningful_title(raw_title) or first or stem_title(path)
    return LoadedDocument(title=title, pages=pages or [Page(1, "")], metadata=metadata, warnings=warnings)
