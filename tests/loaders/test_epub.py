"""EPUB loader: spine order, one page per chapter, chapter titles from the EPUB 3 nav or the EPUB 2 NCX, DRM
refused, entity declarations refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.loaders import load
from testkit.format_samples import EN_PASSAGE, LAUGHS, TR_PASSAGE, make_epub, replace_member


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
