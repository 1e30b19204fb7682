"""PPTX loader: one page per slide (page = slide number), the title as section, shapes top to bottom, tables,
speaker notes; entities, zip bombs, encrypted and mislabelled files refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.loaders import load
from testkit.format_samples import EN_PASSAGE, LAUGHS, TR_PASSAGE, make_pptx, replace_member, zip_bomb
from testkit.paths import FIXTURES


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_pptx_slides_titles_tables_notes(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "sunum.pptx", make_pptx()))
    assert doc.title == "Toplantı kuralları" and doc.metadata["slides"] == 2
    one, two = doc.pages
    assert (one.number, two.number) == (1, 2)
    assert one.sections[0].path == "Toplantı kuralları" and TR_PASSAGE in one.text
    assert one.text.endswith("Notes:\nKonuşmacı notu: yeter sayı üçte iki.")
    assert two.sections[0].path == "Rivers"
    # reading order: the table (2 in from the top) before the text box (5 in)
    assert two.text.index("City | River\nBudapest | Danube") < two.text.index(EN_PASSAGE)


def test_pptx_hostile(tmp_path: Path) -> None:
    good = make_pptx()
    bad = replace_member(good, "ppt/slides/slide1.xml", (LAUGHS + "<p:sld>&lol5;</p:sld>").encode())
    with pytest.raises(CorruptFile, match="DTD or entities"):
        load(write(tmp_path, "laughs.pptx", bad))
    with pytest.raises(CorruptFile, match="zip bomb"):
        load(write(tmp_path, "bomb.pptx", zip_bomb({"ppt/presentation.xml": b"<x/>"}, "ppt/media/a.bin")))
    with pytest.raises(EncryptedFile, match="password"):
        load(write(tmp_path, "locked.pptx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600))
    with pytest.raises(CorruptFile, match="not a PowerPoint"):
        load(write(tmp_path, "word.pptx", replace_member(good, "ppt/presentation.xml", b"")[:0] + _docx_like()))


def _docx_like() -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("word/document.xml", "<w:document/>")
    return buf.getvalue()


def test_pptx_three_hundred_slides_one_page_each(tmp_path: Path) -> None:
    """One page per slide, in bounded time (the 5,000-slide deck is in tests/hostile)."""
    import time

    from pptx import Presentation

    prs = Presentation()
    layout = prs.slide_layouts[5]
    for i in range(300):
        prs.slides.add_slide(layout).shapes.title.text = f"Slayt {i + 1}"
    path = tmp_path / "many.pptx"
    prs.save(path)
    t0 = time.perf_counter()
    doc = load(path)
    assert len(doc.pages) == 300 and doc.pages[-1].sections[0].path == "Slayt 300"
    assert time.perf_counter() - t0 < 30


WORLD = FIXTURES / "world"


def test_pptx_chart_and_smartart_text_are_read() -> None:
    """Apache Tika's test decks: a pie chart (title, series name, category labels) and a SmartArt org chart."""
    chart = load(WORLD / "tika" / "testPPT_charts.pptx")
    (page,) = chart.pages
    assert page.sections[0].path == "wants a peach"  # the slide holds only the chart: its title names it
    assert "NUMBER" in page.text and "January, February, March" in page.text
    smart = load(WORLD / "tika" / "testPPT_diagramData.pptx")
    text = smart.pages[0].text
    for words in ("President", "VP – HR", "Manager 1", "VP - Marketing"):
        assert words in text


def test_pptx_chart_text_follows_the_slide_text(tmp_path: Path) -> None:
    doc = load(WORLD / "libreoffice" / "impress-textbox-titles-notes.pptx")
    assert "Slide 1" not in doc.pages[0].text and "Slide 2" not in doc.pages[1].text


def test_ppsx_slide_show_is_read_like_a_pptx() -> None:
    doc = load(WORLD / "tika" / "testPPT.ppsx")
    assert [p.sections[0].path for p in doc.pages][0::2] == ["Attachment Test", "Different words to test against"]
    assert len(doc.pages[1].sections[0].path) <= 81  # a long first line is cut at a word for the section
    assert "Watershed" in doc.pages[2].text


def test_footer_and_master_text_once_after_the_last_slide() -> None:
    """Tika's decks: a footer placeholder on the slide, a text box added to the slide master."""
    footer = load(WORLD / "tika" / "testPPT_masterFooter.pptx")
    master = load(WORLD / "tika" / "testPPT_masterText.pptx")
    for doc, words in ((footer, "Master footer is here"), (master, "Text that I added to the master slide")):
        last = doc.pages[-1]
        assert "\n".join(p.text for p in doc.pages).count(words) == 1
        assert last.section_at(last.text.index(words)) == "Headers and footers"
    assert "Click to edit Master" not in master.pages[-1].text


def test_embedded_word_and_excel_documents_are_read(tmp_path: Path) -> None:
    """Tika's testPPT_embeded.pptx shows a Word document and a worksheet as OLE objects (inside
    mc:AlternateContent); their text is read after the slide's. A damaged embedding is left out."""
    path = WORLD / "tika" / "testPPT_embeded.pptx"
    text = load(path).pages[0].text
    assert "The Alfresco logo is above this" in text and "Sheet1" in text
    bomb = zip_bomb({"[Content_Types].xml": b"<Types/>"}, "word/document.xml")
    bad = replace_member(path.read_bytes(), "ppt/embeddings/Microsoft_Office_Word_Document2.docx", bomb)
    text = load(write(tmp_path, "bomba.pptx", bad)).pages[0].text
    assert "The Alfresco logo" not in text and "Sheet1" in text
