"""Hostile uploads built in memory for the request tests and bench_hostile: a PDF with one long run of letters,
a DOCX of fifty 9.9 MB parts, and a DOCX whose central directory lies about a member's size."""

from __future__ import annotations

import io
import zipfile

from testkit.hostile.make_corpus import EN, make_docx, make_pdf, zip_bomb_docx


def long_run_pdf(letters: int = 15_000) -> bytes:
    """The issue's 15 KB PDF: one run of letters the old hyphen vocabulary took quadratic time over."""
    return make_pdf([["a" * letters, "kat ma-", "likleri " + "b" * letters + "-"]])


def fifty_parts_docx() -> bytes:
    """50 parts of 9.9 MB of zeros, each under every per-part limit: 495 MB from about 512 KB."""
    src = zipfile.ZipFile(io.BytesIO(make_docx([EN])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
        for i in range(50):
            dst.writestr(f"word/media/part{i}.bin", b"\0" * 9_900_000)
    return out.getvalue()


def lying_docx() -> bytes:
    """A DOCX whose central directory says document.xml is 1 KB while it inflates to 64 MB."""
    data = bytearray(zip_bomb_docx())
    zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = zf.getinfo("word/document.xml")
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        name_len = int.from_bytes(data[pos + 28 : pos + 30], "little")
        if bytes(data[pos + 46 : pos + 46 + name_len]) == info.filename.encode():
            data[pos + 24 : pos + 28] = (1024).to_bytes(4, "little")
            break
        pos = data.find(b"PK\x01\x02", pos + 4)
    return bytes(data)
