"""EPUB loader (EPUB 2 and 3): zipfile + defusedxml for the package, each chapter through the HTML loader's rules.

``META-INF/container.xml`` names the package document; its spine gives the reading order. Every spine item with
text is one page (page N = the N-th chapter with text); its section is the chapter's title from the navigation
document (EPUB 3 ``nav`` ``toc``, else the EPUB 2 NCX), with the chapter's own headings below it
(``Chapter › heading``; not prefixed when the navigation names one of the chapter's own headings). In a chapter
without h1–h6, paragraphs whose CSS makes them headings (larger and bold, as LibreOffice's export writes
``<p class="para0">``; levels by size across the book) and the paragraphs the navigation's ``#anchor`` entries point
at (when their text is the entry's label; level = the entry's depth) are read as headings. The XHTML is read by
kaynak.loaders.html (visible text, headings, tables). The title is
the package's ``dc:title``. A book whose chapters are encrypted (DRM: ``META-INF/encryption.xml`` naming a spine
item) is EncryptedFile; a DTD declaring entities in the package is refused; the zip goes through the zip guard.
An EPUB page-list is not used for page numbers (chapters are: a page-list marks print pages inside a chapter's
text, which would need the XHTML offsets of its anchors).
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree.ElementTree import Element, tostring

from kaynak.errors import CorruptFile, EncryptedFile, LoaderError
from kaynak.types import LoadedDocument, Page, Section

from .common import SECTION_SEPARATOR, collapse_whitespace, json_safe, meaningful_title, stem_title
from .xmlsafe import has_member, local, open_zip, parse_xml_bytes, read_member

_KIND = "EPUB"
_GENERIC_LABEL = re.compile(r"section\s*\d+", re.IGNORECASE)
_PLACEHOLDER_VALUES = frozenset({"unknown title", "unknown author", "unknown"})
MAX_CHAPTERS = 5_000


def _xml(path: Path, zf: Any, name: str) -> Element:
    return parse_xml_bytes(path, read_member(path, zf, name, _KIND), name, _KIND, allow_doctype=True)


def _children(el: Element, name: str) -> list[Element]:
    return [c for c in el.iter() if local(c.tag) == name]


class _Toc:
    """The navigation document's entries: chapter file → its title (first entry wins), and per chapter file the
    entries that point inside it (``#fragment``, label, depth), in order."""

    def __init__(self) -> None:
        self.titles: dict[str, str] = {}
        self.anchors: dict[str, list[tuple[str, str, int]]] = {}

    def add(self, target: str, fragment: str, label: str, depth: int) -> None:
        if not label:
            return
        if target not in self.titles and not fragment:
            self.titles[target] = label
        if fragment:
            self.anchors.setdefault(target, []).append((fragment, label, depth))

    def finish(self) -> None:
        # a chapter the navigation names only through anchors: its first entry is its title
        for target, entries in self.anchors.items():
            if target not in self.titles:
                self.titles[target] = entries[0][1]


def _depths(root: Element, item: str) -> dict[int, int]:
    """id(element) → how many ``item`` elements (``li`` / ``navPoint``) enclose it, itself included."""
    out: dict[int, int] = {}
    stack: list[tuple[Element, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if local(node.tag) == item:
            depth += 1
        out[id(node)] = depth
        stack.extend((child, depth) for child in node)
    return out


def _toc(path: Path, zf: Any, opf_dir: str, manifest: dict[str, tuple[str, str, str]]) -> _Toc:
    toc_out = _Toc()
    nav = next((href for href, _, props in manifest.values() if "nav" in props.split()), None)
    if nav and has_member(zf, nav):
        root = _xml(path, zf, nav)
        navs = [n for n in root.iter() if local(n.tag) == "nav"]
        toc = next((n for n in navs if "toc" in " ".join(v for k, v in n.attrib.items() if k.endswith("type"))), None)
        depths = _depths(toc if toc is not None else root, "li")
        for a in _children(toc if toc is not None else root, "a"):
            href = a.get("href") or ""
            label = collapse_whitespace("".join(a.itertext()))
            file, _, fragment = href.partition("#")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(nav), unquote(file)))
            if href and not file:
                continue  # a link inside the navigation document itself
            toc_out.add(target, unquote(fragment), label, depths.get(id(a), 1))
        if toc_out.titles or toc_out.anchors:
            toc_out.finish()
            return toc_out
    ncx = next((href for href, media, _ in manifest.values() if media == "application/x-dtbncx+xml"), None)
    if ncx and has_member(zf, ncx):
        root = _xml(path, zf, ncx)
        depths = _depths(root, "navPoint")
        for point in _children(root, "navPoint"):
            label_el = next((t for t in point.iter() if local(t.tag) == "text"), None)
            content = next((c for c in point if local(c.tag) == "content"), None)
            if content is None:
                content = next((c for c in point.iter() if local(c.tag) == "content"), None)
            if label_el is None or content is None:
                continue
            file, _, fragment = (content.get("src") or "").partition("#")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(ncx), unquote(file)))
            toc_out.add(target, unquote(fragment), collapse_whitespace(label_el.text or ""), depths.get(id(point), 1))
    toc_out.finish()
    return toc_out


# ---------------------------------------------------------------------------------------------- styled headings
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIZE = re.compile(r"font-size\s*:\s*([\d.]+)\s*(pt|px|em|rem|%)?|font-size\s*:\s*([a-z-]+)", re.I)
_WEIGHT = re.compile(r"font-weight\s*:\s*(bold|bolder|[6-9]00)", re.I)
_KEYWORD_SIZES = {"large": 1.2, "larger": 1.2, "x-large": 1.5, "xx-large": 2.0, "xxx-large": 3.0}


def _declared(decls: str) -> tuple[float | None, bool]:
    """(font size relative to body text, bold) that CSS declarations give."""
    size = None
    m = _SIZE.search(decls)
    if m and m.group(1):
        value, unit = float(m.group(1)), (m.group(2) or "px").lower()
        size = {"pt": value / 12, "px": value / 16, "em": value, "rem": value, "%": value / 100}[unit]
    elif m and m.group(3):
        size = _KEYWORD_SIZES.get(m.group(3).lower())
    return size, _WEIGHT.search(decls) is not None


def _heading_classes(css: str) -> dict[str, float]:
    """Class name → relative size, for the classes whose CSS makes a paragraph look like a heading (larger and
    bold, or much larger), as LibreOffice's EPUB export styles its headings (``<p class="para0">``)."""
    out: dict[str, float] = {}
    for selectors, decls in _RULE.findall(re.sub(r"/\*.*?\*/", "", css[:500_000], flags=re.S)):
        size, bold = _declared(decls)
        if size is None or not ((bold and size >= 1.1) or size >= 1.3):
            continue
        for sel in selectors.split(","):
            m = re.fullmatch(r"\s*(?:[a-z0-9]*)\.([\w-]+)\s*", sel, re.I)
            if m:
                out[m.group(1)] = max(size, out.get(m.group(1), 0.0))
    return out


def _element_size(el: Element, classes: dict[str, float]) -> float | None:
    sizes = [classes[c] for c in (el.get("class") or "").split() if c in classes]
    size, bold = _declared(el.get("style") or "")
    if size is not None and ((bold and size >= 1.1) or size >= 1.3):
        sizes.append(size)
    return max(sizes) if sizes else None


def _styled_size(p: Element, classes: dict[str, float]) -> float | None:
    """The heading size of a paragraph: its own class's, or the one every piece of its text carries."""
    own = _element_size(p, classes)
    if own is not None:
        return own
    sizes: list[float] = []
    if (p.text or "").strip():
        return None
    for child in p:
        text = "".join(child.itertext()).strip()
        size = _element_size(child, classes)
        if text and size is None:
            size = next((z for d in child.iter() if (z := _element_size(d, classes)) is not None), None)
        if text and size is None:
            return None
        if size is not None and text:
            sizes.append(size)
        if (child.tail or "").strip():
            return None
    return max(sizes) if sizes else None


_BLOCKS = frozenset({"p", "div", "li", "td", "th", "dt", "dd", "blockquote", "section", "article"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def _with_headings(data: bytes, classes: dict[str, float], ranks: dict[float, int], anchors: list[Any]) -> bytes:
    """The chapter's XHTML with its styled heading paragraphs, and the paragraphs its navigation entries point at,
    made ``<hN>`` (only in a chapter without h1–h6 of its own); ``data`` unchanged where nothing changes or the
    XHTML is not well-formed XML."""
    if re.search(rb"<(?:\w+:)?h[1-6][\s>]", data[:2_000_000]):
        return data
    try:
        root = parse_xml_bytes(Path("chapter"), data, "chapter", _KIND, allow_doctype=True)
    except LoaderError:
        return data
    changed = False
    for el in root.iter():
        el.tag = local(el.tag)
        for key in [k for k in el.attrib if "}" in k]:
            el.attrib[local(key)] = el.attrib.pop(key)
    if classes:
        for el in root.iter("p"):
            size = _styled_size(el, classes)
            text = collapse_whitespace("".join(el.itertext()))
            if size is not None and text and len(text) <= 200:
                el.tag = f"h{ranks.get(round(size, 2), 6)}"
                changed = True
    if anchors:
        parents = {id(child): parent for parent in root.iter() for child in parent}
        by_id = {el.get("id"): el for el in root.iter() if el.get("id")}
        for fragment, label, depth in anchors:
            block = _anchor_block(by_id.get(fragment), parents, label)
            if block is not None and block.tag not in _HEADING_TAGS:
                block.tag = f"h{min(max(depth, 1), 6)}"
                changed = True
    if not changed:
        return data
    # the HTML serialisation: a ``<script/>`` or ``<div/>`` written short would swallow what follows in HTML
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + tostring(root, encoding="utf-8", method="html")


def _anchor_block(el: Element | None, parents: dict[int, Element], label: str) -> Element | None:
    """The paragraph a navigation entry points at, when its text is the entry's label."""
    hops = 0
    while el is not None and el.tag not in _BLOCKS | _HEADING_TAGS and hops < 10:
        el = parents.get(id(el))
        hops += 1
    if el is None or el.tag in ("body", "html"):
        return None
    text = collapse_whitespace("".join(el.itertext())).casefold()
    want = collapse_whitespace(label).casefold()
    if text and len(text) <= 200 and (want in text or text in want):
        return el
    return None


def _chapter_page(number: int, text: str, sections: list[Section], chapter: str | None) -> Page:
    own = {part.casefold() for s in sections for part in s.path.split(SECTION_SEPARATOR)}
    if chapter and chapter.casefold() in own:  # the navigation names one of the chapter's own headings
        if sections and sections[0].start > 0:
            return Page(number, text, [Section(0, sections[0].start, chapter), *sections])
        return Page(number, text, sections)
    if not chapter:
        return Page(number, text, sections)
    out: list[Section] = []
    first = sections[0].start if sections else len(text)
    if first > 0:
        out.append(Section(0, first, chapter))
    for s in sections:
        path = (
            s.path
            if s.path == chapter or s.path.startswith(chapter + SECTION_SEPARATOR)
            else (chapter + SECTION_SEPARATOR + s.path)
        )
        out.append(Section(s.start, s.end, path))
    return Page(number, text, out)


def _metadata(opf: Element, chapters: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {"format": "epub", "chapters": chapters}
    for key in ("title", "creator", "language", "publisher", "date", "identifier"):
        el = next((e for e in opf.iter() if local(e.tag) == key and (e.text or "").strip()), None)
        if el is not None:
            value = collapse_whitespace(el.text or "")
            if value.casefold() not in _PLACEHOLDER_VALUES:  # libepubgen's "Unknown Title" / "Unknown Author"
                metadata["author" if key == "creator" else key] = json_safe(value)
    return metadata


def load_epub(path: Path, data: bytes) -> LoadedDocument:
    from .html import load_html

    zf = open_zip(path, data, _KIND)
    if not has_member(zf, "META-INF/container.xml"):
        raise CorruptFile(path, "zip archive is not an EPUB book (no META-INF/container.xml)")
    container = _xml(path, zf, "META-INF/container.xml")
    rootfile = next((r.get("full-path") for r in _children(container, "rootfile") if r.get("full-path")), None)
    if not rootfile or not has_member(zf, rootfile):
        raise CorruptFile(path, "EPUB book names no readable package document")
    opf = _xml(path, zf, rootfile)
    opf_dir = posixpath.dirname(rootfile)
    manifest: dict[str, tuple[str, str, str]] = {}
    for item in _children(opf, "item"):
        href = unquote(item.get("href") or "")
        full = posixpath.normpath(posixpath.join(opf_dir, href)) if href else ""
        manifest[item.get("id") or ""] = (full, item.get("media-type") or "", item.get("properties") or "")
    spine = [manifest[i.get("idref") or ""][0] for i in _children(opf, "itemref") if (i.get("idref") or "") in manifest]
    if has_member(zf, "META-INF/encryption.xml"):
        enc = _xml(path, zf, "META-INF/encryption.xml")
        locked = {unquote(c.get("URI") or "") for c in _children(enc, "CipherReference")}
        if any(s in locked for s in spine):
            raise EncryptedFile(path, "EPUB book is encrypted (DRM); kaynak can read only books without DRM")
    toc = _toc(path, zf, opf_dir, manifest)
    navs = {href for href, _, props in manifest.values() if "nav" in props.split()}
    titles = toc.titles
    css = "\n".join(
        read_member(path, zf, href, _KIND).decode("utf-8", "replace")
        for href, media, _ in list(manifest.values())[:200]
        if media == "text/css" and has_member(zf, href)
    )
    classes = _heading_classes(css)
    ranks = {size: i + 1 for i, size in enumerate(sorted({round(v, 2) for v in classes.values()}, reverse=True)[:6])}
    warnings: list[str] = []
    pages: list[Page] = []
    if len(spine) > MAX_CHAPTERS:
        warnings.append(f"only the first {MAX_CHAPTERS:,} of {len(spine):,} chapters were read")
    for href in spine[:MAX_CHAPTERS]:
        if not has_member(zf, href):
            warnings.append(f"chapter {href} is missing from the book")
            continue
        try:
            raw = read_member(path, zf, href, _KIND)
            if href in navs:  # the navigation document as a page of the book: its contents list is what it shows
                raw = re.sub(rb"<(/?)(?:nav|header)\b", rb"<\1div", raw)
            if classes or toc.anchors.get(href):
                with contextlib.suppress(RecursionError):  # nested too deep to rewrite: read as it is
                    raw = _with_headings(raw, classes, ranks, toc.anchors.get(href, []))
            chapter = load_html(Path(href), raw)
        except LoaderError as err:
            warnings.append(f"chapter {href} could not be read ({err.reason})")
            continue
        page = chapter.pages[0]
        if not page.text.strip():
            continue
        warnings.extend(f"chapter {href}: {w}" for w in chapter.warnings[:3])
        label = titles.get(href)
        if label and page.sections and _GENERIC_LABEL.fullmatch(label):
            label = None  # "Section 1": a name the exporter made up (LibreOffice's libepubgen), not the book's
        pages.append(_chapter_page(len(pages) + 1, page.text, page.sections, label))
    metadata = _metadata(opf, len(pages))
    raw_title = metadata.get("title")
    title = meaningful_title(raw_title) or stem_title(path)
    return LoadedDocument(title=title, pages=pages or [Page(1, "")], metadata=metadata, warnings=warnings)
