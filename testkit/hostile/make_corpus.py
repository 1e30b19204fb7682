"""Build the hostile corpus in a folder, from this script alone (nothing downloaded, nothing large committed).

    python -m testkit.hostile.make_corpus OUT_DIR      # writes the files and prints the expected outcomes

``build(root)`` writes every case and returns ``{source: Expect}``: the outcome ``kaynak ingest`` must report for
the file (added, partial, failed, skipped, ignored) and a piece of text its reason or warnings must contain.
Sources are written the way kaynak prints them (kaynak.ingest.sources): a Windows-1254 file name shows as
``\\[cp1254]Şubat raporu.md``, undecodable bytes as ``\\xHH``.

The cases: what issue 11 lists (a non-UTF-8 file name, a 5 MB single line, a YAML alias bomb, a 2,000-page PDF
with one line per page, binary garbage named .html/.txt, text in neither UTF-8 nor Windows-1254, UTF-8 with a few
control characters, only zero-width characters, NUL bytes inside a word, a PDF with one damaged page) and the
classics (zero-byte and truncated files of every format, a PNG named .pdf, PDFs with and without a user password,
a zip-bomb DOCX, billion-laughs XML in HTML and DOCX, deeply nested HTML, symbolic links out of the root, broken
and looping, a named pipe).
"""

from __future__ import annotations

import io
import os
import random
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

TR = (
    "İstanbul, Türkiye'nin en kalabalık şehridir ve tarihi yarımadası ile ünlüdür. Boğaz, şehri Avrupa ve Asya "
    "yakası olarak ikiye ayırır. Şehir yüzyıllar boyunca birçok imparatorluğa başkentlik yapmıştır."
)
EN = (
    "The river flows through the old town and into the lake. Bridges were built in the nineteenth century, and "
    "most of them are still used by people who walk to the market on the other side of the water."
)
RU = "Москва является столицей России и крупнейшим городом страны. Река течёт через центр города. " * 4


@dataclass(frozen=True)
class Expect:
    outcome: str  # added | partial | failed | skipped | ignored
    says: str = ""  # text the reason (failed, skipped) or a warning (partial) contains, case-insensitive
    text: str = ""  # for stored documents: text the stored pages must contain


# ---------------------------------------------------------------------------------------------- builders
def _pdf_escape(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def make_pdf(
    pages: list[list[str]],
    *,
    user_password: str | None = None,
    owner_password: str | None = None,
    bad_pages: tuple[int, ...] = (),
) -> bytes:
    """A PDF with one Helvetica line per string on each page (pypdf builds it)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    for i, lines in enumerate(pages):
        page = writer.add_blank_page(width=595, height=842)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        ops = [b"BT /F1 11 Tf 72 %d Td (" % (760 - 14 * k) + _pdf_escape(t) + b") Tj ET" for k, t in enumerate(lines)]
        stream = DecodedStreamObject()
        stream.set_data(b"\n".join(ops))
        if i in bad_pages:
            stream[NameObject("/Filter")] = NameObject("/NoSuchDecode")
        page.replace_contents(stream)
    if user_password is not None or owner_password is not None:
        writer.encrypt(user_password=user_password or "", owner_password=owner_password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for p in paragraphs:
        document.add_paragraph(p)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def replace_docx_member(data: bytes, name: str, content: bytes) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, content if info.filename == name else src.read(info.filename))
    return out.getvalue()


def zip_bomb_docx() -> bytes:
    """A DOCX whose document.xml declares 64 MB of spaces compressed ~1000:1 (refused before inflating)."""
    base = make_docx([EN])
    src = zipfile.ZipFile(io.BytesIO(base))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == "word/document.xml":
                dst.writestr(info.filename, b" " * (64 * 1024 * 1024))
            else:
                dst.writestr(info.filename, src.read(info.filename))
    return out.getvalue()


LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(f' <!ENTITY lol{i} "' + (f"&lol{i - 1};" if i > 1 else "&lol;") * 10 + '">\n' for i in range(1, 10))
    + "]>\n"
)


def billion_laughs_docx() -> bytes:
    base = make_docx([EN])
    body = (
        LAUGHS.replace("lolz", "w:document")
        + '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
        "<w:t>" + EN + " &lol9;</w:t></w:r></w:p></w:body></w:document>"
    )
    return replace_docx_member(base, "word/document.xml", body.encode())


def png_bytes() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 64), "white").save(out, "PNG")
    return out.getvalue()


YAML_BOMB = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
    + "title: Bomba\n---\n\n# Başlık\n\n"
    + TR
    + "\n"
)


# ---------------------------------------------------------------------------------------------- the corpus
def build(root: Path) -> dict[str, Expect]:
    """Write the corpus under ``root`` (created) and return the expected outcome per source."""
    rng = random.Random(11)
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Expect] = {}

    def put(rel: str | bytes, data: bytes | str, expect: Expect, source: str | None = None) -> None:
        raw = rel if isinstance(rel, bytes) else rel.encode()
        path = os.path.join(os.fsencode(root), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        out[source or (rel if isinstance(rel, str) else rel.decode())] = expect

    # ordinary files, for comparison
    put("ok/turkish.md", f"# Şehirler\n\n{TR}\n", Expect("added", text="İstanbul"))
    put("ok/english.txt", EN + "\n", Expect("added", text="river flows"))
    put(
        "ok/report.pdf",
        make_pdf([[TR[:80], "Second line of the first page."], ["Page two text."]]),
        Expect("added", text="Page two text"),
    )
    put("ok/letter.docx", make_docx(["Sayın yetkili,", TR]), Expect("added", text="Boğaz"))
    put(
        "ok/page.html",
        f"<html><head><title>Sayfa</title></head><body><p>{EN}</p></body></html>",
        Expect("added", text="Bridges were built"),
    )

    # file names as bytes
    put(
        b"names/\xdeubat raporu.md",
        f"# Şubat\n\n{TR}\n",
        Expect("added", text="Boğaz"),
        source="names/\\[cp1254]Şubat raporu.md",
    )
    put(b"names/rapor\x81\x8d.txt", EN, Expect("added"), source="names/rapor\\x81\\x8D.txt")
    put(b"names/two\nlines.md", f"# Two\n\n{EN}\n", Expect("added"), source="names/two\\x0Alines.md")
    put("names/back\\slash.txt", EN, Expect("added"), source="names/back\\\\slash.txt")

    # Markdown
    words = " ".join(
        rng.choice(["kelime", "satır", "uzun", "metin", "dosya", "İstanbul", "Ankara"]) for _ in range(800_000)
    )
    put("md/five-mb-line.md", (words[: 5 * 1024 * 1024]).rsplit(" ", 1)[0] + "\n", Expect("added", text="Ankara"))
    put("md/yaml-bomb.md", YAML_BOMB, Expect("partial", says="front matter", text="Boğaz"))
    put(
        "md/nul-bytes.md",
        "# NUL\n\nİstan\x00bul " + TR + "\n",
        Expect("partial", says="NUL", text="İstanbul İstanbul,"),
    )
    put(
        "md/zero-width.md",
        "\u200b\u200c\u200d\ufeff\u2060\u200b\n\u200b  \u00a0\n" * 50,
        Expect("failed", says="no text"),
    )
    put("md/empty.md", b"", Expect("failed", says="empty"))

    # text encodings
    put("txt/garbage.txt", rng.randbytes(64 * 1024), Expect("failed", says="not text"))
    put("txt/koi8r.txt", RU.encode("koi8-r"), Expect("failed", says="not text"))
    put("txt/shift-jis.txt", ("東京は日本の首都です。" * 50).encode("shift_jis"), Expect("failed", says="not text"))
    put("txt/cp1254.txt", TR.encode("cp1254"), Expect("added", text="yarımadası"))
    put("txt/utf8-bom.txt", b"\xef\xbb\xbf" + TR.encode(), Expect("added", text="yarımadası"))
    put("txt/utf16-bom.txt", TR.encode("utf-16"), Expect("added", text="yarımadası"))
    put(
        "txt/utf8-controls.txt",
        TR.replace("ünlüdür", "ünlü\x01dür").replace("Boğaz", "Bo\x07ğaz").encode(),
        Expect("partial", says="control character", text="Boğaz"),
    )
    put(
        "txt/utf8-stray-byte.txt",
        TR.encode().replace("Boğaz".encode(), b"Bo\x85\xc4\x9faz"),
        Expect("partial", says="not valid UTF-8", text="yarımadası"),
    )
    cut = TR.encode()
    cut = cut[: cut.rindex("ı".encode()) + 1]  # ends inside the two bytes of the last "ı"
    put("txt/truncated-utf8.txt", cut, Expect("partial", says="not valid UTF-8", text="şehridir"))
    put("txt/whitespace.txt", " \t\n\u00a0\u3000\n\r\n".encode() * 100, Expect("failed", says="no text"))
    put("txt/empty.txt", b"", Expect("failed", says="empty"))

    # HTML
    put("html/garbage.html", rng.randbytes(64 * 1024), Expect("failed", says="not text"))
    put(
        "html/billion-laughs.html",
        LAUGHS.replace("lolz", "html") + f"<html><body><p>{EN} &lol9;</p></body></html>",
        Expect("added", text="Bridges"),
    )
    put("html/deep.html", "<div>" * 100_000 + EN + "</div>" * 100_000, Expect("partial", says="nested", text="river"))
    html = f"<html><body><h1>Başlık</h1><p>{TR}</p><p>{EN}</p></body></html>".encode()
    put("html/truncated.html", html[: len(html) // 2], Expect("added", text="İstanbul"))
    put("html/empty.html", b"", Expect("failed", says="empty"))

    # PDF
    put(
        "pdf/two-thousand-pages.pdf",
        make_pdf([[f"Line {n} of the yearly report"] for n in range(1, 2001)]),
        Expect("added", text="Line 1234 of the yearly report"),
    )
    put("pdf/png-named.pdf", png_bytes(), Expect("failed", says="not a PDF"))
    put("pdf/empty.pdf", b"", Expect("failed", says="empty"))
    valid = make_pdf([[EN[:70]], [TR[:70]], ["Third page."]])
    put("pdf/truncated.pdf", valid[: len(valid) // 2], Expect("failed", says="PDF"))
    put(
        "pdf/user-password.pdf",
        make_pdf([["Gizli belge metni."]], user_password="parola", owner_password="sahip"),
        Expect("failed", says="password"),
    )
    put(
        "pdf/owner-password-only.pdf",
        make_pdf([["Yalnızca izinleri kısıtlı bir belge."]], owner_password="sahip"),
        Expect("added", text="izinleri"),
    )
    put(
        "pdf/damaged-page.pdf",
        make_pdf([["Page one is fine."], ["Page two is damaged."], ["Page three is fine."]], bad_pages=(1,)),
        Expect("partial", says="page 2", text="Page three"),
    )

    # DOCX
    put("docx/zip-bomb.docx", zip_bomb_docx(), Expect("failed", says="zip bomb"))
    put("docx/billion-laughs.docx", billion_laughs_docx(), Expect("failed", says="DOCX"))
    put("docx/empty.docx", b"", Expect("failed", says="empty"))
    whole = make_docx([TR, EN])
    put("docx/truncated.docx", whole[: len(whole) // 2], Expect("failed", says="zip"))

    # links, special files, unsupported types
    outside = root.parent / (root.name + "-outside")
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text("# Secret\n\n" + EN)
    (root / "links").mkdir(exist_ok=True)
    os.symlink(outside / "secret.md", root / "links" / "out.md")
    out["links/out.md"] = Expect("skipped", says="outside the ingest root")
    os.symlink(outside, root / "links" / "out-dir")
    out["links/out-dir"] = Expect("skipped", says="outside the ingest root")
    os.symlink(root / "links" / "nowhere.md", root / "links" / "dangling.md")
    out["links/dangling.md"] = Expect("skipped", says="broken symbolic link")
    os.symlink("loop.md", root / "links" / "loop.md")
    out["links/loop.md"] = Expect("skipped", says="loop")
    os.mkfifo(root / "links" / "pipe.md")
    out["links/pipe.md"] = Expect("skipped", says="named pipe")
    put("other/data.xyz", b"\x00\x01", Expect("ignored"))
    return out


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py OUT_DIR")
    expected = build(Path(sys.argv[1]))
    for source, e in sorted(expected.items()):
        print(f"{e.outcome:8} {source}  {e.says}")


if __name__ == "__main__":
    main()
