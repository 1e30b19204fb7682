"""E-mail loader (EML, MBOX) with the standard library's ``email``: one document per message, attachments apart.

A message becomes one page: a header block (From, To, Cc, Date, Subject) then the body, under the subject as
section; its title is the subject. Metadata: ``from`` (the address, lower-case, so ``--meta from=a@b.org``
matches), ``from_name``, ``to`` / ``cc`` (addresses joined by ``, ``), ``date`` (ISO 8601), ``subject``,
``message_id``, ``attachments``. The body is the ``text/plain`` part, else the ``text/html`` part read by the HTML
loader; charsets are honoured (``windows-1254``, ``iso-8859-9``, …; an unknown or lying one falls back to the text
file rules) and RFC 2047 headers decoded. A forwarded or attached message (``message/rfc822``, also sent base64 or
quoted-printable, or an ``.eml`` attached as a file) is read into the body after an ``Attached message:`` line
with its subject, sender and date. Parser defects that lose nothing are ``mail_defects``; those that may are
warnings.

Attachments in a format kaynak reads become documents of their own (LoadedDocument.parts), their source naming the
message: ``mail.eml#report.pdf``, ``archive.mbox#12/report.pdf``, with the message's ``from``, ``to`` and date; one
that cannot be read is a warning on the message (one without text, a photo, is ``attachments_without_text``); an
archive attached gives the documents inside it. An ``.mbox`` file is split on its ``From `` lines (one with a
time, or one mail headers follow: an unquoted "From time to time" in a body is not one); message N (from 1, in
file order) is stored as ``archive.mbox#N``, and the mbox itself holds no text of its own. A message without
headers takes the ``From `` line's sender and date. A message that cannot be read is a warning and the others
are kept; MIME nested deeper than ``MAX_DEPTH`` is not followed further.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.errors
import email.header
import email.policy
import email.utils
import quopri
import re
from email.message import Message
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, LoaderError, NoText, OcrUnavailable
from kaynak.types import LoadedDocument, Page

from .common import MAX_TITLE, TextBuilder, collapse_whitespace
from .normalize import NotText, decode_text

MAX_DEPTH = 30
MAX_MESSAGES = 100_000
MAX_ATTACHMENTS = 100  # per message
#: A message's first line in an mbox: ``From <sender> <date>`` (the date has a time: ``Mon Jun 01 10:00:00 2009``,
#: ``Sun Aug  7 11:40:37 2022 extra``), or a ``From `` line a mail header follows. A body line "From time to time"
#: that the writer did not quote is not one.
_FROM_LINE = re.compile(
    rb"(?:\A|\n)From (?:[^\n]*?\d{1,2}:\d{2}[^\n]*\n|[^\n]*\n(?=(?i:Return-Path|Received|From|Date|Message-ID|Subject"
    rb"|To|Delivered-To|X-[\w-]+):))"
)
_FIRST_FROM_LINE = re.compile(rb"\AFrom [^\n]*\n")
_CHARSET_ALIASES = {"iso-8859-9": "cp1254", "latin5": "cp1254", "iso-8859-1": "cp1252", "us-ascii": "cp1252"}


def decode_part(payload: bytes, charset: str | None) -> tuple[str, list[str]]:
    """A text part's bytes as text: its declared charset (read as the Windows superset), else the text-file rules."""
    warnings: list[str] = []
    if charset:
        name = _CHARSET_ALIASES.get(charset.strip().lower(), charset.strip().lower())
        try:
            return payload.decode(name), warnings
        except (LookupError, UnicodeDecodeError):
            warnings.append(f"declared charset {charset!r} does not fit the text; read it by guessing")
    try:
        d = decode_text(payload)
        return d.text, warnings + d.warnings
    except NotText:
        return payload.decode("utf-8", errors="replace"), [*warnings, "body is not text in a known encoding"]


def decode_header_value(value: object) -> str:
    """A header as text: RFC 2047 encoded words decoded (any charset Python knows), raw 8-bit bytes read as UTF-8."""
    if value is None:
        return ""
    raw = str(value)
    if any("\udc80" <= ch <= "\udcff" for ch in raw):  # undecodable bytes kept by the parser
        raw = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    try:
        text = str(email.header.make_header(email.header.decode_header(raw)))
    except (LookupError, UnicodeDecodeError, ValueError, email.errors.HeaderParseError):
        text = raw
    return collapse_whitespace(text)


def _header(msg: Message, name: str) -> str:
    return decode_header_value(msg.get(name))


def _addresses(msg: Message, name: str) -> tuple[list[str], list[str]]:
    """(addresses, display names) of header ``name``."""
    try:
        values = msg.get_all(name, [])
        pairs = email.utils.getaddresses([decode_header_value(v) for v in values])
    except Exception:
        return [], []
    return [a.lower() for _, a in pairs if a], [n for n, _ in pairs if n]


class _Reader:
    """Reads one message: its body text and its attachments."""

    def __init__(self, options: Any, where: str) -> None:
        self.options = options
        self.where = where  # "message 12" or "the message", for warnings
        self.warnings: list[str] = []
        self.bodies: list[str] = []
        self.attachments: list[tuple[str, LoadedDocument]] = []
        self.names: list[str] = []
        self.without_text: list[str] = []  # attachments read that hold no text (a photo, a logo)

    def read(self, msg: Message) -> None:
        stack: list[tuple[Message, int]] = [(msg, 0)]
        deep = False
        while stack:
            part, depth = stack.pop()
            if depth > MAX_DEPTH:
                deep = True
                continue
            ctype = part.get_content_type()
            if ctype == "message/rfc822":  # an attached (forwarded) message: its headers and text, then its parts
                inner = self.attached_message(part)
                if inner is not None:
                    stack.append((inner, depth + 1))
                continue
            if part.is_multipart():
                children = part.get_payload()
                if not isinstance(children, list):
                    continue
                if ctype == "multipart/alternative":
                    children = _preferred(children)
                stack.extend((c, depth + 1) for c in reversed(children) if isinstance(c, Message))
                continue
            if ctype.startswith("multipart/"):  # a multipart whose boundary never appears: its text as it stands
                raw = part.get_payload(decode=True)
                if isinstance(raw, bytes) and raw.strip():
                    self.body_text(raw, part.get_content_charset())
                continue
            filename = decode_header_value(part.get_filename()) or None
            disposition = (part.get_content_disposition() or "").lower()
            if filename or (disposition == "attachment" and not ctype.startswith("text/")):
                self.attachment(part, filename or "attachment", ctype)
            elif ctype in ("text/plain", "text/html", "text/markdown", "text/enriched"):
                self.body(part, ctype)
        if deep:
            self.warnings.append(f"{self.where}: MIME parts nested deeper than {MAX_DEPTH} levels were not read")

    def body(self, part: Message, ctype: str) -> None:
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes) or not payload.strip():
            return
        if ctype == "text/html":
            from .html import load_html

            try:
                doc = load_html(Path("body.html"), payload)
                self.bodies.append("\n\n".join(p.text for p in doc.pages))
            except LoaderError as err:
                self.warnings.append(f"{self.where}: HTML body could not be read ({err.reason})")
            return
        self.body_text(payload, part.get_content_charset())

    def body_text(self, payload: bytes, charset: str | None) -> None:
        text, notes = decode_part(payload, charset)
        self.warnings.extend(f"{self.where}: {n}" for n in notes)
        self.bodies.append(text)

    def attachment(self, part: Message, name: str, ctype: str) -> None:
        from . import CONTAINER_EXTENSIONS, SUPPORTED_EXTENSIONS, loader_for

        name = collapse_whitespace(name).replace("/", "_")[:200] or "attachment"
        ext = Path(name).suffix.lower()
        if ext == ".eml":  # a message attached as a file (application/octet-stream, say): read like message/rfc822
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes) and payload.strip():
                self.names.append(name)
                inner_msg = _parse(payload)
                self.bodies.append(_forward_header(name, inner_msg))
                self.read(inner_msg)
            return
        self.names.append(name)
        if ext not in SUPPORTED_EXTENSIONS or len(self.attachments) >= MAX_ATTACHMENTS:
            return
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes) or not payload:
            return
        try:
            doc = loader_for(name)(Path(name), payload, self.options)
        except NoText as err:
            if isinstance(err, OcrUnavailable):  # a scan that was not read: text is missing
                self.warnings.append(f"{self.where}: attachment {name!r} could not be read ({err.reason})")
            else:  # a photo, a logo, an empty file: nothing was lost
                self.without_text.append(name)
            return
        except LoaderError as err:
            self.warnings.append(f"{self.where}: attachment {name!r} could not be read ({err.reason})")
            return
        except Exception as err:
            self.warnings.append(f"{self.where}: attachment {name!r} could not be read ({type(err).__name__})")
            return
        if ext in CONTAINER_EXTENSIONS:  # an archive or mailbox: the documents inside it, under its name
            for suffix, inner in doc.parts[: MAX_ATTACHMENTS - len(self.attachments)]:
                self.add(name + suffix, inner)
            if not any(p.text.strip() for p in doc.pages):
                return
        self.add(name, doc)

    def add(self, name: str, doc: LoadedDocument) -> None:
        taken = {n for n, _ in self.attachments}
        unique, k = name, 2
        while unique in taken:
            unique, k = f"{name} ({k})", k + 1
        self.attachments.append((unique, doc))

    def attached_message(self, part: Message) -> Message | None:
        """The message a ``message/rfc822`` part holds, decoded when it was sent base64 or quoted-printable (the
        parser leaves such a message's encoded text as the body of a headerless message); its header block is
        added to the text here."""
        name = decode_header_value(part.get_filename()) or "attached message"
        name = collapse_whitespace(name).replace("/", "_")[:200]
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload and isinstance(payload[0], Message) else None
        encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
        if encoding in ("base64", "quoted-printable") or inner is None:
            raw = _encoded_text(part, inner)
            try:
                if encoding == "base64":
                    decoded = base64.b64decode(re.sub(rb"[^A-Za-z0-9+/=]", b"", raw) + b"==")
                elif encoding == "quoted-printable":
                    decoded = quopri.decodestring(raw)
                else:
                    decoded = raw
            except (ValueError, binascii.Error):
                self.warnings.append(f"{self.where}: attached message {name!r} is not valid {encoding}; not read")
                return None
            if not decoded.strip():
                return None
            inner = _parse(decoded)
        self.names.append(name)
        self.bodies.append(_forward_header(name, inner))
        return inner


def _encoded_text(part: Message, inner: Message | None) -> bytes:
    """The undecoded text of a ``message/rfc822`` part (what the parser took for a headerless message)."""
    if inner is None:
        payload = part.get_payload()
        text = payload if isinstance(payload, str) else ""
    else:
        body = inner.get_payload()
        head = "".join(f"{k}: {v}\n" for k, v in inner.items())  # base64 has no ':'; nothing is expected here
        text = head + "\n" + body if isinstance(body, str) else inner.as_string()
    return text.encode("ascii", "replace")


def _forward_header(name: str, msg: Message) -> str:
    """The lines that introduce an attached message's text: its name, subject, sender, recipients and date."""
    lines = [f"Attached message: {name}"]
    for label in ("Subject", "From", "To", "Date"):
        value = _header(msg, label)
        if value:
            lines.append(f"{label}: {value}")
    return "\n".join(lines)


def _preferred(children: list[Any]) -> list[Any]:
    """Of a multipart/alternative, the plain-text version when there is one, else the last (the richest)."""
    plain = [c for c in children if isinstance(c, Message) and c.get_content_type() == "text/plain"]
    if plain:
        return plain[:1]
    return children[-1:]


def read_message(msg: Message, options: Any, where: str) -> tuple[LoadedDocument, list[tuple[str, LoadedDocument]]]:
    """One message as a document (one page) and its attachments as (file name, document)."""
    subject = _header(msg, "subject")
    from_addrs, from_names = _addresses(msg, "from")
    to_addrs, _ = _addresses(msg, "to")
    cc_addrs, _ = _addresses(msg, "cc")
    date_raw = _header(msg, "date")
    date_iso = None
    try:
        parsed = email.utils.parsedate_to_datetime(date_raw) if date_raw else None
        date_iso = parsed.isoformat() if parsed is not None else None
    except (TypeError, ValueError, IndexError):
        pass
    reader = _Reader(options, where)
    reader.read(msg)
    builder = TextBuilder()
    title = subject[:MAX_TITLE] or "(no subject)"
    builder.heading(1, title)
    head = [
        ("From", _header(msg, "from")),
        ("To", _header(msg, "to")),
        ("Cc", _header(msg, "cc")),
        ("Date", date_raw),
    ]
    builder.block("\n".join(f"{k}: {v}" for k, v in head if v), sep="\n")
    for body in reader.bodies:
        builder.block(body)
    if reader.names:
        builder.block("Attachments: " + ", ".join(reader.names))
    text, sections = builder.finish()
    metadata: dict[str, Any] = {"format": "email", "subject": subject}
    if from_addrs:
        metadata["from"] = from_addrs[0]
    if from_names:
        metadata["from_name"] = from_names[0]
    if to_addrs:
        metadata["to"] = ", ".join(to_addrs[:50])
    if cc_addrs:
        metadata["cc"] = ", ".join(cc_addrs[:50])
    if date_iso:
        metadata["date"] = date_iso
    message_id = _header(msg, "message-id")
    if message_id:
        metadata["message_id"] = message_id[:300]
    if reader.names:
        metadata["attachments"] = reader.names[:MAX_ATTACHMENTS]
    if reader.without_text:
        metadata["attachments_without_text"] = reader.without_text[:MAX_ATTACHMENTS]
    metadata["has_text"] = any(any(ch.isalnum() for ch in b) for b in reader.bodies)
    _note_defects(msg, where, metadata, reader.warnings)
    doc = LoadedDocument(title=title, pages=[Page(1, text, sections)], metadata=metadata, warnings=reader.warnings)
    for _, att in reader.attachments:
        att.metadata = {**att.metadata, "attached_to": title}  # and the message's sender, recipients and date
        att.metadata.update({k: metadata[k] for k in ("from", "to") if k in metadata})
        if date_iso:
            att.metadata["message_date"] = date_iso
    return doc, reader.attachments


#: The parser's defects after which part of a message may be unread (the others, such as a missing closing
#: boundary at the end or an odd header, are repaired with nothing lost), and what each means in words.
_LOSSY_DEFECTS = {
    "StartBoundaryNotFoundDefect": "its parts' boundary never appears",
    "NoBoundaryInMultipartDefect": "a multipart without a boundary",
    "MultipartInvariantViolationDefect": "a multipart that is not one",
    "InvalidBase64LengthDefect": "base64 cut short",
}


def _note_defects(msg: Message, where: str, metadata: dict[str, Any], warnings: list[str]) -> None:
    """The parser's defects in the metadata; those that may have lost text also as a warning, in words."""
    defects = [type(d).__name__ for d in list(getattr(msg, "defects", []))[:10]]
    lossy = [d for d in defects if d in _LOSSY_DEFECTS]
    if lossy:
        warnings.append(
            f"{where}: its MIME structure is broken ({', '.join(_LOSSY_DEFECTS[d] for d in lossy[:3])}); "
            "part of it may not have been read"
        )
    if defects:
        metadata["mail_defects"] = defects  # the rest are repaired by the parser: nothing is lost


def _parse(data: bytes) -> Message:
    """The message, parsed with the compat32 policy: twenty times faster than ``email.policy.default`` on a
    mailbox (its header objects parse every address eagerly); headers are decoded here when read."""
    return email.message_from_bytes(data, policy=email.policy.compat32)


def load_eml(path: Path, data: bytes, options: Any) -> LoadedDocument:
    if not re.match(rb"\s*[\x21-\x39\x3b-\x7e]+:", data[:1000]) and not data.startswith(b"From "):
        raise CorruptFile(path, "not an e-mail message (it does not start with mail headers)")
    msg = _parse(data)
    doc, attachments = read_message(msg, options, "the message")
    doc.metadata.pop("has_text", None)
    doc.parts = [("#" + name, att) for name, att in attachments]
    return doc


def split_mbox(data: bytes) -> list[bytes]:
    """The messages of an mbox file (mboxrd ``>From `` lines unquoted one level)."""
    return [raw for _, raw in _split(data)]


def _split(data: bytes) -> list[tuple[bytes, bytes]]:
    """(``From `` line, message) of each message of an mbox file; the file's first line always starts one."""
    lines = list(_FROM_LINE.finditer(data))
    if not lines or lines[0].start() != 0:
        first = _FIRST_FROM_LINE.match(data)
        if first is None:
            return []
        lines.insert(0, first)
    out = []
    for m, end in zip(lines, [*(m.start() for m in lines[1:]), len(data)], strict=True):
        envelope = data[m.start() : m.end()].strip()
        out.append((envelope, re.sub(rb"(?m)^>(>*From )", rb"\1", data[m.end() : end])))
    return out


def _envelope(line: bytes) -> tuple[str, str]:
    """(sender, date) of an mbox ``From `` line; either may be empty."""
    parts = line.decode("utf-8", "replace").split(None, 2)
    sender = parts[1] if len(parts) > 1 and "@" in parts[1] else ""
    date = parts[2] if len(parts) > 2 else ""
    return sender, collapse_whitespace(date)


def _fill_from_envelope(msg: Message, envelope: bytes) -> None:
    """A message without From or Date headers (a bare body after its ``From `` line) takes the mbox line's."""
    sender, date = _envelope(envelope)
    if sender and not msg.get("from"):
        msg["From"] = sender
    if date and not msg.get("date"):
        try:
            parsed = email.utils.parsedate_to_datetime(date) if date else None
        except (TypeError, ValueError, IndexError):
            parsed = None
        if parsed is not None:
            msg["Date"] = email.utils.format_datetime(parsed)


def load_mbox(path: Path, data: bytes, options: Any) -> LoadedDocument:
    if not data.startswith(b"From "):
        raise CorruptFile(path, "not an mbox file (it does not start with a 'From ' line)")
    messages = _split(data)
    warnings: list[str] = []
    if len(messages) > MAX_MESSAGES:
        warnings.append(f"only the first {MAX_MESSAGES:,} of {len(messages):,} messages were read")
        messages = messages[:MAX_MESSAGES]
    parts: list[tuple[str, LoadedDocument]] = []
    broken = 0
    for n, (envelope, raw) in enumerate(messages, start=1):
        try:
            msg = _parse(raw)
            headerless = not msg.keys()
            _fill_from_envelope(msg, envelope)
            doc, attachments = read_message(msg, options, f"message {n}")
        except RecursionError:
            broken += 1
            warnings.append(f"message {n} is nested too deeply to read; left out")
            continue
        except Exception as err:  # one broken message does not lose the mailbox
            broken += 1
            warnings.append(f"message {n} could not be read ({type(err).__name__}); left out")
            continue
        if headerless and (b"\x00" in raw or any("not text" in w for w in doc.warnings)):
            broken += 1  # a bare body after its From line is a message; bytes that are not text are damage
            warnings.append(f"message {n} has no mail headers and is not text (damaged?); left out")
            continue
        if not doc.metadata.get("has_text") and not attachments:
            warnings.append(f"message {n} has no text; left out")
            continue
        doc.metadata.pop("has_text", None)
        parts.append((f"#{n}", doc))
        parts.extend((f"#{n}/{name}", att) for name, att in attachments)
    title = path.stem or "mailbox"
    metadata = {"format": "mbox", "messages": len(messages)}
    if broken:
        metadata["broken_messages"] = broken
    return LoadedDocument(title=title, pages=[], metadata=metadata, warnings=warnings, parts=parts)
