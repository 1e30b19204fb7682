"""UYAP UDF loader: the text pool read through the paragraphs' offsets, bold short paragraphs as headings, page
breaks, tables, the header left out; broken offsets fall back to the plain pool; unsafe XML and zip bombs refused."""

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
    assert "AV. MEHMET" not in one.text + two.text
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
