"""Text clean-up shared by every loader: byte decoding that does not guess wildly, and normalisation.

``decode_text`` turns the bytes of a text file into text and says what it did (docs/adr/0009-ingest-isolation.md): a
byte-order mark decides first (UTF-8, UTF-16, UTF-32); then strict UTF-8; then UTF-8 as Java and old Windows code
write it (CESU-8 pairs joined into their character, lone surrogates read as U+FFFD, ``C0 80`` (NUL) dropped, each
with a warning); then UTF-8 with a few stray bytes dropped, when the rest is clearly UTF-8 (real multi-byte letters,
at most 0.1 % bad bytes); then UTF-16 without a mark when the NUL pattern leaves no doubt; then Windows-1254
(Turkish; it also reads Windows-1252 English) only when the result is plausibly Turkish or Western text (no
undefined bytes, letters mostly ASCII, hardly any control characters). Anything else raises ``NotText``: "not text
(unknown encoding or binary)". NUL bytes are dropped (not replaced, so ``İstan\x00bul`` stays one word) and other
control characters removed, each with a warning. ``decode_bytes`` / ``decode_with_encoding`` keep the older
never-failing behaviour for callers that need some text whatever the bytes.

``normalize_text`` makes any extracted text safe and uniform: NFC, typographic ligatures expanded (NFC keeps
``ﬁ``), control characters, NUL, lone surrogates and invisible format characters removed (PostgreSQL text can hold
neither NUL nor surrogates), all newline conventions turned into ``\\n``, Unicode spaces into plain spaces, runs of
spaces collapsed, at most one blank line between paragraphs. It is idempotent.

``repair_decomposed_diacritics`` rejoins the spacing accents that pdfLaTeX PDFs emit next to their letter
(``s¸`` → ``ş``, ``˘g`` → ``ğ``, ``˙I`` → ``İ``); the PDF loader applies it.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass, field

__all__ = [
    "Decoded",
    "NotText",
    "decode_bytes",
    "decode_text",
    "decode_with_encoding",
    "expand_ligatures",
    "normalize_text",
    "repair_decomposed_diacritics",
]

# --------------------------------------------------------------------------------------------- decoding

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le' / 'utf-16-be' when NUL bytes sit in every other position (ASCII-heavy UTF-16), else None."""
    sample = data[:4096]
    if len(sample) < 8 or len(sample) % 2:
        return None
    even_nul = sample[0::2].count(0)
    odd_nul = sample[1::2].count(0)
    half = len(sample) // 2
    if odd_nul >= 0.4 * half and even_nul <= 0.05 * half:
        return "utf-16-le"
    if even_nul >= 0.4 * half and odd_nul <= 0.05 * half:
        return "utf-16-be"
    return None


def decode_with_encoding(data: bytes) -> tuple[str, str]:
    """Decode ``data`` and say which encoding was used: ``(text, encoding)``.

    Order: byte-order mark (UTF-8, UTF-16, UTF-32); strict UTF-8; UTF-16 without a mark when the NUL pattern is
    unmistakable; Windows-1254. Bytes that Windows-1254 leaves undefined become U+FFFD (encoding
    ``cp1254+replace``). The BOM itself is not part of the text.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body = data[len(bom) :]
            try:
                return body.decode(encoding), encoding + ("-sig" if encoding == "utf-8" else "")
            except UnicodeDecodeError:
                return body.decode(encoding, errors="replace"), encoding + "+replace"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        try:
            return data.decode(utf16), utf16
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("cp1254"), "cp1254"
    except UnicodeDecodeError:
        return data.decode("cp1254", errors="replace"), "cp1254+replace"


class NotText(ValueError):
    """The bytes are not text in any encoding kaynak reads (or they are binary)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("not text (unknown encoding or binary)" + (f": {detail}" if detail else ""))


@dataclass
class Decoded:
    text: str
    encoding: str
    warnings: list[str] = field(default_factory=list)


# Bytes Windows-1254 leaves undefined: a file holding them is not Windows-1254 text.
_CP1254_UNDEFINED = re.compile(b"[\x81\x8d\x8e\x8f\x90\x9d\x9e]")
# Control characters a text file should not hold (tab, newlines, form feed and vertical tab are layout).
_CONTROL_RE = re.compile("[\x01-\x08\x0e-\x1f\x7f\x80-\x84\x86-\x9f]")
_TURKISH_LETTERS = frozenset("çğıöşüâîûÇĞİÖŞÜÂÎÛ")
_NON_ASCII_PUNCT = frozenset("„“”‘’‚‹›–—…«»°§·´¨ªº²³¹½¼¾×÷©®™€£¥¢¿¡¶µ¦¬±‰†‡•ˆ˜¤¯¸\u00a0")


def _plausible_western(text: str) -> bool:
    """Does Windows-1254 decoded text read like Turkish or Western text (not Cyrillic, CJK or binary)?"""
    letters = ascii_letters = turkish = odd = controls = 0
    for ch in text:
        if ch.isascii():
            if ch.isalpha():
                letters += 1
                ascii_letters += 1
            elif ch < " " and ch not in "\t\n\r\x0b\x0c":
                controls += 1
        elif ch.isalpha():
            letters += 1
            turkish += ch in _TURKISH_LETTERS
        elif ch not in _NON_ASCII_PUNCT:
            odd += 1
    n = max(len(text), 1)
    other = letters - ascii_letters
    # Western text has few non-ASCII letters, Turkish ~5-10 % and nearly all of them from its own alphabet;
    # Cyrillic or Greek read as Windows-1254 gives mostly non-ASCII letters, few of them Turkish.
    return (
        letters > 0
        and (ascii_letters >= 0.7 * letters or turkish >= 0.9 * other)
        and odd <= 0.01 * n
        and controls <= 0.001 * n + 1
    )


def clean_decoded(text: str, encoding: str, warnings: list[str]) -> Decoded:
    """Drop NUL bytes and remove control characters, with a warning for each kind."""
    nul = text.count("\x00")
    if nul:
        if nul > 0.1 * len(text):
            raise NotText(f"{nul} NUL bytes")
        text = text.replace("\x00", "")
        warnings.append(f"{nul} NUL byte{'s' if nul > 1 else ''} dropped")
    controls = len(_CONTROL_RE.findall(text))
    if controls:
        text = _CONTROL_RE.sub("", text)
        warnings.append(f"{controls} control character{'s' if controls > 1 else ''} removed")
    return Decoded(text, encoding, warnings)


def decode_text(data: bytes) -> Decoded:
    """Decode the bytes of a text file, or raise NotText; see the module docstring for the order of choices."""
    warnings: list[str] = []
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body = data[len(bom) :]
            name = encoding + ("-sig" if encoding == "utf-8" else "")
            try:
                return clean_decoded(body.decode(encoding), name, warnings)
            except UnicodeDecodeError:
                text = body.decode(encoding, errors="ignore")
                warnings.append(f"some bytes are not valid {encoding.upper()} and were dropped")
                return clean_decoded(text, name, warnings)
    try:
        return clean_decoded(data.decode("utf-8"), "utf-8", warnings)
    except UnicodeDecodeError:
        pass
    repaired = _repair_java_utf8(data, warnings)
    if repaired is not None:
        return clean_decoded(repaired, "utf-8", warnings)
    loose = data.decode("utf-8", errors="surrogateescape")
    bad = sum(1 for ch in loose if "\udc80" <= ch <= "\udcff")
    multibyte = sum(1 for ch in loose if ch > "\x7f") - bad
    if multibyte >= 1 and bad <= max(2, len(data) // 1000) and multibyte >= bad:
        text = "".join(ch for ch in loose if not "\udc80" <= ch <= "\udcff")
        warnings.append(f"{bad} byte{'s' if bad > 1 else ''} that {'are' if bad > 1 else 'is'} not valid UTF-8 dropped")
        return clean_decoded(text, "utf-8", warnings)
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        try:
            return clean_decoded(data.decode(utf16), utf16, warnings)
        except UnicodeDecodeError:
            pass
    if data.count(0) > 0.01 * len(data) or _CP1254_UNDEFINED.search(data):
        raise NotText()
    text = data.decode("cp1254")
    if not _plausible_western(text):
        raise NotText()
    return clean_decoded(text, "cp1254", warnings)


# UTF-8 as Java and old Windows code write it: a surrogate pair as two 3-byte sequences (CESU-8), a lone surrogate
# as one, and NUL as the overlong C0 80 (Java's "modified UTF-8"). Strict UTF-8 rejects them all.
_CESU_PAIR_RE = re.compile(rb"\xed[\xa0-\xaf][\x80-\xbf]\xed[\xb0-\xbf][\x80-\xbf]")
_SURROGATE_RE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
_JAVA_NUL = b"\xc0\x80"


def _repair_java_utf8(data: bytes, warnings: list[str]) -> str | None:
    """``data`` as UTF-8 once CESU-8 pairs are joined into their character, lone surrogates are read as U+FFFD and
    Java's ``C0 80`` (NUL) is dropped; None when other bytes still are not UTF-8."""
    if b"\xed" not in data and _JAVA_NUL not in data:
        return None
    notes: list[str] = []

    def pair(m: re.Match[bytes]) -> bytes:
        hi, lo = m.group()[:3].decode("utf-8", "surrogatepass"), m.group()[3:].decode("utf-8", "surrogatepass")
        return (hi + lo).encode("utf-16-le", "surrogatepass").decode("utf-16-le").encode("utf-8")

    fixed, pairs = _CESU_PAIR_RE.subn(pair, data)
    if pairs:
        notes.append(f"{pairs} CESU-8 surrogate pair{'s' if pairs > 1 else ''} read as the characters they encode")
    first = _SURROGATE_RE.search(fixed)
    fixed, lone = _SURROGATE_RE.subn("\ufffd".encode(), fixed)
    if lone:
        at = f" (first at byte {first.start()})" if first else ""
        notes.append(f"{lone} lone UTF-16 surrogate{'s' if lone > 1 else ''} read as U+FFFD{at}")
    nuls = fixed.count(_JAVA_NUL)
    fixed = fixed.replace(_JAVA_NUL, b"")
    if nuls:
        notes.append(f"{nuls} Java-style NUL{'s' if nuls > 1 else ''} (C0 80) dropped")
    try:
        text = fixed.decode("utf-8")
    except UnicodeDecodeError:
        return None
    warnings.extend(notes)
    return text


def decode_bytes(data: bytes) -> str:
    """Bytes → text with the fallback chain of :func:`decode_with_encoding` (UTF-8 ± BOM, UTF-16 BOM, cp1254)."""
    return decode_with_encoding(data)[0]


# --------------------------------------------------------------------------------------------- ligatures

_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",  # long s + t
    "\ufb06": "st",
}
_LIGATURE_TABLE = str.maketrans(_LIGATURES)


def expand_ligatures(text: str) -> str:
    """``ﬁ`` → ``fi``, ``ﬂ`` → ``fl`` … (the Latin presentation forms U+FB00–FB06; NFC leaves them alone)."""
    return text.translate(_LIGATURE_TABLE)


# --------------------------------------------------------------------------------------------- clean-up

# Characters deleted outright: C0/C1 controls except tab and newlines, DEL, soft hyphen, zero-width space, word
# joiner, BOM / zero-width no-break space, bidirectional embedding/override/isolate controls and marks,
# interlinear annotation characters, and the non-characters U+FFFE/U+FFFF.
_DELETE_RE = re.compile(
    "[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u00ad\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff\ufff9-\ufffb\ufffe\uffff\ud800-\udfff]"
)
# Newline conventions: CRLF, CR, NEL (U+0085), vertical tab, form feed, line and paragraph separators.
_NEWLINE_RE = re.compile("\r\n|[\r\x0b\x85\u2028]")
_PARAGRAPH_RE = re.compile("[\x0c\u2029]")
# Every horizontal space: tab, NBSP, the U+2000 block, narrow NBSP, medium math space, ideographic space …
_SPACE_RE = re.compile("[\t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_MULTISPACE_RE = re.compile(" {2,}")
_LINE_EDGE_SPACE_RE = re.compile(" *\n *")
_MANY_NEWLINES_RE = re.compile("\n{3,}")
_TRAILING_SPACE_RE = re.compile("[ \t]+\n")


def normalize_text(text: str, *, keep_layout: bool = False) -> str:
    """Clean ``text``: NFC, ligatures expanded, controls/NUL/invisible formatting removed, whitespace normalised.

    With ``keep_layout`` (code blocks) line-leading indentation, tabs and inner runs of spaces are kept; only
    newline conventions, trailing spaces and more than one blank line are normalised.
    """
    if not text:
        return ""
    text = _NEWLINE_RE.sub("\n", text)
    text = _PARAGRAPH_RE.sub("\n\n", text)
    text = _DELETE_RE.sub("", text)
    text = expand_ligatures(unicodedata.normalize("NFC", text))
    if keep_layout:
        text = _TRAILING_SPACE_RE.sub("\n", text + "\n")
        text = _MANY_NEWLINES_RE.sub("\n\n", text)
        return text.strip("\n").rstrip()
    text = _SPACE_RE.sub(" ", text)
    text = _MULTISPACE_RE.sub(" ", text)
    text = _LINE_EDGE_SPACE_RE.sub("\n", text)
    text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()


def collapse_whitespace(text: str) -> str:
    """One line of text: every run of whitespace (newlines included) becomes a single space."""
    return " ".join(normalize_text(text).split())


# --------------------------------------------------------------------------------------------- diacritics

# Spacing accents that TeX's \accent places *before* the base letter, with the combining mark each stands for.
_PREFIX_ACCENTS = {
    "\u00a8": "\u0308",  # ¨ diaeresis      ¨o → ö
    "\u02d8": "\u0306",  # ˘ breve          ˘g → ğ
    "\u02d9": "\u0307",  # ˙ dot above      ˙I → İ
    "\u00b4": "\u0301",  # ´ acute
    "\u02ca": "\u0301",  # ˊ modifier acute
    "\u02cb": "\u0300",  # ˋ modifier grave
    "\u02c6": "\u0302",  # ˆ circumflex     ˆa → â (Turkish: kâtip)
    "\u02dc": "\u0303",  # ˜ tilde
    "\u02c7": "\u030c",  # ˇ caron
    "\u02da": "\u030a",  # ˚ ring above
    "\u02dd": "\u030b",  # ˝ double acute
    "\u00af": "\u0304",  # ¯ macron
}
# Spacing accents that follow the base letter (cedilla and ogonek hang below it).
_SUFFIX_ACCENTS = {
    "\u00b8": "\u0327",  # ¸ cedilla        s¸ → ş, c¸ → ç
    "\u02db": "\u0328",  # ˛ ogonek
}
_LETTER = r"[^\W\d_]"
_PREFIX_RE = re.compile("([" + "".join(_PREFIX_ACCENTS) + "]) ?(" + _LETTER + ")")
_SUFFIX_RE = re.compile("(" + _LETTER + ") ?([" + "".join(_SUFFIX_ACCENTS) + "])")


def _compose(base: str, mark: str) -> str | None:
    if base == "ı" and mark != "\u0307":  # TeX puts accents on the dotless i: \"\i → ï
        base = "i"
    composed = unicodedata.normalize("NFC", base + mark)
    return composed if len(composed) == 1 else None


def repair_decomposed_diacritics(text: str) -> str:
    """Join spacing accents to their letter: ``s¸`` → ``ş``, ``c¸`` → ``ç``, ``˘g`` → ``ğ``, ``˙I`` → ``İ``,
    ``¨o`` → ``ö``. Only pairs with a precomposed Unicode letter are joined; anything else is left alone."""
    if not any(ch in text for ch in _PREFIX_ACCENTS) and not any(ch in text for ch in _SUFFIX_ACCENTS):
        return text

    def prefix(m: re.Match[str]) -> str:
        joined = _compose(m.group(2), _PREFIX_ACCENTS[m.group(1)])
        return joined if joined is not None else m.group(0)

    def suffix(m: re.Match[str]) -> str:
        joined = _compose(m.group(1), _SUFFIX_ACCENTS[m.group(2)])
        return joined if joined is not None else m.group(0)

    text = _SUFFIX_RE.sub(suffix, text)
    return _PREFIX_RE.sub(prefix, text)
