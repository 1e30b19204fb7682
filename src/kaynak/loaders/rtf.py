"""RTF loader: a small tokenizer of its own (no dependency), paragraphs, tables, pages, Turkish code pages.

Text comes from the document's groups in order: ``\\par`` ends a paragraph, ``\\line`` breaks a line, ``\\tab`` is a
tab, table cells (``\\cell``) join as ``cell | cell`` and ``\\row`` ends a row; ``\\page`` (and a section break with
``\\sbkpage``) starts a new page. Bytes written as ``\\'hh`` are decoded with the code page in force: the current
font's ``\\fcharset`` (162 = Turkish → Windows-1254, 204 = Cyrillic, …) or the document's ``\\ansicpgN`` (1254 for
Turkish documents); ``\\uN`` escapes give the character N and skip their ``\\ucN`` fallback characters. Headings are
paragraphs with ``\\outlinelevelN`` or a style named ``heading N`` / ``Başlık N``. A footnote leaves its mark
("[1]") in the text and follows the page's text as "[1] text"; a comment (``\\annotation``) follows the paragraph it
is anchored in as "[Comment (author): text]"; headers and footers come once for the document, at its end, under
"Headers and footers". List numbers and bullets are kept as Word shows them
(``\\listtext``/``\\pntext``: "1.", "a)", "•"). Not text: the font, colour, style and list tables, ``\\info`` (its
``\\title`` becomes the title), pictures, objects, field instructions (their results are read),
and any ``\\*`` destination kaynak does not know."""

from __future__ import annotations

import re
from pathlib import Path

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument

from .common import PagedBuilder, collapse_whitespace, first_line_title, meaningful_title, stem_title

_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z])|([{}])|([^\\{}\r\n]+)|[\r\n]+"
)
_SKIP_DESTINATIONS = frozenset(
    {
        b"fonttbl", b"colortbl", b"stylesheet", b"info", b"pict", b"object", b"themedata", b"colorschememapping",
        b"latentstyles", b"datastore", b"xmlnstbl", b"listtable", b"listoverridetable", b"rsidtbl", b"generator",
        b"fldinst", b"bkmkstart", b"bkmkend", b"filetbl", b"revtbl", b"pgdsctbl", b"mmathPr", b"wgrffmtfilter",
        b"nonshppict", b"shppict", b"blipuid", b"xmlopen", b"xmlclose", b"protusertbl",
        b"userprops", b"docvar", b"template", b"passwordhash", b"company", b"operator",
    }
)  # fmt: skip
_CHARSETS = {
    0: None, 1: None, 2: "symbol", 77: "mac_roman", 128: "cp932", 129: "cp949", 134: "gbk", 136: "big5",
    161: "cp1253", 162: "cp1254", 163: "cp1258", 177: "cp1255", 178: "cp1256", 186: "cp1257", 204: "cp1251",
    222: "cp874", 238: "cp1250",
}  # fmt: skip
_HEADERS_FOOTERS = frozenset(
    {b"header", b"headerl", b"headerr", b"headerf", b"footer", b"footerl", b"footerr", b"footerf"}
)
_HF_LABEL = "Headers and footers"
_CAPTURED = frozenset({b"footnote", b"annotation", b"atnauthor"})
_SYMBOL_BULLETS = frozenset({0xB7, 0xA7, 0xA8, 0x6C, 0x6E, 0x71, 0xD8, 0xFC, 0x76})
_HEADING_NAME = re.compile(r"^(heading|başlık|baslik)\s*(\d)", re.I)
MAX_DEPTH = 1000


class _State:
    __slots__ = ("codec", "font", "listtext", "skip", "uc")

    def __init__(
        self, uc: int = 1, skip: bool = False, font: int | None = None, codec: str | None = None, listtext: bool = False
    ) -> None:
        self.uc = uc
        self.skip = skip
        self.font = font
        self.codec = codec
        self.listtext = listtext  # inside {\\listtext …}: the list number or bullet as Word shows it

    def copy(self) -> _State:
        return _State(self.uc, self.skip, self.font, self.codec, self.listtext)


def _fonts(data: bytes) -> dict[int, str]:
    """Font number → codec, from the font table's ``\\fN … \\fcharsetM`` entries."""
    out: dict[int, str] = {}
    start = data.find(b"{\\fonttbl")
    if start < 0:
        return out
    for m in re.finditer(rb"\\f(\d+)[^;{}]*?\\fcharset(\d+)", data[start : start + 200_000]):
        codec = _CHARSETS.get(int(m.group(2)))
        if codec:
            out[int(m.group(1))] = codec
    return out


def _style_levels(data: bytes) -> dict[int, int]:
    """Paragraph style number → heading level, from style names like ``heading 2``."""
    out: dict[int, int] = {}
    start = data.find(b"{\\stylesheet")
    if start < 0:
        return out
    for m in re.finditer(rb"\{[^{}]*?\\s(\d+)\b[^{}]*?\s([^\\{};]+);\}", data[start : start + 500_000]):
        name = m.group(2).decode("latin-1").strip()
        h = _HEADING_NAME.match(name)
        if h:
            out[int(m.group(1))] = int(h.group(2))
    return out


def _info_title(data: bytes, codec: str) -> str | None:
    m = re.search(rb"\{\\title\s([^{}]*)\}", data[:500_000])
    if not m:
        return None
    raw = re.sub(rb"\\'([0-9a-fA-F]{2})", lambda h: bytes([int(h.group(1), 16)]), m.group(1))
    return raw.decode(codec, errors="replace").strip() or None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        cpg = re.search(rb"\\ansicpg(\d+)", data[:4096])
        self.default = f"cp{int(cpg.group(1))}" if cpg else "cp1252"
        try:
            b"".decode(self.default)
        except LookupError:
            self.default = "cp1252"
        self.fonts = _fonts(data)
        self.styles = _style_levels(data)
        self.builder = PagedBuilder()
        self.para: list[str] = []
        self.row: list[str] = []  # the cells of the table row being read
        self.in_table = False  # inside a table row: \\intbl, \\trowd or a \\cell seen since the last \\row
        self.nest: list[str] = []  # the cells of a nested table's row (\\nestcell), joined into the outer cell
        self.captures: list[tuple[int, str, list[str]]] = []  # footnote/comment groups: (depth, kind, outer text)
        self.notes: list[str] = []  # the current page's footnotes, written after its text
        self.footnotes = 0
        self.marked = False  # a \\chftn mark was written for the next footnote
        self.author = ""
        self.comments: list[str] = []  # comments anchored in the paragraph being read, written after it
        self.headers_footers: list[str] = []  # each distinct header and footer text, once for the document
        self.body_headings: list[tuple[int, str]] = []
        self.level: int | None = None
        self.pending = bytearray()
        self.pending_codec = self.default
        self.deep = False

    def text(self) -> str:
        """The paragraph's text so far (emptied): ``\\uN`` surrogate pairs joined into one character, a lone
        surrogate replaced."""
        self.flush_bytes()
        text = "".join(self.para)
        self.para = []
        if any("\ud800" <= c <= "\udfff" for c in text):
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", errors="replace")
        return text

    def flush_bytes(self) -> None:
        if self.pending:
            if self.pending_codec == "symbol":  # Symbol/Wingdings glyphs: a list bullet, mostly
                self.para.append("".join("•" if b in _SYMBOL_BULLETS else chr(b) for b in self.pending))
            else:
                self.para.append(bytes(self.pending).decode(self.pending_codec, errors="replace"))
            self.pending.clear()

    def end_paragraph(self) -> None:
        if self.in_table or self.captures:  # a paragraph inside a table cell or a footnote: it goes on
            self.para.append(" ")
            return
        text = self.text()
        if self.level is not None and text.strip() and len(text) <= 300:
            self.builder.heading(self.level, text)
        else:
            self.builder.block(text)
        self.flush_comments()

    def flush_comments(self) -> None:
        for comment in self.comments:
            self.builder.block(comment)
        self.comments = []

    def run(self) -> None:  # noqa: C901  (one flat dispatch over RTF's control words)
        state = _State()
        stack: list[_State] = []
        skip_chars = 0
        dest_next = False
        group_start = False  # the previous token opened a group: only there does \\* mark a destination
        for m in _TOKEN.finditer(self.data):
            word, arg, hexbyte, symbol, brace, text = m.groups()
            opened, group_start = group_start, brace == b"{" or (group_start and m.lastindex is None)
            if hexbyte is None and self.pending and not state.skip:
                self.flush_bytes()
            if brace == b"{":
                if len(stack) >= MAX_DEPTH:
                    self.deep = True
                    stack.append(state.copy())
                    state.skip = True
                    continue
                stack.append(state.copy())
                dest_next = False
                skip_chars = 0
                continue
            if brace == b"}":
                if stack:
                    state = stack.pop()
                while self.captures and len(stack) < self.captures[-1][0]:
                    self.end_capture()
                dest_next = False
                skip_chars = 0
                continue
            if symbol is not None:
                if symbol == b"*":
                    dest_next = opened  # a stray \\* inside a group (StarWriter writes them) is ignored
                elif state.skip:
                    pass
                elif skip_chars:
                    skip_chars -= 1
                elif symbol in (b"\\", b"{", b"}"):
                    self.para.append(symbol.decode())
                elif symbol == b"~":
                    self.para.append("\u00a0")
                elif symbol in (b"-", b"_"):
                    self.para.append("-" if symbol == b"_" else "")
                elif symbol in (b"\n", b"\r"):
                    self.end_paragraph()
                continue
            if hexbyte is not None:
                if state.skip:
                    continue
                if skip_chars:
                    skip_chars -= 1
                    continue
                codec = state.codec or self.default
                if self.pending and codec != self.pending_codec:
                    self.flush_bytes()
                self.pending_codec = codec
                self.pending.append(int(hexbyte, 16))
                continue
            if text is not None:
                if state.skip:
                    continue
                chunk = text.decode(state.codec or self.default, errors="replace")
                if skip_chars:
                    drop = min(skip_chars, len(chunk))
                    chunk = chunk[drop:]
                    skip_chars -= drop
                self.para.append(chunk)
                continue
            if word is None:
                continue  # bare newlines in the source are not text
            if (word in _CAPTURED or word in _HEADERS_FOOTERS) and not state.skip:
                self.flush_bytes()
                self.captures.append((len(stack), word.decode(), self.para))
                self.para = []
                dest_next = False
                continue
            if word in (b"listtext", b"pntext"):
                state.listtext = True
                dest_next = False
                continue
            if dest_next or word in _SKIP_DESTINATIONS:
                state.skip = state.skip or word != b"fldrslt"
                dest_next = False
                continue
            n = int(arg) if arg is not None else None
            if word == b"uc":
                state.uc = n if n is not None and 0 <= n <= 10 else 1
            elif word == b"u" and n is not None:
                if not state.skip:
                    code = n + 65536 if n < 0 else n
                    self.para.append(chr(code) if code < 0x110000 else "\ufffd")
                    skip_chars = state.uc
            elif word == b"nestrow":  # Word writes it inside {\\*\\nesttableprops …}, a skipped destination
                if any(self.nest):
                    self.para.append(" | ".join(self.nest) + "; ")
                self.nest = []
            elif state.skip:
                continue
            elif word == b"f" and n is not None:
                state.font = n
                state.codec = self.fonts.get(n)
            elif word in (b"par", b"sect"):
                self.end_paragraph()
            elif word == b"pard" and not state.listtext:
                self.level = None
            elif word == b"outlinelevel" and n is not None:
                self.level = n + 1 if 0 <= n < 9 else None
            elif word == b"s" and n is not None:
                self.level = self.styles.get(n, self.level)
            elif word == b"line":
                self.para.append("\n")
            elif word == b"tab":
                self.para.append(" " if state.listtext else "\t")
            elif word == b"cell":
                self.in_table = True
                self.row.append(collapse_whitespace(self.text()))
            elif word in (b"trowd", b"intbl"):
                self.in_table = True
            elif word == b"row":
                self.end_row()
            elif word == b"nestcell":
                self.nest.append(collapse_whitespace(self.text()))
            elif word == b"page":
                self.end_paragraph()
                self.flush_notes()
                self.builder.page_break()
            elif word == b"sbkpage":
                self.flush_notes()
                self.builder.page_break()
            elif word == b"chftn":
                if not self.captures:  # the mark in the text; the footnote repeats it at its start
                    self.footnotes += 1
                    self.marked = True
                    self.para.append(f"[{self.footnotes}]")
            elif word in (b"emdash", b"endash"):
                self.para.append("—" if word == b"emdash" else "–")
            elif word in (b"lquote", b"rquote"):
                self.para.append("‘" if word == b"lquote" else "’")
            elif word in (b"ldblquote", b"rdblquote"):
                self.para.append("“" if word == b"ldblquote" else "”")
            elif word == b"bullet":
                self.para.append("•")
        if self.in_table:  # cells without a closing \\row (a cut file, or a writer that leaves it out)
            if "".join(self.para).strip():
                self.row.append(collapse_whitespace(self.text()))
            self.end_row()
        while self.captures:  # a cut file: its open footnote or comment
            self.end_capture()
        self.end_paragraph()
        self.flush_notes()
        self.body_headings = list(self.builder.headings)
        if self.headers_footers:
            self.builder.heading(1, _HF_LABEL)
            for text in self.headers_footers:
                self.builder.block(text)

    def end_capture(self) -> None:
        """A footnote's text goes after the page (its mark stays in the text), a comment's right where it is
        anchored, marked as a comment."""
        _, kind, outer = self.captures.pop()
        text = collapse_whitespace(self.text())
        self.para = outer
        if kind.encode() in _HEADERS_FOOTERS:
            if text and text not in self.headers_footers:
                self.headers_footers.append(text)
        elif kind == "atnauthor":
            self.author = text
        elif kind == "annotation" and text:
            self.comments.append(f"[Comment ({self.author}): {text}]" if self.author else f"[Comment: {text}]")
        elif kind == "footnote":
            if not self.marked:
                self.footnotes += 1
                self.para.append(f"[{self.footnotes}]")
            self.marked = False
            if text:
                self.notes.append(f"[{self.footnotes}] {text}")

    def flush_notes(self) -> None:
        for note in self.notes:
            self.builder.block(note, sep="\n")
        self.notes = []

    def end_row(self) -> None:
        cells, self.row, self.in_table = self.row, [], False
        if any(cells):
            self.builder.block(" | ".join(cells), sep="\n")
        self.flush_comments()


def load_rtf(path: Path, data: bytes) -> LoadedDocument:
    if not data.lstrip()[:5] == b"{\\rtf":
        raise CorruptFile(path, "not an RTF file (it does not start with {\\rtf)")
    reader = _Reader(data)
    reader.run()
    pages = reader.builder.pages()
    warnings = [f"groups nested deeper than {MAX_DEPTH} levels were not read"] if reader.deep else []
    metadata = {"format": "rtf", "codepage": reader.default, "page_count": len(pages)}
    title = (
        meaningful_title(_info_title(data, reader.default))
        or (reader.body_headings[0][1] if reader.body_headings else None)
        or first_line_title(re.sub(r"\[\d+\]", "", pages[0].text.split(_HF_LABEL)[0]), max_len=120)
        or stem_title(path)
    )
    return LoadedDocument(title=title, pages=pages, metadata=metadata, warnings=warnings)
