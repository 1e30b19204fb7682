"""Reflow: lines into paragraphs (gaps, font changes, list and article markers, sentence ends, column jumps)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .layout import line_spacing
from .lines import Line
from .words import HYPHENS, DocumentWords, join_lines, starts_lower, trailing_word

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


def _continues(prev: Line, nxt: Line) -> bool:
    """``nxt`` plainly carries on the sentence of ``prev`` (no end punctuation, lower-case start)."""
    return not _TERMINAL_RE.search(prev.text) and starts_lower(nxt.text) and not _MARKER_RE.match(nxt.text)


@dataclass
class PageStats:
    spacing: float
    full_len: float
    margin: float | None


def page_stats(lines: list[Line], fallback_len: float) -> PageStats:
    lengths = sorted(len(ln.text) for ln in lines)
    full = lengths[int(0.8 * (len(lengths) - 1))] if len(lengths) >= 5 else fallback_len
    xs = sorted(ln.x for ln in lines if ln.x is not None and len(ln.text) >= 15)
    margin = xs[int(0.1 * (len(xs) - 1))] if len(xs) >= 5 else None
    return PageStats(spacing=line_spacing(lines), full_len=max(full, 30.0), margin=margin)


def _breaks(prev: Line, nxt: Line, first: Line, n_in_par: int, stats: PageStats) -> bool:
    """Does ``nxt`` start a new paragraph after ``prev``?"""
    if prev.text.rstrip()[-1:] in HYPHENS and starts_lower(nxt.text) and trailing_word(prev.text):
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
            and not starts_lower(nxt.text)
        ):
            return True  # two indented first lines in a row: the first was a one-line paragraph
    short = len(prev.text) < 0.7 * stats.full_len
    return short and not continues


def reflow(lines: list[Line | None], vocab: DocumentWords, stats: PageStats) -> list[str]:
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
            hyphen_carry = prev.text.rstrip()[-1:] in HYPHENS and starts_lower(line.text)
            if (blank_before and not (hyphen_carry or _continues(prev, line))) or (
                not blank_before and _breaks(prev, line, current[0], len(current), stats)
            ):
                flush()
        current.append(line)
        blank_before = False
    flush()
    return [p for p in paragraphs if p]


def reflow_page(lines: list[Line], vocab: DocumentWords, stats: PageStats) -> list[str]:
    seq: list[Line | None] = []
    for line in lines:
        if line.blank_before and seq:
            seq.append(None)
        seq.append(line)
    return reflow(seq, vocab, stats)
