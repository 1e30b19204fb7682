"""Running headers and footers: edge lines repeated across pages (digits ignored), page counters, page numbers."""

from __future__ import annotations

import math
import re
from collections import Counter

from kaynak.text import tr_lower

from .lines import Line

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
