"""Reading order of a PDF page's lines: single-column pages top to bottom, multi-column in the producer's order."""

from __future__ import annotations

import itertools
import statistics

from .lines import Line


def line_spacing(lines: list[Line]) -> float:
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
