"""Loaders: turn a file into a LoadedDocument (title, metadata, pages of clean text), picked by extension.

    load(path, max_bytes=None, options=None) -> LoadedDocument

The registry maps lower-case extensions to loader functions ``(path, data, options) -> LoadedDocument``;
``register`` adds more. ``LoadOptions`` carries what a loader may need beyond the file (the collection's language,
the data folder for caches, OCR languages). ``load`` checks the size with stat() before reading anything, reads
the file once, runs the loader, makes sure every page text is normalised, and refuses documents without any text.
Every error is a LoaderError subclass naming the file: UnsupportedFileType, FileTooLarge, EncryptedFile,
CorruptFile, NoText (OcrUnavailable: a scan, and Tesseract is missing).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, LoaderError, NoText, UnsupportedFileType
from kaynak.types import LoadedDocument, Page, Section

from .normalize import decode_bytes, decode_with_encoding, normalize_text

__all__ = [
    "CONTAINER_EXTENSIONS",
    "DEFAULT_MAX_BYTES",
    "SUPPORTED_EXTENSIONS",
    "LoadOptions",
    "decode_bytes",
    "decode_with_encoding",
    "load",
    "loader_for",
    "normalize_text",
    "register",
]


@dataclass(frozen=True)
class LoadOptions:
    """What loaders may need beyond the file's bytes (picklable: loaders run in parse workers).

    ``language``: the collection's language (None while it is not known yet); ``data_dir``: kaynak's data folder,
    for caches (OCR results under ``ocr-cache/``), None = no cache; ``ocr_languages``: Tesseract languages
    overriding the language's (``KAYNAK_OCR_LANGUAGES``).
    """

    language: str | None = None
    data_dir: Path | None = None
    ocr_languages: str | None = None


LoaderFunc = Callable[[Path, bytes, LoadOptions], LoadedDocument]

#: The limit ``load`` applies when the caller passes none: the ``max_file_mb`` default (100 MB).
DEFAULT_MAX_BYTES = 100 * 1024 * 1024

_REGISTRY: dict[str, LoaderFunc] = {}

#: Extensions of files that hold several documents (LoadedDocument.parts), stored as ``<source>#<suffix>``.
CONTAINER_EXTENSIONS: frozenset[str] = frozenset(
    {".eml", ".mbox", ".mbx", ".msg", ".zip", ".tar", ".tgz", ".tbz2", ".txz", ".gz", ".bz2", ".xz"}
)


#: Loaders registered after import (by a plugin or a program), as ``extension -> "module:qualified.name"``: files
#: are parsed in separate worker processes, which import these by name before loading (``use_added``).
_ADDED: dict[str, str] = {}


def _reference(func: LoaderFunc) -> str:
    """``"module:qualified.name"`` of a module-level function, or ValueError: a worker process must import it."""
    module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    try:
        found: Any = importlib.import_module(module) if module else None
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        found = None
    if found is not func or module == "__main__":
        raise ValueError(
            f"register a function defined at the top level of an importable module, not {func!r}: "
            "files are parsed in separate worker processes, which import the loader by name"
        )
    return f"{module}:{qualname}"


def register(extensions: list[str] | tuple[str, ...] | frozenset[str], func: LoaderFunc) -> None:
    """Use ``func`` for files with any of ``extensions`` ('.ext', case-insensitive).

    ``func`` must be a top-level function of an importable module (ValueError otherwise): the parse workers import
    it by name, so a loader registered at run time reaches them too (``added_loaders``, ``use_added``).
    """
    global SUPPORTED_EXTENSIONS
    builtin = getattr(func, "__module__", None) == __name__
    ref = None if builtin else _reference(func)
    for ext in extensions:
        ext = ext.lower()
        if not ext.startswith("."):
            ext = "." + ext
        _REGISTRY[ext] = func
        if ref is None:
            _ADDED.pop(ext, None)
        else:
            _ADDED[ext] = ref
    SUPPORTED_EXTENSIONS = frozenset(_REGISTRY)


def added_loaders() -> tuple[tuple[str, str], ...]:
    """The loaders registered after import, as ``(extension, "module:qualified.name")`` pairs (for workers)."""
    return tuple(sorted(_ADDED.items()))


def use_added(added: tuple[tuple[str, str], ...]) -> None:
    """Register, in this process, the loaders another process registered (``added_loaders``); a worker calls it."""
    for ext, ref in added:
        if _ADDED.get(ext) == ref:
            continue
        module, _, qualname = ref.partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        register((ext,), found)


def _pdf(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .pdf import load_pdf

    return load_pdf(path, data, options=options)


def _markdown(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .markdown import load_markdown

    return load_markdown(path, data)


def _text(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .text import load_text

    return load_text(path, data)


def _html(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .html import load_html

    return load_html(path, data)


def _docx(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .docx import load_docx

    return load_docx(path, data)


def _image(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .image import load_image  # OCR with Tesseract (kaynak.loaders.ocr)

    return load_image(path, data, options)


def _opendocument(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .opendocument import load_opendocument

    return load_opendocument(path, data)


def _pptx(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .pptx import load_pptx

    return load_pptx(path, data)


def _xlsx(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .sheets import load_xlsx

    return load_xlsx(path, data)


def _csv(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .sheets import load_csv

    return load_csv(path, data)


def _udf(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .udf import load_udf

    return load_udf(path, data)


def _rtf(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .rtf import load_rtf

    return load_rtf(path, data)


def _epub(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .epub import load_epub

    return load_epub(path, data)


def _legacy(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .legacy import load_legacy  # LibreOffice headless, when installed

    return load_legacy(path, data)


def _eml(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .mail import load_eml

    return load_eml(path, data, options)


def _mbox(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .mail import load_mbox

    return load_mbox(path, data, options)


def _msg(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .msg import load_msg

    return load_msg(path, data, options)


def _archive(path: Path, data: bytes, options: LoadOptions) -> LoadedDocument:
    from .archive import load_archive

    return load_archive(path, data, options)


SUPPORTED_EXTENSIONS: frozenset[str] = frozenset()
register((".pdf",), _pdf)
register((".md", ".markdown", ".mdx"), _markdown)
register((".txt", ".text"), _text)
register((".html", ".htm", ".xhtml"), _html)
register((".docx", ".docm", ".dotx", ".dotm"), _docx)  # macro-enabled and templates: the same package
register((".png", ".jpg", ".jpeg", ".tif", ".tiff"), _image)
register((".odt", ".ott", ".fodt", ".ods", ".ots", ".fods", ".odp", ".otp", ".fodp"), _opendocument)
register((".pptx", ".pptm", ".ppsx", ".ppsm", ".potx"), _pptx)  # shows and templates: the same package
register((".xlsx", ".xlsm", ".xltx", ".xltm"), _xlsx)
register((".csv", ".tsv"), _csv)
register((".udf",), _udf)
register((".rtf",), _rtf)
register((".epub",), _epub)
register((".doc", ".xls", ".ppt"), _legacy)
register((".eml",), _eml)
register((".mbox", ".mbx"), _mbox)
register((".msg",), _msg)
register((".zip", ".tar", ".tgz", ".tbz2", ".txz", ".gz", ".bz2", ".xz"), _archive)


def loader_for(path: str | Path) -> LoaderFunc:
    """The loader for ``path``'s extension, or UnsupportedFileType."""
    path = Path(path)
    ext = path.suffix.lower()
    func = _REGISTRY.get(ext)
    if func is None:
        kind = f"'{ext}'" if ext else "files without an extension"
        supported = ", ".join(sorted(_REGISTRY))
        raise UnsupportedFileType(path, f"unsupported file type {kind} (supported: {supported})")
    return func


def load(path: str | Path, *, max_bytes: int | None = None, options: LoadOptions | None = None) -> LoadedDocument:
    """Load one file. ``max_bytes``: refuse larger files before reading them (None = DEFAULT_MAX_BYTES);
    ``options``: see LoadOptions (None = defaults: language unknown, no caches)."""
    from kaynak.structure import article_sections

    from .common import read_limited

    path = Path(path)
    func = loader_for(path)
    data = read_limited(path, DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    if _empty(data):
        raise NoText(path, "no text (the file is empty)")
    try:
        doc = func(path, data, options or LoadOptions())
    except LoaderError:
        raise
    except RecursionError:
        raise CorruptFile(path, "structure nested too deeply to read") from None
    except MemoryError:
        raise CorruptFile(path, "file needs too much memory to read") from None
    except Exception as err:  # a bug or an input no loader anticipated: still name the file
        raise CorruptFile(path, f"could not be read ({type(err).__name__}: {err})") from err
    doc.pages = article_sections([_scrub(p) for p in doc.pages])  # "MADDE 27 –", "Section 4.2" → sections
    kept: list[tuple[str, LoadedDocument]] = []
    for suffix, part in doc.parts:
        part.pages = article_sections([_scrub(p) for p in part.pages])
        if any(has_visible_text(p.text) for p in part.pages):
            kept.append((suffix, part))
    doc.parts = kept
    if not kept and not any(has_visible_text(p.text) for p in doc.pages):
        raise NoText(path, "no text (only whitespace or invisible characters)")
    return doc


def has_visible_text(text: str) -> bool:
    """Does ``text`` hold anything a person can see (not only spaces, format characters or combining marks)?"""
    import unicodedata

    for ch in text:
        if ch.isalnum():
            return True
        if ch.isspace():
            continue
        if unicodedata.category(ch) not in _INVISIBLE:
            return True
    return False


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Me", "Zs", "Zl", "Zp"})


def _empty(data: bytes) -> bool:
    """Nothing but a byte-order mark, whitespace and NULs."""
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        if data.startswith(bom):
            data = data[len(bom) :]
            break
    return not data.strip(b" \t\r\n\x00\x0b\x0c")


_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")


def _scrub(page: Page) -> Page:
    """Loaders normalise their text; this last guard removes what PostgreSQL cannot store (NUL, lone surrogates)
    should any slip through, keeping section offsets true."""
    if not _FORBIDDEN.search(page.text):
        return page
    keep = [not _FORBIDDEN.match(ch) for ch in page.text]
    prefix = [0]
    for k in keep:
        prefix.append(prefix[-1] + k)
    text = "".join(ch for ch, k in zip(page.text, keep, strict=True) if k)
    sections = [
        Section(prefix[s.start], prefix[s.end], s.path) for s in page.sections if prefix[s.end] > prefix[s.start]
    ]
    return Page(page.number, text, sections)
