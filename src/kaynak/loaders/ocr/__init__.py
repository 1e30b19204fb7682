"""OCR for scanned pages with Tesseract (its command line, TSV output), one page at a time, cached by file hash.

Used by the PDF loader for pages without a text layer and by the image loader for every image or TIFF frame;
both run inside the parse workers, so OCR gets the same memory and time limits as any other parsing. Decisions
and measurements: docs/adr/0014-ocr.md.

* ``tesseract_info()`` finds the ``tesseract`` program on PATH and the languages it has (None when missing);
  ``ocr_status()`` is what ``kaynak doctor`` prints.
* ``ocr_languages(collection_language, override)`` turns a collection's language into Tesseract languages
  (``turkish`` → ``tur+eng``, ``english`` → ``eng``, unknown → ``tur+eng``); ``KAYNAK_OCR_LANGUAGES`` overrides.
* ``ocr_image(image, languages, dpi)`` runs Tesseract on one PIL image (sent as an uncompressed PGM through a
  pipe, no temporary files) and rebuilds the text from its words: lines in a paragraph joined by spaces,
  line-end hyphens repaired, paragraphs separated by a blank line. The page's confidence is Tesseract's mean
  word confidence (0–100).
* ``ocr_pdf_pages`` renders with pdfium (``pypdfium2``) only the PDF pages whose text layer has almost no letters,
  OCRs them and releases each image before the next page, so memory stays at one page image whatever the length.
* ``OcrCache`` keeps each file's OCR results in ``<data_dir>/ocr-cache/<sha256>-<languages>.json``, written as
  pages finish (an interrupted scan resumes where it stopped), so an unchanged scan is never OCR'd twice.

Without Tesseract a file that needs OCR is refused with OcrUnavailable, whose message says what to install.
"""

from __future__ import annotations

from .cache import OcrCache
from .engine import (
    DEFAULT_LANGUAGES,
    INSTALL_HINT,
    LANGUAGES_FOR,
    LOW_CONFIDENCE,
    MAX_IMAGE_PIXELS,
    MAX_PIXELS,
    MIN_TEXT_CHARS,
    NOISY,
    NOT_OCRD,
    PAGE_TIMEOUT_S,
    RENDER_DPI,
    TesseractInfo,
    ocr_fingerprint,
    ocr_languages,
    ocr_now_possible,
    ocr_status,
    require_tesseract,
    tesseract_info,
)
from .page import OcrFailure, PageOcr, noise_level, ocr_image, parse_tsv
from .pdfpages import PdfOcrResult, needs_ocr, ocr_pdf_pages
from .run import OcrRun, page_confidence

__all__ = [
    "DEFAULT_LANGUAGES",
    "INSTALL_HINT",
    "LANGUAGES_FOR",
    "LOW_CONFIDENCE",
    "MAX_IMAGE_PIXELS",
    "MAX_PIXELS",
    "MIN_TEXT_CHARS",
    "NOISY",
    "NOT_OCRD",
    "PAGE_TIMEOUT_S",
    "RENDER_DPI",
    "OcrCache",
    "OcrFailure",
    "OcrRun",
    "PageOcr",
    "PdfOcrResult",
    "TesseractInfo",
    "needs_ocr",
    "noise_level",
    "ocr_fingerprint",
    "ocr_image",
    "ocr_languages",
    "ocr_now_possible",
    "ocr_pdf_pages",
    "ocr_status",
    "page_confidence",
    "parse_tsv",
    "require_tesseract",
    "tesseract_info",
]
