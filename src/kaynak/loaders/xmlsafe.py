"""Opening zip-based office files (OpenDocument, PPTX, XLSX, EPUB, UDF) and parsing their XML parts safely.

``open_zip`` refuses what is not a sane container before anything is parsed: an encrypted Office file (an OLE
compound file holding ``EncryptionInfo`` and ``EncryptedPackage`` streams, not a zip; ``refuse_ole``, which the DOCX
loader calls too), an old binary Office file under a new extension, not a zip, too many members, or more inflated
bytes than the zip guard allows (kaynak.loaders.zipguard measures by inflating, never trusting declared sizes).
``parse_xml`` / ``parse_xml_bytes`` parse a part with defusedxml, which refuses any DTD, entity declaration or
external reference, so billion laughs and XXE end as CorruptFile naming the part; ``read_member`` reads one part
within a byte limit."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from kaynak.errors import CorruptFile, EncryptedFile

from .zipguard import check_inflated

MAX_MEMBERS = 50_000  # a deck of 5,000 slides with notes holds some 20,000 parts
MAX_PART_BYTES = 256 * 1024 * 1024
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: legacy Office, or an encrypted OOXML file


def _ole_stream_name(name: str) -> re.Pattern[bytes]:
    """A compound-file directory entry name (UTF-16LE, compared without case as the format does)."""
    return re.compile(b"".join(re.escape(bytes([c])) + b"\x00" for c in name.encode("ascii")), re.I)


_ENCRYPTION_INFO = _ole_stream_name("EncryptionInfo")
_ENCRYPTED_PACKAGE = _ole_stream_name("EncryptedPackage")


def is_encrypted_ooxml(data: bytes) -> bool:
    """True when ``data`` is an OLE compound file holding the ``EncryptionInfo`` and ``EncryptedPackage`` streams:
    what Word, Excel and PowerPoint write for a .docx/.xlsx/.pptx saved with a password to open."""
    if not data.startswith(OLE_MAGIC):
        return False
    return _ENCRYPTION_INFO.search(data) is not None and _ENCRYPTED_PACKAGE.search(data) is not None


_LEGACY_STREAMS = tuple(_ole_stream_name(n) for n in ("WordDocument", "Workbook", "PowerPoint Document"))


def refuse_ole(path: Path, data: bytes, kind: str) -> None:
    """Refuse an OOXML file that is an OLE compound file: EncryptedFile when it is password-protected, CorruptFile
    when it is an old binary Office file under the new extension. Does nothing for any other bytes."""
    if not data.startswith(OLE_MAGIC):
        return
    if is_encrypted_ooxml(data):
        raise EncryptedFile(path, f"{kind} file is password-protected; save it without a password first")
    if any(p.search(data) for p in _LEGACY_STREAMS):
        raise CorruptFile(
            path,
            f"not a {kind} file: it is an old binary Office file (.doc, .xls or .ppt) saved with the {kind} "
            f"extension; rename it or save it again as {kind}",
        )
    raise EncryptedFile(
        path,
        f"not a plain {kind} file: it is an OLE compound file, as a password-protected (encrypted) {kind} is; "
        "save it without a password first",
    )


def open_zip(path: Path, data: bytes, kind: str, skip: frozenset[str] = frozenset()) -> zipfile.ZipFile:
    """The zip archive in ``data`` after the guard's checks; ``kind`` names the format in every refusal."""
    refuse_ole(path, data, kind)
    if not data.startswith(b"PK"):
        raise CorruptFile(path, f"not a {kind} file (not a zip archive)")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        count = len(zf.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as err:
        raise CorruptFile(path, f"not a readable {kind} file (broken zip archive: {err})") from None
    if count > MAX_MEMBERS:
        raise CorruptFile(path, f"zip archive has {count} members (limit {MAX_MEMBERS}); refused")
    check_inflated(path, data, kind=kind, skip=skip)
    return zf


def has_member(zf: zipfile.ZipFile, name: str) -> bool:
    try:
        zf.getinfo(name)
    except KeyError:
        return False
    return True


def read_member(path: Path, zf: zipfile.ZipFile, name: str, kind: str, limit: int = MAX_PART_BYTES) -> bytes:
    """The bytes of part ``name`` (at most ``limit``), or CorruptFile naming it."""
    try:
        with zf.open(name) as fh:
            data = fh.read(limit + 1)
    except KeyError:
        raise CorruptFile(path, f"not a {kind} file (no {name} in the archive)") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as err:
        if "encrypted" in str(err) or "password" in str(err):
            raise EncryptedFile(path, f"{kind} file is password-protected; remove the password and try again") from None
        raise CorruptFile(path, f"not a readable {kind} file ({name}: {err})") from None
    if len(data) > limit:
        raise CorruptFile(path, f"{kind} part {name} is over {limit // 1_048_576} MB; refused")
    return data


def parse_xml_bytes(path: Path, data: bytes, part: str, kind: str, allow_doctype: bool = False) -> Element:
    """Parse ``data`` (the XML of ``part``) refusing DTDs, entities and external references. ``allow_doctype``: a
    bare ``<!DOCTYPE>`` is let through (EPUB 2 writes one), entity declarations never."""
    try:
        root: Element = fromstring(data, forbid_dtd=not allow_doctype, forbid_entities=True, forbid_external=True)
        return root
    except DefusedXmlException as err:
        raise CorruptFile(
            path, f"{kind} part {part} declares a DTD or entities ({type(err).__name__}); refused as unsafe XML"
        ) from None
    except Exception as err:  # ParseError, and whatever the expat layer raises on broken input
        raise CorruptFile(path, f"not a readable {kind} file ({part} is not well-formed XML: {err})") from None


def parse_xml(path: Path, zf: zipfile.ZipFile, name: str, kind: str) -> Element:
    return parse_xml_bytes(path, read_member(path, zf, name, kind), name, kind)


def local(tag: Any) -> str:
    """The tag without its ``{namespace}``."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""
