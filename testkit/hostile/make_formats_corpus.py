"""The hostile corpus of issue 26's formats, built from this script alone (nothing downloaded, nothing large kept).

    python -m testkit.hostile.make_formats_corpus OUT_DIR      # writes the files and prints the expected outcomes

``build(root)`` returns ``{source: Expect}`` as make_corpus does. The cases: zip bombs and lying sizes, billion
laughs and external entities in the XML parts, a sheet of 1,000,000 rows × 50 columns (XLSX, streamed, and ODS,
repeated rows), a 200 MB CSV line, a deck of 5,000 slides, encrypted and corrupt files, mislabelled extensions,
deeply nested MIME, and plain text in Java's UTF-8 (lone surrogates, CESU-8 pairs, ``C0 80``). The mbox of 10,000
messages with one broken message is ``big_mbox`` (its own test: it yields 9,999 documents).
"""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path

from testkit.format_samples import (
    EN_PASSAGE,
    LAUGHS,
    TR_PASSAGE,
    UDF_PARAGRAPHS,
    XXE,
    make_eml,
    make_epub,
    make_mbox,
    make_odt,
    make_pptx,
    make_udf,
    make_xlsx,
    odf_zip,
    replace_member,
    zip_bomb,
)
from testkit.hostile.make_corpus import Expect


def lying_sizes(data: bytes, member: str) -> bytes:
    """``data`` with ``member``'s uncompressed size written as 10 bytes in both headers (the data says more)."""
    out = bytearray(data)
    name = member.encode()
    at = out.find(b"PK\x03\x04")
    while at >= 0:
        n = struct.unpack_from("<H", out, at + 26)[0]
        if bytes(out[at + 30 : at + 30 + n]) == name:
            struct.pack_into("<I", out, at + 22, 10)
        at = out.find(b"PK\x03\x04", at + 4)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        n = struct.unpack_from("<H", out, at + 28)[0]
        if bytes(out[at + 46 : at + 46 + n]) == name:
            struct.pack_into("<I", out, at + 24, 10)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def million_row_xlsx() -> bytes:
    """A workbook whose one sheet has 1,000,000 rows × 50 columns (about 1 GB of XML, a few MB on disk)."""
    base = zipfile.ZipFile(io.BytesIO(make_xlsx()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for info in base.infolist():
            if info.filename == "xl/worksheets/sheet1.xml":
                continue
            zf.writestr(info, base.read(info))
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as fh:
            fh.write(
                b'<?xml version="1.0" encoding="UTF-8"?><worksheet '
                b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
            )
            row = b"<row>" + b"".join(b"<c><v>%d</v></c>" % i for i in range(50)) + b"</row>"
            block = row * 1000
            for _ in range(1000):
                fh.write(block)
            fh.write(b"</sheetData></worksheet>")
    return buf.getvalue()


def million_row_ods() -> bytes:
    cells = "".join(f"<table:table-cell><text:p>v{i}</text:p></table:table-cell>" for i in range(50))
    body = (
        "<table:table table:name='Big'>"
        f"<table:table-row>{cells}</table:table-row>"
        f"<table:table-row table:number-rows-repeated='999999'>{cells}</table:table-row></table:table>"
    )
    return odf_zip("spreadsheet", body)


def many_slides(n: int = 5000) -> bytes:
    """A PPTX of ``n`` slides, each with a title placeholder (written directly: python-pptx would take minutes)."""
    base = zipfile.ZipFile(io.BytesIO(make_pptx()))
    slide1 = base.read("ppt/slides/slide1.xml").decode()
    rels1 = base.read("ppt/slides/_rels/slide1.xml.rels").decode()
    rels1 = "".join(part for part in rels1.split("<Relationship ") if "notesSlide" not in part)
    rels1 = rels1 if rels1.endswith("</Relationships>") else rels1.replace("</Relationships>", "") + "</Relationships>"
    pres = base.read("ppt/presentation.xml").decode()
    pres_rels = base.read("ppt/_rels/presentation.xml.rels").decode()
    ids = "".join(f'<p:sldId id="{256 + i}" r:id="rIdS{i}"/>' for i in range(1, n + 1))
    start, end = pres.index("<p:sldIdLst>"), pres.index("</p:sldIdLst>") + len("</p:sldIdLst>")
    pres = pres[:start] + f"<p:sldIdLst>{ids}</p:sldIdLst>" + pres[end:]
    extra = "".join(
        f'<Relationship Id="rIdS{i}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"'
        f' Target="slides/s{i}.xml"/>'
        for i in range(1, n + 1)
    )
    pres_rels = pres_rels.replace("</Relationships>", extra + "</Relationships>")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for info in base.infolist():
            if info.filename.startswith("ppt/slides/") or info.filename.startswith("ppt/notesSlides/"):
                continue
            if info.filename == "ppt/presentation.xml":
                zf.writestr(info.filename, pres)
            elif info.filename == "ppt/_rels/presentation.xml.rels":
                zf.writestr(info.filename, pres_rels)
            else:
                zf.writestr(info, base.read(info))
        for i in range(1, n + 1):
            zf.writestr(f"ppt/slides/s{i}.xml", slide1.replace("Toplantı kuralları", f"Slayt {i} başlığı"))
            zf.writestr(f"ppt/slides/_rels/s{i}.xml.rels", rels1)
    return buf.getvalue()


def nested_mime(depth: int = 1000) -> bytes:
    parts = [b"Subject: derin\nFrom: a@example.org\nMIME-Version: 1.0\n"]
    for i in range(depth):
        parts.append(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i))
    parts.append(b"Content-Type: text/plain\n\nen icteki metin\n")
    for i in reversed(range(depth)):
        parts.append(b"--b%d--\n" % i)
    return b"".join(parts)


def java_utf8() -> bytes:
    return (
        TR_PASSAGE.encode()
        + b" \xed\xa0\xbd\xed\xb8\x80 "  # CESU-8 pair
        + b"Bo\xed\xa0\x80\xc4\x9faz"  # a lone surrogate inside a word
        + b" ka\xc0\x80p\xc4\xb1\n"  # Java's NUL
    )


def big_mbox(n: int = 10_000, broken: int = 5_000) -> bytes:
    """``n`` messages; message ``broken`` is damaged (no headers, binary)."""
    msgs = []
    for i in range(1, n + 1):
        if i == broken:
            msgs.append(b"\x00\x01\x02 \xff\xfe binary junk without any header \x00")
        else:
            msgs.append(make_eml(subject=f"Mesaj {i}", body=f"Bu {i}. mesajın metni: {TR_PASSAGE}", charset="utf-8"))
    return make_mbox(msgs)


def build(root: Path) -> dict[str, Expect]:
    """Write the corpus under ``root`` and return the expected outcome per source."""
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Expect] = {}

    def put(rel: str, data: bytes, expect: Expect) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out[rel] = expect

    odt = make_odt()
    put("ok/plan.odt", odt, Expect("added", text="ocak ayında toplanır"))
    put("ok/karar.udf", make_udf(UDF_PARAGRAPHS, page_break_after=2), Expect("added", text="iptaline"))
    # zip bombs, lying sizes
    put("bomb/content.odt", zip_bomb({"mimetype": b"application/vnd.oasis.opendocument.text"}, "content.xml"),
        Expect("failed", says="zip bomb"))  # fmt: skip
    put("bomb/strings.xlsx", zip_bomb({"xl/workbook.xml": b"<workbook/>"}, "xl/sharedStrings.xml"),
        Expect("failed", says="zip bomb"))  # fmt: skip
    put("bomb/media.pptx", zip_bomb({"ppt/presentation.xml": b"<p/>"}, "ppt/media/image1.png"),
        Expect("failed", says="zip bomb"))  # fmt: skip
    put("bomb/book.epub", zip_bomb({"META-INF/container.xml": b"<container/>"}, "OEBPS/ch1.xhtml"),
        Expect("failed", says="zip bomb"))  # fmt: skip
    put("bomb/karar.udf", zip_bomb({}, "content.xml"), Expect("failed", says="zip bomb"))
    put("bomb/lying.odt", lying_sizes(odt, "content.xml"), Expect("failed", says="zip"))
    # entities
    put("xml/laughs.odt", odf_zip("text", "<text:p>&lol5;</text:p>", prolog=LAUGHS), Expect("failed", says="DTD"))
    put("xml/xxe.odt", odf_zip("text", "<text:p>&xxe;</text:p>", prolog=XXE), Expect("failed", says="DTD"))
    put("xml/laughs.xlsx", replace_member(make_xlsx(), "xl/sharedStrings.xml", (LAUGHS + "<sst>&lol5;</sst>").encode()),
        Expect("failed", says="DTD"))  # fmt: skip
    put("xml/xxe.pptx", replace_member(make_pptx(), "ppt/slides/slide1.xml", (XXE + "<p:sld>&xxe;</p:sld>").encode()),
        Expect("failed", says="DTD"))  # fmt: skip
    opf = (LAUGHS + "<package>&lol5;</package>").encode()
    put("xml/laughs.epub", replace_member(make_epub(), "OEBPS/content.opf", opf), Expect("failed", says="DTD"))
    put("xml/laughs.udf", _udf_with(LAUGHS + "<template>&lol5;</template>"), Expect("failed", says="DTD"))
    # huge sheets, a huge CSV line, many slides
    put("huge/million-rows.xlsx", million_row_xlsx(), Expect("partial", says="limit of 1,000,000 cells"))
    put("huge/million-rows.ods", million_row_ods(), Expect("partial", says="repeated 999,999 times", text="v49"))
    line = b"x" * (200 * 1024 * 1024)
    put(
        "huge/long-line.csv",
        b"name,value\n" + line + ",1\nBoğaz,2\n".encode(),
        Expect("partial", says="cut", text="Boğaz"),
    )
    put("huge/five-thousand-slides.pptx", many_slides(), Expect("added", text="Slayt 4999 başlığı"))
    # encrypted, corrupt, mislabelled
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 4096
    put("bad/locked.xlsx", ole, Expect("failed", says="password"))
    put("bad/locked.pptx", ole, Expect("failed", says="password"))
    enc = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry>'
        b"</manifest:manifest>"
    )
    put("bad/locked.odt", replace_member(odt, "META-INF/manifest.xml", enc), Expect("failed", says="password"))
    put("bad/truncated.epub", make_epub()[:700], Expect("failed", says="EPUB"))
    put("bad/truncated.pptx", make_pptx()[:5000], Expect("failed", says="PPTX"))
    put("bad/pdf-named.xlsx", b"%PDF-1.4\n1 0 obj<<>>endobj\n%%EOF\n", Expect("failed", says="not a zip"))
    put("bad/docx-named.pptx", replace_member(make_xlsx(), "xl/workbook.xml", b"<w/>"),
        Expect("failed", says="not a PowerPoint"))  # fmt: skip
    put("bad/text-named.rtf", "Bu bir RTF değil.".encode(), Expect("failed", says="not an RTF"))
    put("bad/garbage.eml", bytes(range(256)) * 40, Expect("failed", says="not an e-mail"))
    # mail
    put("mail/deep.eml", nested_mime(), Expect("failed", says="nested too deeply"))
    put(
        "mail/win1254.eml",
        make_eml(charset="windows-1254", subject="Şube toplantısı"),
        Expect("added", text=TR_PASSAGE),
    )
    # plain text as Java writes it
    put("text/java-utf8.txt", java_utf8(), Expect("partial", says="surrogate", text="Bo\ufffdğaz kapı"))
    put("text/en.csv", f"note\n{EN_PASSAGE}\n".encode(), Expect("added", text="bridges"))
    return out


def _udf_with(xml: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("content.xml", xml)
    return buf.getvalue()


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_formats_corpus.py OUT_DIR")
    expected = build(Path(sys.argv[1]))
    for source, e in sorted(expected.items()):
        print(f"{e.outcome:8} {source}  {e.says}")


if __name__ == "__main__":
    main()
