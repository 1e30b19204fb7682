"""Test scans made at test time from text we know: paragraphs rendered with DejaVu (which has every Turkish glyph)
to page images, optionally rotated and noisy, saved as PNG/TIFF or wrapped as image-only PDF pages, mixed with
real text-layer pages; and the character error rate of OCR output against the known text.

Used by tests/loaders/test_ocr.py and benchmarks/bench_ocr.py; nothing generated here is committed.
"""

from __future__ import annotations

import io
import json
import unicodedata
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
FONT_DIRS = (
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/dejavu"),
    Path("/Library/Fonts"),
    Path("/opt/homebrew/share/fonts"),
)

#: Used when the shared data folder is absent (a fresh checkout): one paragraph per language with every letter
#: that matters (ı İ ş Ş ğ Ğ ç Ç ö Ö ü Ü).
FALLBACK = {
    "tr": [
        "Kat malikleri kurulu yılda en az bir kez toplanır. Yönetici, ortak giderlerin paylaşımını gösteren "
        "işletme projesini hazırlar ve her kat malikine yazılı olarak bildirir. İtiraz süresi on beş gündür; "
        "süresinde itiraz edilmeyen proje kesinleşir ve ilamsız icra yoluyla takip edilebilir. Şikâyetler, "
        "ağaçların budanması, çöp konteynerlerinin yeri ve otoparkın kullanımı gibi konularda yoğunlaşır. "
        "Görüşmeler tutanağa geçirilir, tutanak Ümraniye'deki yönetim bürosunda saklanır.",
    ],
    "en": [
        "The committee meets at least once a year. The manager prepares an operating budget showing how the "
        "common expenses are shared and sends it to every owner in writing. Objections must be raised within "
        "fifteen days; a budget that nobody objects to becomes final and can be enforced without a court "
        "judgment. Complaints mostly concern the pruning of trees, where the bins stand and how the car park "
        "is used. The minutes of every meeting are kept in the management office.",
    ],
}


def font_path(name: str = "DejaVuSerif.ttf") -> Path | None:
    for d in FONT_DIRS:
        if (d / name).is_file():
            return d / name
    return None


def paragraphs(lang: str, n: int, start: int = 0) -> list[tuple[str, str]]:
    """``n`` (id, text) paragraphs of XQuAD in ``lang`` ('tr' or 'en'), from the shared data when present."""
    corpus = SHARED_DATA / "retrieval" / "xquad" / lang / "corpus.jsonl"
    if corpus.is_file():
        rows = [json.loads(line) for line in corpus.read_text("utf-8").splitlines() if line.strip()]
        rows = [rows[(start + k) % len(rows)] for k in range(n)]  # wraps around: any page count works
        return [(r["_id"], " ".join(r["text"].split())) for r in rows]
    texts = FALLBACK[lang]
    return [(f"fallback-{lang}-{i}", texts[(start + i) % len(texts)]) for i in range(n)]


def _wrap(text: str, font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        trial = f"{line} {word}" if line else word
        if font.getlength(trial) <= width or not line:
            line = trial
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def render_page(
    texts: list[str],
    *,
    dpi: int = 300,
    size_pt: float = 11.0,
    rotate: float = 0.0,
    noise: float = 0.0,
    blur: float = 0.0,
    seed: int = 0,
    page_in: tuple[float, float] = (8.27, 11.69),
    font_name: str = "DejaVuSerif.ttf",
) -> tuple[Image.Image, str]:
    """An A4 greyscale page image of ``texts`` (paragraphs) and the text exactly as laid out (lines joined by
    spaces, paragraphs by blank lines). ``noise``: standard deviation of Gaussian grain (0–255 scale), plus
    speckles in proportion; ``rotate``: degrees (a crooked scan)."""
    fp = font_path(font_name)
    if fp is None:
        raise FileNotFoundError(f"font {font_name} not found (install fonts-dejavu)")
    font = ImageFont.truetype(str(fp), round(size_pt * dpi / 72))
    w, h = round(page_in[0] * dpi), round(page_in[1] * dpi)
    margin = round(1.0 * dpi)
    img = Image.new("L", (w, h), 255)
    draw = ImageDraw.Draw(img)
    line_h = round(size_pt * 1.45 * dpi / 72)
    y = margin
    laid_out: list[str] = []
    for text in texts:
        lines = _wrap(text, font, w - 2 * margin)
        kept = []
        for line in lines:
            if y + line_h > h - margin:
                break
            draw.text((margin, y), line, font=font, fill=0)
            kept.append(line)
            y += line_h
        if kept:
            laid_out.append(" ".join(kept))
        y += line_h
    if rotate:
        img = img.rotate(rotate, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
    if blur:
        img = img.filter(ImageFilter.GaussianBlur(blur))
    if noise:
        rng = np.random.default_rng(seed)
        arr = np.asarray(img, dtype=np.float32)
        arr = arr + rng.normal(0.0, noise, arr.shape)
        speckle = rng.random(arr.shape)
        arr[speckle < noise / 40000] = 0  # dust
        arr[speckle > 1 - noise / 20000] = 255  # drop-outs
        img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "L")
    img.info["dpi"] = (dpi, dpi)
    return img, "\n\n".join(laid_out)


def image_bytes(img: Image.Image, fmt: str, dpi: int = 300) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, dpi=(dpi, dpi))
    return buf.getvalue()


def tiff_bytes(images: list[Image.Image], dpi: int = 300) -> bytes:
    buf = io.BytesIO()
    images[0].save(buf, format="TIFF", save_all=True, append_images=images[1:], dpi=(dpi, dpi), compression="tiff_lzw")
    return buf.getvalue()


def image_pdf(images: list[Image.Image], dpi: int = 300) -> bytes:
    """A PDF whose pages are nothing but these images (no text layer): what a scanner produces."""
    buf = io.BytesIO()
    images[0].save(buf, format="PDF", resolution=float(dpi), save_all=True, append_images=images[1:])
    return buf.getvalue()


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def text_pdf(pages: list[str]) -> bytes:
    """A minimal PDF with a real text layer (Helvetica, ASCII text): one page per string, wrapped at ~90 chars."""
    objects: list[bytes] = []
    n = len(pages)
    # 1 catalog, 2 pages, 3 font, then per page: page object, content stream
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for i, text in enumerate(pages):
        words, lines, line = text.split(), [], ""
        for word in words:
            if len(line) + len(word) + 1 > 90 and line:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        if line:
            lines.append(line)
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 770 Td"]
        for ln in lines:
            ops.append(f"{_pdf_string(ln)} Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for k, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % k + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def merge_pdfs(parts: list[tuple[bytes, list[int]]]) -> bytes:
    """One PDF from pages of others: [(pdf_bytes, [page indexes]), …] in order."""
    import pypdf

    writer = pypdf.PdfWriter()
    for data, indexes in parts:
        reader = pypdf.PdfReader(io.BytesIO(data))
        for i in indexes:
            writer.add_page(reader.pages[i])
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------- measuring


def _canonical(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions), one numpy row at a time."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    bs = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    ar = np.arange(len(b) + 1, dtype=np.int64)
    prev = ar.copy()
    idx = np.arange(1, len(b) + 1, dtype=np.int64)
    for i, ch in enumerate(a, start=1):
        cost = (bs != ord(ch)).astype(np.int64)
        best = np.minimum(prev[1:] + 1, prev[:-1] + cost)  # deletion, substitution
        row = np.empty_like(prev)
        row[0] = i
        # insertions: row[j] = min_k<=j (best[k] + j - k), with row[0] = i as k = 0
        row[1:] = np.minimum.accumulate(np.concatenate(([i], best)) - np.concatenate(([0], idx)))[1:] + idx
        prev = row
    return int(prev[-1])


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate: edit distance over the reference's length, whitespace runs counted as one space."""
    ref, hyp = _canonical(reference), _canonical(hypothesis)
    return levenshtein(ref, hyp) / max(1, len(ref))
