"""DOCX on files real producers wrote (Apache Tika's test documents, Apache-2.0; people's names removed from their
metadata and comment authors): list numbers as Word shows them, footnotes and endnotes after the text that cites
them, headers and footers once per document, comments marked as comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.loaders import load
from testkit.paths import FIXTURES

WORLD = FIXTURES / "world" / "tika"


def text_of(name: str) -> str:
    return "\n".join(p.text for p in load(WORLD / name).pages)


def test_list_numbers_are_kept_with_counters_per_list_and_level() -> None:
    """What Tika asserts for testWORD_numbered_list.docx: formats (decimal, letters, roman), level texts ("%1)",
    "Some-%1-CrazyFormat"), a level restarting under its parent, a list starting at 6, lists in a table cell, a
    skipped level counting from its start, a start override beginning a new list."""
    text = text_of("testWORD_numbered_list.docx")
    for shown in ("1) This", "a) Is", "i) A multi", "ii) Level", "1. Within cell 1", "b. Cell b", "iii) List",
                  "2) foo", "ii) baz", "ii) foo", "II. bar", "6. six", "7. seven", "a. seven a", "e. seven e",
                  "2. A ii 2", "3. page break list 3", "Some-1-CrazyFormat Greek numbering with crazy format - alpha",
                  "1.1.1. 1.1.1", "1.1. 1.2->1.1 //set the value", "1. list 1\n\n2. list 2"):  # fmt: skip
        assert shown in text, shown


def test_list_numbering_overrides() -> None:
    """testWORD_override_list_numbering.docx: lists without a start begin at 0 ("0th", "00"), ordinal and
    zero-padded formats, w:lvlRestart, legal numbering (isLgl), a level format override that counts on with its
    list and a start override that starts a new one. Tika's expectations (one bullet-level oddity left out)."""
    text = text_of("testWORD_override_list_numbering.docx")
    for shown in ("0th 0th", "1st.2.3someText 1st.2.3someText", "1st.2.2someOtherText.1 1st.2.2someOtherText.1",
                  "5th 5th", "1.a.I 1.a.I", "1.b.III 1.b.III", "2.a.I 2.a.I", "2.b 2.b", "(1)) (1))", "2.17 2.17",
                  "2.18.2.1 2.18.2.1", "\n2 2\n", "A A", "B B", "C C", "4 4", "00 00", "01 01", "01. 01.",
                  "01..1 01..1", "02 02"):  # fmt: skip
        assert shown in text, shown


def test_footnotes_after_the_text_headers_and_footers_once() -> None:
    doc = load(WORLD / "testWORD_various.docx")
    page = doc.pages[0]
    assert doc.title == "Footnote appears here"  # the note mark is not part of the title
    assert page.text.startswith("Footnote appears here[1]\n")
    tail = "Footnotes\n[1] This is a footnote.\n\nHeaders and footers\n\nThis is the header text.\n\n"
    assert page.text.endswith(tail + "This is the footer text.")
    assert page.text.count("This is the header text.") == 1
    assert [s.path for s in page.sections] == ["Footnotes", "Headers and footers"]
    assert page.section_at(page.text.index("This is a footnote.")) == "Footnotes"
    assert "• Bullet 1\n\n• Bullet 2" in page.text and "1) Number bullet 1" in page.text


def test_endnotes_follow_the_text() -> None:
    text = text_of("testWORD_endnote_table.docx")
    assert "\n\n[i]\n\n" in text  # the endnote mark where the text cites it
    assert text.index("[i] Endnote Test – The quick brown fox") > text.index("Endnotes") > text.index("[i]")
    assert "This is endnote text in a table" in text


def test_comments_are_marked_as_comments_where_they_are_anchored() -> None:
    assert text_of("testComment.docx") == "Here is some text.\n\n[Comment (Author): Here is a comment]"
    text = text_of("testWORD_numbered_list.docx")
    assert "[Comment (Author): Let’s add a list here 1. comment list 1." in text


def test_generated_document_numbering_notes_and_comments(tmp_path: Path) -> None:
    """A document written by python-docx: Turkish "Madde %1" numbering linked to a paragraph style, a restart by
    a second w:num with a start override, and no numbering part at all in a second file."""
    import docx
    from docx.oxml import parse_xml

    d = docx.Document()
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    numbering = d.part.numbering_part.element
    numbering.append(parse_xml(
        f'<w:abstractNum {w} w:abstractNumId="7"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        '<w:lvlText w:val="Madde %1 -"/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/>'
        '<w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%2)"/></w:lvl></w:abstractNum>'
    ))  # fmt: skip
    numbering.append(parse_xml(f'<w:num {w} w:numId="70"><w:abstractNumId w:val="7"/></w:num>'))
    numbering.append(parse_xml(
        f'<w:num {w} w:numId="71"><w:abstractNumId w:val="7"/>'
        '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>'
    ))  # fmt: skip

    def numbered(text: str, num: int, ilvl: int = 0) -> None:
        p = d.add_paragraph(text)
        p._p.get_or_add_pPr().append(
            parse_xml(f'<w:numPr {w}><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num}"/></w:numPr>')
        )

    numbered("Kat malikleri kurulu toplanır.", 70)
    numbered("olağan toplantı", 70, 1)
    numbered("olağanüstü toplantı", 70, 1)
    numbered("Yönetici atanır.", 70)
    numbered("Yeni liste başlar.", 71)
    path = tmp_path / "yonetmelik.docx"
    d.save(str(path))
    text = load(path).pages[0].text
    assert "Madde 1 - Kat malikleri kurulu toplanır.\n\na) olağan toplantı\n\nb) olağanüstü toplantı" in text
    assert "Madde 2 - Yönetici atanır.\n\nMadde 1 - Yeni liste başlar." in text


@pytest.mark.parametrize("name", ["testWORD_numbered_list.docx", "testWORD_various.docx"])
def test_headings_and_titles_are_unchanged_by_notes(name: str) -> None:
    doc = load(WORLD / name)
    assert doc.title not in ("Footnotes", "Endnotes", "Headers and footers")


def test_hostile_notes_part_is_refused(tmp_path: Path) -> None:
    from kaynak.errors import CorruptFile
    from testkit.format_samples import LAUGHS, replace_member

    data = (WORLD / "testWORD_various.docx").read_bytes()
    bad = replace_member(data, "word/footnotes.xml", (LAUGHS + "<w:footnotes>&lol5;</w:footnotes>").encode())
    path = tmp_path / "laughs.docx"
    path.write_bytes(bad)
    with pytest.raises(CorruptFile, match=r"footnotes\.xml declares a DTD or entities"):
        load(path)


@pytest.mark.parametrize(
    ("suffix", "content_type"),
    [
        (".docm", "application/vnd.ms-word.document.macroEnabled.main+xml"),
        (".dotx", "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml"),
    ],
)
def test_macro_enabled_documents_and_templates(tmp_path: Path, suffix: str, content_type: str) -> None:
    """A .docm or .dotx is a .docx whose main part has another content type (python-docx refused it)."""
    import zipfile

    import docx

    from testkit.format_samples import replace_member

    d = docx.Document()
    d.add_paragraph("Şablon metni.")
    path = tmp_path / "x.docx"
    d.save(str(path))
    main = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    with zipfile.ZipFile(path) as zf:
        types = zf.read("[Content_Types].xml").decode()
    data = replace_member(path.read_bytes(), "[Content_Types].xml", types.replace(main, content_type).encode())
    other = tmp_path / f"sablon{suffix}"
    other.write_bytes(data)
    assert load(other).pages[0].text == "Şablon metni."


def test_phonetic_guide_follows_its_base_text() -> None:
    """testWORD_phonetic.docx: ruby text (w:rt) was glued in front of the word it reads ("とうきょう東京")."""
    assert text_of("testWORD_phonetic.docx") == "東京 (とうきょう)"


def test_deeply_nested_notes_are_refused_not_recursed(tmp_path: Path) -> None:
    """Parts python-docx does not parse itself (footnotes, comments) get lxml's depth limit too: 5,000 nested
    content controls end as CorruptFile, not as a RecursionError in the walk."""
    from kaynak.errors import CorruptFile
    from testkit.format_samples import replace_member

    data = (WORLD / "testWORD_various.docx").read_bytes()
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    deep = (
        f'<w:footnotes {w}><w:footnote w:id="1">'
        + "<w:sdt><w:sdtContent>" * 5000
        + "</w:sdtContent></w:sdt>" * 5000
        + "</w:footnote></w:footnotes>"
    )
    bad = tmp_path / "deep.docx"
    bad.write_bytes(replace_member(data, "word/footnotes.xml", deep.encode()))
    with pytest.raises(CorruptFile, match=r"footnotes\.xml is not well-formed XML"):
        load(bad)
