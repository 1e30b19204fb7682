"""PDF text fragments → lines with position, font and size; decomposed diacritics merged, footnote marks dropped."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


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
