"""Image loader: PNG, JPEG and TIFF files become documents through OCR, one page per image or TIFF frame.

Pillow decodes the file one frame at a time (a multi-page TIFF never has more than one frame in memory), turns
it upright by its EXIF orientation, and ``kaynak.loaders.ocr`` reads it with Tesseract in the collection's
languages, from the OCR cache when the same file was read before. Pages carry their OCR confidence in the
document metadata (``ocr.pages``); pages with low confidence become warnings. A picture without any text is
refused as having no text; without Tesseract the file is refused with a message that says what to install.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, FileTooLarge, NoText
from kaynak.types import LoadedDocument, Page

from .common import first_line_title, json_safe, stem_title
from .ocr import MAX_IMAGE_PIXELS, OcrRun

#: The first line of OCR text becomes the title only when the page was read this confidently.
TITLE_CONFIDENCE = 80.0


def _dpi(image: Any) -> int | None:
    dpi = image.info.get("dpi")
    try:
        value = round(float(dpi[0])) if isinstance(dpi, tuple | list) and dpi else None
    except (TypeError, ValueError):
        return None
    return value if value and 70 <= value <= 2400 else None


def load_image(path: Path, data: bytes, options: Any = None) -> LoadedDocument:
    """OCR every frame of an image file into one page each. ``options``: the loaders' LoadOptions (language,
    data_dir for the OCR cache, ocr_languages)."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:  # its message names an in-memory buffer ('<_io.BytesIO object at 0x…>')
        raise CorruptFile(path, "not a readable image (damaged, or not really a PNG, JPEG or TIFF file)") from None
    except (Image.DecompressionBombError, OSError, ValueError) as err:
        raise CorruptFile(path, f"not a readable image ({err})") from None
    with image:
        width, height = image.size
        if width * height > MAX_IMAGE_PIXELS:
            raise FileTooLarge(
                path,
                f"image of {width}×{height} pixels is over the limit of {MAX_IMAGE_PIXELS // 1_000_000} million pixels",
            )
        fmt = (image.format or path.suffix.lstrip(".")).lower()
        # TIFF frames are pages; other formats' extra frames are previews or animation (JPEG MPO, APNG)
        n_frames = int(getattr(image, "n_frames", 1) or 1) if fmt == "tiff" else 1
        run = OcrRun.start(path, data, options, "image file")

        def render(index: int) -> tuple[Image.Image, int | None]:
            image.seek(index)
            frame = image.copy()  # this frame's pixels only; the file's other frames stay undecoded
            upright = ImageOps.exif_transpose(frame)
            if upright is not frame:
                frame.close()
            w, h = upright.size
            if w * h > MAX_IMAGE_PIXELS:
                upright.close()
                raise FileTooLarge(path, f"frame {index + 1} of {w}×{h} pixels is over the pixel limit")
            return upright, _dpi(image)

        pages: list[Page] = []
        confidences: dict[int, float] = {}
        for index in range(n_frames):
            number = index + 1
            try:
                ocr = run.page(number, functools.partial(render, index))
            except (OSError, EOFError, ValueError) as err:
                if index == 0:
                    raise CorruptFile(path, f"image cannot be decoded ({type(err).__name__}: {err})") from None
                run.warnings.append(f"page {number}: frame cannot be decoded ({type(err).__name__}: {err}); skipped")
                pages.append(Page(number, ""))
                continue
            if ocr is None:
                pages.append(Page(number, ""))
                continue
            pages.append(Page(number, ocr.text))
            if ocr.text:
                confidences[number] = ocr.confidence
            run.note(number, ocr)
        run.cache.flush()

    if not any(p.text for p in pages):
        raise NoText(path, "no text found by OCR (a photo or drawing without text?)")
    first = next(p for p in pages if p.text)
    title = (
        first_line_title(first.text, max_len=120) if confidences.get(first.number, 0.0) >= TITLE_CONFIDENCE else None
    ) or stem_title(path)
    metadata: dict[str, Any] = {
        "format": fmt,
        "page_count": n_frames,
        "width": width,
        "height": height,
        "ocr": run.metadata(confidences),
    }
    return LoadedDocument(title=title, pages=pages, metadata=json_safe(metadata), warnings=run.warnings)
