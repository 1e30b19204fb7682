"""Measuring hyphen repair in PDFs: line-end hyphens in pypdf's raw text, and how many survive in kaynak's text.

Used by tests/loaders/test_loaders.py and benchmarks/bench_loaders.py (not by kaynak itself, which only repairs).
"""

from __future__ import annotations

import re

_RAW_HYPHEN_RE = re.compile(r"([^\W\d_]+)[-\u2010\u00ad][ \t]*\n[ \t]*([^\W\d_]+)")


def line_end_hyphens(raw_text: str) -> list[tuple[str, str]]:
    """Word pairs split by a hyphen at a line end in raw (pypdf ``extract_text``) output, continuation lower-case."""
    return [(m.group(1), m.group(2)) for m in _RAW_HYPHEN_RE.finditer(raw_text) if m.group(2)[0].islower()]


def hyphen_artifacts(pairs: list[tuple[str, str]], clean_text: str) -> int:
    """How many of ``pairs`` still show in ``clean_text`` with their hyphen (``ma-likleri``, ``ma- likleri``)."""
    count = 0
    for w1, w2 in pairs:
        if re.search(re.escape(w1) + r"[-\u2010\u00ad]\s*" + re.escape(w2), clean_text):
            count += 1
    return count
