"""PDF loader (pypdf): one page of clean running text per PDF page.

pypdf reports each text fragment with its position, font and size; from those this module rebuilds lines, then:

1. repairs the decomposed diacritics of pdfLaTeX PDFs (``s¸`` → ``ş``) and drops superscript footnote markers;
2. puts single-column pages in top-to-bottom order (footnotes written first, headers written last), while
   multi-column pages keep the producer's order, which for LaTeX and Word is column by column;
3. removes running headers and footers: lines at the top or bottom edge that repeat on many pages (digits
   ignored), lines that carry a page counter, and bare page numbers;
4. rejoins words split by justified spacing (``preven t`` → ``prevent``) when the document's own vocabulary
   says so;
5. reflows lines into paragraphs (blank lines, vertical gaps, font changes, list and article markers, short
   lines ending a sentence, column jumps) and repairs line-end hyphenation: ``kat ma-`` + ``likleri`` →
   ``kat malikleri``, while ``semi-`` + ``automatic`` stays hyphenated when the document spells it so elsewhere,
   and hyphens before capitals or digits are kept.

Paragraphs are separated by a blank line. Annotation comments and filled-in form values follow the page's text.
A page pypdf cannot read (a damaged content stream) is read by pdfium's text layer as far as it goes, with a
warning; a page neither reads is kept empty with a warning. pypdf's log of repairs (a wrong xref offset) is kept
in ``pdf_repairs``, not as warnings: the file is not partial for it. Pages with no text layer, or a few words of
one over a page-sized image, are scans: ``kaynak.loaders.ocr`` renders and OCRs them (Tesseract), never replacing
text the page holds (docs/adr/0039-pdf-text-layer-first.md); a PDF with no text even then, or a scan without
Tesseract installed, is refused. Encrypted PDFs open when the user password is empty; otherwise "… is
password-protected; save it without a password first".
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, EncryptedFile, NoText
from kaynak.types import LoadedDocument, Page

from ..common import first_line_title, json_safe, meaningful_title, stem_title
from ..normalize import collapse_whitespace, normalize_text, repair_decomposed_diacritics
from ..ocr import ocr_pdf_pages
from .layout import order_lines
from .lines import Line, extract_lines
from .reflow import page_stats, reflow_page
from .running import remove_running_lines
from .words import (
    HYPHENS,
    DocumentWords,
    join_lines,
    join_split_letters,
    leading_word,
    starts_lower,
    tidy_spacing,
    trailing_word,
)

NO_TEXT_LAYER = "no text layer, and OCR found no text either"


def _title_from_lines(lines: list[Line]) -> str | None:
    """The largest-font text near the top of the first page, when it stands out from the body text."""
    if not lines:
        return None
    weights: Counter[float] = Counter()
    for ln in lines:
        weights[ln.size] += len(ln.text)
    body = weights.most_common(1)[0][0]
    top = lines[: max(3, len(lines) // 3)]
    biggest = max(ln.size for ln in top)
    if biggest < 1.15 * body:
        return None
    picked: list[str] = []
    for ln in top:
        if abs(ln.size - biggest) < 0.5:
            picked.append(ln.text.strip())
        elif picked:
            break
    title = collapse_whitespace(" ".join(picked))
    return title if 3 <= len(title) <= 250 and sum(ch.isalpha() for ch in title) >= 3 else None


def _info(reader: Any) -> dict[str, Any]:
    try:
        info = reader.metadata
    except Exception:
        return {}
    if not info:
        return {}
    out: dict[str, Any] = {}
    for key in ("title", "author", "subject", "creator", "producer"):
        try:
            value = getattr(info, key)
        except Exception:
            value = None
        if value:
            out[key] = collapse_whitespace(str(value))
    for key in ("creation_date", "modification_date"):
        try:
            value = getattr(info, key)
        except Exception:
            value = None
        if value:
            out[key] = value.isoformat()
    try:
        keywords = info.get("/Keywords")
        if keywords:
            out["keywords"] = collapse_whitespace(str(keywords))
    except Exception:
        pass
    return out


PASSWORD = "{name} is password-protected; save it without a password first"


def _open(path: Path, data: bytes) -> Any:
    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError

    head = data[:1024]
    if b"%PDF-" not in head:
        raise CorruptFile(path, "not a PDF file (no %PDF header)")
    locked = PASSWORD.format(name=path.name)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
    except (FileNotDecryptedError, DependencyError):
        raise EncryptedFile(path, locked) from None
    except Exception as err:
        raise CorruptFile(path, f"corrupt or truncated PDF ({_said(err)})") from None
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError:
            raise EncryptedFile(path, f"{locked} (decrypting it needs the package cryptography)") from None
        except Exception:
            raise EncryptedFile(path, locked) from None
        if not opened:
            raise EncryptedFile(path, locked)
    return reader


def _said(err: Exception) -> str:
    """What a parser's exception says, short, without its class name (``startxref not found``)."""
    text = collapse_whitespace(str(err))
    return (text[:100] + "…" if len(text) > 100 else text) or "unreadable"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = record.getMessage()
        except Exception:
            line = str(record.msg)
        if line not in self.lines and len(self.lines) < 20:
            self.lines.append(line)


_LOG_LOCK = threading.Lock()
_LOG_USERS = [0]


@contextlib.contextmanager
def _pypdf_log() -> Iterator[list[str]]:
    """pypdf's log lines while a PDF is read, kept from the root logger: they report repairs ("Ignoring wrong
    pointing object", "incorrect startxref pointer") of files whose text is read whole, not lost text. Lost text
    is seen by the loader itself (a page whose extraction fails) and becomes a warning there."""
    logger = logging.getLogger("pypdf")
    handler = _Collect()
    with _LOG_LOCK:
        logger.addHandler(handler)
        _LOG_USERS[0] += 1
        logger.propagate = False
    try:
        yield handler.lines
    finally:
        with _LOG_LOCK:
            logger.removeHandler(handler)
            _LOG_USERS[0] -= 1
            if not _LOG_USERS[0]:
                logger.propagate = True


def _read_pages(
    path: Path, reader: Any, n_pages: int, raw_pages: list[str] | None
) -> tuple[list[list[Line]], list[int], list[str], bool]:
    """Each page's prepared lines (empty for a page that could not be read), the unreadable page numbers, a
    warning for each, and whether pypdf saw any visible text at all. Raises CorruptFile when no page reads."""
    warnings: list[str] = []
    failed: list[int] = []
    pages_lines: list[list[Line]] = []
    first_error = ""
    found_text = False  # pypdf reported some visible text somewhere
    for i in range(n_pages):
        fragments: list[str] = []
        try:
            page = reader.pages[i]
            raw = extract_lines(page, fragments)
            box = page.mediabox
            width, left = float(box.width), float(box.left)
        except Exception as err:
            if raw_pages is not None:
                raw_pages.append("")
            failed.append(i + 1)
            first_error = first_error or _said(err)
            warnings.append(f"page {i + 1}: text could not be extracted (damaged page content); skipped")
            pages_lines.append([])
            continue
        if raw_pages is not None:
            raw_pages.append("".join(fragments))
        found_text = found_text or any(f.strip() for f in fragments)
        pages_lines.append(_prepare(raw, width, left))
    if len(failed) == n_pages:
        raise CorruptFile(path, f"corrupt PDF: no page could be read ({first_error})")
    return pages_lines, failed, warnings, found_text


def load_pdf(path: Path, data: bytes, *, raw_pages: list[str] | None = None, options: Any = None) -> LoadedDocument:
    """Load a PDF. ``raw_pages``, when given, receives pypdf's plain text of each page (before any repair), which
    is what the benchmark and the tests measure hyphenation artifacts against (testkit/hyphenation.py).
    ``options`` (LoadOptions) picks the OCR languages and cache for pages without a text layer (kaynak.loaders.ocr)."""
    if not data.strip():
        raise NoText(path, "no text (empty file)")
    with _pypdf_log() as repairs:
        doc = _load(path, data, raw_pages, options)
    if repairs:
        doc.metadata["pdf_repairs"] = repairs[:5]  # what pypdf repaired while reading; nothing was lost
    return doc


def _load(path: Path, data: bytes, raw_pages: list[str] | None, options: Any) -> LoadedDocument:
    reader = _open(path, data)
    try:
        n_pages = len(reader.pages)
    except Exception as err:
        raise CorruptFile(path, f"corrupt or truncated PDF: page tree unreadable ({err})") from None
    if n_pages == 0:
        raise NoText(path, "no text (the PDF has no pages)")

    pages_lines, failed, warnings, found_text = _read_pages(path, reader, n_pages, raw_pages)

    pages_lines, removed = remove_running_lines(pages_lines)
    vocab = DocumentWords.from_lines(pages_lines)
    all_lines = [ln for lines in pages_lines for ln in lines]
    lengths = sorted(len(ln.text) for ln in all_lines)
    fallback_len = float(lengths[int(0.8 * (len(lengths) - 1))]) if lengths else 60.0

    page_paragraphs: list[list[str]] = []
    for lines in pages_lines:
        for line in lines:
            line.text = tidy_spacing(join_split_letters(line.text, vocab))
        page_paragraphs.append(reflow_page(lines, vocab, page_stats(lines, fallback_len)))
    _join_across_pages(page_paragraphs, vocab)
    rescued = _read_failed_pages(data, failed, page_paragraphs, vocab, warnings)
    pages = [Page(number=i + 1, text=normalize_text("\n\n".join(p))) for i, p in enumerate(page_paragraphs)]
    scan = ocr_pdf_pages(path, data, pages, skip=set(failed), options=options)  # pages without a text layer
    warnings.extend(scan.warnings)
    notes = _annotations(reader, n_pages)
    for page in pages:
        added = [n for n in notes.get(page.number, []) if n not in page.text]
        if added:
            page.text = normalize_text("\n\n".join([page.text, *added]) if page.text else "\n\n".join(added))

    empty = [p.number for p in pages if not p.text and p.number not in failed]
    if not any(p.text for p in pages):
        if found_text:
            raise NoText(path, "the text in this PDF is made only of invisible or control characters")
        raise NoText(path, NO_TEXT_LAYER)
    if empty:
        listed = ", ".join(map(str, empty[:20])) + (" …" if len(empty) > 20 else "")
        warnings.append(f"no text layer on page(s) {listed} ({scan.empty_reason})")

    info = _info(reader)
    first_page_lines = next((lines for lines in pages_lines if lines), [])
    first_text = next((p.text for p in pages if p.text), "")
    title = (
        meaningful_title(info.get("title"))
        or _title_from_lines(first_page_lines)
        or _first_paragraph_title(first_text)
        or stem_title(path)
    )
    metadata: dict[str, Any] = {"format": "pdf", "page_count": n_pages, **info}
    facts = {
        "encrypted": bool(reader.is_encrypted),
        "running_lines_removed": removed,
        "failed_pages": failed,
        "pages_read_by_pdfium": rescued,
        "pages_without_text": empty,
        "annotated_pages": sorted(notes),
        "ocr": scan.metadata,
    }
    metadata.update({key: value for key, value in facts.items() if value})  # only what happened
    return LoadedDocument(title=title, pages=pages, metadata=json_safe(metadata), warnings=warnings)


#: Annotations whose /Contents is text a person wrote on the page (a Popup repeats its parent's; a Widget is a
#: form field; a FileAttachment's contents is a file name).
_NOTE_TYPES = frozenset(
    {
        "/Text",
        "/FreeText",
        "/Highlight",
        "/Underline",
        "/Squiggly",
        "/StrikeOut",
        "/Square",
        "/Circle",
        "/Line",
        "/Polygon",
        "/PolyLine",
        "/Ink",
        "/Stamp",
        "/Caret",
    }
)


def _annotations(reader: Any, n_pages: int) -> dict[int, list[str]]:
    """The comments written on each page (annotations' /Contents) and the values filled into its form fields, by
    page number; unreadable ones are skipped."""
    out: dict[int, list[str]] = {}
    for i in range(n_pages):
        try:
            annots = reader.pages[i].get("/Annots")
            annots = annots.get_object() if annots is not None else None
            if not annots:
                continue
            for ref in list(annots)[:500]:
                annot = ref.get_object()
                subtype = annot.get("/Subtype")
                if subtype == "/Widget":
                    text = _field_value(annot)
                elif subtype in _NOTE_TYPES:
                    text = normalize_text(str(annot.get("/Contents") or ""))
                else:
                    continue
                if text and sum(ch.isalnum() for ch in text) >= 2 and text not in out.get(i + 1, []):
                    out.setdefault(i + 1, []).append(text)
        except Exception:
            continue
    return out


def _field_value(widget: Any) -> str:
    """The text a form field shows: a text field's value, a choice field's chosen item (its display text when
    the options pair export values with display texts); check boxes and signatures have none."""
    from pypdf.generic import NameObject

    field = widget
    for _ in range(5):  # a widget's field keys may live on its parent field
        if "/FT" in field or "/Parent" not in field:
            break
        field = field["/Parent"].get_object()
    kind, value = field.get("/FT"), field.get("/V", widget.get("/V"))
    if kind not in ("/Tx", "/Ch") or value is None or isinstance(value, NameObject):
        return ""
    chosen = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    if kind == "/Ch":
        shown: dict[str, str] = {}
        for opt in field.get("/Opt") or []:
            opt = opt.get_object() if hasattr(opt, "get_object") else opt
            if isinstance(opt, list) and len(opt) == 2:
                shown[str(opt[0])] = str(opt[1])
        chosen = [shown.get(v, v) for v in chosen]
    return normalize_text("\n".join(v for v in chosen if v.strip()))


def _read_failed_pages(
    data: bytes, failed: list[int], paragraphs: list[list[str]], vocab: DocumentWords, warnings: list[str]
) -> list[int]:
    """Pages pypdf could not read (a damaged content stream), read with pdfium's text layer instead, which reads a
    damaged stream up to the damage. The warnings of such pages stay: part of their text may be missing."""
    if not failed:
        return []
    try:
        import pypdfium2 as pdfium

        from ..ocr.pdfpages import _PDFIUM_LOCK
    except ImportError:
        return []
    rescued: list[int] = []
    with _PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except Exception:
            return []
        try:
            for number in failed:
                if number > len(pdf):
                    continue
                try:
                    page = pdf[number - 1]
                    textpage = page.get_textpage()
                    raw = textpage.get_text_range()
                    textpage.close()
                    page.close()
                except Exception:
                    continue
                text = ""
                for line in normalize_text(raw).split("\n"):
                    text = join_lines(text, line, vocab)
                if sum(ch.isalnum() for ch in text) < 2:
                    continue
                paragraphs[number - 1] = [text]
                rescued.append(number)
        finally:
            pdf.close()
    for i, w in enumerate(warnings):
        number = int(w.split(":", 1)[0].removeprefix("page ")) if w.startswith("page ") else 0
        if number in rescued:
            warnings[i] = w.replace("; skipped", "; read by the fallback reader, some text may be missing")
    return rescued


def _join_across_pages(pages: list[list[str]], vocab: DocumentWords) -> None:
    """A word hyphenated over a page break moves whole to the page where it starts (``mül-`` | ``kiyeti)``)."""
    for cur, nxt in itertools.pairwise(pages):
        if not cur or not nxt or cur[-1][-1:] not in HYPHENS or not trailing_word(cur[-1]):
            continue
        head = nxt[0]
        token = head.split(None, 1)[0] if head.split() else ""
        if not token or not starts_lower(token) or not leading_word(token):
            continue
        joined = join_lines(cur[-1], token, vocab)
        cur[-1] = joined
        rest = head[len(token) :].lstrip()
        if rest:
            nxt[0] = rest
        else:
            nxt.pop(0)


def _first_paragraph_title(text: str) -> str | None:
    first = text.split("\n\n", 1)[0]
    return first_line_title(first, max_len=150) if "\n" not in first and len(first) <= 150 else None


def _prepare(raw: list[Line | None], width: float, left: float) -> list[Line]:
    """Blank markers folded into the lines, text cleaned, stray rotated text dropped, blocks put in order."""
    lines: list[Line] = []
    blank = False
    for item in raw:
        if item is None:
            blank = True
            continue
        item.text = repair_decomposed_diacritics(normalize_text(item.text))
        if not item.text:
            continue
        item.blank_before = blank
        blank = False
        lines.append(item)
    upright_chars = sum(len(ln.text) for ln in lines if ln.upright)
    if lines and upright_chars >= 0.8 * sum(len(ln.text) for ln in lines):
        lines = [ln for ln in lines if ln.upright]  # margin stamps, rotated watermarks
    body = [ln for ln in lines if ln.x is not None and len(ln.text) >= 15]
    right = [ln for ln in body if ln.x is not None and ln.x > left + 0.4 * width]
    multi_column = len(body) >= 5 and len(right) >= max(3, 0.2 * len(body))
    return lines if multi_column else order_lines(lines)
