"""OCR of one image: greyscale, denoised when noisy, turned upright, read by Tesseract, text rebuilt from its words."""

from __future__ import annotations

import io
import logging
import re
import statistics
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..normalize import normalize_text
from .engine import INSTALL_HINT, LOW_CONFIDENCE, NOISY, PAGE_TIMEOUT_S, TesseractInfo, tesseract_env, tesseract_info

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger(__name__)


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
        done = subprocess.run(cmd, input=data, capture_output=True, timeout=timeout, env=tesseract_env(), check=False)
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


#: Largest skew ``skew_angle`` looks for (degrees either way), and the least it corrects.
MAX_SKEW = 15.0
MIN_SKEW = 1.0


def _bicubic() -> Any:
    from PIL import Image

    return Image.Resampling.BICUBIC


def skew_angle(grey: Image.Image) -> float:
    """Degrees to turn the page counter-clockwise to level its lines (0 when level or unsure): the angle whose
    horizontal ink profile is sharpest (text lines as peaks, the gaps between them as valleys), found on a
    thumbnail in 1° steps then 0.2° steps. A level page, a photo or a blank page gives 0."""
    import numpy as np
    from PIL import Image

    small = grey.copy()
    small.thumbnail((1000, 1000))
    arr = np.asarray(small, dtype=np.uint8)
    small.close()
    if arr.size == 0 or min(arr.shape) < 50:
        return 0.0
    ink = Image.fromarray(((arr < min(128, int(arr.mean()) - 20)) * 255).astype(np.uint8))
    if not np.asarray(ink).any():
        return 0.0

    def sharpness(angle: float) -> float:
        turned = ink.rotate(angle, resample=Image.Resampling.NEAREST, fillcolor=0)
        rows = np.asarray(turned, dtype=np.float64).sum(axis=1)
        turned.close()
        return float(((rows[1:] - rows[:-1]) ** 2).sum())

    level = sharpness(0.0)
    _, coarse = max((sharpness(float(a)), float(a)) for a in np.arange(-MAX_SKEW, MAX_SKEW + 0.01, 1.0))
    best, angle = max((sharpness(float(a)), float(a)) for a in np.arange(coarse - 0.8, coarse + 0.81, 0.2))
    ink.close()
    # a real skew makes the profile several times sharper once levelled; photos and noise barely change
    if abs(angle) < MIN_SKEW or best < 1.5 * max(level, 1.0):
        return 0.0
    return round(angle, 1)


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
            env=tesseract_env(),
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
    the reading with the larger sum of word confidences wins. A page that reads badly and lies askew (a scan fed in
    at an angle: ``skew_angle``) is also read straightened. Clean upright pages cost one Tesseract run."""
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
        if best is None or not best.words or best.confidence < LOW_CONFIDENCE:
            angle = skew_angle(grey)
            if angle:
                level = grey.rotate(angle, resample=_bicubic(), expand=True, fillcolor=255)
                try:
                    straightened = _read(info, level, languages, dpi, timeout)
                except OcrFailure:
                    straightened = None
                finally:
                    level.close()
                if _score(straightened) > _score(best):
                    best = straightened
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
