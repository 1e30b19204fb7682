"""EPUB loader (EPUB 2 and 3): zipfile + defusedxml for the package, each chapter through the HTML loader's rules.

``META-INF/container.xml`` names the package document; its spine gives the reading order. Every spine item with
text is one page (page N = the N-th chapter with text); its section is the chapter's title from the navigation
document (EPUB 3 ``nav`` ``toc``, else the EPUB 2 NCX), with the chapter's own headings below it
(``Chapter › heading``). The XHTML is read by kaynak.loaders.html (visible text, headings, tables). The title is
the package's ``dc:title``. A book whose chapters are encrypted (DRM: ``META-INF/encryption.xml`` naming a spine
item) is EncryptedFile; a DTD declaring entities in the package is refused; the zip goes through the zip guard.
An EPUB page-list is not used for page numbers (chapters are: a page-list marks print pages inside a chapter's
text, which would need the XHTML offsets of its anchors).
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree.ElementTree import Element

from kaynak.errors import CorruptFile, EncryptedFile, LoaderError
from kaynak.types import LoadedDocument, Page, Section

from .common import SECTION_SEPARATOR, collapse_whitespace, json_safe, meaningful_title, stem_title
from .xmlsafe import has_member, local, open_zip, parse_xml_bytes, read_member

_KIND = "EPUB"
MAX_CHAPTERS = 5_000


def _xml(path: Path, zf: Any, name: str) -> Element:
    return parse_xml_bytes(path, read_member(path, zf, name, _KIND), name, _KIND, allow_doctype=True)


def _children(el: Element, name: str) -> list[Element]:
    return [c for c in el.iter() if local(c.tag) == name]


def _toc_titles(path: Path, zf: Any, opf_dir: str, manifest: dict[str, tuple[str, str, str]]) -> dict[str, str]:
    """Chapter file (archive path) → its title in the navigation document (first entry wins)."""
    titles: dict[str, str] = {}
    nav = next((href for href, _, props in manifest.values() if "nav" in props.split()), None)
    if nav and has_member(zf, nav):
        root = _xml(path, zf, nav)
        navs = [n for n in root.iter() if local(n.tag) == "nav"]
        toc = next((n for n in navs if "toc" in " ".join(v for k, v in n.attrib.items() if k.endswith("type"))), None)
        for a in _children(toc if toc is not None else root, "a"):
            href = a.get("href") or ""
            label = collapse_whitespace("".join(a.itertext()))
            target = posixpath.normpath(posixpath.join(posixpath.dirname(nav), unquote(href.split("#", 1)[0])))
            if label and href and target not in titles:
                titles[target] = label
        if titles:
            return titles
    ncx = next((href for href, media, _ in manifest.values() if media == "application/x-dtbncx+xml"), None)
    if ncx and has_member(zf, ncx):
        root = _xml(path, zf, ncx)
        for point in _children(root, "navPoint"):
            text = next((t for t in point.iter() if local(t.tag) == "text"), None)
            content = next((c for c in point.iter() if local(c.tag) == "content"), None)
            if text is None or content is None:
                continue
            src = unquote((content.get("src") or "").split("#", 1)[0])
            target = posixpath.normpath(posixpath.join(posixpath.dirname(ncx), src))
            label = collapse_whitespace(text.text or "")
            if label and target not in titles:
                titles[target] = label
    return titles


def _chapter_page(number: int, text: str, sections: list[Section], chapter: str | None) -> Page:
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
    titles = _toc_titles(path, zf, opf_dir, manifest)
    warnings: list[str] = []
    pages: list[Page] = []
    if len(spine) > MAX_CHAPTERS:
        warnings.append(f"only the first {MAX_CHAPTERS:,} of {len(spine):,} chapters were read")
    for href in spine[:MAX_CHAPTERS]:
        if not has_member(zf, href):
            warnings.append(f"chapter {href} is missing from the book")
            continue
        try:
            chapter = load_html(Path(href), read_member(path, zf, href, _KIND))
        except LoaderError as err:
            warnings.append(f"chapter {href} could not be read ({err.reason})")
            continue
        page = chapter.pages[0]
        if not page.text.strip():
            continue
        warnings.extend(f"chapter {href}: {w}" for w in chapter.warnings[:3])
        pages.append(_chapter_page(len(pages) + 1, page.text, page.sections, titles.get(href)))
    metadata: dict[str, Any] = {"format": "epub", "chapters": len(pages)}
    for key in ("title", "creator", "language", "publisher", "date", "identifier"):
        el = next((e for e in opf.iter() if local(e.tag) == key and (e.text or "").strip()), None)
        if el is not None:
            metadata["author" if key == "creator" else key] = json_safe(collapse_whitespace(el.text or ""))
    raw_title = metadata.get("title")
    title = meaningful_title(raw_title) or stem_title(path)
    return LoadedDocument(title=title, pages=pages or [Page(1, "")], metadata=metadata, warnings=warnings)
