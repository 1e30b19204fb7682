"""EPUB loader: spine order, one page per chapter, chapter titles from the EPUB 3 nav or the EPUB 2 NCX, DRM
refused, entity declarations refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.loaders import load
from testkit.format_samples import EN_PASSAGE, LAUGHS, TR_PASSAGE, make_epub, replace_member
from testkit.paths import FIXTURES

WORLD = FIXTURES / "world"


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("version", [2, 3])
def test_epub_chapters_titles_sections(tmp_path: Path, version: int) -> None:
    doc = load(write(tmp_path, "kitap.epub", make_epub(version)))
    assert doc.title == "Apartman kitabı" and doc.metadata["author"] == "Ayşe"
    one, two = doc.pages
    assert one.section_at(one.text.index(TR_PASSAGE)) == "Birinci bölüm: Kurul › Toplantı"
    assert two.number == 2 and two.section_at(two.text.index(EN_PASSAGE)) == "Chapter two: Rivers"


def test_epub_drm_and_entities(tmp_path: Path) -> None:
    enc = (
        b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
        b'<enc:CipherReference URI="OEBPS/text/ch1.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>'
    )
    with pytest.raises(EncryptedFile, match="DRM"):
        load(write(tmp_path, "drm.epub", replace_member(make_epub(), "META-INF/encryption.xml", enc)))
    bad = replace_member(make_epub(), "OEBPS/content.opf", (LAUGHS + "<package>&lol5;</package>").encode())
    with pytest.raises(CorruptFile, match="DTD or entities"):
        load(write(tmp_path, "laughs.epub", bad))


def _section(doc: object, words: str) -> str | None:
    for page in doc.pages:  # type: ignore[attr-defined]
        if words in page.text:
            return page.section_at(page.text.index(words))  # type: ignore[no-any-return]
    raise AssertionError(f"{words!r} not found")


def test_libreoffice_epub_styled_paragraph_headings_are_sections() -> None:
    """LibreOffice's EPUB export writes headings as ``<p class="para0"><span class="span0">`` with CSS making
    them large and bold; a chapter per Heading 1, each named in the navigation document."""
    doc = load(WORLD / "libreoffice" / "writer-odt-headings.epub")
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert _section(doc, "Bu rehber kat malikleri") == "Giriş"
    assert _section(doc, "Rehber yalnızca konut") == "Giriş › Kapsam"
    assert _section(doc, "Kurul yılda en az") == "Kat Malikleri Kurulu"
    assert _section(doc, "Toplantı, kat maliklerinin") == "Kat Malikleri Kurulu › Toplantı Yeter Sayısı"
    assert _section(doc, "Yönetici kurulun") == "Yönetici"
    # one chapter whose navigation entry names a subheading: the chapter's own headings, not that label on all
    one = load(WORLD / "libreoffice" / "writer-html-styled-headings.epub")
    assert _section(one, "Bu rehber kat malikleri") == "Giriş"
    assert _section(one, "Kurul yılda en az") == "Kat Malikleri Kurulu"
    assert _section(one, "Yönetici kurulun") == "Yönetici"


def test_tika_epub_sections() -> None:
    doc = load(WORLD / "tika" / "testEPUB.epub")
    assert doc.title == "An ePub for Tika"
    assert _section(doc, "This is the text for chapter One") == "Chapter 1"
    assert _section(doc, "The previous headings were subchapters") == "Chapter 2 › Subchapter 2.2"


def _epub(chapter: str, nav: str) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip")
        zf.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>'
            "</container>",
        )
        zf.writestr(
            "OEBPS/content.opf",
            '<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
            'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Rehber</dc:title></metadata><manifest>'
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
            '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/></spine></package>',
        )
        zf.writestr(
            "OEBPS/nav.xhtml",
            '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>'
            f'<nav epub:type="toc"><ol>{nav}</ol></nav></body></html>',
        )
        zf.writestr("OEBPS/c1.xhtml", f'<html xmlns="http://www.w3.org/1999/xhtml"><body>{chapter}</body></html>')
    return buf.getvalue()


def test_epub_navigation_anchors_name_sections_inside_a_chapter(tmp_path: Path) -> None:
    chapter = (
        '<p id="a1">Aidat</p><p>Aidat her ay ödenir.</p>'
        '<p><a id="a2"/>Gecikme faizi</p><p>Geciken aidata faiz işler.</p>'
        '<p id="a3">Bu paragraf uzun bir metindir ve başlık değildir.</p><p>Son söz.</p>'
    )
    nav = (
        '<li><a href="c1.xhtml">Kitap</a><ol><li><a href="c1.xhtml#a1">Aidat</a></li>'
        '<li><a href="c1.xhtml#a2">Gecikme faizi</a></li><li><a href="c1.xhtml#a3">Başka bir şey</a></li></ol></li>'
    )
    doc = load(write(tmp_path, "rehber.epub", _epub(chapter, nav)))
    assert _section(doc, "Aidat her ay") == "Kitap › Aidat"
    assert _section(doc, "Geciken aidata") == "Kitap › Gecikme faizi"
    assert _section(doc, "Son söz.") == "Kitap › Gecikme faizi"  # an entry whose label is not the text: no heading


def test_libreoffice_epub_without_heading_styles_is_not_section_1_everywhere() -> None:
    """Writer's EPUB of a document whose headings are only large bold paragraphs: libepubgen names its one chapter
    "Section 1" and the book "Unknown Title" / "Unknown Author"."""
    doc = load(WORLD / "libreoffice" / "writer-no-heading-styles.epub")
    assert _section(doc, "Bu rehber kurulun") == "Giriş"
    assert _section(doc, "Yönetici kararları") == "Yönetici"
    assert doc.title != "Unknown Title" and "author" not in doc.metadata


def test_navigation_document_in_the_spine_is_a_page(tmp_path: Path) -> None:
    """A book whose spine lists its own contents page (epub.js's alice_without_cover.epub): a reader shows it."""
    data = _epub("<p>Metin.</p>", '<li><a href="c1.xhtml">Birinci</a></li>')
    data = replace_member(
        data,
        "OEBPS/content.opf",
        b'<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
        b'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Rehber</dc:title></metadata><manifest>'
        b'<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        b'<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
        b'<spine><itemref idref="nav"/><itemref idref="c1"/></spine></package>',
    )
    doc = load(write(tmp_path, "icindekiler.epub", data))
    assert [p.text for p in doc.pages] == ["Birinci", "Metin."]
