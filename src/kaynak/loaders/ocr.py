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

import contextlib
import functools
import hashlib
import io
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaynak.errors import LoaderError, OcrUnavailable
from kaynak.types import Page

from .normalize import normalize_text

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "install Tesseract with its Turkish and English data (Debian/Ubuntu: "
    "`sudo apt install tesseract-ocr tesseract-ocr-tur tesseract-ocr-eng`; macOS with Homebrew: "
    "`brew install tesseract tesseract-lang`), then ingest the file again"
)
#: Languages per collection language; anything else (``simple``, not yet known) gets both.
LANGUAGES_FOR = {"turkish": "tur+eng", "english": "eng"}
DEFAULT_LANGUAGES = "tur+eng"
#: Resolution PDF pages are rendered at.
RENDER_DPI = 300
#: A rendered page larger than this many pixels is rendered at a lower resolution (A4 at 300 dpi: 8.7 M).
MAX_PIXELS = 40_000_000
#: An image (or frame) larger than this is refused instead of decoded: a decompression bomb, not a scan.
MAX_IMAGE_PIXELS = 200_000_000
#: A PDF page whose text layer has fewer letters and digits than this is treated as scanned.
MIN_TEXT_CHARS = 20
#: Pages whose mean word confidence is below this become warnings.
LOW_CONFIDENCE = 60.0
#: Wall-time limit for one Tesseract run (the parse worker's limit applies to the whole file as well). Clean A4
#: pages take 1–3 s; grain can make Tesseract chase specks for minutes, which the smoothed retry avoids.
PAGE_TIMEOUT_S = 90.0
#: ``noise_level`` above which a page is smoothed before OCR.
NOISY = 16.0
_CACHE_VERSION = 2
#: In the warning of a PDF whose scanned pages could not be OCR'd (see ``ocr_now_possible``).
NOT_OCRD = "a scan, not OCR'd"
_LANG_RE = re.compile(r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")


# --------------------------------------------------------------------------------------------- Tesseract


@dataclass(frozen=True)
class TesseractInfo:
    path: str
    version: str
    languages: tuple[str, ...]
    osd: bool = False  # has the orientation and script detection data (pages scanned sideways)

    @property
    def engine(self) -> str:
        return f"tesseract {self.version}"


def _env() -> dict[str, str]:
    # One thread per Tesseract: the parse workers already use every core, and OpenMP threads in each of them
    # would only compete (Tesseract's own advice for parallel use).
    return {**os.environ, "OMP_THREAD_LIMIT": "1"}


@functools.lru_cache(maxsize=8)
def _probe(path: str) -> TesseractInfo | None:
    try:
        ver = subprocess.run([path, "--version"], capture_output=True, timeout=30, env=_env(), check=False)
        langs = subprocess.run([path, "--list-langs"], capture_output=True, timeout=30, env=_env(), check=False)
    except (OSError, subprocess.SubprocessError) as err:
        log.warning("tesseract at %s does not run: %s", path, err)
        return None
    if langs.returncode != 0:
        return None
    out = (ver.stdout or ver.stderr).decode("utf-8", "replace")
    m = re.search(r"tesseract\s+v?([\w.\-]+)", out)
    listed = langs.stdout.decode("utf-8", "replace").splitlines()
    languages = tuple(sorted(ln.strip() for ln in listed[1:] if ln.strip() and ln.strip() != "osd"))
    osd = any(ln.strip() == "osd" for ln in listed[1:])
    return TesseractInfo(path=path, version=m.group(1) if m else "unknown", languages=languages, osd=osd)


def tesseract_info() -> TesseractInfo | None:
    """The Tesseract found on PATH with its languages, or None when it is not installed (or does not run)."""
    path = shutil.which("tesseract")
    return _probe(path) if path else None


def ocr_status() -> dict[str, Any]:
    """For ``kaynak doctor``: whether OCR works, the engine, its languages, and what to install if it does not."""
    info = tesseract_info()
    if info is None:
        return {"available": False, "engine": None, "languages": [], "problem": f"Tesseract not found: {INSTALL_HINT}"}
    missing = [lang for lang in ("tur", "eng") if lang not in info.languages]
    status: dict[str, Any] = {"available": True, "engine": info.engine, "languages": list(info.languages)}
    if missing:
        status["problem"] = f"Tesseract lacks the language data {', '.join(missing)}: {INSTALL_HINT}"
    return status


def ocr_fingerprint() -> str:
    """What OCR can do here, in one line (``tesseract 5.3.0 eng+tur`` or ``no OCR``): part of the key under which
    the ingest remembers failed files, so a scan refused for want of Tesseract is read once it is installed."""
    info = tesseract_info()
    return f"{info.engine} {'+'.join(info.languages)}" if info is not None else "no OCR"


def ocr_now_possible(warnings: list[str]) -> bool:
    """True when a stored document's warnings say some pages were not OCR'd for want of Tesseract, and Tesseract is
    here now: the ingest then reads the unchanged file again instead of skipping it."""
    return any(NOT_OCRD in w for w in warnings) and tesseract_info() is not None


def ocr_languages(collection_language: str | None, override: str | None = None) -> str:
    """Tesseract's ``-l`` value: ``override`` (KAYNAK_OCR_LANGUAGES) when set, else by the collection's language."""
    if override and override.strip():
        return override.strip()
    return LANGUAGES_FOR.get(collection_language or "", DEFAULT_LANGUAGES)


def require_tesseract(path: str | Path, languages: str, what: str) -> tuple[TesseractInfo, str, list[str]]:
    """The Tesseract to use, the languages it has of ``languages``, and warnings; OcrUnavailable when it cannot
    OCR at all, with ``what`` (``no text layer (a scan)``, ``image file``) before the reason."""
    if not _LANG_RE.match(languages):
        raise OcrUnavailable(
            path, f"{what}: KAYNAK_OCR_LANGUAGES={languages!r} is not a Tesseract language list (such as tur+eng)"
        )
    info = tesseract_info()
    if info is None:
        raise OcrUnavailable(path, f"{what}: reading it needs OCR, and Tesseract is not installed; {INSTALL_HINT}")
    wanted = languages.split("+")
    have = [lang for lang in wanted if lang in info.languages]
    missing = [lang for lang in wanted if lang not in info.languages]
    if not have:
        raise OcrUnavailable(
            path,
            f"{what}: reading it needs OCR in {languages}, and Tesseract has none of these languages (it has "
            f"{', '.join(info.languages) or 'none'}); {INSTALL_HINT}",
        )
    warnings = []
    if missing:
        warnings.append(
            f"OCR without the language data {', '.join(missing)} (not installed; letters such as ı ş ğ may be "
            f"misread); {INSTALL_HINT}"
        )
    return info, "+".join(have), warnings


# --------------------------------------------------------------------------------------------- one image


@dataclass
class PageOcr:
    """OCR of one page: the text, Tesseract's mean word confidence (0–100) and the number of words."""

    text: str
    confidence: float
    words: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "confidence": self.confidence, "words": self.words}

    @classmethod
    def from_json(cls, d: Any) -> PageOcr | None:
        if not isinstance(d, dict):
            return None
        text, conf, words = d.get("text"), d.get("confidence"), d.get("words")
        if not isinstance(text, str) or not isinstance(conf, int | float) or not isinstance(words, int):
            return None
        return cls(text, float(conf), words)


_HYPHEN_END_RE = re.compile(r"[^\W\d_][-\u00ad\u2010]$")


def _join_lines(lines: list[str]) -> str:
    """A paragraph from its lines: joined by spaces, a word hyphenated at a line end rejoined when the next line
    goes on in lower case (``malik-`` + ``leri`` → ``malikleri``)."""
    out = ""
    for line in lines:
        if not out:
            out = line
        elif _HYPHEN_END_RE.search(out) and line[:1].islower():
            out = out[:-1] + line
        else:
            out += " " + line
    return out


def parse_tsv(tsv: str) -> PageOcr:
    """Text and mean confidence from Tesseract's TSV output (level 5 rows are words)."""
    paragraphs: dict[tuple[int, int, int], dict[int, list[str]]] = {}
    confs: list[float] = []
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":
            continue
        word = cols[11].strip()
        if not word:
            continue
        try:
            page, block, par, line = int(cols[1]), int(cols[2]), int(cols[3]), int(cols[4])
            conf = float(cols[10])
        except ValueError:
            continue
        paragraphs.setdefault((page, block, par), {}).setdefault(line, []).append(word)
        if conf >= 0:
            confs.append(conf)
    texts = [
        _join_lines([" ".join(words) for _, words in sorted(lines.items())]) for _, lines in sorted(paragraphs.items())
    ]
    text = normalize_text("\n\n".join(texts))
    confidence = round(statistics.fmean(confs), 1) if confs else 0.0
    return PageOcr(text, confidence, len(confs))


def _grey(image: Image.Image) -> Image.Image:
    """Greyscale, transparent parts on white (a transparent PNG would otherwise come out black)."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        white.alpha_composite(rgba)
        return white.convert("L")
    if image.mode == "L":
        return image
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        return image.point(lambda v: v / 256).convert("L")
    return image.convert("L")


def noise_level(grey: Image.Image) -> float:
    """Mean absolute difference between a central crop and its 3×3 median: about 2 on clean 300-dpi text, 13 with
    grain of σ 30, 24 with σ 60 (where Tesseract's own thresholding starts to see nothing but noise)."""
    from PIL import ImageChops, ImageFilter, ImageStat

    w, h = grey.size
    side = min(600, w, h)
    left, top = (w - side) // 2, (h - side) // 3
    crop = grey.crop((left, top, left + side, top + side))
    smooth = crop.filter(ImageFilter.MedianFilter(3))
    diff = ImageChops.difference(crop, smooth)
    level = float(ImageStat.Stat(diff).mean[0])
    for im in (crop, smooth, diff):
        im.close()
    return level


def _denoised(grey: Image.Image) -> Image.Image:
    from PIL import ImageFilter

    return grey.filter(ImageFilter.GaussianBlur(1.0))


def _tesseract(info: TesseractInfo, grey: Image.Image, languages: str, dpi: int | None, timeout: float) -> PageOcr:
    buf = io.BytesIO()
    grey.save(buf, format="PPM")  # PGM: no compression work; Tesseract reads it from stdin
    data = buf.getvalue()
    del buf
    cmd = [info.path, "stdin", "stdout", "-l", languages, "--psm", "3"]
    if dpi and 70 <= dpi <= 2400:
        cmd += ["--dpi", str(int(dpi))]
    cmd.append("tsv")
    try:
        done = subprocess.run(cmd, input=data, capture_output=True, timeout=timeout, env=_env(), check=False)
    except subprocess.TimeoutExpired:
        raise OcrFailure(f"Tesseract took longer than {timeout:.0f} s on one page") from None
    except OSError as err:
        raise OcrFailure(f"Tesseract could not be started ({err})") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise OcrFailure(f"Tesseract failed (exit {done.returncode}: {' '.join(tail)[:300]})")
    return parse_tsv(done.stdout.decode("utf-8", "replace"))


def _score(reading: PageOcr | None) -> float:
    return reading.confidence * reading.words if reading is not None else -1.0


def _read(info: TesseractInfo, grey: Image.Image, languages: str, dpi: int | None, timeout: float) -> PageOcr:
    """One page as it lies: smoothed first when grainy; read again smoothed when it reads badly."""
    if noise_level(grey) > NOISY:
        smooth = _denoised(grey)
        try:
            return _tesseract(info, smooth, languages, dpi, timeout)
        finally:
            smooth.close()
    try:
        first: PageOcr | None = _tesseract(info, grey, languages, dpi, timeout)
    except OcrFailure:
        first = None
    if first is not None and first.words and first.confidence >= LOW_CONFIDENCE:
        return first
    smooth = _denoised(grey)
    try:
        second = _tesseract(info, smooth, languages, dpi, timeout)
    except OcrFailure:
        if first is None:
            raise
        return first
    finally:
        smooth.close()
    return second if first is None or _score(second) > _score(first) else first


_ROTATE_RE = re.compile(r"Rotate:\s*(\d+)")
_ORIENT_CONF_RE = re.compile(r"Orientation confidence:\s*([\d.]+)")


def _orientation(info: TesseractInfo, grey: Image.Image, timeout: float) -> int:
    """Degrees to turn the page clockwise to make it upright (Tesseract's orientation detection), 0 when upright
    or unsure."""
    buf = io.BytesIO()
    grey.save(buf, format="PPM")
    try:
        done = subprocess.run(
            [info.path, "stdin", "stdout", "--psm", "0"],
            input=buf.getvalue(),
            capture_output=True,
            timeout=timeout,
            env=_env(),
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError):
        return 0
    out = done.stdout.decode("utf-8", "replace")
    turn, conf = _ROTATE_RE.search(out), _ORIENT_CONF_RE.search(out)
    if done.returncode != 0 or not turn or not conf or float(conf.group(1)) < 1.0:
        return 0
    return int(turn.group(1)) if int(turn.group(1)) in (90, 180, 270) else 0


def ocr_image(
    image: Image.Image,
    languages: str,
    dpi: int | None = None,
    *,
    info: TesseractInfo | None = None,
    timeout: float = PAGE_TIMEOUT_S,
) -> PageOcr:
    """OCR one image. ``dpi``: its resolution when known (Tesseract estimates otherwise). Raises OcrFailure.

    A grainy image (``noise_level`` above NOISY) is smoothed first; an image that reads badly as it is (no words,
    or confidence below LOW_CONFIDENCE, or too slow) is read once more smoothed, and, when it still reads badly,
    turned upright by Tesseract's orientation detection (a page scanned sideways or upside down) and read again;
    the reading with the larger sum of word confidences wins. Clean upright pages cost one Tesseract run."""
    info = info or tesseract_info()
    if info is None:
        raise OcrFailure(f"Tesseract is not installed: {INSTALL_HINT}")
    grey = _grey(image)
    try:
        try:
            best: PageOcr | None = _read(info, grey, languages, dpi, timeout)
            failure: OcrFailure | None = None
        except OcrFailure as err:
            best, failure = None, err
        if (best is None or not best.words or best.confidence < LOW_CONFIDENCE) and info.osd:
            turn = _orientation(info, grey, timeout)
            if turn:
                upright = grey.rotate(-turn, expand=True)
                try:
                    turned = _read(info, upright, languages, dpi, timeout)
                except OcrFailure:
                    turned = None
                finally:
                    upright.close()
                if _score(turned) > _score(best):
                    best = turned
        if best is None:
            raise failure or OcrFailure("Tesseract read nothing")
        return best
    finally:
        if grey is not image:
            grey.close()


class OcrFailure(Exception):
    """Tesseract failed on one page (the page becomes a warning; the rest of the document goes on)."""


# --------------------------------------------------------------------------------------------- cache


class OcrCache:
    """Per-file OCR results keyed by page number, in ``<data_dir>/ocr-cache/<sha256>-<languages>.json``.

    ``data_dir`` None keeps nothing. Results from another engine version or resolution are ignored. The file is
    rewritten atomically (at most every few seconds while pages come in, and at the end).
    """

    def __init__(self, data_dir: Path | None, sha256: str, languages: str, engine: str, dpi: int) -> None:
        self.path = (Path(data_dir) / "ocr-cache" / f"{sha256}-{languages}.json") if data_dir else None
        self.key = {"version": _CACHE_VERSION, "engine": engine, "languages": languages, "dpi": dpi}
        self.pages: dict[int, PageOcr] = {}
        self._dirty = False
        self._written = time.monotonic()
        if self.path is not None and self.path.is_file():
            try:
                stored = json.loads(self.path.read_text("utf-8"))
            except (OSError, ValueError):
                stored = None
            if isinstance(stored, dict) and all(stored.get(k) == v for k, v in self.key.items()):
                for number, value in (stored.get("pages") or {}).items():
                    page = PageOcr.from_json(value)
                    if page is not None and str(number).isdigit():
                        self.pages[int(number)] = page

    def get(self, number: int) -> PageOcr | None:
        return self.pages.get(number)

    def put(self, number: int, result: PageOcr) -> None:
        self.pages[number] = result
        self._dirty = True
        if time.monotonic() - self._written > 5.0:
            self.flush()

    def flush(self) -> None:
        if self.path is None or not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            body = {**self.key, "pages": {str(n): p.to_json() for n, p in sorted(self.pages.items())}}
            tmp.write_text(json.dumps(body, ensure_ascii=False), "utf-8")
            os.replace(tmp, self.path)
        except OSError as err:  # a read-only data folder must not stop the ingest
            log.warning("OCR cache not written (%s): %s", self.path, err)
        self._dirty = False
        self._written = time.monotonic()


# --------------------------------------------------------------------------------------------- options


def _option(options: Any, name: str, default: Any = None) -> Any:
    return getattr(options, name, default) if options is not None else default


@dataclass
class OcrRun:
    """Everything one document's OCR needs; built once per file by ``start``."""

    path: Path
    info: TesseractInfo
    languages: str
    cache: OcrCache
    progress: Callable[[int, int], None] | None = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, path: Path, data: bytes, options: Any, what: str, dpi: int = RENDER_DPI) -> OcrRun:
        override = _option(options, "ocr_languages") or os.environ.get("KAYNAK_OCR_LANGUAGES")
        wanted = ocr_languages(_option(options, "language"), override)
        info, languages, warnings = require_tesseract(path, wanted, what)
        data_dir = _option(options, "data_dir")
        cache = OcrCache(data_dir, hashlib.sha256(data).hexdigest(), languages, info.engine, dpi)
        progress = _option(options, "progress")
        return cls(path, info, languages, cache, progress if callable(progress) else None, warnings)

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


# --------------------------------------------------------------------------------------------- PDF pages


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


def ocr_pdf_pages(
    path: Path, data: bytes, pages: list[Page], *, skip: set[int] | frozenset[int] = frozenset(), options: Any = None
) -> PdfOcrResult:
    """OCR, in place, the pages of ``pages`` whose text layer has (almost) no text; ``skip``: page numbers not to
    touch (pages whose extraction failed). Pages keep their text layer when OCR finds no more text than it.

    Without Tesseract: OcrUnavailable when no page has text, else the scanned pages stay empty with a warning
    that says what to install.
    """
    todo = [p for p in pages if p.number not in skip and needs_ocr(p.text)]
    result = PdfOcrResult()
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
        for k, page in enumerate(todo, start=1):
            if page.number > n_rendered:
                continue
            ocr = run.page(page.number, functools.partial(_render_pdf_page, pdf, page.number - 1))
            if run.progress is not None:
                run.progress(k, len(todo))
            if ocr is None:
                continue
            if sum(ch.isalnum() for ch in ocr.text) <= sum(ch.isalnum() for ch in page.text):
                continue  # the text layer says as much: keep it
            page.text = ocr.text
            page.sections = []
            confidences[page.number] = ocr.confidence
            run.note(page.number, ocr)
    run.cache.flush()
    result.warnings = run.warnings
    result.metadata = run.metadata(confidences)  # also when OCR found nothing: it ran (see ocr_now_possible)
    result.empty_reason = "no text found, not even by OCR"
    return result
