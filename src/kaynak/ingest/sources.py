"""File names as bytes → ``source``: printable, lossless and reversible (docs/adr/0009-ingest-isolation.md).

A POSIX file name is any bytes but ``/`` and NUL. kaynak's ``source`` is text that PostgreSQL stores, a terminal
prints and a person reads, so each path component is written as follows:

* valid UTF-8 (nearly every name): the name itself, with ``\\`` written ``\\\\`` and any character that is not
  printable (controls, line breaks, format characters) written as ``\\xHH`` per UTF-8 byte;
* not UTF-8 but plausible Windows-1254 (old Turkish Windows/zip archives; also reads Windows-1252): ``\\[cp1254]``
  followed by the name as a person would read it (``\\[cp1254]Şubat raporu.md``);
* anything else: the valid UTF-8 runs as above and every other byte as ``\\xHH``.

``decode_source`` turns a source back into the exact bytes, so the mapping is lossless; names that are valid,
printable UTF-8 without a backslash (every name before this scheme existed) map to themselves.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable

__all__ = [
    "CP1254_MARK",
    "container_index",
    "container_of",
    "decode_source",
    "display_path",
    "encode_name",
    "encode_source",
    "name_bytes",
    "printable_text",
]

CP1254_MARK = "\\[cp1254]"
_ESCAPE_RE = re.compile(r"\\(\\|x[0-9A-Fa-f]{2})")
# Punctuation a Windows-1254 name plausibly holds besides letters, digits and ASCII.
_CP1254_PUNCT = frozenset("„“”‘’–—…«»°§·´¨ªº²³¹½¼¾×÷©®™€£¥¢")


def name_bytes(name: str | bytes) -> bytes:
    """A file name from the OS as bytes (str names carry undecodable bytes as surrogate escapes)."""
    return name if isinstance(name, bytes) else os.fsencode(name)


def _printable(ch: str) -> bool:
    return ch == " " or (ch.isprintable() and unicodedata.category(ch) not in ("Zl", "Zp", "Cf"))


def _escape_text(text: str) -> str:
    out: list[str] = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif "\udc80" <= ch <= "\udcff":  # an undecodable byte (surrogateescape)
            out.append(f"\\x{ord(ch) - 0xDC00:02X}")
        elif _printable(ch):
            out.append(ch)
        else:
            out.extend(f"\\x{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def _plausible_cp1254(raw: bytes) -> str | None:
    try:
        text = raw.decode("cp1254")
    except UnicodeDecodeError:
        return None
    for ch in text:
        if ch.isascii():
            if not _printable(ch):
                return None
        elif not (ch.isalpha() or ch in _CP1254_PUNCT):
            return None
    return text


def encode_name(raw: str | bytes) -> str:
    """One path component (no ``/``) as source text."""
    data = name_bytes(raw)
    try:
        return _escape_text(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    text = _plausible_cp1254(data)
    if text is not None:
        return CP1254_MARK + text.replace("\\", "\\\\")
    return _escape_text(data.decode("utf-8", errors="surrogateescape"))


def encode_source(relpath: str | bytes) -> str:
    """A relative path (``/``-separated, from the OS) as source text, component by component."""
    data = name_bytes(relpath)
    return "/".join(encode_name(part) for part in data.split(b"/"))


def _decode_name(part: str) -> bytes:
    if part.startswith(CP1254_MARK):
        return part[len(CP1254_MARK) :].replace("\\\\", "\\").encode("cp1254")
    out = bytearray()
    pos = 0
    for m in _ESCAPE_RE.finditer(part):
        out += part[pos : m.start()].encode("utf-8")
        esc = m.group(1)
        out += b"\\" if esc == "\\" else bytes([int(esc[1:], 16)])
        pos = m.end()
    out += part[pos:].encode("utf-8")
    return bytes(out)


def decode_source(source: str) -> bytes:
    """The exact relative path bytes a source was made from (inverse of :func:`encode_source`)."""
    return b"/".join(_decode_name(part) for part in source.split("/"))


def printable_text(text: str) -> str:
    """A message safe to store and print: undecodable bytes (lone surrogates, e.g. from a path in an OS error)
    become ``\\xHH``; everything else is kept."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return "".join(
        f"\\x{ord(ch) - 0xDC00:02X}" if "\udc80" <= ch <= "\udcff" else ("\ufffd" if "\ud800" <= ch <= "\udfff" else ch)
        for ch in text
    )


def display_path(path: str | bytes | os.PathLike[str]) -> str:
    """Any path in the same printable form (for messages): never raises, never prints raw bytes."""
    return encode_source(os.fspath(path))


def container_of(source: str) -> str | None:
    """The source of the file holding the document ``source`` (``archive.mbox`` for ``archive.mbox#3`` or
    ``archive.mbox#3/report.pdf``), or None when ``source`` is a file of its own."""
    from kaynak.loaders import CONTAINER_EXTENSIONS

    at = source.find("#")
    while at > 0:
        head = source[:at]
        if os.path.splitext(head)[1].lower() in CONTAINER_EXTENSIONS:
            return head
        at = source.find("#", at + 1)
    return None


def container_index(sources: Iterable[str]) -> dict[str, list[str]]:
    """File source → the sources of the documents it holds besides itself, for every container among ``sources``."""
    out: dict[str, list[str]] = {}
    for source in sources:
        if "#" in source:
            head = container_of(source)
            if head is not None:
                out.setdefault(head, []).append(source)
    return out
