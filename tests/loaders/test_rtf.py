"""RTF loader: Windows-1254 bytes and \\uN escapes, headings, tables, page breaks, skipped destinations."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile
from kaynak.loaders import load
from testkit.format_samples import EN_PASSAGE, TR_PASSAGE, make_rtf
from testkit.paths import FIXTURES


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


WORLD = FIXTURES / "world" / "tika"  # Apache Tika's test documents (Apache-2.0), author metadata removed


def test_rtf_table_rows_keep_their_first_cell() -> None:
    """Word writes a row's ``\\trowd`` properties again before ``\\row``, and rows after the first start without
    one: the first cell of such a row was lost (testRTFVarious.rtf)."""
    text = load(WORLD / "testRTFVarious.rtf").pages[0].text
    assert "Row 1 Col 1 | Row 1 Col 2 | Row 1 Col 3\nRow 2 Col 1 | Row 2 Col 2 | Row 2 Col 3" in text


def test_rtf_cells_without_a_row_end_are_read() -> None:
    """testRTFTableCellSeparation2.rtf: two ``\\cell``s and no ``\\row``; it gave no text at all."""
    doc = load(WORLD / "testRTFTableCellSeparation2.rtf")
    assert doc.pages[0].text == "Fax / Phone Station | Fax / Phone #"


def test_rtf_characters_outside_the_bmp() -> None:
    """``\\uN`` surrogate pairs (Gothic letters) are joined into one character each; a lone half is replaced."""
    assert load(WORLD / "testRTFUnicodeGothic.rtf").pages[0].text == "𐌲𐌿𐍄𐌹𐍃𐌺"
    assert "𐌲𐌿𐍄𐌹𐍃𐌺" in load(WORLD / "testRTFVarious.rtf").pages[0].text


def test_rtf_lone_surrogate_and_nested_cells(tmp_path: Path) -> None:
    data = (
        b"{\\rtf1\\ansi {\\uc1 a\\u-10179?b\\par}"
        b"\\trowd\\intbl A\\cell \\intbl{\\itap2 x\\nestcell y\\nestcell{\\*\\nesttableprops\\trowd\\nestrow}}\\cell"
        b"\\row}"
    )
    doc = load(write(tmp_path, "s.rtf", data))
    assert "a\ufffdb" in doc.pages[0].text
    assert "A | x | y;" in doc.pages[0].text


def test_rtf_list_numbers_are_kept() -> None:
    """``\\listtext`` holds the number Word shows before a list item ("1.", a bullet): it is text a person reads."""
    text = load(WORLD / "testRTFListMicrosoftWord.rtf").pages[0].text
    assert "1. one\n\n2. two\n\n3. three" in text
    assert "1. a\n\n- aa" in text and "2. b\n\n3. c" in text


def test_rtf_stray_destination_marker_inside_a_group() -> None:
    """StarWriter wrote ``{\\loch … \\*\\cs7 … The quick brown fox …}``: ``\\*`` marks a destination only right after
    ``{``; taking it for one here dropped the document's only paragraph (testRTFIgnoredControlWord.rtf)."""
    doc = load(WORLD / "testRTFIgnoredControlWord.rtf")
    assert doc.pages[0].text == "The quick brown fox jumps over the lazy dog"
    assert doc.title == "test rft document"


def test_rtf_footnotes_after_the_page_comments_marked_headers_footers_once() -> None:
    """A footnote (``{\\footnote …}``) was read in the middle of the sentence citing it; a comment
    (``\\annotation``), the header and the footer were dropped."""
    doc = load(WORLD / "testRTFVarious.rtf")
    text = doc.pages[0].text
    assert text.startswith("Footnote appears here[1]\n")
    tail = "\n[1] This is a footnote.\n\nHeaders and footers\n\nThis is the header text.\n\nThis is the footer text."
    assert text.endswith(tail) and text.count("This is the header text.") == 1
    assert doc.pages[0].section_at(text.index("This is the footer text.")) == "Headers and footers"
    assert doc.title == "Footnote appears here"
    comment = load(WORLD / "testComment.rtf")
    assert comment.pages[0].text == "Here is some text.\n\n[Comment (A): Here is a comment]"
    assert comment.title == "Here is some text."


def test_rtf_with_only_a_header_is_titled_by_its_name(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "antet.rtf", b"{\\rtf1\\ansi {\\header Kurum antedi\\par}\\par}"))
    assert doc.pages[0].text == "Headers and footers\n\nKurum antedi" and doc.title == "antet"
