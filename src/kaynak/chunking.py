"""Chunker: sentence-ish units packed up to ``chunk_size`` characters, whole-sentence overlap, page-true offsets.

``split_sentences(text)`` gives sentence spans as ``(start, end)`` offsets (whitespace trimmed, in order, covering
every non-blank character once). It knows

* paragraphs: a blank line always ends a sentence, and so does a line break unless the next line plainly
  continues a wrapped sentence (it starts in lower case, is not a list item, and the line before is long);
* Turkish and English abbreviations (``vb.``, ``vs.``, ``Dr.``, ``Prof.``, ``Doç.``, ``e.g.``, ``i.e.``,
  ``A.Ş.``, ``U.S.``), initials (``J. Smith``), and references before a number (``No. 5``, ``s. 45``, ``md. 3``);
* numbers: decimals and thousands (``3.14``, ``1.000,5``) never split, nor do article numbers
  (``Madde 5.``, ``Article 5.``), list items (``1.``, ``a)``, ``iv.``) or Roman ordinals (``II. Dünya``);
* a sentence never ends before a lower-case word, a comma or a closing bracket.

``chunk_pages(pages, chunk_size, overlap)`` cuts each page into segments at its Section boundaries (text outside
every section is a segment of its own), splits each segment into sentences, splits a sentence longer than
``chunk_size`` at word boundaries, and packs consecutive units greedily up to ``chunk_size`` characters. The next
chunk repeats the last ``overlap`` whole sentences of the previous one when they fit (never pieces of a split
sentence). A chunk never crosses a page or a section boundary, ``ord`` runs 0.. across the document, and
``page.text[c.char_start:c.char_end] == c.text`` for every chunk. Chunk size is counted in characters; see
docs/adr/0003-chunking.md for why.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kaynak.text import tr_lower
from kaynak.types import Chunk, Page

__all__ = ["DEFAULT_CHUNK_SIZE", "DEFAULT_OVERLAP", "chunk_pages", "segments", "split_sentences", "units"]

DEFAULT_CHUNK_SIZE = 800
DEFAULT_OVERLAP = 1

# --------------------------------------------------------------------------------------------- sentences

# Never followed by a sentence break (titles, "for example", "et al.", Turkish honorifics and street words).
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "messrs",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "rev",
        "hon",
        "gen",
        "col",
        "lt",
        "sgt",
        "capt",
        "cmdr",
        "gov",
        "sen",
        "rep",
        "pres",
        "e.g",
        "i.e",
        "cf",
        "al",
        "viz",
        "vs",
        "approx",
        "ca",
        "resp",
        "esp",
        "incl",
        "inc",
        "ltd",
        "co",
        "corp",
        "bros",
        "dept",
        "univ",
        "assn",
        "est",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "doç",
        "yrd",
        "yard",
        "av",
        "sn",
        "hz",
        "alb",
        "org",
        "korg",
        "tuğg",
        "tümg",
        "kur",
        "kd",
        "yzb",
        "ütğm",
        "tğm",
        "bnb",
        "stj",
        "öğr",
        "gör",
        "uzm",
        "arş",
        "müh",
        "dz",
        "mah",
        "cad",
        "sok",
        "sk",
        "bulv",
        "blv",
        "apt",
        "kat",
        "daire",
        "md",
        "mad",
        "bkz",
        "örn",
        "krş",
        "karş",
        "bk",
        "çev",
        "haz",
        "yay",
        "yayl",
        "şti",
        "a.ş",
        "t.c",
        "tic",
        "san",
        "ltd",
        "koll",
    ]
)
# Followed by a number these are references, not sentence ends: "No. 5", "Fig. 3", "s. 45", "vol. 2".
_BEFORE_NUMBER = frozenset(
    [
        "no",
        "nos",
        "nr",
        "fig",
        "figs",
        "tab",
        "eq",
        "eqs",
        "p",
        "pp",
        "s",
        "ss",
        "sf",
        "vol",
        "vols",
        "art",
        "arts",
        "sec",
        "ch",
        "chap",
        "ref",
        "refs",
        "par",
        "para",
        "ek",
    ]
)
# "Madde 5." / "Article 5." / "Section 5." : the number belongs to the heading, not to a sentence end.
_ARTICLE_WORDS = frozenset(
    [
        "madde",
        "maddesi",
        "maddenin",
        "md",
        "fıkra",
        "fıkrası",
        "bent",
        "bendi",
        "bölüm",
        "kısım",
        "kısmı",
        "ek",
        "tablo",
        "şekil",
        "sayfa",
        "sayı",
        "article",
        "art",
        "section",
        "sec",
        "chapter",
        "chap",
        "part",
        "table",
        "figure",
        "fig",
        "page",
        "clause",
        "paragraph",
        "item",
        "step",
    ]
)
_ROMAN_RE = re.compile(r"^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")

_CANDIDATE_RE = re.compile(r"(\.{2,}|…|[.!?]+)([\"'”’»)\]]*)(\s+)(?=(\S))")
_TOKEN_BEFORE_RE = re.compile(r"(\S+)$")
_WORD_BEFORE_RE = re.compile(r"([^\W\d_]+)\W*\s+\S+$")
_LIST_MARKER_RE = re.compile(
    r"\s*(?:[-*+•▪◦●‣–—]\s|\(?\d{1,3}[.)]\s|\(?[a-zçğıöşü][.)]\s|\([a-zçğıöşü]{1,3}\)\s|\(?[ivx]{1,5}[.)]\s"
    r"|\(\d{1,3}\)\s)"
)


def _is_boundary(text: str, m: re.Match[str], line_start: int) -> bool:
    """Is the punctuation matched by ``_CANDIDATE_RE`` the end of a sentence?

    ``line_start`` is where the current line (or sentence, if later) begins.
    """
    nxt = m.group(4)
    if nxt.islower() or nxt in ",;:)]}":
        return False
    if m.group(1) != ".":
        return True  # "?", "!", "…", "..."
    window = max(line_start, m.start(1) - 120)
    before = text[window : m.start(1)]
    tok_match = _TOKEN_BEFORE_RE.search(before)
    if tok_match is None:
        return True
    token = tok_match.group(1).lstrip("([\"'“‘«")
    low = tr_lower(token)
    if not token:
        return True
    if low in _ABBREVIATIONS:
        return False
    if re.fullmatch(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}", token):
        return False  # e.g. / i.e. / U.S. / A.Ş. / T.C.
    if len(token) == 1 and token.isalpha() and low not in ("o", "a"):
        return False  # an initial (J. Smith) or a one-letter abbreviation (s. 45)
    if low in _BEFORE_NUMBER and nxt.isdigit():
        return False
    token_is_first = window == line_start and before[: tok_match.start()].strip(" \t•-*–—") == ""
    if re.fullmatch(r"\d{1,3}|[a-zçğıöşü]|[ivx]{1,5}", token):
        if token_is_first:
            return False  # a list item: "1. Install", "iv. Step"
        word = _WORD_BEFORE_RE.search(before)
        if word is not None and tr_lower(word.group(1)) in _ARTICLE_WORDS:
            return False  # "Madde 5. …", "Article 12. …"
    if len(token) >= 2 and token.isupper() and _ROMAN_RE.match(token):
        word = _WORD_BEFORE_RE.search(before)
        if token_is_first or word is None or not word.group(1)[:1].isupper():
            return False  # a Roman ordinal: "II. Dünya Savaşı", "XIV. yüzyıl"
        if tr_lower(word.group(1)) in _ARTICLE_WORDS:
            return False
    return True


def _lines(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each line in text[start:end], end excluding the newline."""
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        if nl < 0:
            yield pos, end
            return
        yield pos, nl
        pos = nl + 1


def _soft_wrap(prev: str, nxt: str) -> bool:
    """Does line ``nxt`` continue the sentence of line ``prev`` (a hard-wrapped paragraph)?"""
    stripped = nxt.lstrip()
    if not stripped or not stripped[0].islower() or _LIST_MARKER_RE.match(nxt):
        return False
    return len(prev.strip()) >= 30


def _blocks(text: str) -> Iterator[tuple[int, int]]:
    """Runs of lines that may hold one flowing paragraph: split at blank lines and hard line breaks."""
    block_start: int | None = None
    prev_line = ""
    last_end = 0
    for s, e in _lines(text, 0, len(text)):
        line = text[s:e]
        if not line.strip():
            if block_start is not None:
                yield block_start, last_end
                block_start = None
            continue
        if block_start is not None and not _soft_wrap(prev_line, line):
            yield block_start, last_end
            block_start = None
        if block_start is None:
            block_start = s
        prev_line = line
        last_end = e
    if block_start is not None:
        yield block_start, last_end


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text``, whitespace trimmed, in order, non-overlapping.

    Every non-whitespace character of ``text`` lies in exactly one span.
    """
    spans: list[tuple[int, int]] = []
    for b_start, b_end in _blocks(text):
        sent_start = b_start
        newlines = [m.start() for m in re.finditer("\n", text[b_start:b_end])]
        for m in _CANDIDATE_RE.finditer(text, b_start, b_end):
            if m.end(3) >= b_end:
                continue
            k = bisect.bisect_left(newlines, m.start(1) - b_start)
            line_start = b_start + newlines[k - 1] + 1 if k else b_start
            if not _is_boundary(text, m, max(line_start, sent_start)):
                continue
            s, e = _trim(text, sent_start, m.end(2))
            if e > s:
                spans.append((s, e))
            sent_start = m.end(3)
        s, e = _trim(text, sent_start, b_end)
        if e > s:
            spans.append((s, e))
    return spans


# --------------------------------------------------------------------------------------------- chunks


@dataclass(frozen=True)
class Unit:
    """A sentence span, or a piece of one too long for a chunk (``whole`` False)."""

    start: int
    end: int
    whole: bool = True


def segments(page: Page) -> list[tuple[int, int, str | None]]:
    """``(start, end, section path)`` spans covering the page text: its sections and the gaps between them."""
    n = len(page.text)
    out: list[tuple[int, int, str | None]] = []
    pos = 0
    for sec in sorted(page.sections, key=lambda s: (s.start, s.end)):
        start = max(sec.start, pos, 0)
        end = min(sec.end, n)
        if end <= start:
            continue
        if start > pos:
            out.append((pos, start, None))
        out.append((start, end, sec.path))
        pos = end
    if pos < n:
        out.append((pos, n, None))
    return out


def _split_long(text: str, start: int, end: int, size: int) -> list[Unit]:
    """Cut text[start:end] into pieces of at most ``size`` characters at word boundaries."""
    pieces: list[Unit] = []
    while end - start > size:
        limit = start + size  # the piece may end at most here (exclusive)
        cut = -1
        for i in range(limit, start, -1):  # the last whitespace that leaves a non-empty piece
            if text[i].isspace():
                cut = i
                break
        if cut > start:
            piece_end = cut
            while piece_end > start and text[piece_end - 1].isspace():
                piece_end -= 1
            nxt = cut
        else:  # one word longer than a chunk: cut inside it, never between a letter and its combining mark
            piece_end = limit
            while piece_end > start + 1 and unicodedata.combining(text[piece_end]):
                piece_end -= 1
            nxt = piece_end
        pieces.append(Unit(start, piece_end, whole=False))
        start = nxt
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        pieces.append(Unit(start, end, whole=False))
    return pieces


def units(text: str, start: int, end: int, chunk_size: int) -> list[Unit]:
    """Sentence units of text[start:end] (absolute offsets), long sentences cut into pieces."""
    out: list[Unit] = []
    for s, e in split_sentences(text[start:end]):
        s += start
        e += start
        if e - s <= chunk_size:
            out.append(Unit(s, e))
        else:
            out.extend(_split_long(text, s, e, chunk_size))
    return out


def _pack(items: Sequence[Unit], chunk_size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing of units into (start, end) chunk spans with whole-sentence overlap."""
    spans: list[tuple[int, int]] = []
    n = len(items)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and items[j + 1].end - items[i].start <= chunk_size:
            j += 1
        spans.append((items[i].start, items[j].end))
        if j + 1 >= n:
            break
        k = j + 1
        start_idx = k
        for back in range(1, overlap + 1):
            cand = k - back
            if cand <= i or not items[cand].whole or items[k].end - items[cand].start > chunk_size:
                break
            start_idx = cand
        i = start_idx
    return spans


def chunk_pages(pages: list[Page], chunk_size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    """Chunks of every page: at most ``chunk_size`` characters, ``overlap`` whole sentences repeated, never across
    a page or a section boundary, with offsets into ``page.text``."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1 character, not {chunk_size}")
    if overlap < 0:
        raise ValueError(f"overlap must be 0 or more sentences, not {overlap}")
    chunks: list[Chunk] = []
    for page in pages:
        text = page.text
        for seg_start, seg_end, path in segments(page):
            for s, e in _pack(units(text, seg_start, seg_end, chunk_size), chunk_size, overlap):
                chunks.append(
                    Chunk(ord=len(chunks), page=page.number, section=path, char_start=s, char_end=e, text=text[s:e])
                )
    return chunks
