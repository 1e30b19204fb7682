"""Spreadsheet loaders: XLSX (openpyxl, cached values, one page per sheet, header rows, caps) and CSV/TSV
(encoding and delimiter detection, long lines cut)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.loaders import load, sheets
from testkit.format_samples import EN_PASSAGE, LAUGHS, TR_PASSAGE, make_xlsx, replace_member
from testkit.paths import FIXTURES


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_xlsx_pages_per_sheet_header_rows(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "aidat.xlsx", make_xlsx()))
    assert doc.metadata["sheets"] == ["Aidatlar", "Rivers"]
    one, two = doc.pages
    assert one.sections[0].path == "Aidatlar"
    assert f"Daire: 3; Açıklama: {TR_PASSAGE}; Tutar: 450" in one.text
    assert "Daire: 7; Açıklama: Asansör bakımı; Tutar: 300.5" in one.text
    assert two.number == 2 and f"City: Budapest; Note: {EN_PASSAGE}" in two.text


def test_xlsx_cell_cap_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Big"
    for i in range(500):
        ws.append([f"r{i}", i, i * 2])
    buf = io.BytesIO()
    wb.save(buf)
    monkeypatch.setattr(sheets, "MAX_CELLS", 300)
    doc = load(write(tmp_path, "big.xlsx", buf.getvalue()))
    assert any("'Big': only the first 100 rows" in w for w in doc.warnings), doc.warnings
    assert "r99" in doc.pages[0].text and "r100" not in doc.pages[0].text


def test_xlsx_hostile(tmp_path: Path) -> None:
    bad = replace_member(make_xlsx(), "xl/sharedStrings.xml", (LAUGHS + "<sst>&lol5;</sst>").encode())
    with pytest.raises(CorruptFile, match="DTD or entities"):
        load(write(tmp_path, "laughs.xlsx", bad))
    bad = replace_member(make_xlsx(), "xl/worksheets/sheet1.xml", (LAUGHS + "<worksheet>&lol5;</worksheet>").encode())
    with pytest.raises(CorruptFile, match="DTD or entities"):
        load(write(tmp_path, "laughs2.xlsx", bad))
    with pytest.raises(EncryptedFile):
        load(write(tmp_path, "locked.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600))
    with pytest.raises(CorruptFile):
        load(write(tmp_path, "cut.xlsx", make_xlsx()[:2000]))


def test_csv_cp1254_semicolon_and_tsv(tmp_path: Path) -> None:
    data = "Şehir;Nüfus;Not\nİstanbul;15000000;Boğaz iki yakayı ayırır\n\nİzmir;4400000;\n".encode("cp1254")
    doc = load(write(tmp_path, "iller.csv", data))
    assert doc.metadata["encoding"] == "cp1254" and doc.metadata["delimiter"] == "semicolon"
    assert "Şehir: İstanbul; Nüfus: 15000000; Not: Boğaz iki yakayı ayırır" in doc.pages[0].text
    assert "Şehir: İzmir; Nüfus: 4400000" in doc.pages[0].text
    tsv = load(write(tmp_path, "rivers.tsv", "\ufeffCity\tRiver\nVienna\tDanube, the long one\n".encode()))
    assert "City: Vienna; River: Danube, the long one" in tsv.pages[0].text
    assert tsv.metadata["encoding"] == "utf-8-sig"


def test_csv_not_text_and_long_line(tmp_path: Path) -> None:
    with pytest.raises(CorruptFile, match="not text"):
        load(write(tmp_path, "koi.csv", ("Москва;Река\n" * 50).encode("koi8-r")))
    long_line = b"a," + b"x" * (sheets.MAX_FIELD * 5) + "\nname,value\nBoğaz,1\n".encode()
    doc = load(write(tmp_path, "long.csv", long_line))
    assert any("cut" in w for w in doc.warnings), doc.warnings
    assert "Boğaz" in doc.pages[0].text


def test_xlsx_formula_gives_its_cached_value(tmp_path: Path) -> None:
    """A workbook with a formula saved by a real producer (LibreOffice computes and stores the value): the cached
    value is read, not the formula (skipped without LibreOffice; openpyxl writes formulas without values)."""
    import io
    import subprocess

    import openpyxl

    from kaynak.loaders import legacy

    exe = legacy.soffice_path()
    if exe is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Bütçe"
    for row in (["Kalem", "Tutar"], ["Kira", 1200], ["Aidat", 450], ["Toplam", "=SUM(B2:B3)"]):
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    source = write(tmp_path, "butce.xlsx", buf.getvalue())
    subprocess.run(
        [exe, f"-env:UserInstallation=file://{tmp_path}/profile", "--headless", "--convert-to", "xlsx",
         "--outdir", str(tmp_path / "out"), str(source)],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    text = load(tmp_path / "out" / "butce.xlsx").pages[0].text
    assert "Kalem: Toplam; Tutar: 1650" in text and "SUM" not in text


WORLD = FIXTURES / "world" / "tika"  # Apache Tika's test documents (Apache-2.0), author metadata removed


def test_xlsx_strict_ooxml_is_read() -> None:
    """testEXCEL.strict.xlsx (Excel's "Strict Open XML" namespaces, purl.oclc.org/ooxml/…) was reported as
    having no text."""
    doc = load(WORLD / "testEXCEL.strict.xlsx")
    assert doc.metadata["sheets"] == ["First Sheet", "Sheet Number 2", "Sheet3"]
    assert [p.sections[0].path for p in doc.pages] == ["First Sheet", "Sheet Number 2"]
    assert "2nd row 2nd column" in doc.pages[0].text and "This one is red" in doc.pages[0].text
    assert "cb=1; cb=10; cb=2; cb=sum" in doc.pages[1].text and "1; 10; 2; 13" in doc.pages[1].text


def test_xlsx_cells_as_excel_shows_them() -> None:
    """testEXCEL-formats.xlsx: each value through its number format, as Excel (and LibreOffice) show it."""
    text = load(WORLD / "testEXCEL-formats.xlsx").pages[0].text
    for shown in (
        "Number #,##0.00 | 1,599.99 | -1,599.99",
        "Currency $#,##0.00;[Red]($#,##0.00) | $1,599.99 | ($1,599.99)",
        "Scientific 0.00E+00 | 1.98E+08 | -1.98E+08",
        "Percentage (0.025) | 3% | 2.50%",
        "Fraction (2.5) | 2 1/2",
        "Time Format: h:mm AM/PM | 6:15 AM | 6:15 PM",
        "Time Format: h:mm | 6:15 | 18:15",
        "Date Format: m/d/yy | 10/3/2009",
        "Date Format: d-mmm-yy | 17-May-07",
        "Date/Time Format | 1/19/2008 4:35",
        "Custom Number: | 19 dollars and .99 cents",
        "Custom Date: | At 4:20 AM on Thursday May 17, 2007",
    ):
        assert shown in text, shown
    assert "| 0.025" not in text and "1992-12-28" not in text


def test_xlsx_rows_past_a_wrong_dimension_are_read() -> None:
    """testEXCEL_poi.xlsx (written by Apache POI) declares <dimension ref="A1"/> over two rows: the second was
    lost. Fixed decimals are shown as formatted."""
    assert load(WORLD / "testEXCEL_poi.xlsx").pages[0].text == "format sheet\n11111.3\n11,111.2500"


def test_xlsx_password_protected_is_encrypted_file() -> None:
    path = WORLD / "testEXCEL_protected_passtika.xlsx"
    with pytest.raises(EncryptedFile, match="password-protected; save it without a password first") as err:
        load(path)
    assert str(path) in str(err.value)


def test_xlsx_encrypted_with_excels_default_password_is_read() -> None:
    """protectedFile.xlsx is encrypted with "VelvetSweatshop", the password Excel uses for a write-protected
    workbook and opens without asking: it was refused as password-protected."""
    doc = load(WORLD / "protectedFile.xlsx")
    assert doc.metadata["sheets"] == ["Лист1", "Лист2", "Лист3"] and "default password" in doc.metadata["encryption"]
    assert "При запуске пробной версии Office 2007 в первый раз после активации лицензии" in doc.pages[0].text


def test_xlsx_part_names_as_excel_forgives_them(tmp_path: Path) -> None:
    """calamine's issue_419.xlsx names its shared strings ``xl/SharedStrings.xml`` while its relationships say
    ``sharedStrings.xml`` (openpyxl: KeyError); a package written on Windows may use backslashes; a minimal
    package keeps its workbook at the root, found through ``_rels/.rels``. Excel and LibreOffice read all three."""
    import io
    import zipfile

    calamine = FIXTURES / "world" / "calamine"
    assert load(calamine / "issue_419.xlsx").pages[0].text == "Sheet1\n\nHello"

    backslashed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(make_xlsx())) as src, zipfile.ZipFile(backslashed, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename.replace("/", "\\") if info.filename.startswith("xl/") else info.filename,
                         src.read(info))  # fmt: skip
    assert TR_PASSAGE in load(write(tmp_path, "windows.xlsx", backslashed.getvalue())).pages[0].text

    ns = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    minimal = io.BytesIO()
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    with zipfile.ZipFile(minimal, "w") as zf:
        zf.writestr("[Content_Types].xml", '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                    f'<Override PartName="/workbook.xml" ContentType="{ct}.sheet.main+xml"/>'
                    f'<Override PartName="/sheet1.xml" ContentType="{ct}.worksheet+xml"/></Types>')  # fmt: skip
        zf.writestr("_rels/.rels", f'<Relationships {ns}><Relationship Id="rId1" Type="{rel}/officeDocument" '
                    'Target="workbook.xml"/></Relationships>')  # fmt: skip
        zf.writestr("_rels/workbook.xml.rels", f'<Relationships {ns}><Relationship Id="rId1" Type="{rel}/worksheet" '
                    'Target="sheet1.xml"/></Relationships>')  # fmt: skip
        sheets = '<sheets><sheet name="Karar" sheetId="1" r:id="rId1"/></sheets>'
        zf.writestr("workbook.xml", '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
                    f'xmlns:r="{rel}">{sheets}</workbook>')  # fmt: skip
        zf.writestr("sheet1.xml", '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                    '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Kurul kararı</t></is></c></row></sheetData>'
                    "</worksheet>")  # fmt: skip
    assert load(write(tmp_path, "minimal.xlsx", minimal.getvalue())).pages[0].text == "Karar\n\nKurul kararı"


def test_xlsx_cell_comments_marked_after_the_rows() -> None:
    """testComment.xlsx: a cell's comment (note) was not read; it follows the sheet's rows, marked with its cell."""
    doc = load(WORLD / "testComment.xlsx")
    assert doc.pages[0].text == "Sheet1\n\nHere is some text\n[Comment on A1: Author: Here is a comment]"
