"""Builders of small documents in the formats of issue 26, written from the formats' specifications (no producer
needed): OpenDocument text/spreadsheet/slides, PPTX (python-pptx), XLSX (openpyxl), UDF, RTF, EPUB, e-mail.

Every builder returns bytes; the known passages below are what the loader and search tests look for.
"""

from __future__ import annotations

import io
import zipfile
from xml.sax.saxutils import escape

TR_PASSAGE = "Kat malikleri kurulu her yıl ocak ayında toplanır ve yöneticiyi seçer."
EN_PASSAGE = "The river flows through the old town and the bridges are still used by people."

_ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3"'
)
_MIMES = {
    "text": "application/vnd.oasis.opendocument.text",
    "spreadsheet": "application/vnd.oasis.opendocument.spreadsheet",
    "presentation": "application/vnd.oasis.opendocument.presentation",
}


def odf_zip(kind: str, body: str, title: str = "", auto_styles: str = "", prolog: str = "") -> bytes:
    """An OpenDocument package whose office:body holds ``<office:{kind}>{body}</office:{kind}>``."""
    head = prolog or "<?xml version='1.0' encoding='UTF-8'?>"
    content = (
        f"{head}<office:document-content {_ODF_NS}>"
        f"<office:automatic-styles>{auto_styles}</office:automatic-styles>"
        f"<office:body><office:{kind}>{body}</office:{kind}></office:body></office:document-content>"
    )
    meta = (
        f"<?xml version='1.0' encoding='UTF-8'?><office:document-meta {_ODF_NS}><office:meta>"
        f"<dc:title>{escape(title)}</dc:title></office:meta></office:document-meta>"
    )
    manifest = (
        "<?xml version='1.0' encoding='UTF-8'?>"
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        '<manifest:file-entry manifest:full-path="/" manifest:media-type="' + _MIMES[kind] + '"/>'
        "</manifest:manifest>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), _MIMES[kind])
        zf.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
        zf.writestr("meta.xml", meta, zipfile.ZIP_DEFLATED)
        zf.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def make_odt(title: str = "Yönetim planı") -> bytes:
    """Two pages (an explicit page break), headings, a table, a footnote and a tracked deletion."""
    styles = (
        '<style:style style:name="PB" style:family="paragraph">'
        '<style:paragraph-properties fo:break-before="page"/></style:style>'
    )
    body = (
        "<text:tracked-changes><text:changed-region text:id='c1'><text:deletion>"
        "<text:p>SİLİNMİŞ METİN</text:p></text:deletion></text:changed-region></text:tracked-changes>"
        f'<text:h text:outline-level="1">{escape(title)}</text:h>'
        '<text:h text:outline-level="2">Genel hükümler</text:h>'
        f"<text:p>{escape(TR_PASSAGE)}<text:note text:note-class='footnote'><text:note-citation>1</text:note-citation>"
        "<text:note-body><text:p>Dipnot: toplantı tutanağı saklanır.</text:p></text:note-body></text:note></text:p>"
        "<table:table table:name='T1'><table:table-row><table:table-cell><text:p>Daire</text:p></table:table-cell>"
        "<table:table-cell><text:p>Arsa payı</text:p></table:table-cell></table:table-row>"
        "<table:table-row><table:table-cell><text:p>3</text:p></table:table-cell>"
        "<table:table-cell><text:p>120/1000</text:p></table:table-cell></table:table-row></table:table>"
        '<text:h text:outline-level="2">Rivers</text:h>'
        f'<text:p text:style-name="PB">{escape(EN_PASSAGE)}<text:s text:c="2"/>end.</text:p>'
    )
    return odf_zip("text", body, title, styles)


def make_ods() -> bytes:
    def cell(v: str, repeat: int = 1) -> str:
        rep = f' table:number-columns-repeated="{repeat}"' if repeat > 1 else ""
        return (
            f"<table:table-cell{rep}><text:p>{escape(v)}</text:p></table:table-cell>"
            if v
            else (f"<table:table-cell{rep}/>")
        )

    sheet1 = (
        "<table:table table:name='Aidatlar'>"
        f"<table:table-row>{cell('Daire')}{cell('Tutar')}{cell('', 1000)}</table:table-row>"
        "<table:table-row table:number-rows-repeated='1000000'><table:table-cell table:number-columns-repeated='1024'/>"
        "</table:table-row>"
        f"<table:table-row>{cell('7')}<table:table-cell office:value-type='float' office:value='450' "
        "table:formula='of:=300+150'><text:p>450</text:p></table:table-cell></table:table-row></table:table>"
    )
    sheet2 = (
        "<table:table table:name='Rivers'>"
        f"<table:table-row>{cell('City')}{cell('River')}</table:table-row>"
        f"<table:table-row>{cell('Budapest')}{cell('Danube')}</table:table-row></table:table>"
    )
    return odf_zip("spreadsheet", sheet1 + sheet2)


def make_odp() -> bytes:
    def frame(cls: str, text: str, y: str) -> str:
        return (
            f'<draw:frame presentation:class="{cls}" svg:x="1cm" svg:y="{y}"><draw:text-box>'
            f"<text:p>{escape(text)}</text:p></draw:text-box></draw:frame>"
        )

    slide1 = (
        '<draw:page draw:name="s1">'
        + frame("outline", TR_PASSAGE, "5cm")
        + frame("title", "Toplantı kuralları", "1cm")
        + '<presentation:notes><draw:frame presentation:class="page-number"><draw:text-box><text:p>&lt;number&gt;'
        "</text:p></draw:text-box></draw:frame>"
        + frame("notes", "Konuşmacı notu: yeter sayı üçte iki.", "1cm")
        + "</presentation:notes></draw:page>"
    )
    slide2 = '<draw:page draw:name="s2">' + frame("title", "Rivers", "1cm") + frame("outline", EN_PASSAGE, "4cm")
    slide2 += "</draw:page>"
    return odf_zip("presentation", slide1 + slide2)


def make_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[1])
    s1.shapes.title.text = "Toplantı kuralları"
    s1.placeholders[1].text = TR_PASSAGE
    s1.notes_slide.notes_text_frame.text = "Konuşmacı notu: yeter sayı üçte iki."
    s2 = prs.slides.add_slide(prs.slide_layouts[5])
    s2.shapes.title.text = "Rivers"
    box = s2.shapes.add_textbox(Inches(1), Inches(5), Inches(6), Inches(1))
    box.text_frame.text = EN_PASSAGE
    table = s2.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (r, c), v in {(0, 0): "City", (0, 1): "River", (1, 0): "Budapest", (1, 1): "Danube"}.items():
        table.cell(r, c).text = v
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def make_xlsx() -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Aidatlar"
    ws.append(["Daire", "Açıklama", None, "Tutar"])
    ws.append([3, TR_PASSAGE, None, 450])
    ws.append([])
    ws.append([7, "Asansör bakımı", None, 300.5])
    ws2 = wb.create_sheet("Rivers")
    ws2.append(["City", "Note"])
    ws2.append(["Budapest", EN_PASSAGE])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def replace_member(data: bytes, name: str, content: bytes) -> bytes:
    """The zip ``data`` with member ``name`` replaced (or added)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename != name:
                out.writestr(info, src.read(info))
        out.writestr(name, content)
    return buf.getvalue()


LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;">'
    '<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">]>'
)
XXE = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'


def zip_bomb(names: dict[str, bytes], bomb_member: str, size: int = 300 * 1024 * 1024) -> bytes:
    """A zip with ``names`` and a member of ``size`` zero bytes (deflates ~1000:1)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, b in names.items():
            zf.writestr(n, b)
        with zf.open(bomb_member, "w", force_zip64=True) as fh:
            block = b"\x00" * (1024 * 1024)
            for _ in range(size // len(block)):
                fh.write(block)
    return buf.getvalue()
