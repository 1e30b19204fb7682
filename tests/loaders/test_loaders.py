"""Loader tests: every format on real documents (fixtures copied from ../shared/data/docs) and on generated bad
input: encrypted, truncated, scanned and partly broken PDFs, zip bombs, 100,000-deep HTML, size limits."""

from __future__ import annotations

import hashlib
import io
import os
import re
import time
import unicodedata
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kaynak.errors import (
    CorruptFile,
    EncryptedFile,
    FileTooLarge,
    KaynakError,
    LoaderError,
    NoText,
    UnsupportedFileType,
)
from kaynak.loaders import SUPPORTED_EXTENSIONS, decode_bytes, load, normalize_text
from kaynak.loaders.common import meaningful_title
from kaynak.loaders.normalize import decode_with_encoding, repair_decomposed_diacritics
from testkit import paths

FIXTURES = paths.FIXTURES / "docs"
SHARED_DOCS = paths.SHARED_DATA / "docs"
needs_shared = pytest.mark.skipif(not SHARED_DOCS.is_dir(), reason="../shared/data/docs is not present")


def fx(rel: str) -> Path:
    return FIXTURES / rel


def all_text(doc) -> str:
    return "\n\n".join(p.text for p in doc.pages)


# --------------------------------------------------------------------------------------------- PDF generation


_DIFFERENCES = {
    128: "scedilla", 129: "gbreve", 130: "dotlessi", 131: "Idotaccent", 132: "Scedilla", 133: "Gbreve",
    134: "cedilla", 135: "breve", 136: "dotaccent", 137: "dieresis", 138: "ccedilla", 139: "odieresis",
    140: "udieresis", 141: "Odieresis", 142: "Udieresis", 143: "Ccedilla",
}  # fmt: skip
_CODES = {
    "ş": 128, "ğ": 129, "ı": 130, "İ": 131, "Ş": 132, "Ğ": 133, "¸": 134, "˘": 135, "˙": 136, "¨": 137,
    "ç": 138, "ö": 139, "ü": 140, "Ö": 141, "Ü": 142, "Ç": 143,
}  # fmt: skip


def _pdf_string(text: str) -> bytes:
    raw = b"".join(bytes([_CODES[ch]]) if ch in _CODES else ch.encode("cp1252") for ch in text)
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def make_pdf(
    pages: list[list[tuple[float, float, str]]],
    *,
    size: float = 11,
    bad_filter_pages: tuple[int, ...] = (),
    user_password: str | None = None,
    owner_password: str | None = None,
) -> bytes:
    """A PDF whose pages hold ``(x, y, text)`` lines in Helvetica; Turkish letters and TeX's spacing accents are
    reachable through a /Differences encoding, as in real PDFs."""
    from pypdf import PdfWriter
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

    writer = PdfWriter()
    diffs = ArrayObject()
    for code, name in sorted(_DIFFERENCES.items()):
        diffs.extend([NumberObject(code), NameObject("/" + name)])
    encoding = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Encoding"),
            NameObject("/BaseEncoding"): NameObject("/WinAnsiEncoding"),
            NameObject("/Differences"): diffs,
        }
    )
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): encoding,
        }
    )
    for i, lines in enumerate(pages):
        page = writer.add_blank_page(width=595, height=842)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        ops = [b"BT /F1 %g Tf %g %g Td (" % (size, x, y) + _pdf_string(t) + b") Tj ET" for x, y, t in lines]
        stream = DecodedStreamObject()
        stream.set_data(b"\n".join(ops))
        if i in bad_filter_pages:
            stream[NameObject("/Filter")] = NameObject("/NoSuchDecode")
        page.replace_contents(stream)
    if user_password is not None or owner_password is not None:
        writer.encrypt(user_password=user_password or "", owner_password=owner_password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def paragraph_lines(text: str, x: float = 72, top: float = 760, width: int = 80, step: float = 14) -> list:
    """Lay ``text`` out as left-aligned lines of at most ``width`` characters."""
    words = text.split()
    lines: list[str] = []
    cur = ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    if cur:
        lines.append(cur)
    return [(x, top - i * step, line) for i, line in enumerate(lines)]


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


# --------------------------------------------------------------------------------------------- registry, limits


def test_supported_extensions_and_case_insensitive_lookup(tmp_path: Path) -> None:
    assert {".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx"} <= SUPPORTED_EXTENSIONS
    assert all(ext == ext.lower() and ext.startswith(".") for ext in SUPPORTED_EXTENSIONS)
    doc = load(write(tmp_path, "NOTES.TXT", "Merhaba dünya. İkinci cümle."))
    assert doc.pages[0].text == "Merhaba dünya. İkinci cümle."
    doc = load(write(tmp_path, "Readme.MD", "# Başlık\n\nMetin."))
    assert doc.title == "Başlık"


def test_unsupported_extension_names_file_and_reason(tmp_path: Path) -> None:
    path = write(tmp_path, "sheet.numbers", b"PK\x03\x04")
    with pytest.raises(UnsupportedFileType) as err:
        load(path)
    assert str(path) in str(err.value) and "'.numbers'" in str(err.value)
    assert isinstance(err.value, LoaderError) and isinstance(err.value, KaynakError)
    with pytest.raises(UnsupportedFileType, match="without an extension"):
        load(write(tmp_path, "Makefile", "all:"))


def test_file_too_large_is_refused_before_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as fh:
        fh.truncate(8 * 1024**3)  # a sparse 8 GiB file: reading it would take minutes and all memory
    start = time.perf_counter()
    with pytest.raises(FileTooLarge) as err:
        load(huge, max_bytes=1024 * 1024)
    assert time.perf_counter() - start < 1.0
    assert str(huge) in str(err.value) and "limit" in str(err.value)
    with pytest.raises(FileTooLarge):
        load(huge)  # the default limit (100 MB) applies when none is given
    small = write(tmp_path, "small.txt", "x" * 2000)
    with pytest.raises(FileTooLarge):
        load(small, max_bytes=1999)
    assert load(small, max_bytes=2000).pages[0].text == "x" * 2000


def test_missing_file_and_directory_are_named(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="not found") as err:
        load(tmp_path / "nope.pdf")
    assert "nope.pdf" in str(err.value)
    folder = tmp_path / "folder.md"
    folder.mkdir()
    with pytest.raises(LoaderError, match="directory"):
        load(folder)


@pytest.mark.parametrize("name", ["empty.txt", "empty.md", "empty.html", "empty.pdf", "empty.docx"])
def test_empty_file_has_no_text(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name, b"")
    with pytest.raises(NoText, match="no text") as err:
        load(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("blank.txt", b"  \n\x00\x00\n\t\f\f \r\n"),
        ("blank.md", b"---\ntitle: Only front matter\n---\n\n<!-- a comment -->\n"),
        ("blank.html", b"<html><head><title>T</title><script>var a = 1;</script></head><body> </body></html>"),
    ],
)
def test_textless_file_has_no_text(tmp_path: Path, name: str, data: bytes) -> None:
    with pytest.raises(NoText, match="no text"):
        load(write(tmp_path, name, data))


# --------------------------------------------------------------------------------------------- normalisation


def test_normalize_text_cleans_and_is_idempotent() -> None:
    raw = "Ka\u0307t s\u0327ey\x00 \u00a0ﬁle ﬂow\x07\r\nnext\rline\u200b\u00ad\n\n\n\nend\ufeff  \t x"
    clean = normalize_text(raw)
    assert clean == "Kȧt şey file flow\nnext\nline\n\nend x"
    assert normalize_text(clean) == clean
    assert "\x00" not in normalize_text("a\x00b") and normalize_text("a\x00b") == "ab"
    assert normalize_text("bad \ud800 surrogate") == "bad surrogate"
    assert normalize_text("  code\n    indented\t tab  \n", keep_layout=True) == "  code\n    indented\t tab"


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_normalize_text_properties(text: str) -> None:
    clean = normalize_text(text)
    assert normalize_text(clean) == clean
    assert unicodedata.is_normalized("NFC", clean)
    assert "\x00" not in clean and "\r" not in clean and "\ufb01" not in clean
    assert "\n\n\n" not in clean and "  " not in clean
    assert clean == clean.strip()


def test_decode_bytes_fallback_chain() -> None:
    turkish = "Şu İğdır'da ılık çay, ÖĞÜŞÇ öğüşç."
    assert decode_bytes(turkish.encode("utf-8")) == turkish
    assert decode_with_encoding(b"\xef\xbb\xbf" + turkish.encode("utf-8")) == (turkish, "utf-8-sig")
    assert decode_with_encoding(b"\xff\xfe" + turkish.encode("utf-16-le")) == (turkish, "utf-16-le")
    assert decode_with_encoding(b"\xfe\xff" + turkish.encode("utf-16-be")) == (turkish, "utf-16-be")
    assert decode_with_encoding(turkish.encode("cp1254")) == (turkish, "cp1254")
    assert decode_with_encoding(turkish.encode("utf-16-le"))[1] == "utf-16-le"  # no BOM, unmistakable NULs
    text, encoding = decode_with_encoding(b"abc \x81 def")  # 0x81 is undefined in Windows-1254
    assert encoding == "cp1254+replace" and text == "abc \ufffd def"
    assert decode_bytes(b"") == ""


def test_repair_decomposed_diacritics() -> None:
    assert repair_decomposed_diacritics("s¸ c¸ ˘g ˙I ¨o ¨u S¸ ˘G ¨O ¨U C¸") == "ş ç ğ İ ö ü Ş Ğ Ö Ü Ç"
    assert repair_decomposed_diacritics("s ¸ahıs ve ˘ gibi") == "şahıs ve ğibi"  # one space tolerated
    assert repair_decomposed_diacritics("¨\u0131") == "ï"  # TeX accents the dotless i
    assert repair_decomposed_diacritics("¨q 5¸") == "¨q 5¸"  # no such letters: left alone
    assert repair_decomposed_diacritics("plain text") == "plain text"


def test_meaningful_title() -> None:
    assert meaningful_title("3959") is None
    assert meaningful_title("Microsoft Word - rapor_son.doc") == "rapor_son"
    assert meaningful_title("Untitled") is None
    assert meaningful_title("C:\\Docs\\x.wpd") is None
    assert meaningful_title("  Kat Mülkiyeti   Kanunu ") == "Kat Mülkiyeti Kanunu"
    assert meaningful_title(None) is None


# --------------------------------------------------------------------------------------------- text


def test_cp1254_utf16_and_bom_decode_to_the_utf8_original(tmp_path: Path) -> None:
    original = load(fx("txt/tr-utf8-super_bowl_50.txt"))
    legacy = load(fx("txt/tr-cp1254-super_bowl_50.txt"))
    assert legacy.metadata["encoding"] == "cp1254" and original.metadata["encoding"] == "utf-8"
    text = original.pages[0].text
    assert legacy.pages[0].text == text
    assert all(ch in text for ch in "şğıöüç")
    raw = fx("txt/tr-utf8-super_bowl_50.txt").read_bytes().decode("utf-8")
    variants = {
        "le.txt": b"\xff\xfe" + raw.encode("utf-16-le"),
        "be.txt": b"\xfe\xff" + raw.encode("utf-16-be"),
        "bom.txt": b"\xef\xbb\xbf" + raw.encode("utf-8"),
        "crlf.txt": raw.replace("\n", "\r\n").encode("cp1254"),
    }
    for name, data in variants.items():
        assert load(write(tmp_path, name, data)).pages[0].text == text, name
    # Independent check: the same XQuAD paragraphs, stored as UTF-8 inside the bilingual DOCX.
    docx_text = load(fx("docx/xquad_tr_en_bilingual_GENERATED.docx")).pages[0].text
    assert sum(p in docx_text for p in text.split("\n\n")) >= 2


def test_utf8_bom_file(tmp_path: Path) -> None:
    path = fx("txt/tr-utf8-bom-normans.txt")
    doc = load(path)
    assert doc.metadata["encoding"] == "utf-8-sig"
    assert "\ufeff" not in doc.pages[0].text and doc.pages[0].text.startswith("Rollo'nun gelişinden")
    stripped = write(tmp_path, "nobom.txt", path.read_bytes()[3:])
    assert load(stripped).pages[0].text == doc.pages[0].text


def test_form_feed_pages() -> None:
    doc = load(fx("txt/tr-formfeed-pages-warsaw.txt"))
    raw = fx("txt/tr-formfeed-pages-warsaw.txt").read_bytes().decode("utf-8")
    assert [p.number for p in doc.pages] == list(range(1, raw.count("\f") + 2))
    assert all(p.text and "\f" not in p.text for p in doc.pages)
    assert doc.pages[1].text.startswith("Yerel rakipleri Polonya Varşova")
    assert doc.title == "tr-formfeed-pages-warsaw"


def test_form_feed_numbering_and_newlines(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "ff.txt", "one\r\ntwo\rthree\n\f\f third page\f"))
    assert [(p.number, p.text) for p in doc.pages] == [(1, "one\ntwo\nthree"), (2, ""), (3, "third page")]
    assert doc.metadata["newlines"] == "mixed"


# --------------------------------------------------------------------------------------------- markdown


def test_markdown_sections_front_matter_and_code(tmp_path: Path) -> None:
    source = """---
title: "Kurulum Kılavuzu"
tags: [kurulum, pip]
date: 2024-05-01
---

Giriş paragrafı.

# Install

Use pip.
It is easy.

## From source

```bash
git clone https://example.org/x.git
    cd x   # indented
```

After that run the tests.

# Usage {#usage}

* first item
* second item

| Name | Value |
| --- | --- |
| a | 1 |
"""
    doc = load(write(tmp_path, "guide.md", source))
    page = doc.pages[0]
    assert doc.title == "Kurulum Kılavuzu"
    assert doc.metadata["front_matter"] == {
        "title": "Kurulum Kılavuzu",
        "tags": ["kurulum", "pip"],
        "date": "2024-05-01",
    }
    assert "title:" not in page.text and "---" not in page.text
    paths = [s.path for s in page.sections]
    assert paths == ["Install", "Install › From source", "Usage"]
    for s in page.sections:
        assert page.text[s.start :].startswith(s.path.split(" › ")[-1])
    assert page.section_at(page.text.index("Giriş")) is None
    assert page.section_at(page.text.index("git clone")) == "Install › From source"
    assert "Use pip. It is easy." in page.text  # soft line breaks reflowed
    assert "git clone https://example.org/x.git\n    cd x   # indented" in page.text  # code verbatim
    assert "• first item\n• second item" in page.text
    assert "Name | Value\na | 1" in page.text

    from kaynak.chunking import split_sentences

    code_start = page.text.index("git clone")
    for s, e in split_sentences(page.text):
        if s <= code_start < e:
            assert "Use pip" not in page.text[s:e] and "After that" not in page.text[s:e]


def test_markdown_title_falls_back_to_h1_and_bad_front_matter_warns(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "a.md", "Intro\n\n# Real Title\n\nText."))
    assert doc.title == "Real Title"
    doc = load(write(tmp_path, "b.md", "---\ntitle: [unclosed\n---\n\n## Sub\n\nText."))
    assert doc.warnings and "front matter" in doc.warnings[0]
    assert doc.title == "Sub" and "unclosed" not in doc.pages[0].text


def test_markdown_real_documents_parallel_tr_en() -> None:
    en = load(fx("md/en/your-first-component.md"))
    tr = load(fx("md/tr/your-first-component.md"))
    assert en.title == "Your First Component" and tr.title == "İlk Bileşeniniz"
    assert len(en.pages[0].sections) == len(tr.pages[0].sections) > 5
    for doc in (en, tr):
        text = doc.pages[0].text
        assert "{/*" not in text and "<Intro>" not in text and "<Sandpack>" not in text
        assert all("{/" not in s.path for s in doc.pages[0].sections)
    assert en.pages[0].sections[0].path == "Components: UI building blocks"
    assert "export default function Profile() {\n  return (" in en.pages[0].text


# --------------------------------------------------------------------------------------------- HTML


def test_html_visible_text_title_and_sections(tmp_path: Path) -> None:
    html = """<!doctype html><html lang="tr"><head><title>Başlık &amp; Sayfa</title>
    <style>.x{color:red}</style><script>alert("gizli")</script></head>
    <body><nav><a href="/">Ana sayfa</a> | <a href="/x">Menü</a></nav>
    <header><p>Site başlığı</p></header>
    <main><h1>Kurulum</h1><p>Birinci   paragraf<br>ikinci satır.</p>
    <div hidden>gizli metin</div><p style="display: none">görünmez</p><span aria-hidden="true">ikon</span>
    <h2>Kaynaktan</h2><p>Derleyin.</p><pre>  kod
    satırı</pre>
    <table><tr><th>Ad</th><th>Değer</th></tr><tr><td>a</td><td>1</td></tr></table>
    <h2>Diğer</h2><ul><li>bir</li><li>iki</li></ul></main>
    <footer>© 2024 Telif</footer></body></html>"""
    doc = load(write(tmp_path, "page.html", html))
    text = doc.pages[0].text
    assert doc.title == "Başlık & Sayfa" and doc.metadata["lang"] == "tr"
    for hidden in ("alert", "color", "Ana sayfa", "Menü", "Site başlığı", "gizli metin", "görünmez", "ikon", "Telif"):
        assert hidden not in text, hidden
    assert "Birinci paragraf\nikinci satır." in text
    assert "  kod\n    satırı" in text
    assert "Ad | Değer\na | 1" in text
    assert [s.path for s in doc.pages[0].sections] == ["Kurulum", "Kurulum › Kaynaktan", "Kurulum › Diğer"]
    assert doc.pages[0].section_at(text.index("Derleyin")) == "Kurulum › Kaynaktan"


def test_html_charset_declared_or_fallback(tmp_path: Path) -> None:
    body = "<p>Işık ğüşiöç İĞÜŞÖÇ</p>"
    declared = f'<html><head><meta charset="iso-8859-9"><title>t</title></head><body>{body}</body></html>'
    doc = load(write(tmp_path, "latin5.html", declared.encode("cp1254")))
    assert doc.pages[0].text == "Işık ğüşiöç İĞÜŞÖÇ" and doc.metadata["encoding"] == "cp1254"
    http_equiv = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1254">'
        f"</head><body>{body}</body></html>"
    )
    assert load(write(tmp_path, "w1254.html", http_equiv.encode("cp1254"))).pages[0].text == "Işık ğüşiöç İĞÜŞÖÇ"
    undeclared = f"<html><body>{body}</body></html>".encode("cp1254")
    doc = load(write(tmp_path, "none.html", undeclared))
    assert doc.pages[0].text == "Işık ğüşiöç İĞÜŞÖÇ" and doc.metadata["encoding"] == "cp1254"
    wrong = f'<html><head><meta charset="utf-8"></head><body>{body}</body></html>'.encode("cp1254")
    doc = load(write(tmp_path, "wrong.html", wrong))
    assert doc.pages[0].text == "Işık ğüşiöç İĞÜŞÖÇ" and doc.warnings


def test_html_nested_100000_deep(tmp_path: Path) -> None:
    depth = 100_000
    html = (
        "<html><body><p>Önce.</p>" + "<div>" * depth + "derin metin" + "</div>" * depth + "<p>Sonra.</p></body></html>"
    )
    start = time.perf_counter()
    doc = load(write(tmp_path, "deep.html", html))
    assert time.perf_counter() - start < 10
    assert doc.pages[0].text.split() == ["Önce.", "derin", "metin", "Sonra."]
    assert any("nested" in w for w in doc.warnings)


def test_html_real_documents_parallel_tr_en() -> None:
    en = load(fx("html/en/shared_guide_pasting.html"))
    tr = load(fx("html/tr/shared_guide_pasting.html"))
    assert en.title == "Pasting Contents in Special Formats"
    assert tr.title == "Özel Biçimlerde İçerikleri Yapıştırmak"
    assert [s.path.count("›") for s in en.pages[0].sections] == [s.path.count("›") for s in tr.pages[0].sections]
    for doc in (en, tr):
        text = doc.pages[0].text
        assert "Help content debug info" not in text  # footer
        assert "LibreOffice 7.4" not in text  # page header
        assert "accordion" not in text and "var " not in text
    assert "Geçici taşıma panosundaki içerikler belgenize farklı biçimlerde yapıştırılabilir." in tr.pages[0].text


# --------------------------------------------------------------------------------------------- DOCX


def test_docx_headings_tables_and_headers_footers_once() -> None:
    doc = load(fx("docx/xquad_tr_en_bilingual_GENERATED.docx"))
    page = doc.pages[0]
    assert doc.title == "XQuAD paralel paragraflar / parallel paragraphs"
    assert doc.metadata["author"] == "python-docx"
    paths = [s.path for s in page.sections]
    assert paths[1] == "XQuAD örnek paragraflar — Türkçe ve İngilizce › Super Bowl 50"
    assert "Türkçe | English" in page.text
    assert "Panthers savunması kaç sayı bırakmıştır? | How many points did the Panthers defense surrender?" in page.text
    hf = load(fx("docx/hdr-header-footer.docx"))
    page = hf.pages[0]
    assert page.text.startswith("section with header\n\nsection without header of its own.")
    # headers and footers once for the document, after the body, in a section of their own
    assert page.text.count("Header for section-1") == 1 and page.text.count("Footer for section 1") == 1
    assert page.section_at(page.text.index("Footer for section 1")) == "Headers and footers"
    assert page.section_at(page.text.index("section with header")) is None


def test_docx_generated_with_styles(tmp_path: Path) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = "Rapor"
    d.add_heading("Giriş", level=1)
    d.add_paragraph("İlk paragraf.")
    d.add_heading("Ayrıntı", level=2)
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Ad", "Soyad"
    table.cell(1, 0).text, table.cell(1, 1).text = "Ayşe", "Yılmaz"
    d.add_heading("Sonuç", level=1)
    d.add_paragraph("Son.")
    d.sections[0].header.paragraphs[0].text = "GİZLİ ÜST BİLGİ"
    path = tmp_path / "rapor.docx"
    d.save(str(path))
    doc = load(path)
    page = doc.pages[0]
    assert doc.title == "Rapor"
    assert [s.path for s in page.sections] == ["Giriş", "Giriş › Ayrıntı", "Sonuç", "Headers and footers"]
    assert "Ad | Soyad\nAyşe | Yılmaz" in page.text and page.text.endswith("Headers and footers\n\nGİZLİ ÜST BİLGİ")
    assert page.section_at(page.text.index("Ayşe")) == "Giriş › Ayrıntı"


def test_docx_not_a_zip(tmp_path: Path) -> None:
    path = write(tmp_path, "fake.docx", b"This is plain text pretending to be a Word file.")
    with pytest.raises(CorruptFile, match="not a zip") as err:
        load(path)
    assert str(path) in str(err.value)
    broken = write(tmp_path, "broken.docx", b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(CorruptFile):
        load(broken)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("hello.txt", "not word")
    with pytest.raises(CorruptFile, match="not a Word document"):
        load(write(tmp_path, "other.docx", buf.getvalue()))


def test_docx_zip_bomb_rejected_without_inflating(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", b"<w:document>" + b" " * (24 * 1024 * 1024) + b"</w:document>")
    data = buf.getvalue()
    assert len(data) < 1024 * 1024
    path = write(tmp_path, "bomb.docx", data)
    start = time.perf_counter()
    with pytest.raises(CorruptFile, match="zip bomb") as err:
        load(path)
    assert time.perf_counter() - start < 2
    assert str(path) in str(err.value)


# --------------------------------------------------------------------------------------------- PDF, real documents


# PDFs are slow to parse (pypdf is pure Python): each real one is loaded once per test session.
_LOADED: dict[str, object] = {}
_RAW: dict[str, list[str]] = {}


def load_once(path: Path):
    key = hashlib.sha1(path.read_bytes()).hexdigest()
    if key not in _LOADED:
        if path.suffix.lower() == ".pdf":
            from kaynak.loaders.pdf import load_pdf

            raw: list[str] = []  # pypdf's raw text, for the hyphenation count
            _LOADED[key] = load_pdf(path, path.read_bytes(), raw_pages=raw)
            _RAW[key] = raw
        else:
            _LOADED[key] = load(path)
    return _LOADED[key]


@pytest.fixture(scope="module")
def kat_mulkiyeti():
    return load_once(fx("pdf/kat-mulkiyeti.pdf"))


@pytest.fixture(scope="module")
def naacl():
    return load_once(fx("pdf/naacl06-shinyama.pdf"))


def test_turkish_law_pdf_keeps_under_two_percent_hyphen_artifacts(kat_mulkiyeti) -> None:
    from testkit.hyphenation import hyphen_artifacts, line_end_hyphens

    # pypdf's own text of every page (exactly what PdfReader.pages[i].extract_text() returns), joined so that
    # the hyphens across page breaks count too.
    raw = "\n".join(_RAW[hashlib.sha1(fx("pdf/kat-mulkiyeti.pdf").read_bytes()).hexdigest()])
    pairs = line_end_hyphens(raw)
    clean = "\n".join(p.text for p in kat_mulkiyeti.pages)
    artifacts = hyphen_artifacts(pairs, clean)
    rate = artifacts / len(pairs)
    print(f"\nkat-mulkiyeti.pdf: {len(pairs)} line-end hyphens, {artifacts} left as artifacts ({rate:.1%})")
    assert len(pairs) > 200
    assert rate < 0.02
    assert "kat malikleri" in clean and "bölümleri üzerinde" in clean and "mülkiyet paylarına" in clean


def test_turkish_law_pdf_structure(kat_mulkiyeti) -> None:
    doc = kat_mulkiyeti
    assert doc.title == "KAT MÜLKİYETİ KANUNU"  # the PDF's own title is "3959"
    assert [p.number for p in doc.pages] == list(range(1, 32)) and doc.metadata["page_count"] == 31
    first = doc.pages[0].text
    assert first.startswith("KAT MÜLKİYETİ KANUNU\n\nKanun Numarası : 634")
    madde1 = (
        "Madde 1 – Tamamlanmış bir yapının kat, daire, iş bürosu, dükkan, mağaza, mahzen, depo gibi bölümlerinden "
        "ayrı ayrı ve başlı başına kullanılmaya elverişli olanları üzerinde, o gayrimenkulün maliki veya ortak "
        "malikleri tarafından, bu Kanun hükümlerine göre, bağımsız mülkiyet hakları kurulabilir."
    )
    assert madde1 + "\n\n" in first  # one reflowed paragraph, its own
    assert "\nb) Anagayrimenkulün bağımsız bölümleri" in first  # list items start paragraphs
    assert "sığınaklar,1" not in doc.pages[1].text and "sığınaklar," in doc.pages[1].text  # footnote mark
    assert not doc.warnings


def test_two_column_paper_reads_column_by_column(naacl) -> None:
    text = naacl.pages[0].text
    left = (
        "The goal of Information Extraction, or IE, is to retrieve a certain type of news event from past articles "
        "and present the events as a table whose columns are filled with a name of a person or company, according "
        "to its role in the event."
    )
    right = "For each row of an extracted table, you can always read it as “COMPANY hired (or fired) PERSON for POST.”"
    assert left in text and right in text
    assert text.index("Every day, a large number of news articles are created") < text.index(left)
    assert text.index(left) < text.index("An IE task can be defined as finding a relation") < text.index(right)
    assert naacl.title == "Preemptive Information Extraction using Unrestricted Relation Discovery"
    all_pages = "\n".join(p.text for p in naacl.pages)
    assert "Existing IE systems" in all_pages and "F-score" in all_pages  # a real hyphen survives


# --------------------------------------------------------------------------------------------- PDF, generated


def test_pdf_decomposed_diacritics_and_hyphenation(tmp_path: Path) -> None:
    lines = [
        (72, 760, "Kat malikleri s¸ahsi ˘gelir ˙Istanbul c¸ok ¨ozel bir kat ma-"),
        (72, 746, "likleri kurulu toplantısı, yönetim planına göre her yıl yapılır ve"),
        (72, 732, "kararlar oylamayla alınır."),
    ]
    doc = load(write(tmp_path, "tex.pdf", make_pdf([lines])))
    assert doc.pages[0].text == (
        "Kat malikleri şahsi ğelir İstanbul çok özel bir kat malikleri kurulu toplantısı, yönetim planına göre her "
        "yıl yapılır ve kararlar oylamayla alınır."
    )


def test_pdf_running_headers_footers_and_page_numbers_dropped(tmp_path: Path) -> None:
    body = [
        "Birinci sayfanın metni burada başlar ve birkaç satır boyunca devam eder, sonra biter.",
        "İkinci sayfa başka bir konuyu anlatır; yine birkaç satır sürer ve noktayla biter.",
        "Üçüncü sayfada tablo yok, yalnızca düz metin var ve o da kısa tutulmuştur burada.",
        "Dördüncü ve son sayfa belgeyi kapatır; özet ve sonuç bu sayfadadır, hepsi bu.",
    ]
    pages = []
    for n, text in enumerate(body, start=1):
        lines = [(72, 800, "ACME Yıllık Rapor 2024 — Gizli")]
        lines += paragraph_lines(text, top=740)
        lines += [(280, 40, f"Sayfa {n} / 4")]
        pages.append(lines)
    doc = load(write(tmp_path, "report.pdf", make_pdf(pages)))
    for page, text in zip(doc.pages, body, strict=True):
        assert page.text == text
    assert doc.metadata["running_lines_removed"] == 8


def test_pdf_encrypted_with_password_is_refused(tmp_path: Path) -> None:
    data = make_pdf([paragraph_lines("Gizli belge metni.")], user_password="parola", owner_password="sahip")
    path = write(tmp_path, "locked.pdf", data)
    with pytest.raises(EncryptedFile, match="encrypted") as err:
        load(path)
    assert str(path) in str(err.value) and "password" in str(err.value)


def test_pdf_encrypted_without_user_password_opens(tmp_path: Path) -> None:
    data = make_pdf([paragraph_lines("Yalnızca izinleri kısıtlı bir belge.")], owner_password="sahip")
    doc = load(write(tmp_path, "restricted.pdf", data))
    assert doc.pages[0].text == "Yalnızca izinleri kısıtlı bir belge." and doc.metadata["encrypted"] is True


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.97])
def test_pdf_truncated_is_corrupt(tmp_path: Path, fraction: float) -> None:
    data = fx("pdf/kat-mulkiyeti.pdf").read_bytes()
    path = write(tmp_path, "truncated.pdf", data[: int(len(data) * fraction)])
    with pytest.raises(CorruptFile) as err:
        load(path)
    assert str(path) in str(err.value)


def test_pdf_garbage_is_corrupt(tmp_path: Path) -> None:
    with pytest.raises(CorruptFile, match="not a PDF"):
        load(write(tmp_path, "fake.pdf", b"<html>not a pdf</html>"))
    with pytest.raises(CorruptFile):
        load(write(tmp_path, "broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\n%%EOF"))


def test_pdf_page_that_fails_is_skipped_with_warning(tmp_path: Path) -> None:
    pages = [paragraph_lines(f"Sayfa {n} metni, okunabilir durumda.") for n in (1, 2, 3)]
    doc = load(write(tmp_path, "partly.pdf", make_pdf(pages, bad_filter_pages=(1,))))
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert doc.pages[0].text == "Sayfa 1 metni, okunabilir durumda."
    assert doc.pages[1].text == "Sayfa 2 metni, okunabilir durumda."  # pypdf fails on it; pdfium reads it (issue 50)
    assert doc.pages[2].text == "Sayfa 3 metni, okunabilir durumda."
    assert len(doc.warnings) == 1 and doc.warnings[0].startswith("page 2:") and "fallback" in doc.warnings[0]
    assert doc.metadata["failed_pages"] == [2] and doc.metadata["pages_read_by_pdfium"] == [2]


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    path = write(tmp_path, "scan.pdf", make_pdf([[], []]))
    with pytest.raises(NoText) as err:
        load(path)
    assert "no text layer" in str(err.value) and str(path) in str(err.value)


def test_pdf_partly_scanned_warns(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "mixed.pdf", make_pdf([paragraph_lines("Metin var."), []])))
    assert doc.pages[1].text == "" and any("no text layer on page(s) 2" in w for w in doc.warnings)


# --------------------------------------------------------------------------------------------- every sample


_INTENDED_ERRORS = {"docx/tbl-having-tables.docx": NoText}  # tables whose every cell is empty
_SLOW_SAMPLES = {"pdf/GeoTopo-komprimiert.pdf", "pdf/i1040nr.pdf"}


def _samples(slow: bool) -> list[str]:
    if not SHARED_DOCS.is_dir():
        return []
    rels = sorted(str(p.relative_to(SHARED_DOCS)) for p in SHARED_DOCS.rglob("*") if p.is_file())
    return [r for r in rels if (r in _SLOW_SAMPLES) == slow]


def _check_sample(rel: str) -> None:
    path = SHARED_DOCS / rel
    expected = _INTENDED_ERRORS.get(rel)
    if path.suffix.lower() not in SUPPORTED_EXTENSIONS:
        with pytest.raises(UnsupportedFileType):
            load(path)
        return
    if expected is not None:
        with pytest.raises(expected) as err:
            load(path)
        assert str(path) in str(err.value)
        return
    doc = load_once(path) if path.suffix.lower() == ".pdf" else load(path)
    assert doc.title.strip()
    assert any(p.text for p in doc.pages)
    assert [p.number for p in doc.pages] == list(range(1, len(doc.pages) + 1))
    for page in doc.pages:
        assert page.text == normalize_text(page.text) or page.sections or "\n" in page.text
        assert "\x00" not in page.text and "\ufb01" not in page.text and "\r" not in page.text
        assert not re.search(r"[\x00-\x08\x0b-\x1f]", page.text)
        for s in page.sections:
            assert 0 <= s.start < s.end <= len(page.text) and s.path.strip()
    import json

    json.dumps(doc.metadata)


@needs_shared
@pytest.mark.parametrize("rel", _samples(slow=False))
def test_every_sample_loads_or_fails_as_intended(rel: str) -> None:
    _check_sample(rel)


@needs_shared
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("KAYNAK_SLOW_TESTS"), reason="set KAYNAK_SLOW_TESTS=1 (about a minute)")
@pytest.mark.parametrize("rel", _samples(slow=True))
def test_every_large_sample_loads(rel: str) -> None:
    _check_sample(rel)


def test_fixture_directory_is_small() -> None:
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < 1024 * 1024


def test_loader_error_for_unexpected_failure_names_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaynak import loaders

    def boom(path: Path, data: bytes, options: object = None):
        raise ValueError("unexpected")

    monkeypatch.setitem(loaders._REGISTRY, ".boom", boom)
    path = write(tmp_path, "x.boom", "data")
    with pytest.raises(CorruptFile, match="unexpected") as err:
        load(path)
    assert str(path) in str(err.value)


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    path = write(tmp_path, "secret.txt", "x")
    path.chmod(0)
    with pytest.raises(LoaderError, match="cannot read"):
        load(path)


# ------------------------------------------------------------------------------------- decoding and hostile input
TR_SENTENCE = "İstanbul, Türkiye'nin en kalabalık şehridir ve tarihi yarımadası ile ünlüdür. Boğaz ikiye ayırır."


def test_decode_text_decides_honestly() -> None:
    from kaynak.loaders.normalize import NotText, decode_text

    assert decode_text(TR_SENTENCE.encode()).encoding == "utf-8"
    assert decode_text(b"\xef\xbb\xbf" + TR_SENTENCE.encode()).encoding == "utf-8-sig"
    assert decode_text(TR_SENTENCE.encode("utf-16")).text == TR_SENTENCE
    d = decode_text(TR_SENTENCE.encode("cp1254"))
    assert d.encoding == "cp1254" and d.text == TR_SENTENCE and d.warnings == []
    stray = decode_text(TR_SENTENCE.encode().replace("Boğaz".encode(), b"Bo\x85\xc4\x9faz"))
    assert stray.encoding == "utf-8" and "Boğaz" in stray.text and "not valid UTF-8" in stray.warnings[0]
    nul = decode_text(b"Istan\x00bul and \x01\x02 more")
    assert nul.text == "Istanbul and  more" and nul.warnings == ["1 NUL byte dropped", "2 control characters removed"]
    for data in (
        ("Москва столица России. " * 10).encode("koi8-r"),
        ("東京は日本の首都です。" * 10).encode("shift_jis"),
        bytes(range(256)) * 4,
        b"\x00\x01" * 500 + b"abc",
    ):
        with pytest.raises(NotText, match=r"not text \(unknown encoding or binary\)"):
            decode_text(data)


def test_invisible_only_text_is_no_text(tmp_path: Path) -> None:
    with pytest.raises(NoText, match="only whitespace or invisible"):
        load(write(tmp_path, "zw.txt", "\u200b\u200c\u200d\u2060\ufeff \u00a0\n" * 20))
    with pytest.raises(NoText, match="only whitespace or invisible"):
        load(write(tmp_path, "marks.md", "\u0301\u0308 \u200d\n"))


def test_binary_named_as_text_is_not_text(tmp_path: Path) -> None:
    garbage = bytes((i * 7919 + 13) % 256 for i in range(20000))
    for name in ("x.txt", "x.html", "x.md"):
        with pytest.raises(CorruptFile, match="not text"):
            load(write(tmp_path, name, garbage))


def test_yaml_alias_bomb_in_front_matter_is_refused_quickly(tmp_path: Path) -> None:
    bomb = (
        "---\na: &a [x,x,x,x,x,x,x,x,x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
        + "---\n\n# Başlık\n\nMetin burada.\n"
    )
    t0 = time.perf_counter()
    doc = load(write(tmp_path, "bomb.md", bomb))
    assert time.perf_counter() - t0 < 2
    assert doc.pages[0].text.endswith("Metin burada.") and "front_matter" not in doc.metadata
    assert "aliases" in doc.warnings[0]


def test_one_line_per_page_pdf_keeps_its_text(tmp_path: Path) -> None:
    pages = [[(72, 760, f"Line {n} of the yearly report")] for n in range(1, 41)]
    doc = load(write(tmp_path, "lines.pdf", make_pdf(pages)))
    assert [p.text for p in doc.pages] == [f"Line {n} of the yearly report" for n in range(1, 41)]


def test_titles_and_section_paths_are_bounded(tmp_path: Path) -> None:
    heading = "Başlık " * 2000
    md = "".join(f"{'#' * level} {heading}{level}\n\ntext {level}.\n\n" for level in range(1, 7))
    doc = load(write(tmp_path, "long.md", md))
    assert len(doc.title) <= 300
    assert all(len(s.path) <= 600 for s in doc.pages[0].sections)


def test_java_utf8_lone_surrogates_cesu8_and_c0_80_are_read_with_warnings(tmp_path: Path) -> None:
    """UTF-8 as Java writes it is no longer rejected whole as "not text" (issue 26)."""
    data = (
        "İstanbul ".encode()
        + b"\xed\xa0\xbd\xed\xb8\x80"  # CESU-8 pair: U+1F600
        + b" Bo"
        + b"\xed\xa0\x80"  # a lone high surrogate
        + "ğaz ".encode()
        + b"ka\xc0\x80p\xc4\xb1"  # Java's NUL inside "kapı"
    )
    doc = load(write(tmp_path, "java.txt", data))
    assert doc.pages[0].text == "İstanbul \U0001f600 Bo\ufffdğaz kapı"
    warnings = " ".join(doc.warnings)
    assert (
        "1 CESU-8 surrogate pair" in warnings and "lone UTF-16 surrogate read as U+FFFD (first at byte 17)" in warnings
    )
    assert "C0 80" in warnings
