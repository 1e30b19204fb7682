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
        '<manifest:file-entry manifest:full-path="/" manifest:version="1.3" manifest:media-type="'
        + _MIMES[kind]
        + '"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), _MIMES[kind])
        zf.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
        zf.writestr("meta.xml", meta, zipfile.ZIP_DEFLATED)
        styles = f"<?xml version='1.0' encoding='UTF-8'?><office:document-styles {_ODF_NS}/>"
        zf.writestr("styles.xml", styles, zipfile.ZIP_DEFLATED)
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


def make_eml(
    subject: str = "Aidat toplantısı hakkında",
    body: str = TR_PASSAGE,
    charset: str = "windows-1254",
    html: bool = False,
    attachments: dict[str, bytes] | None = None,
    sender: str = "Ayşe Yılmaz <ayse@example.com.tr>",
) -> bytes:
    """One message: an RFC 2047 subject, a body in ``charset`` (quoted-printable), optional attachments."""
    import quopri
    from email.header import Header
    from email.mime.application import MIMEApplication
    from email.mime.multipart import MIMEMultipart
    from email.mime.nonmultipart import MIMENonMultipart
    from email.utils import formataddr

    content = f"<html><body><p>{escape(body)}</p></body></html>" if html else body
    text = MIMENonMultipart("text", "html" if html else "plain", charset=charset)
    text["Content-Transfer-Encoding"] = "quoted-printable"
    text.set_payload(quopri.encodestring(content.encode(charset)).decode("ascii"))
    msg = MIMEMultipart() if attachments else text
    if attachments:
        msg.attach(text)
        for name, data in attachments.items():
            part = MIMEApplication(data)
            part.add_header("Content-Disposition", "attachment", filename=name)
            msg.attach(part)
    msg["Subject"] = Header(subject, "utf-8").encode()
    name, _, addr = sender.partition(" <")
    msg["From"] = formataddr((name, addr.rstrip(">")), charset="utf-8")
    msg["To"] = "yonetim@example.com.tr, Mehmet <mehmet@example.org>"
    msg["Date"] = "Tue, 03 Dec 2024 10:15:00 +0300"
    msg["Message-ID"] = "<1@example.com.tr>"
    return msg.as_bytes()


def make_mbox(messages: list[bytes]) -> bytes:
    out = []
    for i, m in enumerate(messages):
        lines = m.replace(b"\r\n", b"\n").split(b"\n")
        quoted = b"\n".join(b">" + line if line.lstrip(b">").startswith(b"From ") else line for line in lines)
        out.append(b"From sender@example.com Tue Dec  3 10:%02d:00 2024\n" % (i % 60) + quoted.rstrip(b"\n") + b"\n\n")
    return b"".join(out)


def make_udf(paragraphs: list[tuple[str, bool]], page_break_after: int | None = None, header: str = "") -> bytes:
    """A UDF (UYAP) document: ``paragraphs`` as (text, bold); a page break after paragraph index
    ``page_break_after``; an optional header paragraph (stored first in the text pool, not body text)."""
    pool = ""
    elements = []
    if header:
        elements.append(f'<header><paragraph><content startOffset="0" length="{len(header)}"/></paragraph></header>')
        pool += header + "\n"
    for i, (text, bold) in enumerate(paragraphs):
        start = len(pool)
        words = text.split(" ")
        runs = []
        at = start
        for j, w in enumerate(words):  # one run per word, spaces as <space> elements, as UYAP writes them
            runs.append(f'<content startOffset="{at}" length="{len(w)}" bold="{str(bold).lower()}" size="12"/>')
            at += len(w)
            if j < len(words) - 1:
                runs.append(f'<space startOffset="{at}" length="1"/>')
                at += 1
        elements.append(f'<paragraph Alignment="3" LeftIndent="0.0" RightIndent="0.0">{"".join(runs)}</paragraph>')
        pool += text + "\n"
        if page_break_after == i:
            elements.append(
                f'<page-break><paragraph><content startOffset="{len(pool)}" length="1"/></paragraph></page-break>'
            )
            pool += "\u200b\n"
    table_start = len(pool)
    cells = ["Dosya No", "2024/117 Esas"]
    row = []
    for c in cells:
        row.append(f'<cell><paragraph><content startOffset="{len(pool)}" length="{len(c)}"/></paragraph></cell>')
        pool += c + "\n"
    del table_start
    elements.append(f'<table columnCount="2"><row rowType="dataRow">{"".join(row)}</row></table>')
    xml = (
        '<?xml version="1.0" encoding="UTF-8" ?><template format_id="1.8">'
        f"<content><![CDATA[{pool}]]></content>"
        '<properties><pageFormat mediaSizeName="1" leftMargin="42.5" rightMargin="28.3" topMargin="14.2" '
        'bottomMargin="14.2" paperOrientation="1" headerFOffset="20.0" footerFOffset="20.0"/></properties>'
        f'<elements resolver="hvl-default">{"".join(elements)}</elements>'
        '<styles><style name="hvl-default" family="Times New Roman" size="12" description="Gövde"/></styles>'
        "</template>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("content.xml", xml.encode("utf-8"))
    return buf.getvalue()


UDF_PARAGRAPHS = [
    ("T.C. ANKARA 3. ASLİYE HUKUK MAHKEMESİ", True),
    ("GEREKÇE", True),
    (
        "Davacı vekili, kat malikleri kurulunun toplantı yeter sayısına ulaşılmadan karar aldığını ileri sürmüştür.",
        False,
    ),
    ("HÜKÜM", True),
    ("Davanın kabulüne, kurul kararının iptaline karar verilmiştir.", False),
]


def make_rtf() -> bytes:
    """Windows-1254 bytes (\\'hh), \\uN escapes, a heading (outline level), a table, a page break, an info title."""

    def cp(text: str) -> str:
        return "".join(f"\\'{b:02x}" if b > 127 else chr(b) for b in text.encode("cp1254"))

    return (
        "{\\rtf1\\ansi\\ansicpg1254\\deff0{\\fonttbl{\\f0\\froman\\fcharset162 Times New Roman;}}"
        "{\\stylesheet{\\s1 heading 1;}}{\\info{\\title Kurul " + cp("kararı") + "}}"
        "\\pard\\s1\\outlinelevel0 " + cp("Toplantı usulü") + "\\par"
        "\\pard " + cp(TR_PASSAGE.replace("yıl", "y\x00l")).replace("\x00", "\\uc1\\u305?") + "\\par"
        "\\trowd\\cellx2000\\cellx4000\\pard\\intbl Daire\\cell Pay\\cell\\row"
        "\\trowd\\cellx2000\\cellx4000\\pard\\intbl 3\\cell 120/1000\\cell\\row"
        "\\pard\\page\\pard\\s1\\outlinelevel0 Rivers\\par\\pard " + EN_PASSAGE + "{\\*\\fldinst HYPERLINK x}\\par}"
    ).encode("ascii")


def make_epub(version: int = 3) -> bytes:
    """Two chapters with titles in the navigation document (EPUB 3 nav, or EPUB 2 NCX with a DOCTYPE)."""
    chapters = [
        ("ch1.xhtml", "Birinci bölüm: Kurul", f"<h2>Toplantı</h2><p>{escape(TR_PASSAGE)}</p>"),
        ("ch2.xhtml", "Chapter two: Rivers", f"<p>{escape(EN_PASSAGE)}</p>"),
    ]
    opf_items = "".join(
        f'<item id="c{i}" href="text/{n}" media-type="application/xhtml+xml"/>' for i, (n, _, _) in enumerate(chapters)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    if version == 3:
        opf_items += '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        links = "".join(f'<li><a href="text/{n}">{escape(t)}</a></li>' for n, t, _ in chapters)
        nav = (
            '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml" '
            'xmlns:epub="http://www.idpf.org/2007/ops"><body><nav epub:type="toc"><ol>'
            + links
            + "</ol></nav></body></html>"
        )
        nav_name = "OEBPS/nav.xhtml"
    else:
        opf_items += '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        points = "".join(
            f'<navPoint id="p{i}"><navLabel><text>{escape(t)}</text></navLabel><content src="text/{n}"/></navPoint>'
            for i, (n, t, _) in enumerate(chapters)
        )
        nav = (
            '<?xml version="1.0"?><!DOCTYPE ncx PUBLIC "-//NISO//DTD ncx 2005-1//EN" '
            '"http://www.daisy.org/z3986/2005/ncx-2005-1.dtd"><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">'
            f"<navMap>{points}</navMap></ncx>"
        )
        nav_name = "OEBPS/toc.ncx"
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Apartman kitabı</dc:title>'
        "<dc:creator>Ayşe</dc:creator><dc:language>tr</dc:language></metadata>"
        f"<manifest>{opf_items}</manifest><spine>{spine}</spine></package>"
    )
    container = (
        '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        zf.writestr("META-INF/container.xml", container)
        zf.writestr("OEBPS/content.opf", opf)
        zf.writestr(nav_name, nav)
        for n, t, body in chapters:
            zf.writestr(
                f"OEBPS/text/{n}",
                '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{escape(t)}</title></head><body>{body}</body></html>",
            )
    return buf.getvalue()
