"""One file's OCR run: the languages, the cache and the page-by-page results a loader asks for."""

from __future__ import annotations

import hashlib
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache import OcrCache
from .engine import LOW_CONFIDENCE, RENDER_DPI, TesseractInfo, ocr_languages, require_tesseract
from .page import OcrFailure, PageOcr, ocr_image

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)


def _option(options: Any, name: str, default: Any = None) -> Any:
    return getattr(options, name, default) if options is not None else default


@dataclass
class OcrRun:
    """Everything one document's OCR needs; built once per file by ``start``."""

    path: Path
    info: TesseractInfo
    languages: str
    cache: OcrCache
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, path: Path, data: bytes, options: Any, what: str, dpi: int = RENDER_DPI) -> OcrRun:
        override = _option(options, "ocr_languages")  # KAYNAK_OCR_LANGUAGES, through Settings and LoadOptions
        wanted = ocr_languages(_option(options, "language"), override)
        info, languages, warnings = require_tesseract(path, wanted, what)
        data_dir = _option(options, "data_dir")
        cache = OcrCache(data_dir, hashlib.sha256(data).hexdigest(), languages, info.engine, dpi)
        return cls(path, info, languages, cache, warnings)

    def page(self, number: int, render: Callable[[], tuple[Image.Image, int | None]]) -> PageOcr | None:
        """The OCR of page ``number`` from the cache, or rendered and OCR'd now; None (with a warning) when
        Tesseract fails on it."""
        cached = self.cache.get(number)
        if cached is not None:
            return cached
        t0 = time.perf_counter()
        image, dpi = render()
        try:
            result = ocr_image(image, self.languages, dpi, info=self.info)
        except OcrFailure as err:
            self.warnings.append(f"page {number}: OCR failed ({err}); page left empty")
            return None
        finally:
            image.close()
        log.debug(
            "%s: OCR of page %d in %.2f s (confidence %.1f)",
            self.path,
            number,
            time.perf_counter() - t0,
            result.confidence,
        )
        self.cache.put(number, result)
        return result

    def note(self, number: int, result: PageOcr) -> None:
        if not result.text:
            self.warnings.append(f"page {number}: no text found by OCR")
        elif result.confidence < LOW_CONFIDENCE:
            self.warnings.append(
                f"page {number}: OCR confidence {result.confidence:.0f} % is low; its text may be unreliable "
                "(a better scan, 300 dpi, would help)"
            )

    def metadata(self, pages: dict[int, float]) -> dict[str, Any]:
        return {
            "engine": self.info.engine,
            "languages": self.languages,
            "pages": {str(n): c for n, c in sorted(pages.items())},
            "mean_confidence": round(statistics.fmean(pages.values()), 1) if pages else None,
        }


def page_confidence(metadata: dict[str, Any] | None, page: int) -> float | None:
    """The OCR confidence of ``page`` from a document's metadata, or None when the page was not OCR'd."""
    ocr = (metadata or {}).get("ocr")
    if not isinstance(ocr, dict):
        return None
    value = (ocr.get("pages") or {}).get(str(page))
    return float(value) if isinstance(value, int | float) else None
