"""The PDF loader on files real producers wrote (Apache Tika's test documents, tests/fixtures/world/SOURCES.md):
a text layer is never replaced by OCR, pypdf's repairs do not make a file partial, damaged pages are read as far
as they go, placeholder titles are ignored, a password gives one clear message (issue 50)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kaynak.errors import EncryptedFile
from kaynak.ingest.workers import Parsed, ParseTask, parse_file
from kaynak.loaders import LoadOptions, load
from kaynak.loaders.common import meaningful_title
from kaynak.loaders.pdf import load_pdf

TIKA = Path(__file__).resolve().parents[1] / "fixtures" / "world" / "tika"


def _parse(path: Path) -> Parsed:
    parsed = parse_file(ParseTask(str(path), 10 * 2**20, LoadOptions(language="english"), 1000, 100))
    assert isinstance(parsed, Parsed), parsed
    return parsed


def test_a_few_words_of_text_layer_are_kept_not_replaced_by_ocr() -> None:
    # One page, 'Here is some text.' (14 letters, under the scan threshold) and a FreeText comment. OCR used to
    # read the rendered page and replace the text with 'esomen Mere IS a comment', which also became the title.
    doc = load(TIKA / "testAnnotations.pdf")
    text = doc.pages[0].text
    assert text.startswith("Here is some text.")
    assert "Here is a comment" in text  # the annotation's text is added after the page's
    assert "ocr" not in doc.metadata  # a page without images is not a scan
    assert doc.title == "Here is some text."


def test_an_annotation_is_the_text_of_a_page_that_has_no_other() -> None:
    doc = load(TIKA / "testPopupAnnotation.pdf")
    assert "this is the note" in doc.pages[0].text
    assert doc.metadata["annotated_pages"] == [1]


def test_pypdf_repairs_do_not_make_a_complete_pdf_partial() -> None:
    # A byte-order mark before %PDF and a wrong startxref: pypdf repairs both and logs it; the text is all there.
    parsed = _parse(TIKA / "testPDF_bom.pdf")
    assert parsed.warnings == []
    assert "Hello World" in parsed.pages[0].text
    assert parsed.metadata["pdf_repairs"]  # kept as a fact about the file
    assert parsed.title == "Hello World"  # its metadata title '(Untitled)' is a placeholder


def test_damaged_pages_are_read_by_pdfium_as_far_as_they_go() -> None:
    # A US government PDF whose pages 2, 12 and 13 have broken content streams (pypdf raises on them).
    parsed = _parse(TIKA / "testPDF_bad_page_303226.pdf")
    assert parsed.metadata["pages_read_by_pdfium"] == [2, 12, 13]
    assert "21 CFR" in parsed.pages[1].text and "cartridge" in parsed.pages[12].text
    # something may really be lost on those pages: the file stays partial, the warning says which page, no
    # third-party exception text
    assert len(parsed.warnings) == 3
    assert all("fallback reader" in w and "PdfReadError" not in w for w in parsed.warnings)


def test_a_user_password_gives_one_clear_message() -> None:
    path = TIKA / "testPDF_no_extract_no_accessibility_owner_user.pdf"
    with pytest.raises(EncryptedFile) as err:
        load(path)
    assert err.value.reason == f"{path.name} is password-protected; save it without a password first"
    failure = parse_file(ParseTask(str(path), 10 * 2**20, None, 1000, 100))
    assert not isinstance(failure, Parsed)
    assert failure.warnings == []  # no 'pypdf._reader: incorrect startxref pointer' beside the reason


@pytest.mark.parametrize("placeholder", ["(anonymous)", "anonymous", "(unspecified)", "untitled", "Untitled-1"])
def test_producer_default_titles_are_not_titles(placeholder: str) -> None:
    assert meaningful_title(placeholder) is None
    import pypdf

    writer = pypdf.PdfWriter(clone_from=TIKA / "testAnnotations.pdf")
    writer.add_metadata({"/Title": placeholder, "/Author": "(anonymous)"})
    out = io.BytesIO()
    writer.write(out)
    doc = load_pdf(Path("report.pdf"), out.getvalue())
    assert doc.title == "Here is some text."


def test_filled_in_form_values_are_text() -> None:
    # pdftotext shows what a form's fields hold ('Alice', 'TIKA-1226' in py-pdf's and Tika's form PDFs); kaynak
    # read only the page's own text. A text field's value and a choice field's shown item are added.
    import pypdf
    from pypdf.generic import ArrayObject, DictionaryObject, NameObject, TextStringObject

    writer = pypdf.PdfWriter(clone_from=TIKA / "testAnnotations.pdf")
    page = writer.pages[0]

    def widget(**keys: object) -> None:
        d = DictionaryObject({NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject("/Widget")})
        d.update({NameObject(f"/{k}"): v for k, v in keys.items()})
        page[NameObject("/Annots")].append(writer._add_object(d))

    widget(FT=NameObject("/Tx"), T=TextStringObject("Ad"), V=TextStringObject("Ayşe Yılmaz"))
    opts = ArrayObject([ArrayObject([TextStringObject("tr"), TextStringObject("Türkiye")])])
    widget(FT=NameObject("/Ch"), T=TextStringObject("Ülke"), V=TextStringObject("tr"), Opt=opts)
    widget(FT=NameObject("/Btn"), T=TextStringObject("Onay"), V=NameObject("/Yes"))
    out = io.BytesIO()
    writer.write(out)
    text = load_pdf(Path("form.pdf"), out.getvalue()).pages[0].text
    assert text.startswith("Here is some text.") and "Ayşe Yılmaz" in text and "Türkiye" in text
    assert "Yes" not in text and "/Yes" not in text


def test_a_damaged_pdf_says_what_without_the_parser_class(tmp_path: Path) -> None:
    from kaynak.errors import CorruptFile

    data = (TIKA / "testPDF_bom.pdf").read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(CorruptFile) as err:
        load(path)
    assert err.value.reason.startswith("corrupt or truncated PDF") and "Error:" not in err.value.reason
