"""RTF loader: Windows-1254 bytes and \\uN escapes, headings, tables, page breaks, skipped destinations."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile
from kaynak.loaders import load
from testkit.format_samples import EN_PASSAGE, TR_PASSAGE, make_rtf


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_rtf_turkish_code_page_unicode_headings_tables_pages(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "karar.rtf", make_rtf()))
    assert doc.title == "Kurul kararı" and doc.metadata["codepage"] == "cp1254"
    one, two = doc.pages
    assert TR_PASSAGE in one.text and one.section_at(one.text.index(TR_PASSAGE)) == "Toplantı usulü"
    assert "Daire | Pay\n3 | 120/1000" in one.text
    assert two.text.startswith("Rivers") and EN_PASSAGE in two.text and "HYPERLINK" not in two.text
    assert two.section_at(two.text.index(EN_PASSAGE)) == "Rivers"


def test_rtf_deep_groups_and_not_rtf(tmp_path: Path) -> None:
    deep = b"{\\rtf1\\ansi\\ansicpg1254 " + b"{" * 5000 + b"derin" + b"}" * 5000 + b" Bo\\'f0az metni\\par}"
    doc = load(write(tmp_path, "deep.rtf", deep))
    assert "Boğaz metni" in doc.pages[0].text
    assert any("nested deeper" in w for w in doc.warnings)
    with pytest.raises(CorruptFile, match="not an RTF"):
        load(write(tmp_path, "x.rtf", b"plain text"))
