"""Scanned PDF pages: which pages need OCR, rendering them with pdfium one at a time, reading them."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaynak.errors import LoaderError, OcrUnavailable
from kaynak.types import Page

from .engine import MAX_PIXELS, MIN_TEXT_CHARS, NOT_OCRD, RENDER_DPI
from .run import OcrRun

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)


def needs_ocr(text: str) -> bool:
    """Almost no letters or digits in the text layer (empty, a stray page number, a scanner's stamp)."""
    return sum(ch.isalnum() for ch in text) < MIN_TEXT_CHARS


@dataclass
class PdfOcrResult:
    """What ``ocr_pdf_pages`` did: metadata for the document (None when OCR did not run), warnings, and why pages
    are still empty (for the loader's own warning)."""

    metadata: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    empty_reason: str = "no text"


_NO_LAYER = "no text layer (a scan)"
# pdfium is not thread-safe, even across documents: every call into it holds this lock (rendering a page takes
# a fraction of a second; the OCR itself runs outside it).
_PDFIUM_LOCK = threading.RLock()


@contextlib.contextmanager
def _pdfium(path: Path, data: bytes) -> Iterator[Any]:
    try:
        import pypdfium2 as pdfium
    except ImportError:
        raise OcrUnavailable(
            path,
            f"{_NO_LAYER}: reading it needs OCR, and the PDF renderer pypdfium2 is not "
            "installed (pip install pypdfium2)",
        ) from None
    try:
        with _PDFIUM_LOCK:
            pdf = pdfium.PdfDocument(data)
    except Exception as err:
        raise LoaderError(path, f"scanned pages cannot be rendered for OCR ({type(err).__name__}: {err})") from None
    try:
        yield pdf
    finally:
        with _PDFIUM_LOCK:
            pdf.close()


def _render_pdf_page(pdf: Any, index: int) -> tuple[Image.Image, int]:
    with _PDFIUM_LOCK:
        return _render_locked(pdf, index)


def _render_locked(pdf: Any, index: int) -> tuple[Image.Image, int]:
    page = pdf[index]
    try:
        width, height = page.get_size()  # points
        dpi = RENDER_DPI
        pixels = (width * dpi / 72) * (height * dpi / 72)
        if pixels > MAX_PIXELS:
            dpi = max(72, int(dpi * (MAX_PIXELS / pixels) ** 0.5))
        bitmap = page.render(scale=dpi / 72, grayscale=True, may_draw_forms=True)
        try:
            image = bitmap.to_pil().copy()  # a copy owns its pixels, so the bitmap can go now
        finally:
            bitmap.close()
        return image, dpi
    finally:
        page.close()


#: A page with a thin text layer is OCR'd only when images cover at least this share of it: text drawn as an image
#: (a scan with a scanner's stamp in its text layer). A page of a few real words and no image keeps its words.
IMAGE_SHARE = 0.3


def _image_share(pdf: Any, index: int) -> float:
    """The share of the page's area that its image objects cover (overlaps counted twice, capped at 1); 0 when
    pdfium cannot say."""
    import pypdfium2.raw as pdfium_c

    with _PDFIUM_LOCK:
        try:
            page = pdf[index]
        except Exception:
            return 0.0
        try:
            width, height = page.get_size()
            area = max(1.0, float(width) * float(height))
            covered = 0.0
            for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3):
                left, bottom, right, top = obj.get_bounds()
                covered += max(0.0, right - left) * max(0.0, top - bottom)
            return min(1.0, covered / area)
        except Exception:
            return 0.0
        finally:
            page.close()


def ocr_pdf_pages(
    path: Path, data: bytes, pages: list[Page], *, skip: set[int] | frozenset[int] = frozenset(), options: Any = None
) -> PdfOcrResult:
    """OCR, in place, the pages of ``pages`` that have no usable text layer; ``skip``: page numbers not to touch
    (pages whose extraction failed).

    A page with no text at all is OCR'd. A page with a few words of text layer (fewer than MIN_TEXT_CHARS letters)
    is OCR'd only when images cover much of it (IMAGE_SHARE), and then its text layer stays, with the OCR text
    after it: OCR never replaces text the PDF holds. OCR text no longer than the text layer is not kept.

    Without Tesseract: OcrUnavailable when no page has text, else the scanned pages stay empty with a warning
    that says what to install.
    """
    todo = [p for p in pages if p.number not in skip and needs_ocr(p.text)]
    result = PdfOcrResult()
    thin = [p for p in todo if p.text.strip()]
    if thin:
        with _pdfium(path, data) as pdf:
            with _PDFIUM_LOCK:
                n_rendered = len(pdf)
            pictured = {
                p.number for p in thin if p.number <= n_rendered and _image_share(pdf, p.number - 1) >= IMAGE_SHARE
            }
        todo = [p for p in todo if not p.text.strip() or p.number in pictured]
    if not todo:
        return result
    n_text = sum(1 for p in pages if p.text)
    try:
        run = OcrRun.start(path, data, options, _NO_LAYER)
    except OcrUnavailable as err:
        if n_text == 0:
            raise
        result.empty_reason = NOT_OCRD + err.reason.removeprefix(_NO_LAYER)
        return result
    confidences: dict[int, float] = {}
    with _pdfium(path, data) as pdf:
        with _PDFIUM_LOCK:
            n_rendered = len(pdf)
        if n_rendered != len(pages):
            run.warnings.append(f"the PDF renderer sees {n_rendered} pages, the text extractor {len(pages)}")
        for page in todo:
            if page.number > n_rendered:
                continue
            ocr = run.page(page.number, functools.partial(_render_pdf_page, pdf, page.number - 1))
            if ocr is None:
                continue
            if sum(ch.isalnum() for ch in ocr.text) <= sum(ch.isalnum() for ch in page.text):
                continue  # the text layer says as much: keep it
            if page.text.strip():
                page.text = f"{page.text}\n\n{ocr.text}"  # the text layer first, unchanged (sections stay valid)
            else:
                page.text = ocr.text
                page.sections = []
            confidences[page.number] = ocr.confidence
            run.note(page.number, ocr)
    run.cache.flush()
    result.warnings = run.warnings
    result.metadata = run.metadata(confidences)  # also when OCR found nothing: it ran (see ocr_now_possible)
    result.empty_reason = "no text found, not even by OCR"
    return result
