"""UYAP UDF loader: the text pool read through the paragraphs' offsets, bold short paragraphs as headings, page
breaks, tables, the header and footer read once; broken offsets fall back to the plain pool; unsafe XML and zip
bombs refused."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from kaynak.errors import CorruptFile
from kaynak.loaders import load
from testkit.format_samples import LAUGHS, UDF_PARAGRAPHS, make_udf, zip_bomb


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_udf_paragraphs_headings_pages_table(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "karar.udf", make_udf(UDF_PARAGRAPHS, page_break_after=2, header="AV. MEHMET")))
    assert doc.title == "T.C. ANKARA 3. ASLİYE HUKUK MAHKEMESİ" and doc.metadata["format_id"] == "1.8"
    one, two = doc.pages
    assert one.text.startswith("AV. MEHMET\n\n") and "AV. MEHMET" not in two.text  # the header, once
    passage = UDF_PARAGRAPHS[2][0]
    assert passage in one.text and one.section_at(one.text.index(passage)) == "GEREKÇE"
    assert two.text.startswith("HÜKÜM") and two.section_at(two.text.index("Davanın kabulüne")) == "HÜKÜM"
    assert "Dosya No | 2024/117 Esas" in two.text


def _with_content(xml: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("content.xml", xml)
    return buf.getvalue()


def test_udf_bad_offsets_fall_back_to_the_text(tmp_path: Path) -> None:
    xml = (
        '<?xml version="1.0" encoding="UTF-8" ?><template format_id="1.8"><content><![CDATA[Birinci satır.\n'
        'İkinci satır.\n]]></content><elements><paragraph><content startOffset="5" length="900"/></paragraph>'
        "</elements></template>"
    )
    doc = load(write(tmp_path, "bozuk.udf", _with_content(xml)))
    assert "Birinci satır." in doc.pages[0].text and "İkinci satır." in doc.pages[0].text
    assert any("offsets outside the text" in w for w in doc.warnings)


def test_udf_hostile(tmp_path: Path) -> None:
    with pytest.raises(CorruptFile, match="DTD or entities"):
        load(write(tmp_path, "gulen.udf", _with_content(LAUGHS + "<template><content>&lol5;</content></template>")))
    with pytest.raises(CorruptFile, match="zip bomb"):
        load(write(tmp_path, "bomba.udf", zip_bomb({}, "content.xml")))
    with pytest.raises(CorruptFile, match="not a UDF"):
        load(write(tmp_path, "baska.udf", _with_content("<document/>")))
    with pytest.raises(CorruptFile, match="not a zip"):
        load(write(tmp_path, "metin.udf", "UYAP belgesi değil".encode()))


def test_udf_header_and_footer_are_read_once() -> None:
    # A look-alike of an e-signed UYAP document (tests/fixtures/world/SOURCES.md): letterhead in <header>, the
    # e-signature notice and verification address in a <footer> written last among the elements, with a page
    # number drawn over an empty paragraph. Both used to be left out.
    doc = load(Path(__file__).resolve().parents[1] / "fixtures" / "world" / "udf" / "icra-esign-lookalike.udf")
    text = "\n\n".join(p.text for p in doc.pages)
    notice = "Bu belge 5070 sayılı Elektronik İmza Kanunu uyarınca güvenli elektronik imza ile imzalanmıştır."
    assert text.count(notice) == 1 and text.count("İCRA VE İFLAS DAİRESİ YAZISI") == 1
    assert text.startswith("İCRA VE İFLAS DAİRESİ YAZISI")  # the header before the body
    assert text.endswith("AB12CD3 doğrulama koduyla ulaşabilirsiniz.")  # the footer after it
    assert "Asıl alacak | 12.500,00 TL" in text and doc.title == "İSTANBUL 7. İCRA DAİRESİ"
    assert "\u200b" not in text


def test_udf_offsets_count_utf16_units(tmp_path: Path) -> None:
    # The UYAP editor (Java) counts offsets in UTF-16 code units: a character outside the BMP counts two, so
    # reading them as characters shifted every paragraph after it.
    pool = "Ek 📎 listesi\nİkinci paragraf burada.\n"
    first = len("Ek 📎 listesi".encode("utf-16-le")) // 2  # 13 units, 12 characters
    second = len("İkinci paragraf burada.")
    xml = (
        '<?xml version="1.0" encoding="UTF-8" ?><template format_id="1.8"><content><![CDATA['
        + pool
        + f']]></content><elements><paragraph><content startOffset="0" length="{first}"/></paragraph>'
        f'<paragraph><content startOffset="{first + 1}" length="{second}"/></paragraph></elements></template>'
    )
    doc = load(write(tmp_path, "ek.udf", _with_content(xml)))
    assert doc.pages[0].text == "Ek 📎 listesi\n\nİkinci paragraf burada." and doc.warnings == []
