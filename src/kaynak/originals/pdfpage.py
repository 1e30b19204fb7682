"""One PDF page drawn as a PNG with a cited passage marked on it: pdfium renders, its text layer locates the quote.

``render_page(data, number, quote)`` opens the PDF bytes with pypdfium2 (already a dependency, for OCR), finds
``quote`` (the stored text of the citation) in the page's own text layer, paints a translucent highlight over
the characters' boxes, and returns the PNG with the boxes as fractions of the page (so the browser can put one
focusable outline around the passage and scroll to it).

Finding the quote: the stored page text came from another extractor (pypdf) and was cleaned, so it differs from
pdfium's text in spaces, line breaks, hyphens and the odd dropped glyph. Both are reduced to their letters and
digits (case-folded, Turkish dotted/dotless i treated as one), the quote's reduction is searched in the page's,
and the match maps back to pdfium's character indices. When the whole quote is not found, its pieces of 16
letters are searched in order and the stretch from the first to the last one found is marked (widened to the
quote's first and last 8 letters when those are found close by), if at least half of them were; otherwise
nothing is marked and ``found`` is False (the page is still shown).

Bounds (the file is the user's own stored original, whose bytes were checked against its sha256, but it is still
a PDF): at most ``MAX_PIXELS`` pixels per page image and a scale between ``MIN_SCALE`` and ``MAX_SCALE``, at most
``MAX_PAGE_CHARS`` characters of text layer examined, and one render at a time in the process (pdfium is not
thread-safe). Rendering cannot be interrupted, so the caps are what bounds its time; docs/adr/0025-pdf-citation.md.
"""

from __future__ import annotations

import ctypes
import io
import threading
from dataclasses import dataclass, field
from typing import Any

from kaynak.errors import CorruptFile, NotFound

MAX_PIXELS = 3_000_000
MAX_SCALE = 2.5
MIN_SCALE = 0.25
DEFAULT_WIDTH = 1100
MAX_WIDTH = 2000
MAX_PAGE_CHARS = 200_000
MAX_BOXES = 400
PIECE = 16
HIGHLIGHT = (255, 214, 10)  # painted with multiply: dark text stays dark, white paper turns yellow

_LOCK = threading.Lock()


@dataclass
class RenderedPage:
    """The page as PNG bytes (``width``×``height`` pixels) and the passage's boxes as page fractions
    ``[left, top, width, height]``; ``found``: whether the quote was located in the text layer."""

    png: bytes
    width: int
    height: int
    page_count: int
    boxes: list[list[float]] = field(default_factory=list)
    found: bool = False


def _fold(ch: str) -> str:
    low = ch.lower()
    c = low[0] if low else ch
    return "i" if c in "ıi" else c


def reduce_text(text: str) -> tuple[str, list[int]]:
    """``text``'s letters and digits, case-folded (Turkish i's as one), and each one's index in ``text``."""
    keys: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if ch.isalnum():
            keys.append(_fold(ch))
            index.append(i)
    return "".join(keys), index


def locate(page_text: str, quote: str) -> tuple[int, int] | None:
    """The ``[start, end)`` character range of ``quote`` in ``page_text``, matched on letters and digits only;
    None when it cannot be placed (see the module docstring for the piecewise fallback)."""
    hay, index = reduce_text(page_text)
    needle, _ = reduce_text(quote)
    if not needle or not hay:
        return None
    at = hay.find(needle)
    if at >= 0:
        return index[at], index[at + len(needle) - 1] + 1
    pieces = [needle[i : i + PIECE] for i in range(0, len(needle), PIECE)]
    pieces = [p for p in pieces if len(p) >= PIECE // 2]
    found: list[tuple[int, int]] = []
    pos = 0
    for p in pieces:
        hit = hay.find(p, pos)
        if hit < 0 or (found and hit - found[-1][1] > 4 * PIECE):
            continue
        found.append((hit, hit + len(p)))
        pos = hit + len(p)
    if not pieces or len(found) * 2 < len(pieces):
        return None
    start, end = found[0][0], found[-1][1]
    head, tail = needle[: PIECE // 2], needle[-(PIECE // 2) :]
    h = hay.rfind(head, max(0, start - 2 * PIECE), start + len(head))
    if 0 <= h < start:
        start = h  # the quote's first letters, just before the first piece that matched
    t = hay.find(tail, max(0, end - len(tail)), end + 2 * PIECE)
    if t >= 0 and t + len(tail) > end:
        end = t + len(tail)  # its last letters, just after the last piece
    return index[start], index[end - 1] + 1


def _device_box(raw: Any, page: Any, size: tuple[int, int], rect: tuple[float, float, float, float]) -> list[int]:
    """A text-layer rectangle (page points) in pixels of the rendered bitmap, the page's own rotation applied."""
    left, bottom, right, top = rect
    xs: list[int] = []
    ys: list[int] = []
    for px, py in ((left, top), (right, bottom)):
        dx, dy = ctypes.c_int(), ctypes.c_int()
        raw.FPDF_PageToDevice(page.raw, 0, 0, size[0], size[1], 0, px, py, ctypes.byref(dx), ctypes.byref(dy))
        xs.append(dx.value)
        ys.append(dy.value)
    return [min(xs), min(ys), max(xs), max(ys)]


def render_page(data: bytes, number: int, quote: str | None, width: int = DEFAULT_WIDTH) -> RenderedPage:
    """Page ``number`` (1-based) of the PDF ``data`` as a PNG about ``width`` pixels wide (within the caps), with
    ``quote`` highlighted when it is found in the page's text layer."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    from PIL import Image, ImageChops, ImageDraw

    width = max(200, min(int(width), MAX_WIDTH))
    with _LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except Exception as err:
            raise CorruptFile("pdf", f"the PDF cannot be opened for drawing ({type(err).__name__})") from None
        try:
            count = len(pdf)
            if not 1 <= number <= count:
                raise NotFound(f"the PDF has {count} pages; there is no page {number}")
            page = pdf[number - 1]
            try:
                pw, ph = page.get_size()
                if page.get_rotation() in (90, 270):
                    pw, ph = ph, pw
                scale = min(MAX_SCALE, max(MIN_SCALE, width / max(pw, 1.0)))
                if pw * ph * scale * scale > MAX_PIXELS:
                    scale = max(MIN_SCALE / 4, (MAX_PIXELS / max(pw * ph, 1.0)) ** 0.5)
                bitmap = page.render(scale=scale, may_draw_forms=True)
                try:
                    image = bitmap.to_pil().convert("RGB")
                finally:
                    bitmap.close()
                boxes: list[list[int]] = []
                if quote:
                    text_page = page.get_textpage()
                    try:
                        n = min(text_page.count_chars(), MAX_PAGE_CHARS)
                        layer = text_page.get_text_range(0, n) if n > 0 else ""
                        span = locate(layer, quote) if len(layer) == n else None
                        if span is not None:
                            a, b = span
                            for i in range(min(text_page.count_rects(a, b - a), MAX_BOXES)):
                                rect = text_page.get_rect(i)
                                boxes.append(_device_box(raw, page, image.size, rect))
                    finally:
                        text_page.close()
            finally:
                page.close()
        finally:
            pdf.close()
    w, h = image.size
    if boxes:
        overlay = Image.new("RGB", image.size, (255, 255, 255))
        draw = ImageDraw.Draw(overlay)
        for x0, y0, x1, y1 in boxes:
            draw.rectangle([x0 - 1, y0 - 1, x1 + 1, y1 + 1], fill=HIGHLIGHT)
        image = ImageChops.multiply(image, overlay)
    out = io.BytesIO()
    image.quantize(colors=32, method=Image.Quantize.FASTOCTREE).save(out, format="PNG", compress_level=6)
    return RenderedPage(
        png=out.getvalue(),
        width=w,
        height=h,
        page_count=count,
        boxes=[[x0 / w, y0 / h, (x1 - x0) / w, (y1 - y0) / h] for x0, y0, x1, y1 in boxes],
        found=bool(boxes),
    )
