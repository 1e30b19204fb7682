"""PowerPoint loader (PPTX/PPTM): zipfile + defusedxml over PresentationML, one page per slide.

Slides are read in the order of ``ppt/presentation.xml``'s slide list (hidden slides too, marked in a warning);
page number = slide number. The section is the slide title (the ``title`` / ``ctrTitle`` placeholder, else
``Slide N``). Shapes are read top to bottom, left to right (their offsets), groups flattened; tables give one
``cell | cell`` line per row; the speaker notes follow after a ``Notes:`` line. A DTD or entity in any part is
refused (kaynak.loaders.xmlsafe); the zip goes through the zip guard; an encrypted file is EncryptedFile.
"""

from __future__ import annotations

import posixpath
import zipfile
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import PagedBuilder, collapse_whitespace, json_safe, meaningful_title, stem_title
from .xmlsafe import has_member, open_zip, parse_xml

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


def _slide_page(number: int, slide: Element, notes: Element | None) -> Page:
    builder = PagedBuilder()
    tree = slide.find(f"{P}cSld/{P}spTree")
    shapes = _shapes(tree) if tree is not None else []
    title = None
    for shape in shapes:
        if _placeholder(shape) in ("title", "ctrTitle"):
            title = collapse_whitespace(" ".join(_paragraphs(shape)))
            if title:
                break
    builder.heading(1, title or f"Slide {number}")
    for shape in sorted(shapes, key=_offset):
        if title and _placeholder(shape) in ("title", "ctrTitle"):
            continue
        if _placeholder(shape) in ("sldNum", "dt", "ftr"):
            continue
        if shape.tag == P + "graphicFrame":
            rows = _table_rows(shape)
            if rows:
                builder.block("\n".join(rows))
            continue
        for para in _paragraphs(shape):
            builder.block(para, sep="\n")
    if notes is not None:
        texts = []
        ntree = notes.find(f"{P}cSld/{P}spTree")
        for shape in _shapes(ntree) if ntree is not None else []:
            if _placeholder(shape) == "body":
                texts.extend(_paragraphs(shape))
        if any(t.strip() for t in texts):
            builder.block("Notes:")
            for t in texts:
                builder.block(t, sep="\n")
    (page,) = builder.pages()
    return Page(number=number, text=page.text, sections=page.sections)


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
    for number, part in enumerate(slide_parts, start=1):
        if not part or not has_member(zf, part):
            warnings.append(f"slide {number} is missing from the file")
            continue
        slide = parse_xml(path, zf, part, _KIND)
        if slide.get("show") in ("0", "false"):
            hidden += 1
        notes_part = next((t for t in _rels(path, zf, part).values() if "notesSlide" in t), None)
        notes = parse_xml(path, zf, notes_part, _KIND) if notes_part and has_member(zf, notes_part) else None
        pages.append(_slide_page(number, slide, notes))
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
