"""Spreadsheet loaders (XLSX/XLSM with openpyxl, CSV/TSV with the standard library) and the row renderer ODS shares.

Every sheet is one page whose section is the sheet name. XLSX cells are the text a person sees in Excel: each value
rendered through its number format (kaynak.loaders.numfmt: "2.50%", "6:15 AM", "$1,234.50", "1,234,567.89"). A
workbook encrypted with Excel's default password (a write-protected one, which Excel opens without asking) is
decrypted (kaynak.loaders.ooxmlcrypt); one with a password the person set is EncryptedFile. Strict OOXML workbooks
(namespaces under ``http://purl.oclc.org/ooxml/``, which openpyxl does not know) are read after their namespaces are
mapped to the transitional ones, within the zip guard's inflation budget; so are part names Excel forgives
(backslashes, a part named in another case than its relationship says, a workbook outside ``xl/``). A row becomes
one line a question can match: with a header row (the first non-empty row, when it is all text), ``Header: value;
Header: value``; without one, ``value | value``. A cell's comment (note) follows the sheet's rows as "[Comment on
B2: text]". Empty rows and cells are skipped; formulas give their cached value (openpyxl ``data_only``), never the
formula. A workbook is read up to ``MAX_CELLS`` non-empty cells and ``MAX_COLUMNS`` columns a row; past that, the
rest of the sheet is left out with a warning naming it, so a sheet of a million rows costs bounded time and memory
(its XML is streamed: the zip guard leaves worksheets to this cap).

CSV/TSV bytes are decoded like text files (UTF-8 with or without BOM, UTF-16, Windows-1254; nothing else); ``.tsv``
is tab-separated, a ``.csv`` delimiter is the one of ``, ; TAB |`` that splits the first lines most consistently. A
field longer than ``MAX_FIELD`` characters is cut, with a warning."""

from __future__ import annotations

import csv
import datetime as _dt
import io
import posixpath
import re
import warnings as warnings_module
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import TextBuilder, collapse_whitespace, json_safe, meaningful_title, stem_title
from .normalize import NotText, decode_text
from .numfmt import format_value, general
from .ooxmlcrypt import decrypt_default
from .xmlsafe import OLE_MAGIC, open_zip, parse_xml
from .zipguard import check_inflated

MAX_CELLS = 1_000_000
MAX_COLUMNS = 1_000
MAX_FIELD = 100_000
MAX_SHEETS = 1_000
MAX_SHEET_ROWS = 1_048_576  # Excel's limit
MAX_EMPTY_ROWS = 2_000_000  # rows looked at in a sheet without finding text, before giving up on it


class SheetText:
    """Renders the rows of one sheet into a page; shares a cell budget with the rest of the workbook."""

    def __init__(self, name: str, budget: list[int], warnings: list[str]) -> None:
        self.name = name
        self.budget = budget
        self.warnings = warnings
        self.builder = TextBuilder()
        self.builder.heading(1, name)
        self.header: list[str] | None = None
        self.rows = 0
        self.full = False
        self.looked = 0

    def add(self, values: Iterable[Any]) -> bool:
        """Add one row; False once the workbook's cell budget is spent (stop reading)."""
        self.looked += 1
        if self.looked > MAX_EMPTY_ROWS and not self.rows:
            return False
        cells: list[str] = []
        for i, value in enumerate(values):
            if i >= MAX_COLUMNS:
                if not self.full:
                    self.warnings.append(f"sheet {self.name!r}: only the first {MAX_COLUMNS} columns were read")
                    self.full = True
                break
            cells.append(cell_text(value))
        while cells and not cells[-1]:
            cells.pop()
        filled = sum(1 for c in cells if c)
        if not filled:
            return True
        if self.budget[0] - filled < 0:
            self.warnings.append(
                f"sheet {self.name!r}: only the first {self.rows} rows were read (limit of {MAX_CELLS:,} cells "
                "a workbook); the rest of the workbook is left out"
            )
            return False
        self.budget[0] -= filled
        self.rows += 1
        if self.header is None and self.rows == 1 and not any(_NUMBER_RE.match(c) for c in cells if c):
            self.header = cells
            self.builder.block(" | ".join(c for c in cells if c), sep="\n\n")
            return True
        if self.header is not None:
            parts = []
            for i, c in enumerate(cells):
                if not c:
                    continue
                label = self.header[i] if i < len(self.header) and self.header[i] else None
                parts.append(f"{label}: {c}" if label else c)
            line = "; ".join(parts)
        else:
            line = " | ".join(c for c in cells if c)
        self.builder.block(line, sep="\n")
        return True

    def note(self, text: str) -> None:
        """A line that is not a row (a cell comment), after the rows."""
        if text.strip():
            self.rows += 1
            self.builder.block(text, sep="\n")

    def page(self, number: int) -> Page | None:
        if not self.rows:
            return None
        text, sections = self.builder.finish()
        return Page(number=number, text=text, sections=sections)


_PLAIN = re.compile(r"[A-Za-z0-9.,:;%$()+/#=&'-]+(?: [A-Za-z0-9.,:;%$()+/#=&'-]+)*")
_NUMBER_RE = re.compile(r"^[-+]?[\d.,]+%?$")


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return general(value)
    if isinstance(value, _dt.datetime):
        return value.date().isoformat() if value.time() == _dt.time() else value.isoformat(sep=" ")
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    text = str(value)
    if len(text) < 64 and _PLAIN.fullmatch(text):  # a number as shown, a plain word: nothing to normalise
        return text
    if len(text) > MAX_FIELD:
        text = text[:MAX_FIELD] + "…"
    return collapse_whitespace(text)


def pages_of(sheets: list[SheetText]) -> list[Page]:
    pages: list[Page] = []
    for sheet in sheets:
        page = sheet.page(len(pages) + 1)
        if page is not None:
            pages.append(page)
    return pages


# ---------------------------------------------------------------------------------------------- XLSX
_SHEET_MEMBER_RE = re.compile(r"^xl/worksheets/[^/]+\.xml$")


def load_xlsx(path: Path, data: bytes) -> LoadedDocument:
    kind = "XLSX"
    default_password = False
    if data.startswith(OLE_MAGIC):  # encrypted; Excel's own default password opens a write-protected workbook
        plain = decrypt_default(data)
        if plain is not None:
            data, default_password = plain, True
    sheets_in_zip = _worksheet_parts(data)
    zf = open_zip(path, data, kind, skip=sheets_in_zip)  # worksheets are streamed under MAX_CELLS instead
    renames = _renames(zf)
    workbook = _workbook_part(zf, renames)
    if workbook is None:
        raise CorruptFile(path, "zip archive is not an Excel workbook (no xl/workbook.xml)")
    parse_xml(path, zf, workbook, kind)  # refuses a DTD / entities before openpyxl reads it
    for name in ("xl/sharedStrings.xml", "xl/styles.xml", "docProps/core.xml"):
        if name in zf.namelist():
            parse_xml(path, zf, name, kind)
    for name in zf.namelist():  # worksheets are streamed by openpyxl: their prologs (and any other part's) here
        if name.endswith((".xml", ".rels")):
            _check_sheet_prolog(path, zf, name)
    import openpyxl

    _no_dimension_scan()
    source = _rewritten(path, data, renames) if renames or _is_strict(zf) else data
    try:
        with warnings_module.catch_warnings():  # openpyxl's notes on styles and extensions are not the user's
            warnings_module.simplefilter("ignore")
            wb = openpyxl.load_workbook(io.BytesIO(source), read_only=True, data_only=True, keep_links=False)
    except Exception as err:
        raise CorruptFile(path, f"not a readable Excel workbook ({type(err).__name__}: {err})") from None
    warnings: list[str] = []
    try:
        with warnings_module.catch_warnings():
            warnings_module.simplefilter("ignore")
            sheets = _read_sheets(wb, warnings, _Comments(path, source))
        metadata, raw_title = _xlsx_metadata(wb, sheets)
    except CorruptFile:
        raise
    except Exception as err:
        raise CorruptFile(path, f"not a readable Excel workbook ({type(err).__name__}: {err})") from None
    finally:
        wb.close()
    pages = pages_of(sheets)
    metadata["page_count"] = len(pages)
    if default_password:
        metadata["encryption"] = "Excel's default password (opened without asking, as Excel does)"
    title = meaningful_title(raw_title) or stem_title(path)
    return LoadedDocument(title=title, pages=pages, metadata=metadata, warnings=warnings)


def _no_dimension_scan() -> None:
    """openpyxl (read-only) looks for a sheet's ``<dimension>`` when it opens the workbook; a sheet without one
    (Excel always writes it, a hostile file need not) is then parsed whole before the first row is read: minutes
    for a million rows. Here such a sheet opens without a size and is streamed up to MAX_CELLS like any other."""
    from openpyxl.worksheet import _read_only

    cls: Any = _read_only.ReadOnlyWorksheet
    if getattr(cls, "_kaynak_no_scan", False):
        return
    original = cls._get_size

    def _get_size(self: Any) -> None:
        src = self._get_source()
        try:
            head = src.read(65536)
        finally:
            src.close()
        if b"<dimension" in head.split(b"<sheetData", 1)[0]:
            original(self)

    cls._get_size = _get_size
    cls._kaynak_no_scan = True


def _read_sheets(wb: Any, warnings: list[str], comments: _Comments | None = None) -> list[SheetText]:
    budget = [MAX_CELLS]
    sheets: list[SheetText] = []
    for ws in wb.worksheets[:MAX_SHEETS]:
        sheet = SheetText(str(ws.title), budget, warnings)
        sheets.append(sheet)
        if getattr(ws, "sheet_state", "visible") != "visible":
            warnings.append(f"sheet {ws.title!r} is hidden; read anyway")
        # <dimension> is a hint some writers get wrong (POI writes A1 for a sheet of many rows): every row is read,
        # each as wide as its last cell; SheetText keeps the first MAX_COLUMNS
        ws.reset_dimensions()
        formats: dict[int, str | None] = {}
        for row in ws.iter_rows(max_row=MAX_SHEET_ROWS):
            if not sheet.add([_shown(cell, formats) for cell in row]):
                break
        if comments is not None:
            for line in comments.of(str(getattr(ws, "_worksheet_path", ""))):
                sheet.note(line)
        if budget[0] <= 0:
            break
    return sheets


class _Comments:
    """Cell comments ("notes"), from each worksheet's comments part: "[Comment on B2: text]" after its rows."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self.data = data

    def of(self, sheet_part: str) -> list[str]:
        import zipfile

        if not sheet_part:
            return []
        folder, name = posixpath.split(sheet_part)
        rels_name = posixpath.join(folder, "_rels", name + ".rels")
        out: list[str] = []
        try:
            with zipfile.ZipFile(io.BytesIO(self.data)) as zf:
                if rels_name not in zf.namelist():
                    return []
                rels = parse_xml(self.path, zf, rels_name, "XLSX")
                for rel in rels:
                    if not str(rel.get("Type", "")).endswith("/comments"):
                        continue
                    target = posixpath.normpath(posixpath.join(folder, str(rel.get("Target", ""))))
                    if target not in zf.namelist():
                        continue
                    for node in parse_xml(self.path, zf, target, "XLSX").iter(_MAIN + "comment"):
                        text = collapse_whitespace("".join(t.text or "" for t in node.iter(_MAIN + "t")))
                        if text and len(out) < 10_000:
                            out.append(f"[Comment on {node.get('ref', '?')}: {text[:MAX_FIELD]}]")
        except CorruptFile:
            raise
        except Exception:  # a broken comments part costs the comments, not the workbook
            return out
        return out


_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


# Built-in formats 14 and 22 are "the system's short date": Excel and LibreOffice in en-US show 10/3/2009.
_SYSTEM_DATES = {14: "m/d/yyyy", 22: "m/d/yyyy h:mm"}


def _shown(cell: Any, formats: dict[int, str | None]) -> str | None:
    """The text Excel shows for a read-only cell: its value through its number format."""
    value = cell.value
    if value is None:
        return None
    if isinstance(value, str) and not value.startswith("="):
        return value
    style = getattr(cell, "_style_id", 0)
    if style not in formats:
        try:
            formats[style] = _SYSTEM_DATES.get(cell.style_array.numFmtId) or cell.number_format
        except Exception:  # a style index past the workbook's style table
            formats[style] = None
    return format_value(value, formats[style])


_STRICT = b"http://purl.oclc.org/ooxml/"
_STRICT_TO_TRANSITIONAL = (
    (b"http://purl.oclc.org/ooxml/spreadsheetml/main", b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"),
    (b"http://purl.oclc.org/ooxml/officeDocument/relationships/extendedProperties",
     b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties"),
    (b"http://purl.oclc.org/ooxml/officeDocument/relationships",
     b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"),
    (b"http://purl.oclc.org/ooxml/officeDocument/extendedProperties",
     b"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"),
    (b"http://purl.oclc.org/ooxml/officeDocument/customProperties",
     b"http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"),
    (b"http://purl.oclc.org/ooxml/officeDocument/docPropsVTypes",
     b"http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"),
    (b"http://purl.oclc.org/ooxml/drawingml/", b"http://schemas.openxmlformats.org/drawingml/2006/"),
)  # fmt: skip


def _is_strict(zf: Any) -> bool:
    """A Strict OOXML workbook: its workbook relationships use the ``purl.oclc.org/ooxml`` namespaces."""
    for name in ("xl/_rels/workbook.xml.rels", "_rels/.rels"):
        if name in zf.namelist():
            with zf.open(name) as fh:
                if _STRICT in fh.read(1 << 20):
                    return True
    return False


def _renames(zf: Any) -> dict[str, str]:
    """Part names to correct before openpyxl reads the package, as Excel and LibreOffice read it anyway: Windows
    backslashes (``xl\\workbook.xml``), and a part whose name differs only in case from the name that the
    workbook's relationships give it (``xl/SharedStrings.xml`` for ``sharedStrings.xml``)."""
    names = zf.namelist()
    renames = {n: n.replace("\\", "/") for n in names if "\\" in n}
    fixed = {renames.get(n, n) for n in names}
    by_lower = {renames.get(n, n).lower(): n for n in names}
    rels = next((n for n in names if renames.get(n, n) == "xl/_rels/workbook.xml.rels"), None)
    if rels is not None:
        with zf.open(rels) as fh:
            for target in re.findall(rb'Target="([^"]+)"', fh.read(1 << 20)):
                want = target.decode("utf-8", "replace").replace("\\", "/")
                want = want.lstrip("/") if want.startswith("/") else posixpath.normpath("xl/" + want)
                if want not in fixed and want.lower() in by_lower:
                    renames[by_lower[want.lower()]] = want
    return renames


def _workbook_part(zf: Any, renames: dict[str, str]) -> str | None:
    """The member holding the workbook: ``xl/workbook.xml``, or where the package's relationships put it."""
    names = zf.namelist()
    for name in names:
        if renames.get(name, name) == "xl/workbook.xml":
            return str(name)
    root_rels = next((n for n in names if renames.get(n, n) == "_rels/.rels"), None)
    if root_rels is None:
        return None
    with zf.open(root_rels) as fh:
        rels = fh.read(1 << 20)
    m = re.search(rb'Type="[^"]*/officeDocument"[^>]*Target="([^"]+)"|Target="([^"]+)"[^>]*Type="[^"]*/officeDocument"',
                  rels)  # fmt: skip
    if m is None:
        return None
    target = (m.group(1) or m.group(2)).decode("utf-8", "replace").replace("\\", "/").lstrip("/")
    return next((str(n) for n in names if renames.get(n, n) == target), None)


def _rewritten(path: Path, data: bytes, renames: dict[str, str]) -> bytes:
    """The workbook in ``data`` with its parts renamed (``_renames``) and Strict namespaces mapped to the
    transitional ones, so that openpyxl reads it. Every part is inflated here, so the whole archive (worksheets
    too) is first held to the zip guard's budget."""
    import zipfile

    check_inflated(path, data, kind="XLSX")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.is_dir():
                continue
            part = src.read(info)
            if info.filename.endswith((".xml", ".rels")) and _STRICT in part:
                for strict, transitional in _STRICT_TO_TRANSITIONAL:
                    part = part.replace(strict, transitional)
            dst.writestr(renames.get(info.filename, info.filename), part)
    return out.getvalue()


def _xlsx_metadata(wb: Any, sheets: list[SheetText]) -> tuple[dict[str, Any], str | None]:
    props = wb.properties
    metadata: dict[str, Any] = {"format": "xlsx", "sheets": [s.name for s in sheets]}
    if props is None:
        return metadata, None
    for key in ("creator", "subject", "keywords", "created", "modified"):
        value = getattr(props, key, None)
        if value not in (None, ""):
            metadata[key] = json_safe(value)
    return metadata, props.title


def _worksheet_parts(data: bytes) -> frozenset[str]:
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return frozenset(n for n in zf.namelist() if _SHEET_MEMBER_RE.match(n))
    except Exception:  # open_zip names what is wrong with the archive
        return frozenset()


def _check_sheet_prolog(path: Path, zf: Any, name: str) -> None:
    """A worksheet is streamed by openpyxl, so its prolog is checked here: no DTD, no entity declarations."""
    with zf.open(name) as fh:
        head = fh.read(4096)
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise CorruptFile(path, f"XLSX part {name} declares a DTD or entities; refused as unsafe XML")


# ---------------------------------------------------------------------------------------------- CSV / TSV
_DELIMITERS = (",", ";", "\t", "|")


def sniff_delimiter(sample: str) -> str:
    """The delimiter that splits the sample's lines into the same number (> 1) of fields most often."""
    lines = [line for line in sample.splitlines()[:50] if line.strip()]
    if len(lines) > 1:
        lines = lines[:-1]  # the last line of a sample may be cut
    best, best_score = ",", -1.0
    for d in _DELIMITERS:
        try:
            counts = [len(r) for r in csv.reader(lines, delimiter=d)]
        except csv.Error:
            continue
        if not counts:
            continue
        common = max(set(counts), key=counts.count)
        if common < 2:
            continue
        score = counts.count(common) / len(counts) + min(common, 50) / 1000
        if score > best_score:
            best, best_score = d, score
    return best


def load_csv(path: Path, data: bytes) -> LoadedDocument:
    try:
        decoded = decode_text(data)
    except NotText as err:
        raise CorruptFile(path, str(err)) from None
    text = decoded.text
    warnings = list(decoded.warnings)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else sniff_delimiter(text[:65536])
    csv.field_size_limit(max(MAX_FIELD * 4, 1 << 20))
    sheet = SheetText(stem_title(path), [MAX_CELLS], warnings)
    long_fields = 0
    reader = csv.reader(_cut_long_lines(text, warnings), delimiter=delimiter)
    try:
        for row in reader:
            if any(len(f) > MAX_FIELD for f in row):
                long_fields += 1
            if not sheet.add(row):
                break
    except csv.Error as err:
        warnings.append(f"CSV reading stopped at line {reader.line_num}: {err}")
    if long_fields:
        warnings.append(f"{long_fields} rows had fields over {MAX_FIELD:,} characters; they were cut")
    page = sheet.page(1)
    names = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
    metadata = {"format": path.suffix.lower().lstrip(".") or "csv", "encoding": decoded.encoding}
    metadata["delimiter"] = names.get(delimiter, delimiter)
    return LoadedDocument(
        title=stem_title(path), pages=[page] if page else [Page(1, "")], metadata=metadata, warnings=warnings
    )


def _cut_long_lines(text: str, warnings: list[str]) -> Iterable[str]:
    """The lines of ``text`` (slices, no copy of the whole), each at most 4 × MAX_FIELD characters: a 200 MB line
    is cut, not held in a field."""
    cut = 0
    limit = 4 * MAX_FIELD
    pos, n = 0, len(text)
    while pos < n:
        end = text.find("\n", pos)
        end = n if end < 0 else end + 1
        if end - pos > limit:
            cut += 1
            yield text[pos : pos + limit] + "\n"
        else:
            yield text[pos:end]
        pos = end
    if cut:
        warnings.append(f"{cut} line{'s' if cut > 1 else ''} longer than {limit:,} characters cut")
