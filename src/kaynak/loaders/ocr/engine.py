"""The Tesseract engine: finding the program and its languages, the OCR settings, what doctor reports."""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaynak.errors import OcrUnavailable

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    pass


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
CACHE_VERSION = 2
#: In the warning of a PDF whose scanned pages could not be OCR'd (see ``ocr_now_possible``).
NOT_OCRD = "a scan, not OCR'd"
_LANG_RE = re.compile(r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")


@dataclass(frozen=True)
class TesseractInfo:
    path: str
    version: str
    languages: tuple[str, ...]
    osd: bool = False  # has the orientation and script detection data (pages scanned sideways)

    @property
    def engine(self) -> str:
        return f"tesseract {self.version}"


def tesseract_env() -> dict[str, str]:
    # One thread per Tesseract: the parse workers already use every core, and OpenMP threads in each of them
    # would only compete (Tesseract's own advice for parallel use).
    return {**os.environ, "OMP_THREAD_LIMIT": "1"}


@functools.lru_cache(maxsize=8)
def _probe(path: str) -> TesseractInfo | None:
    try:
        ver = subprocess.run([path, "--version"], capture_output=True, timeout=30, env=tesseract_env(), check=False)
        langs = subprocess.run(
            [path, "--list-langs"], capture_output=True, timeout=30, env=tesseract_env(), check=False
        )
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
