"""UYAP Doküman Editörü loader (``.udf``): the format Turkish courts, lawyers and enforcement offices exchange.

A UDF file is a zip holding ``content.xml``: ``<template format_id="…">`` with the whole text in one
``<content><![CDATA[…]]></content>`` pool, page settings in ``<properties>``, and ``<elements>`` whose
``<paragraph>``s point into the pool with ``startOffset`` / ``length`` (counted in characters) through their
``<content>``, ``<space>``, ``<tab>`` and ``<field>`` children; ``<table>`` → ``<row>`` → ``<cell>`` hold paragraphs,
and ``<page-break>`` ends a page. The body is read in element order: each paragraph a block, each table row one
``cell | cell`` line, a page break a new page. The header (letterhead) and footer (the e-signature notice every
UYAP document carries, the verification address) are ``<header>`` / ``<footer>`` among the elements, printed on
every page: their text is read once per document, the header's before the body on the first page and the
footer's after it on the last; the page number the footer draws (``pageNumber-spec``) is not text.

Headings: a paragraph whose style is named like a heading (``baslik``, ``başlık``, ``heading``, ``title``), or a
short paragraph (at most 120 characters, no final full stop) whose every run is bold, opens a section, the way
court documents set ``T.C. … MAHKEMESİ``, ``GEREKÇE``, ``HÜKÜM`` apart. Without usable elements (no ``<elements>``,
offsets outside the pool) the pool is read as plain text, one paragraph a line, with a warning.
"""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree.ElementTree import Element

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import PagedBuilder, collapse_whitespace, first_line_title, stem_title
from .xmlsafe import has_member, open_zip, parse_xml

_KIND = "UDF"
_RUNS = frozenset({"content", "space", "tab", "field"})
_HEADING_STYLE = re.compile(r"ba[sş]l[ıi]k|heading|title", re.I)
MAX_HEADING = 120


class _Pool:
    """The text pool. Offsets count UTF-16 code units (the UYAP editor is a Java program): the same as characters
    unless the text holds characters outside the Basic Multilingual Plane (an emoji, 𝑥), which count two."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.bad = 0
        self.u16 = text.encode("utf-16-le", "surrogatepass") if any(ord(ch) > 0xFFFF for ch in text) else None
        self.units = len(self.u16) // 2 if self.u16 is not None else len(text)

    def slice(self, el: Element) -> str:
        try:
            start = int(el.get("startOffset") or 0)
            length = int(el.get("length") or 0)
        except ValueError:
            self.bad += 1
            return ""
        if start < 0 or length < 0 or start + length > self.units:
            self.bad += 1
            return ""
        if self.u16 is not None:
            return self.u16[2 * start : 2 * (start + length)].decode("utf-16-le", "replace")
        return self.text[start : start + length]


def _paragraph(p: Element, pool: _Pool) -> tuple[str, bool]:
    """(text, every run bold) of a ``<paragraph>``."""
    parts: list[str] = []
    bold = True
    runs = 0
    for run in p.iter():
        if run.tag not in _RUNS:
            continue
        piece = pool.slice(run)
        if run.tag == "tab":
            piece = "\t"
        parts.append(piece)
        if run.tag == "content" and piece.strip():
            runs += 1
            bold = bold and (run.get("bold") == "true")
    text = "".join(parts).replace("\u200b", "").replace("\ufffc", " ")
    return text, bold and runs > 0


class _Walker:
    def __init__(self, pool: _Pool, builder: PagedBuilder) -> None:
        self.pool = pool
        self.b = builder

    def walk(self, elements: Element) -> None:
        for el in elements:
            if el.tag in ("header", "footer"):
                continue  # read once, by load_udf
            if el.tag == "paragraph":
                self.paragraph(el)
            elif el.tag == "table":
                self.table(el)
            elif el.tag == "page-break":
                self.b.page_break()

    def paragraph(self, el: Element) -> None:
        text, bold = _paragraph(el, self.pool)
        line = collapse_whitespace(text)
        style = " ".join(el.get(k) or "" for k in ("style", "description", "resolver"))
        short = 0 < len(line) <= MAX_HEADING and not line.endswith((".", ",", ";"))
        if short and sum(c.isalpha() for c in line) >= 3 and (bold or _HEADING_STYLE.search(style)):
            self.b.heading(1, line)
        else:
            self.b.block(text)

    def table(self, el: Element) -> None:
        rows: list[str] = []
        for row in el.iter("row"):
            cells = []
            for cell in row:
                if cell.tag != "cell":
                    continue
                texts = [_paragraph(p, self.pool)[0] for p in cell.iter("paragraph")]
                cells.append(collapse_whitespace(" ".join(texts)))
            if any(cells):
                rows.append(" | ".join(cells))
        if rows:
            self.b.block("\n".join(rows))


def load_udf(path: Path, data: bytes) -> LoadedDocument:
    zf = open_zip(path, data, _KIND)
    if not has_member(zf, "content.xml"):
        raise CorruptFile(path, "zip archive is not a UDF document (no content.xml)")
    root = parse_xml(path, zf, "content.xml", _KIND)
    if root.tag != "template":
        raise CorruptFile(path, f"not a UDF document (content.xml starts with <{root.tag}>, not <template>)")
    content = root.find("content")
    pool = _Pool((content.text or "") if content is not None else "")
    warnings: list[str] = []
    builder = PagedBuilder()
    elements = root.find("elements")
    if elements is not None:
        header, footer = _margins(elements, pool, "header"), _margins(elements, pool, "footer")
        for text in header:
            builder.block(text)
        _Walker(pool, builder).walk(elements)
        for text in footer:
            if text not in header:
                builder.block(text)
    pages = builder.pages()
    unusable = elements is None or pool.bad or not any(p.text.strip() for p in pages)
    if unusable and pool.text.strip():
        why = "no <elements>" if elements is None else f"{pool.bad} offsets outside the text"
        warnings.append(f"UDF structure not usable ({why}); the text was read line by line")
        builder = PagedBuilder()
        for line in pool.text.split("\n"):
            builder.block(line.replace("\u200b", "").replace("\ufffc", " "))
        pages = builder.pages()
    metadata = {"format": "udf", "format_id": root.get("format_id") or "", "page_count": len(pages)}
    title = (builder.headings[0][1] if builder.headings else None) or _first_text(pages) or stem_title(path)
    return LoadedDocument(title=title, pages=pages, metadata=metadata, warnings=warnings)


def _margins(elements: Element, pool: _Pool, tag: str) -> list[str]:
    """The paragraphs of the ``<header>`` or ``<footer>`` elements, each once; a paragraph without letters or
    digits (the placeholder a page number is drawn over) is left out."""
    out: list[str] = []
    for region in elements.findall(tag):
        for p in region.iter("paragraph"):
            text = _paragraph(p, pool)[0].strip()
            if any(ch.isalnum() for ch in text) and text not in out:
                out.append(text)
    return out


def _first_text(pages: list[Page]) -> str | None:
    return first_line_title(pages[0].text, max_len=120) if pages else None
