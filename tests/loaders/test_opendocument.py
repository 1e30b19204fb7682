"""OpenDocument loader: headings → sections, explicit page breaks, tables, footnotes, tracked deletions dropped;
spreadsheets one page per sheet with repeated cells bounded; slides one page per slide with notes; unsafe XML,
encryption and zip bombs refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.loaders import load
from testkit.format_samples import (
    EN_PASSAGE,
    LAUGHS,
    TR_PASSAGE,
    XXE,
    make_odp,
    make_ods,
    make_odt,
    odf_zip,
    replace_member,
    zip_bomb,
)
from testkit.paths import FIXTURES


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_odt_sections_pages_tables_notes(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "plan.odt", make_odt()))
    assert doc.title == "Yönetim planı" and doc.metadata["format"] == "odt"
    assert [p.number for p in doc.pages] == [1, 2]
    one, two = doc.pages
    assert TR_PASSAGE in one.text and "SİLİNMİŞ" not in one.text + two.text
    assert "[1]" in one.text and "[1] Dipnot: toplantı tutanağı saklanır." in one.text
    assert "Daire | Arsa payı\n3 | 120/1000" in one.text
    at = one.text.index(TR_PASSAGE)
    assert one.section_at(at) == "Yönetim planı › Genel hükümler"
    assert EN_PASSAGE in two.text and "  end." not in two.text
    assert two.section_at(two.text.index(EN_PASSAGE)) == "Yönetim planı › Rivers"


def test_flat_odt_and_template_extension(tmp_path: Path) -> None:
    content = make_odt()
    import io
    import zipfile

    xml = zipfile.ZipFile(io.BytesIO(content)).read("content.xml")
    flat = xml.replace(b"office:document-content", b"office:document")
    doc = load(write(tmp_path, "plan.fodt", flat))
    assert TR_PASSAGE in doc.pages[0].text and len(doc.pages) == 2
    assert TR_PASSAGE in load(write(tmp_path, "plan.ott", content)).pages[0].text


def test_ods_sheets_repeats_and_cached_values(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "aidat.ods", make_ods()))
    assert [p.sections[0].path for p in doc.pages] == ["Aidatlar", "Rivers"]
    assert "Daire: 7; Tutar: 450" in doc.pages[0].text and "of:=" not in doc.pages[0].text
    assert "City: Budapest; River: Danube" in doc.pages[1].text


def test_odp_one_page_per_slide_title_notes(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "sunum.odp", make_odp()))
    assert [p.number for p in doc.pages] == [1, 2]
    one = doc.pages[0]
    assert one.text.startswith("Toplantı kuralları\n") and one.sections[0].path == "Toplantı kuralları"
    assert "Notes:\nKonuşmacı notu: yeter sayı üçte iki." in one.text and "<number>" not in one.text
    assert doc.pages[1].sections[0].path == "Rivers" and EN_PASSAGE in doc.pages[1].text


@pytest.mark.parametrize("prolog", [LAUGHS, XXE])
def test_odf_entities_are_refused(tmp_path: Path, prolog: str) -> None:
    data = odf_zip("text", "<text:p>x &lol5;</text:p>" if "lol" in prolog else "<text:p>&xxe;</text:p>", prolog=prolog)
    with pytest.raises(CorruptFile, match="DTD or entities"):
        load(write(tmp_path, "bad.odt", data))


def test_odf_zip_bomb_encrypted_truncated(tmp_path: Path) -> None:
    bomb = zip_bomb({"mimetype": b"application/vnd.oasis.opendocument.text"}, "content.xml")
    with pytest.raises(CorruptFile, match="zip bomb"):
        load(write(tmp_path, "bomb.odt", bomb))
    manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry>'
        b"</manifest:manifest>"
    )
    with pytest.raises(EncryptedFile, match="password"):
        load(write(tmp_path, "secret.odt", replace_member(make_odt(), "META-INF/manifest.xml", manifest)))
    whole = make_odt()
    with pytest.raises(CorruptFile):
        load(write(tmp_path, "cut.odt", whole[: len(whole) // 2]))
    with pytest.raises(CorruptFile, match=r"text\.odt is not an OpenDocument file: it is neither a zip package"):
        load(write(tmp_path, "text.odt", b"just some text, mislabelled"))


def test_odf_messages_name_the_file_and_what_it_is(tmp_path: Path) -> None:
    """Apache Tika's encrypted ODT (written by LibreOffice with a password), a .pptx under the .odp name."""
    with pytest.raises(EncryptedFile, match=r"^.*testODTEncrypted\.odt: testODTEncrypted\.odt is password-protected; "
                       "save it without a password first$"):  # fmt: skip
        load(WORLD / "tika" / "testODTEncrypted.odt")
    pptx = (WORLD / "libreoffice" / "impress-textbox-titles-notes.pptx").read_bytes()
    with pytest.raises(CorruptFile, match=r"sunum\.odp is not an OpenDocument file: it is a \.pptx file"):
        load(write(tmp_path, "sunum.odp", pptx))


WORLD = FIXTURES / "world"


def test_libreoffice_writer_headings_by_style_and_one_break_per_page() -> None:
    """Writer's own ODT (from an HTML page with three <h1>, two with page-break-before): the headings are
    ``text:p`` in automatic styles whose parent is Heading_20_1, and each breaking paragraph also carries a
    ``text:soft-page-break``; LibreOffice's PDF export of the file has 3 pages."""
    doc = load(WORLD / "libreoffice" / "writer-html-headings-pagebreaks.odt")
    assert [p.number for p in doc.pages] == [1, 2, 3]
    expected = [
        ("Kiracı aylık kira bedelini", "Birinci Bölüm Taraflar"),
        ("Depozito iki aylık", "İkinci Bölüm Depozito"),
        ("Taraflardan biri otuz gün", "Üçüncü Bölüm Fesih"),
    ]
    for page, (words, section) in zip(doc.pages, expected, strict=True):
        assert words in page.text
        assert page.section_at(page.text.index(words)) == section


def test_odt_soft_page_break_inside_a_paragraph_splits_it(tmp_path: Path) -> None:
    body = (
        '<text:p text:style-name="Standard">Birinci sayfanın sonu<text:soft-page-break/> ikinci sayfada biter.</text:p>'
        '<table:table table:name="T"><table:table-row><table:table-cell><text:p>a1</text:p></table:table-cell>'
        "</table:table-row><text:soft-page-break/><table:table-row><table:table-cell><text:p>b1</text:p>"
        "</table:table-cell></table:table-row></table:table>"
    )
    doc = load(write(tmp_path, "soft.odt", odf_zip("text", body, "Soft")))
    assert [p.text for p in doc.pages] == ["Birinci sayfanın sonu", "ikinci sayfada biter.\n\na1", "b1"]


def test_libreoffice_impress_titles_in_text_boxes_and_unclassed_notes() -> None:
    for name in ("impress-textbox-titles-notes.odp", "impress-textbox-titles-notes.pptx"):
        doc = load(WORLD / "libreoffice" / name)
        assert [p.sections[0].path for p in doc.pages] == ["Toplantı Gündemi", "Mali Durum Özeti"], name
        one, two = doc.pages
        assert one.text.startswith("Toplantı Gündemi\nBütçe onayı") and one.text.count("Toplantı Gündemi") == 1
        assert one.text.endswith("Notes:\nKonuşmacı notu: oylamadan önce yeter sayıyı kontrol et."), name
        assert two.text.endswith("Notes:\nDenetçi raporunu ekle."), name
        assert doc.title == "Toplantı Gündemi"


def test_manifest_with_openoffice_doctype_and_note_in_heading(tmp_path: Path) -> None:
    """OpenOffice.org 2 wrote ``<!DOCTYPE manifest:manifest PUBLIC ... "Manifest.dtd">`` (Tika's TIKA-6000 file);
    a footnote cited in a heading stays out of the section title."""
    manifest = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE manifest:manifest PUBLIC "-//OpenOffice.org//DTD '
        b'Manifest 1.0//EN" "Manifest.dtd">\n<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:'
        b'xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="content.xml"/></manifest:manifest>'
    )
    doc = load(write(tmp_path, "oo2.odt", replace_member(make_odt(), "META-INF/manifest.xml", manifest)))
    assert TR_PASSAGE in doc.pages[0].text
    body = (
        '<text:h text:outline-level="1">Paramétrage<text:note text:note-class="footnote"><text:note-citation>6'
        "</text:note-citation><text:note-body><text:p>Voir l’aide.</text:p></text:note-body></text:note></text:h>"
        "<text:p>Le paramétrage se fait ici.</text:p>"
    )
    doc = load(write(tmp_path, "note.odt", odf_zip("text", body, "Koha")))
    (page,) = doc.pages
    assert page.section_at(page.text.index("Le paramétrage se fait")) == "Paramétrage"
    assert "[6] Voir l’aide." in page.text


def test_list_numbers_are_text(tmp_path: Path) -> None:
    """ "madde 3" needs the 3: numbered list items keep their label as LibreOffice shows it (format, prefix,
    suffix, start value, levels shown, numbering continued); bullets add nothing."""
    styles = (
        '<text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-suffix=")" '
        'style:num-format="1"/><text:list-level-style-number text:level="2" style:num-suffix=")" '
        'style:num-format="a"/></text:list-style>'
        '<text:list-style style:name="L2"><text:list-level-style-number text:level="1" style:num-prefix="Madde " '
        'style:num-suffix="." style:num-format="1" text:start-value="3"/><text:list-level-style-number text:level="2" '
        'style:num-suffix="." style:num-format="1" text:display-levels="2"/></text:list-style>'
        '<text:list-style style:name="L3"><text:list-level-style-bullet text:level="1" text:bullet-char="•"/>'
        "</text:list-style>"
    )
    body = (
        '<text:list text:style-name="L1"><text:list-item><text:p>Birinci</text:p><text:list><text:list-item>'
        "<text:p>alt bir</text:p></text:list-item><text:list-item><text:p>alt iki</text:p></text:list-item>"
        "</text:list></text:list-item><text:list-item><text:p>İkinci</text:p></text:list-item></text:list>"
        "<text:p>Ara paragraf.</text:p>"
        '<text:list text:style-name="L1" text:continue-numbering="true"><text:list-item><text:p>Üçüncü</text:p>'
        "</text:list-item></text:list>"
        '<text:list text:style-name="L2"><text:list-item><text:p>Aidat ödenir.</text:p><text:list><text:list-item>'
        "<text:p>Gecikmede faiz işler.</text:p></text:list-item></text:list></text:list-item></text:list>"
        '<text:list text:style-name="L3"><text:list-item><text:p>madde imi</text:p></text:list-item></text:list>'
    )
    doc = load(write(tmp_path, "liste.odt", odf_zip("text", body, "Liste", styles)))
    assert doc.pages[0].text.split("\n\n") == [
        "1) Birinci", "a) alt bir", "b) alt iki", "2) İkinci", "Ara paragraf.", "3) Üçüncü",
        "Madde 3. Aidat ödenir.", "3.1. Gecikmede faiz işler.", "madde imi",
    ]  # fmt: skip


def test_odt_footer_once_per_document_and_pages_from_soft_breaks() -> None:
    """Apache Tika's testFooter.odt: two pages (LibreOffice's PDF export has 2), a page-style footer read once."""
    doc = load(WORLD / "tika" / "testFooter.odt")
    assert [p.text.split("\n")[0] for p in doc.pages] == ["Here is some text...", "Here is some text on page 2"]
    whole = "\n".join(p.text for p in doc.pages)
    assert whole.count("Here is footer text") == 1
    assert doc.pages[-1].section_at(doc.pages[-1].text.index("Here is footer text")) == "Headers and footers"


def test_odp_master_footer_once_and_no_slide_number_title() -> None:
    """Tika's testMasterFooter.odp: an empty slide whose master page carries a footer frame."""
    doc = load(WORLD / "tika" / "testMasterFooter.odp")
    (page,) = doc.pages
    assert page.section_at(page.text.index("Master footer is here")) == "Headers and footers"
    assert doc.title == "testMasterFooter"  # not "Slide 1"


def test_ruby_reading_follows_its_base(tmp_path: Path) -> None:
    body = (
        "<text:p><text:ruby><text:ruby-base>東京</text:ruby-base><text:ruby-text>とうきょう</text:ruby-text>"
        "</text:ruby>に行く</text:p>"
    )
    doc = load(write(tmp_path, "ruby.odt", odf_zip("text", body, "Ruby")))
    assert doc.pages[0].text == "東京 (とうきょう)に行く"


def test_odp_list_numbers_and_embedded_spreadsheet() -> None:
    """odfpy's decks: a numbered outline (LibreOffice's PDF shows "1. Eins", nested lists restarting at 1) and a
    spreadsheet embedded as an object ("Object 1/content.xml")."""
    ol = load(WORLD / "odfpy" / "ol.odp")
    assert ol.pages[0].text.startswith("OL\n1. Eins\n2. Tsvey\n1. Dray\n2. Fir\n3. Finf\n4. Zeks")
    emb = load(WORLD / "odfpy" / "emb_spreadsheet.odp")
    assert "col1 | col2 | col3\nval11 | val21 | val31" in emb.pages[0].text


def test_list_labels_from_libreoffice_templates_and_ordinals(tmp_path: Path) -> None:
    """Word's list formats as LibreOffice saves them (Tika's testWORD_override_list_numbering.doc): ordinals
    ("1st"), zero-padded numbers, and loext:num-list-format label templates with text between the numbers."""
    ns = 'xmlns:loext="urn:org:documentfoundation:names:experimental:office:xmlns:loext:1.0"'
    styles = (
        f'<text:list-style {ns} style:name="L1"><text:list-level-style-number text:level="1" style:num-format="1st"'
        ' loext:num-list-format="%1%"/><text:list-level-style-number text:level="2" style:num-format="1" '
        'loext:num-list-format="%1%.%2%someText"/></text:list-style>'
        '<text:list-style style:name="L2"><text:list-level-style-number text:level="1" '
        'style:num-format="01, 02, 03, ..." style:num-suffix="."/></text:list-style>'
    )
    body = (
        '<text:list text:style-name="L1"><text:list-item><text:p>bir</text:p><text:list><text:list-item>'
        "<text:p>iki</text:p></text:list-item></text:list></text:list-item><text:list-item><text:p>üç</text:p>"
        '</text:list-item></text:list><text:list text:style-name="L2"><text:list-item><text:p>dört</text:p>'
        "</text:list-item></text:list>"
    )
    doc = load(write(tmp_path, "word.odt", odf_zip("text", body, "Liste", styles)))
    assert doc.pages[0].text.split("\n\n") == ["1st bir", "1st.1someText iki", "2nd üç", "01. dört"]


def test_numbered_headings_keep_their_outline_number(tmp_path: Path) -> None:
    """odfpy's manual numbers its headings through text:outline-style ("2.1 Example"), as its table of contents
    shows; a heading style without a number format adds nothing."""
    styles = (
        '<text:outline-style style:name="Outline"><text:outline-level-style text:level="1" style:num-format="1" '
        'style:num-suffix=" "/><text:outline-level-style text:level="2" style:num-format="1" '
        'text:display-levels="2"/></text:outline-style>'
    )
    body = (
        '<text:h text:outline-level="1">Giriş</text:h><text:p>a</text:p>'
        '<text:h text:outline-level="1">Kurul</text:h><text:h text:outline-level="2">Toplantı</text:h>'
        "<text:p>Kurul yılda bir toplanır.</text:p>"
    )
    doc = load(write(tmp_path, "numara.odt", odf_zip("text", body, "Numara", styles)))
    page = doc.pages[0]
    assert page.section_at(page.text.index("Kurul yılda")) == "2 Kurul › 2.1 Toplantı"


def test_embedded_objects_are_read_and_a_doctype_in_one_does_not_fail_the_file() -> None:
    """Tika's testODFwithOOo3.odt (OpenOffice.org 3): an embedded spreadsheet, and a formula object whose
    content.xml carries ``<!DOCTYPE math:math ... "math.dtd">`` (it failed the whole file)."""
    doc = load(WORLD / "tika" / "testODFwithOOo3.odt")
    text = "\n".join(p.text for p in doc.pages)
    assert "Number | Name\n1 | one embedded\n2 | two embedded" in text
    assert "1. First item" in text and "Bibliography" in text
