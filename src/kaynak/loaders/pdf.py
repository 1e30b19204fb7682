"""PDF loader (pypdf): one page of clean running text per PDF page.

pypdf reports each text fragment with its position, font and size; from those this module rebuilds lines, then:

1. repairs the decomposed diacritics of pdfLaTeX PDFs (``s¸`` → ``ş``) and drops superscript footnote markers;
2. puts single-column pages in top-to-bottom order (footnotes written first, headers written last), while
   multi-column pages keep the producer's order, which for LaTeX and Word is column by column;
3. removes running headers and footers: lines at the top or bottom edge that repeat on many pages (digits
   ignored), lines that carry a page counter, and bare page numbers;
4. rejoins words split by justified spacing (``preven t`` → ``prevent``) when the document's own vocabulary
   says so;
5. reflows lines into paragraphs (blank lines, vertical gaps, font changes, list and article markers, short
   lines ending a sentence, column jumps) and repairs line-end hyphenation: ``kat ma-`` + ``likleri`` →
   ``kat malikleri``, while ``semi-`` + ``automatic`` stays hyphenated when the document spells it so elsewhere,
   and hyphens before capitals or digits are kept.

Paragraphs are separated by a blank line. A page whose extraction fails is kept empty with a warning. Pages with
(almost) no text layer are scans: ``kaynak.loaders.ocr`` renders and OCRs them (Tesseract); a PDF with no text even
then, or a scan without Tesseract installed, is refused. Encrypted PDFs open when the user password is empty.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, EncryptedFile, NoText
from kaynak.text import tr_lower
from kaynak.types import LoadedDocument, Page

from .common import first_line_title, json_safe, meaningful_title, stem_title
from .normalize import collapse_whitespace, normalize_text, repair_decomposed_diacritics
from .ocr import ocr_pdf_pages

NO_TEXT_LAYER = "no text layer, and OCR found no text either"


# --------------------------------------------------------------------------------------------- lines


@dataclass
class _Piece:
    text: str
    x: float | None
    y: float | None
    size: float
    bold: bool
    upright: bool


@dataclass
class Line:
    """One text line of a page as pypdf reports it, with the position of its first fragment."""

    text: str
    x: float | None = None
    y: float | None = None
    size: float = 0.0
    bold: bool = False
    upright: bool = True
    order: int = 0
    blank_before: bool = False
    pieces: list[_Piece] = field(default_factory=list, repr=False)

    @property
    def positioned(self) -> bool:
        return self.x is not None and self.y is not None


def _mult(m: list[float], n: list[float]) -> list[float]:
    return [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]


_BOLD_RE = re.compile(r"bold|black|heavy|semibold|demi|,b$|\.b$|-bd|bx\d", re.I)
_FOOTNOTE_MARK_RE = re.compile(r"^[\d*†‡§¹²³⁴⁵⁶⁷⁸⁹⁰]{1,3}$")
_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_ACCENTS_ONLY_RE = re.compile(r"^[\s¨˘˙´ˊˋˆ˜ˇ˚˝¯¸˛]+$")


def _finish_line(pieces: list[_Piece], order: int) -> Line | None:
    """A Line from its fragments, or None for a blank line."""
    visible = [p for p in pieces if p.text.strip()]
    if not visible:
        return None
    weights: Counter[float] = Counter()
    bold_chars = total = 0
    for p in visible:
        n = len(p.text.strip())
        weights[round(p.size * 2) / 2] += n
        total += n
        bold_chars += n if p.bold else 0
    size = weights.most_common(1)[0][0]
    anchored = [p for p in visible if p.y is not None]
    base = max(anchored, key=lambda p: (len(p.text.strip()), -(p.y or 0))) if anchored else None
    base_y = base.y if base is not None else None
    kept: list[_Piece] = []
    text_so_far = ""
    for p in pieces:
        stripped = p.text.strip()
        if (
            base_y is not None
            and p.y is not None
            and _FOOTNOTE_MARK_RE.match(stripped)
            and p.size < 0.8 * size
            and p.y > base_y + 0.15 * size
        ):
            before = text_so_far.rstrip()
            if (
                re.search(r"(?<![^\W\d_])[^\W\d_]$|[)\]]$", before)
                and not re.search(r"[^\W\d_] [a-zçğıöşü]$", before)  # "b y": a word split by spacing
                and stripped.isdigit()
                and before == text_so_far
            ):
                # An exponent after a single letter or a bracket: x², R², (a+b)².
                p = _Piece(stripped.translate(_SUPERSCRIPTS), p.x, p.y, p.size, p.bold, p.upright)
            elif re.search(r"([^\W\d_]|[.,;:\"”’])$", before):
                continue  # a footnote marker glued to the word before it
        kept.append(p)
        text_so_far += p.text
    text = "".join(p.text for p in kept).rstrip()
    if not text.strip():
        return None
    first = next((p for p in kept if p.text.strip() and p.x is not None), None)
    return Line(
        text=text,
        x=first.x if first is not None else None,
        y=base_y,
        size=size,
        bold=total > 0 and bold_chars >= 0.8 * total,
        upright=all(p.upright for p in visible),
        order=order,
        pieces=kept,
    )


def extract_lines(page: Any, raw: list[str] | None = None) -> list[Line | None]:
    """The page's lines in content-stream order; None stands for a blank line.

    ``raw``, when given, receives every text fragment as pypdf reports it (joined, pypdf's plain extraction).
    """
    lines: list[Line | None] = []
    current: list[_Piece] = []

    def visit(text: str, cm: list[float], tm: list[float], font_dict: Any, font_size: float) -> None:
        nonlocal current
        if not text:
            return
        if raw is not None:
            raw.append(text)
        m = _mult(list(tm), list(cm))
        upright = m[0] > 0 and m[3] > 0 and abs(m[1]) < 1e-6 * abs(m[0]) + 1e-9 and abs(m[2]) < 1e-6 * abs(m[3]) + 1e-9
        size = abs(float(font_size or 0) * (math.hypot(m[2], m[3]) or 1.0))
        name = ""
        if font_dict is not None:
            try:
                name = str(font_dict.get("/BaseFont", "") or "")
            except Exception:
                name = ""
        bold = bool(_BOLD_RE.search(name))
        parts = text.split("\n")
        for k, part in enumerate(parts):
            if k > 0:
                lines.append(_finish_line(current, len(lines)))
                current = []
            if part:
                known = k == 0 and part.strip() != ""
                current.append(_Piece(part, m[4] if known else None, m[5] if known else None, size, bold, upright))

    page.extract_text(visitor_text=visit)
    if current:
        lines.append(_finish_line(current, len(lines)))
    return _merge_accent_lines(lines)


def _merge_accent_lines(lines: list[Line | None]) -> list[Line | None]:
    """A line holding nothing but spacing accents (raised above a capital) belongs to the line below."""
    out: list[Line | None] = []
    pending = ""
    for line in lines:
        if line is not None and _ACCENTS_ONLY_RE.match(line.text):
            pending += line.text.strip()
            continue
        if pending and line is not None:
            line.text = pending + line.text.lstrip()
            pending = ""
        out.append(line)
    return out


# --------------------------------------------------------------------------------------------- order


def _spacing(lines: list[Line]) -> float:
    """Typical distance between consecutive baselines of same-size lines (falls back to 1.2 × font size)."""
    gaps = [
        a.y - b.y
        for a, b in itertools.pairwise(lines)
        if a.y is not None and b.y is not None and abs(a.size - b.size) < 0.5 and 0.5 * a.size < a.y - b.y < 3 * a.size
    ]
    if gaps:
        return statistics.median(gaps)
    sizes = [ln.size for ln in lines if ln.size]
    return 1.2 * (statistics.median(sizes) if sizes else 10.0)


def order_lines(lines: list[Line]) -> list[Line]:
    """Move blocks that the producer wrote out of vertical order: a run of lines lying wholly below the rest of
    the page (footnotes, footers written first) goes to the end, one wholly above it (headers written last) to
    the start. Runs side by side (columns, table cells) keep the producer's order."""
    if len(lines) < 3 or any(not ln.positioned for ln in lines):
        return lines
    runs: list[list[Line]] = [[lines[0]]]
    for prev, line in itertools.pairwise(lines):
        assert prev.y is not None and line.y is not None
        if line.y > prev.y + 0.5 * max(line.size, 1.0):
            runs.append([line])
        else:
            runs[-1].append(line)
    if len(runs) < 2:
        return lines
    tops = [max(ln.y for ln in run if ln.y is not None) for run in runs]
    bottoms = [min(ln.y for ln in run if ln.y is not None) for run in runs]
    head: list[int] = []
    tail: list[int] = []
    middle: list[int] = []
    # The highest top and lowest bottom among the *other* runs, from the two extremes (linear, not quadratic).
    by_top = sorted(range(len(runs)), key=lambda j: -tops[j])[:2]
    by_bottom = sorted(range(len(runs)), key=lambda j: bottoms[j])[:2]
    for i in range(len(runs)):
        others_top = tops[by_top[1]] if by_top[0] == i else tops[by_top[0]]
        others_bottom = bottoms[by_bottom[1]] if by_bottom[0] == i else bottoms[by_bottom[0]]
        if bottoms[i] > others_top + 1:
            head.append(i)
        elif tops[i] < others_bottom - 1:
            tail.append(i)
        else:
            middle.append(i)
    if not head and not tail:
        return lines
    head.sort(key=lambda i: -tops[i])
    tail.sort(key=lambda i: -tops[i])
    return [ln for i in head + middle + tail for ln in runs[i]]


# --------------------------------------------------------------------------------------------- headers, footers

_PAGE_NUMBER_RE = re.compile(
    r"^[\s\-–—(\[|]*(?:(?:page|sayfa|seite|p\.|s\.)\s*)?(?:\d{1,4}|(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3}))"
    r"(?:\s*(?:/|of|de|von|-)\s*\d{1,4})?[\s\-–—)\]|]*$",
    re.I,
)


def _edge_indices(lines: list[Line], k: int = 3) -> set[int]:
    n = len(lines)
    idx = set(range(min(k, n))) | set(range(max(0, n - k), n))
    positioned = [(ln.y, i) for i, ln in enumerate(lines) if ln.y is not None]
    if positioned:
        idx.add(max(positioned)[1])
        idx.add(min(positioned)[1])
    return idx


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(tr_lower(text).split()))


_COUNTER_RE = re.compile(r"(?<![\d.,/:])\d{1,4}(?![\d.,/:]\d)")


def _strict_edges(lines: list[Line]) -> set[int]:
    """The first two and last two lines of a page."""
    return set(range(min(2, len(lines)))) | set(range(max(0, len(lines) - 2), len(lines)))


def _bare_page_numbers(pages: list[list[Line]], removed: list[set[int]]) -> None:
    """Bare page numbers at the very top or bottom of a page."""
    for p, lines in enumerate(pages):
        for i in _strict_edges(lines):
            if _PAGE_NUMBER_RE.match(lines[i].text):
                removed[p].add(i)


def _repeated_edge_lines(pages: list[list[Line]], edges: list[set[int]], removed: list[set[int]]) -> None:
    """Lines repeating at page edges (digits ignored)."""
    seen: Counter[str] = Counter()
    for p, lines in enumerate(pages):
        seen.update({_key(lines[i].text) for i in edges[p]})
    threshold = max(3, math.ceil(0.5 * len(pages)))
    for p, lines in enumerate(pages):
        for i in edges[p]:
            if seen[_key(lines[i].text)] >= threshold and len(lines[i].text) <= 200:
                removed[p].add(i)


def _page_counter_lines(pages: list[list[Line]], edges: list[set[int]], removed: list[set[int]]) -> None:
    """Lines carrying a page counter (printed number = page index + a fixed offset), e.g. "6 1.1. RÄUME"."""
    offsets: Counter[int] = Counter()
    for p, lines in enumerate(pages):
        offsets.update({int(num) - (p + 1) for i in edges[p] for num in _COUNTER_RE.findall(lines[i].text)})
    if not offsets:
        return
    offset, count = offsets.most_common(1)[0]
    if count < max(3, math.ceil(0.3 * len(pages))):
        return
    for p, lines in enumerate(pages):
        for i in _strict_edges(lines):
            if str(p + 1 + offset) in _COUNTER_RE.findall(lines[i].text) and len(lines[i].text) <= 70:
                removed[p].add(i)


def remove_running_lines(pages: list[list[Line]]) -> tuple[list[list[Line]], int]:
    """Drop running headers/footers and page numbers; returns the pages and how many lines went."""
    edges = [_edge_indices(lines) for lines in pages]
    removed: list[set[int]] = [set() for _ in pages]
    _bare_page_numbers(pages, removed)
    if len(pages) >= 3:
        _repeated_edge_lines(pages, edges, removed)
        _page_counter_lines(pages, edges, removed)

    # Never empty a page that had text other than page numbers: what would be left of it is its content (a
    # 2,000-page PDF with one line per page repeats that line's shape on every page, yet it is the text).
    for p, lines in enumerate(pages):
        if lines and len(removed[p]) == len(lines):
            numbers = {i for i, ln in enumerate(lines) if _PAGE_NUMBER_RE.match(ln.text)}
            if len(numbers) < len(lines):
                removed[p] = numbers
    out = [[ln for i, ln in enumerate(lines) if i not in removed[p]] for p, lines in enumerate(pages)]
    return out, sum(len(r) for r in removed)


# --------------------------------------------------------------------------------------------- words

_WORD_RE = re.compile(r"[^\W\d_]+")
# A match starts only at a word's start and never backtracks into it: linear, not quadratic, in a long run of
# letters (a crafted line once froze the server for minutes).
_HYPHENATED_RE = re.compile(r"(?<![^\W\d_])[^\W\d_]++-[^\W\d_]+")
_HYPHENS = "-\u2010\u00ad"
_SPLIT_LETTER_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]{2,}) ([^\W\d_])(?![^\W\d_])")


@dataclass
class Vocabulary:
    """Word counts of a document, used to decide hyphenation and split words the way the document spells them."""

    words: Counter[str] = field(default_factory=Counter)
    hyphenated: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_lines(cls, pages: list[list[Line]]) -> Vocabulary:
        vocab = cls()
        for lines in pages:
            for i, line in enumerate(lines):
                text = line.text.strip()
                if text[-1:] in _HYPHENS:
                    text = text[: len(text) - len(_trailing_word(text)) - 1]
                if i > 0 and lines[i - 1].text.rstrip()[-1:] in _HYPHENS:
                    text = text[len(_leading_word(text)) :]
                low = tr_lower(text)
                vocab.words.update(_WORD_RE.findall(low))
                vocab.hyphenated.update(_HYPHENATED_RE.findall(low))
        return vocab


def _trailing_word(text: str) -> str:
    """The letters right before a line-final hyphen ('' when the hyphen follows a non-letter)."""
    m = re.search(r"(?<![^\W\d_])([^\W\d_]*+)[" + _HYPHENS + r"]\s*$", text)  # linear (see _HYPHENATED_RE)
    return m.group(1) if m else ""


def _leading_word(text: str) -> str:
    m = re.match(r"\s*([^\W\d_]*)", text)
    return m.group(1) if m else ""


_LINE_END_LETTER_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]+) ([^\W\d_])$")
_LINE_END_SPACED_HYPHEN_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]++) [-\u2010]$")


def join_split_letters(text: str, vocab: Vocabulary) -> str:
    """``preven t`` → ``prevent``, ``WIP O`` → ``WIPO``: letters that justified spacing pushed off their word.

    Inside a line the joined word must clearly be the document's spelling; at the end of a line (where such
    splits nearly always happen) it is enough that the document knows the joined word, or that the head occurs
    nowhere else and the letter is not a one-letter word.
    """

    def fix(m: re.Match[str]) -> str:
        head, letter = m.group(1), m.group(2)
        joined = tr_lower(head + letter)
        if vocab.words[joined] >= 2 and vocab.words[joined] >= 2 * vocab.words[tr_lower(head)]:
            return head + letter
        return m.group(0)

    text = _SPLIT_LETTER_RE.sub(fix, text)
    m = _LINE_END_LETTER_RE.search(text)
    if m:
        head, letter = m.group(1), m.group(2)
        joined = tr_lower(head + letter)
        if vocab.words[joined] >= 1 or (vocab.words[tr_lower(head)] <= 1 and letter.islower() and letter not in "ao"):
            text = text[: m.start()] + head + letter
    return text


_SPACE_BEFORE_PUNCT_RE = re.compile(r"(?<=[^\W_]) +([,.)\]”’»])(?=[\s”’\"»)]|$)")
_SPACE_AFTER_OPEN_RE = re.compile(r"([(\[“‘«]) +(?=\w)")


def tidy_spacing(text: str) -> str:
    """Remove the spaces PDF extraction puts before closing punctuation and after opening brackets/quotes."""
    return _SPACE_AFTER_OPEN_RE.sub(r"\1", _SPACE_BEFORE_PUNCT_RE.sub(r"\1", text))


def join_lines(a: str, b: str, vocab: Vocabulary) -> str:
    """Join two lines of one paragraph, repairing a line-end hyphen when it is hyphenation."""
    a = a.rstrip()
    b = b.lstrip()
    if not a:
        return b
    if not b:
        return a
    spaced = _LINE_END_SPACED_HYPHEN_RE.search(a)
    if spaced and _starts_lower(b):
        w2 = _leading_word(b)
        if w2 and vocab.words[tr_lower(spaced.group(1) + w2)]:
            return a[: spaced.end(1)] + b  # "imple -" + "mented" → "implemented"
    if a[-1] in _HYPHENS:
        w1 = _trailing_word(a)
        w2 = _leading_word(b)
        if a[-1] == "\u00ad" and w1 and w2:
            return a[:-1] + b
        if not w1:
            if a[-2:-1].isdigit() and b[:1].isdigit():
                return a + b  # a number range or a law reference: "13/4/1983-" + "2814/1"
            return a + " " + b  # a dash after a space: "Madde 1 -"
        if not w2:
            return a + b if b[:1].isdigit() else a + " " + b
        joined = tr_lower(w1 + w2)
        hyphenated = tr_lower(w1 + "-" + w2)
        if vocab.hyphenated[hyphenated] and vocab.hyphenated[hyphenated] >= vocab.words[joined]:
            return a + b
        if vocab.words[joined]:
            return a[:-1] + b
        if w2[0].isupper() or len(w1) == 1:
            return a + b
        return a[:-1] + b
    return a + " " + b


# --------------------------------------------------------------------------------------------- reflow

_TERMINAL_RE = re.compile(r"[.!?:;…][\"'”’»)\]]*$")
_MARKER_RE = re.compile(
    r"^(?:[•▪◦●■□‣⁃∙·\-–—*]\s"
    r"|[^\w\s\"'“‘(«\[%$€£₺&+=,.;:/\\]{1,2}\s"
    r"|\(?\d{1,3}[.)]\s+(?=[^\W\d_]*[A-ZÇĞİÖŞÜ(\"“])"
    r"|\(\d{1,3}\)\s"
    r"|\(?[a-zçğıöşü][.)]\s"
    r"|\([a-zçğıöşü]{1,3}\)\s"
    r"|\(?[ivx]{1,5}[.)]\s"
    r"|[IVXLC]{1,6}\s*[.)–-]\s"
    r"|[A-ZÇĞİÖŞÜ][.)]\s"
    r"|(?:GEÇİCİ MADDE|Geçici Madde|EK MADDE|Ek Madde|MADDE|Madde|Article|ARTICLE|Art\.|Section|SECTION|§)\s*\d)"
)


def _starts_lower(text: str) -> bool:
    m = re.match(r"[\s\"'“‘(«]*([^\W\d_])", text)
    return m is not None and m.group(1).islower()


def _continues(prev: Line, nxt: Line) -> bool:
    """``nxt`` plainly carries on the sentence of ``prev`` (no end punctuation, lower-case start)."""
    return not _TERMINAL_RE.search(prev.text) and _starts_lower(nxt.text) and not _MARKER_RE.match(nxt.text)


@dataclass
class _PageStats:
    spacing: float
    full_len: float
    margin: float | None


def _page_stats(lines: list[Line], fallback_len: float) -> _PageStats:
    lengths = sorted(len(ln.text) for ln in lines)
    full = lengths[int(0.8 * (len(lengths) - 1))] if len(lengths) >= 5 else fallback_len
    xs = sorted(ln.x for ln in lines if ln.x is not None and len(ln.text) >= 15)
    margin = xs[int(0.1 * (len(xs) - 1))] if len(xs) >= 5 else None
    return _PageStats(spacing=_spacing(lines), full_len=max(full, 30.0), margin=margin)


def _breaks(prev: Line, nxt: Line, first: Line, n_in_par: int, stats: _PageStats) -> bool:
    """Does ``nxt`` start a new paragraph after ``prev``?"""
    if prev.text.rstrip()[-1:] in _HYPHENS and _starts_lower(nxt.text) and _trailing_word(prev.text):
        return False  # a hyphenated word never ends a paragraph
    if _MARKER_RE.match(nxt.text):
        return True
    size = max(prev.size, nxt.size, 1.0)
    if prev.size and nxt.size and abs(prev.size - nxt.size) > 0.1 * size:
        return True
    continues = _continues(prev, nxt)
    if prev.bold != nxt.bold and not continues:
        return True
    if prev.y is not None and nxt.y is not None:
        dy = prev.y - nxt.y
        if dy < -0.5 * size:  # moved up: next column or a new block
            return not continues
        if dy > 1.5 * stats.spacing and not (continues and len(prev.text) >= 0.7 * stats.full_len):
            return True
    if prev.x is not None and nxt.x is not None:
        indent = nxt.x - prev.x
        if indent > 0.8 * size:
            hanging = n_in_par == 1 and (
                _MARKER_RE.match(first.text) or continues or len(prev.text) >= 0.8 * stats.full_len
            )
            if not hanging:
                return True  # first-line indent of a new paragraph
        if indent < -0.8 * size and n_in_par > 1 and not continues:
            return True  # back to the margin after an indented block
        if (
            n_in_par == 1
            and stats.margin is not None
            and abs(indent) < 0.3 * size
            and prev.x > stats.margin + 0.8 * size
            and _TERMINAL_RE.search(prev.text)
            and not _starts_lower(nxt.text)
        ):
            return True  # two indented first lines in a row: the first was a one-line paragraph
    short = len(prev.text) < 0.7 * stats.full_len
    return short and not continues


def reflow(lines: list[Line | None], vocab: Vocabulary, stats: _PageStats) -> list[str]:
    """Paragraphs of running text from the lines of one page (None = blank line)."""
    paragraphs: list[str] = []
    current: list[Line] = []
    blank_before = False

    def flush() -> None:
        if current:
            text = current[0].text
            for line in current[1:]:
                text = join_lines(text, line.text, vocab)
            paragraphs.append(text.strip())
            current.clear()

    for line in lines:
        if line is None:
            blank_before = True
            continue
        if current:
            prev = current[-1]
            hyphen_carry = prev.text.rstrip()[-1:] in _HYPHENS and _starts_lower(line.text)
            if (blank_before and not (hyphen_carry or _continues(prev, line))) or (
                not blank_before and _breaks(prev, line, current[0], len(current), stats)
            ):
                flush()
        current.append(line)
        blank_before = False
    flush()
    return [p for p in paragraphs if p]


def _reflow_page(lines: list[Line], vocab: Vocabulary, stats: _PageStats) -> list[str]:
    seq: list[Line | None] = []
    for line in lines:
        if line.blank_before and seq:
            seq.append(None)
        seq.append(line)
    return reflow(seq, vocab, stats)


# --------------------------------------------------------------------------------------------- title


def _title_from_lines(lines: list[Line]) -> str | None:
    """The largest-font text near the top of the first page, when it stands out from the body text."""
    if not lines:
        return None
    weights: Counter[float] = Counter()
    for ln in lines:
        weights[ln.size] += len(ln.text)
    body = weights.most_common(1)[0][0]
    top = lines[: max(3, len(lines) // 3)]
    biggest = max(ln.size for ln in top)
    if biggest < 1.15 * body:
        return None
    picked: list[str] = []
    for ln in top:
        if abs(ln.size - biggest) < 0.5:
            picked.append(ln.text.strip())
        elif picked:
            break
    title = collapse_whitespace(" ".join(picked))
    return title if 3 <= len(title) <= 250 and sum(ch.isalpha() for ch in title) >= 3 else None


# --------------------------------------------------------------------------------------------- loader


def _info(reader: Any) -> dict[str, Any]:
    try:
        info = reader.metadata
    except Exception:
        return {}
    if not info:
        return {}
    out: dict[str, Any] = {}
    for key in ("title", "author", "subject", "creator", "producer"):
        try:
            value = getattr(info, key)
        except Exception:
            value = None
        if value:
            out[key] = collapse_whitespace(str(value))
    for key in ("creation_date", "modification_date"):
        try:
            value = getattr(info, key)
        except Exception:
            value = None
        if value:
            out[key] = value.isoformat()
    try:
        keywords = info.get("/Keywords")
        if keywords:
            out["keywords"] = collapse_whitespace(str(keywords))
    except Exception:
        pass
    return out


def _open(path: Path, data: bytes) -> Any:
    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError

    head = data[:1024]
    if b"%PDF-" not in head:
        raise CorruptFile(path, "not a PDF file (no %PDF header)")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
    except (FileNotDecryptedError, DependencyError) as err:
        raise EncryptedFile(path, f"encrypted PDF that cannot be opened ({err})") from None
    except Exception as err:
        raise CorruptFile(path, f"corrupt or truncated PDF ({type(err).__name__}: {err})") from None
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError as err:
            raise EncryptedFile(path, f"encrypted PDF; decrypting it needs a missing package ({err})") from None
        except Exception as err:
            raise EncryptedFile(path, f"encrypted PDF that cannot be opened ({err})") from None
        if not opened:
            raise EncryptedFile(path, "encrypted PDF: a password is required to open it")
    return reader


def _read_pages(
    path: Path, reader: Any, n_pages: int, raw_pages: list[str] | None
) -> tuple[list[list[Line]], list[int], list[str], bool]:
    """Each page's prepared lines (empty for a page that could not be read), the unreadable page numbers, a
    warning for each, and whether pypdf saw any visible text at all. Raises CorruptFile when no page reads."""
    warnings: list[str] = []
    failed: list[int] = []
    pages_lines: list[list[Line]] = []
    first_error = ""
    found_text = False  # pypdf reported some visible text somewhere
    for i in range(n_pages):
        fragments: list[str] = []
        try:
            page = reader.pages[i]
            raw = extract_lines(page, fragments)
            box = page.mediabox
            width, left = float(box.width), float(box.left)
        except Exception as err:
            if raw_pages is not None:
                raw_pages.append("")
            failed.append(i + 1)
            first_error = first_error or f"{type(err).__name__}: {err}"
            warnings.append(f"page {i + 1}: text could not be extracted ({type(err).__name__}: {err}); skipped")
            pages_lines.append([])
            continue
        if raw_pages is not None:
            raw_pages.append("".join(fragments))
        found_text = found_text or any(f.strip() for f in fragments)
        pages_lines.append(_prepare(raw, width, left))
    if len(failed) == n_pages:
        raise CorruptFile(path, f"corrupt PDF: no page could be read ({first_error})")
    return pages_lines, failed, warnings, found_text


def load_pdf(path: Path, data: bytes, *, raw_pages: list[str] | None = None, options: Any = None) -> LoadedDocument:
    """Load a PDF. ``raw_pages``, when given, receives pypdf's plain text of each page (before any repair), which
    is what the benchmark and the tests measure hyphenation artifacts against (tests/hyphenation.py).
    ``options`` (LoadOptions) picks the OCR languages and cache for pages without a text layer (kaynak.loaders.ocr)."""
    if not data.strip():
        raise NoText(path, "no text (empty file)")
    reader = _open(path, data)
    try:
        n_pages = len(reader.pages)
    except Exception as err:
        raise CorruptFile(path, f"corrupt or truncated PDF: page tree unreadable ({err})") from None
    if n_pages == 0:
        raise NoText(path, "no text (the PDF has no pages)")

    pages_lines, failed, warnings, found_text = _read_pages(path, reader, n_pages, raw_pages)

    pages_lines, removed = remove_running_lines(pages_lines)
    vocab = Vocabulary.from_lines(pages_lines)
    all_lines = [ln for lines in pages_lines for ln in lines]
    lengths = sorted(len(ln.text) for ln in all_lines)
    fallback_len = float(lengths[int(0.8 * (len(lengths) - 1))]) if lengths else 60.0

    page_paragraphs: list[list[str]] = []
    for lines in pages_lines:
        for line in lines:
            line.text = tidy_spacing(join_split_letters(line.text, vocab))
        page_paragraphs.append(_reflow_page(lines, vocab, _page_stats(lines, fallback_len)))
    _join_across_pages(page_paragraphs, vocab)
    pages = [Page(number=i + 1, text=normalize_text("\n\n".join(p))) for i, p in enumerate(page_paragraphs)]
    scan = ocr_pdf_pages(path, data, pages, skip=set(failed), options=options)  # pages without a text layer
    warnings.extend(scan.warnings)

    empty = [p.number for p in pages if not p.text and p.number not in failed]
    if not any(p.text for p in pages):
        if found_text:
            raise NoText(path, "the text in this PDF is made only of invisible or control characters")
        raise NoText(path, NO_TEXT_LAYER)
    if empty:
        listed = ", ".join(map(str, empty[:20])) + (" …" if len(empty) > 20 else "")
        warnings.append(f"no text layer on page(s) {listed} ({scan.empty_reason})")

    info = _info(reader)
    first_page_lines = next((lines for lines in pages_lines if lines), [])
    first_text = next((p.text for p in pages if p.text), "")
    title = (
        meaningful_title(info.get("title"))
        or _title_from_lines(first_page_lines)
        or _first_paragraph_title(first_text)
        or stem_title(path)
    )
    metadata: dict[str, Any] = {"format": "pdf", "page_count": n_pages, **info}
    facts = {
        "encrypted": bool(reader.is_encrypted),
        "running_lines_removed": removed,
        "failed_pages": failed,
        "pages_without_text": empty,
        "ocr": scan.metadata,
    }
    metadata.update({key: value for key, value in facts.items() if value})  # only what happened
    return LoadedDocument(title=title, pages=pages, metadata=json_safe(metadata), warnings=warnings)


def _join_across_pages(pages: list[list[str]], vocab: Vocabulary) -> None:
    """A word hyphenated over a page break moves whole to the page where it starts (``mül-`` | ``kiyeti)``)."""
    for cur, nxt in itertools.pairwise(pages):
        if not cur or not nxt or cur[-1][-1:] not in _HYPHENS or not _trailing_word(cur[-1]):
            continue
        head = nxt[0]
        token = head.split(None, 1)[0] if head.split() else ""
        if not token or not _starts_lower(token) or not _leading_word(token):
            continue
        joined = join_lines(cur[-1], token, vocab)
        cur[-1] = joined
        rest = head[len(token) :].lstrip()
        if rest:
            nxt[0] = rest
        else:
            nxt.pop(0)


def _first_paragraph_title(text: str) -> str | None:
    first = text.split("\n\n", 1)[0]
    return first_line_title(first, max_len=150) if "\n" not in first and len(first) <= 150 else None


def _prepare(raw: list[Line | None], width: float, left: float) -> list[Line]:
    """Blank markers folded into the lines, text cleaned, stray rotated text dropped, blocks put in order."""
    lines: list[Line] = []
    blank = False
    for item in raw:
        if item is None:
            blank = True
            continue
        item.text = repair_decomposed_diacritics(normalize_text(item.text))
        if not item.text:
            continue
        item.blank_before = blank
        blank = False
        lines.append(item)
    upright_chars = sum(len(ln.text) for ln in lines if ln.upright)
    if lines and upright_chars >= 0.8 * sum(len(ln.text) for ln in lines):
        lines = [ln for ln in lines if ln.upright]  # margin stamps, rotated watermarks
    body = [ln for ln in lines if ln.x is not None and len(ln.text) >= 15]
    right = [ln for ln in body if ln.x is not None and ln.x > left + 0.4 * width]
    multi_column = len(body) >= 5 and len(right) >= max(3, 0.2 * len(body))
    return lines if multi_column else order_lines(lines)
