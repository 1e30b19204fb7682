"""Outlook ``.msg`` files (MS-OXMSG: a compound file of MAPI properties), read like an ``.eml``.

The message's properties (subject, sender, recipients, dates, plain-text / HTML / compressed-RTF body, internet
message id) and its attachments (files, and embedded messages, which read as forwarded ones) are turned into a
standard-library e-mail message and handed to ``kaynak.loaders.mail.read_message``, so a ``.msg`` gives exactly what
the same ``.eml`` gives: one page with a header block and the body, the subject as title and section, the same
metadata (``from``, ``to``, ``date`` …) and its attachments as documents of their own (``mail.msg#report.pdf``).

The compound file is read with ``olefile``; strings come as UTF-16 (``001F``) or in the message's code page
(``001E``, ``PR_MESSAGE_CODEPAGE``, Windows-1254 for a Turkish Outlook). A body stored only as compressed RTF is
decompressed (``compressed_rtf``) and read by kaynak's RTF loader. A broken property stream is a warning when the
message still has text, CorruptFile when nothing can be read.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
import struct
from email.message import Message
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, EncryptedFile, LoaderError
from kaynak.types import LoadedDocument

MAX_ATTACHMENTS = 100
MAX_RECIPIENTS = 200
MAX_DEPTH = 5  # embedded messages inside embedded messages
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

# MAPI property ids (MS-OXPROPS)
SUBJECT, BODY, BODY_HTML, RTF_COMPRESSED = 0x0037, 0x1000, 0x1013, 0x1009
SENDER_NAME, SENDER_EMAIL, SENDER_SMTP, SENT_REPR_NAME = 0x0C1A, 0x0C1F, 0x5D01, 0x0042
DISPLAY_TO, DISPLAY_CC, HEADERS, MESSAGE_ID = 0x0E04, 0x0E03, 0x007D, 0x1035
SUBMIT_TIME, DELIVERY_TIME, CODEPAGE, INTERNET_CPID = 0x0039, 0x0E06, 0x3FFD, 0x3FDE
MESSAGE_CLASS = 0x001A
DISPLAY_NAME, EMAIL_ADDRESS, SMTP_ADDRESS, RECIPIENT_TYPE = 0x3001, 0x3003, 0x39FE, 0x0C15
ATTACH_LONG_NAME, ATTACH_NAME, ATTACH_DATA, ATTACH_MIME = 0x3707, 0x3704, 0x3701, 0x370E
PT_LONG, PT_SYSTIME, PT_STRING8, PT_UNICODE, PT_BINARY = 0x0003, 0x0040, 0x001E, 0x001F, 0x0102


class _Storage:
    """One property storage of the compound file: the root message, a recipient, an attachment or an embedded
    message, named by its path prefix (``""`` for the root, ``"__attach_version1.0_#00000000/"`` …)."""

    def __init__(self, ole: Any, prefix: str, header: int, warnings: list[str], codepage: str = "cp1252") -> None:
        self.ole, self.prefix, self.warnings = ole, prefix, warnings
        self.fixed = self._fixed(header)
        cp = self.fixed.get(CODEPAGE) or self.fixed.get(INTERNET_CPID)
        self.codepage = f"cp{cp}" if isinstance(cp, int) and 0 < cp < 100_000 else codepage  # else the parent's
        if cp == 65001:
            self.codepage = "utf-8"

    def _stream(self, name: str) -> bytes | None:
        path = self.prefix + name
        try:
            if not self.ole.exists(path) or self.ole.get_type(path) != 2:  # 2: a stream
                return None
            return bytes(self.ole.openstream(path).read())
        except Exception as err:  # a broken sector chain: this property is lost, the rest is read
            self.warnings.append(f"property stream {name} could not be read ({type(err).__name__})")
            return None

    def _fixed(self, header: int) -> dict[int, Any]:
        """Fixed-length properties (integers, times) from ``__properties_version1.0``."""
        raw = self._stream("__properties_version1.0")
        out: dict[int, Any] = {}
        if raw is None:
            return out
        if len(raw) < header or (len(raw) - header) % 16:
            self.warnings.append("the property stream is damaged; some fields may be missing")
        for at in range(header, len(raw) - 15, 16):
            tag, _flags, value = struct.unpack_from("<IIQ", raw, at)
            kind, pid = tag & 0xFFFF, tag >> 16
            if kind == PT_LONG:
                out[pid] = value & 0xFFFFFFFF
            elif kind == PT_SYSTIME and value:
                try:
                    out[pid] = _dt.datetime(1601, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(microseconds=value // 10)
                except OverflowError:
                    continue
        return out

    def text(self, pid: int) -> str | None:
        raw = self._stream(f"__substg1.0_{pid:04X}{PT_UNICODE:04X}")
        if raw is not None:
            return raw.decode("utf-16-le", errors="replace").split("\x00", 1)[0]
        raw = self._stream(f"__substg1.0_{pid:04X}{PT_STRING8:04X}")
        if raw is not None:
            try:
                return raw.decode(self.codepage, errors="replace").split("\x00", 1)[0]
            except LookupError:
                return raw.decode("cp1252", errors="replace").split("\x00", 1)[0]
        return None

    def binary(self, pid: int) -> bytes | None:
        return self._stream(f"__substg1.0_{pid:04X}{PT_BINARY:04X}")

    def children(self, kind: str) -> list[str]:
        """Prefixes of the recipient (``recip``) or attachment (``attach``) storages directly below this one."""
        found = set()
        depth = self.prefix.count("/")
        try:
            entries = self.ole.listdir(streams=False, storages=True)
        except Exception:
            return []
        for entry in entries:
            below = "/".join(entry[:-1]) + ("/" if depth else "") == self.prefix
            if below and len(entry) == depth + 1 and entry[-1].startswith(f"__{kind}_version1.0_#"):
                found.add("/".join(entry) + "/")
        return sorted(found)


def load_msg(path: Path, data: bytes, options: Any) -> LoadedDocument:
    from .mail import read_message

    if not data.startswith(_OLE_MAGIC):
        raise CorruptFile(path, "not an Outlook .msg file (it is not a compound file)")
    import olefile

    warnings: list[str] = []
    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
    except Exception as err:
        raise CorruptFile(path, f"not a readable Outlook .msg file ({type(err).__name__}: {err})") from None
    with ole:
        if ole.exists("EncryptedPackage") or ole.exists("EncryptionInfo"):
            raise EncryptedFile(path, f"{path.name} is password-protected; save it without a password first")
        root = _Storage(ole, "", 32, warnings)
        fields = [root.text(p) for p in (SUBJECT, BODY, SENDER_NAME, DISPLAY_TO)]
        bodies = [root.binary(p) for p in (BODY_HTML, RTF_COMPRESSED)]
        if not any(fields) and all(b is None for b in bodies) and not root.children("attach"):
            raise CorruptFile(path, "not a readable Outlook .msg file (no message properties found)")
        message = _message(root, warnings, 0)
    doc, attachments = read_message(message, options, "the message")
    doc.metadata.pop("has_text", None)
    doc.metadata["format"] = "outlook-msg"
    doc.warnings = warnings + doc.warnings
    doc.parts = [("#" + name, att) for name, att in attachments]
    return doc


def _message(store: _Storage, warnings: list[str], depth: int) -> Message:
    """The message in ``store`` as a standard-library message (headers, body parts, attachments)."""
    msg = Message()
    sender = store.text(SENDER_NAME) or store.text(SENT_REPR_NAME) or ""
    address = store.text(SENDER_SMTP) or store.text(SENDER_EMAIL) or ""
    if "@" not in address:
        address = ""
    to, cc = _recipients(store)
    when = store.fixed.get(SUBMIT_TIME) or store.fixed.get(DELIVERY_TIME)
    headers = [
        ("Subject", store.text(SUBJECT) or ""),
        ("From", f"{sender} <{address}>" if sender and address else sender or address),
        ("To", ", ".join(to) or store.text(DISPLAY_TO) or ""),
        ("Cc", ", ".join(cc) or store.text(DISPLAY_CC) or ""),
        ("Date", _email_date(when) if isinstance(when, _dt.datetime) else ""),
        ("Message-ID", store.text(MESSAGE_ID) or ""),
    ]
    for name, value in headers:
        if value:
            msg[name] = _one_line(value)
    msg["MIME-Version"] = "1.0"
    msg.set_type("multipart/mixed")
    parts: list[Message] = []
    body = _body(store, warnings)
    if body is not None:
        parts.append(body)
    for prefix in store.children("attach")[:MAX_ATTACHMENTS]:
        part = _attachment(_Storage(store.ole, prefix, 8, warnings, store.codepage), warnings, depth)
        if part is not None:
            parts.append(part)
    msg.set_payload(parts)  # type: ignore[arg-type]
    return msg


def _recipients(store: _Storage) -> tuple[list[str], list[str]]:
    to: list[str] = []
    cc: list[str] = []
    for prefix in store.children("recip")[:MAX_RECIPIENTS]:
        recip = _Storage(store.ole, prefix, 8, store.warnings, store.codepage)
        name = recip.text(DISPLAY_NAME) or ""
        addr = recip.text(SMTP_ADDRESS) or recip.text(EMAIL_ADDRESS) or ""
        if "@" not in addr:
            addr = ""
        shown = f"{name} <{addr}>" if name and addr and name != addr else addr or name
        if shown:
            (cc if recip.fixed.get(RECIPIENT_TYPE) == 2 else to).append(shown)
    return to, cc


def _body(store: _Storage, warnings: list[str]) -> Message | None:
    text = store.text(BODY)
    if text and text.strip():
        return _text_part(text, "plain")
    html = store.binary(BODY_HTML)
    html_text = html.decode(store.codepage, errors="replace") if html else store.text(BODY_HTML)
    if html_text and html_text.strip():
        return _text_part(html_text, "html")
    rtf = store.binary(RTF_COMPRESSED)
    if rtf:
        return _rtf_part(rtf, warnings)
    return None


def _rtf_part(compressed: bytes, warnings: list[str]) -> Message | None:
    """A body kept only as compressed RTF, read through kaynak's RTF loader."""
    try:
        import compressed_rtf

        raw = compressed_rtf.decompress(compressed)
    except Exception as err:
        warnings.append(f"the RTF body could not be decompressed ({type(err).__name__})")
        return None
    from .rtf import load_rtf

    try:
        doc = load_rtf(Path("body.rtf"), raw)
    except LoaderError as err:
        warnings.append(f"the RTF body could not be read ({err.reason})")
        return None
    return _text_part("\n\n".join(p.text for p in doc.pages), "plain")


def _attachment(att: _Storage, warnings: list[str], depth: int) -> Message | None:
    name = att.text(ATTACH_LONG_NAME) or att.text(ATTACH_NAME) or att.text(DISPLAY_NAME) or "attachment"
    embedded = att.prefix + f"__substg1.0_{ATTACH_DATA:04X}000D"
    if att.ole.exists(embedded):  # an attached message: read as a forwarded one
        if depth >= MAX_DEPTH:
            warnings.append(f"messages embedded deeper than {MAX_DEPTH} levels were not read")
            return None
        inner = _message(_Storage(att.ole, embedded + "/", 24, warnings, att.codepage), warnings, depth + 1)
        part = Message()
        part.set_type("message/rfc822")
        part.set_payload([inner])
        return part
    data = att.binary(ATTACH_DATA)
    if data is None:
        return None
    part = Message()
    part["Content-Type"] = att.text(ATTACH_MIME) or "application/octet-stream"
    part.add_header("Content-Disposition", "attachment", filename=_one_line(name))
    part["Content-Transfer-Encoding"] = "base64"
    part.set_payload(base64.encodebytes(data).decode("ascii"))
    return part


def _text_part(text: str, subtype: str) -> Message:
    part = Message()
    part["Content-Type"] = f"text/{subtype}; charset=utf-8"
    part["Content-Transfer-Encoding"] = "base64"
    part.set_payload(base64.encodebytes(text.encode("utf-8")).decode("ascii"))
    return part


def _one_line(value: str) -> str:
    return " ".join(value.replace("\x00", " ").split())


def _email_date(when: _dt.datetime) -> str:
    from email.utils import format_datetime

    return format_datetime(when)
