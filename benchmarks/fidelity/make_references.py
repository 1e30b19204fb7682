"""Write the independent references beside the corpus: ``reference/<source>/<file>.txt`` (the text another program
reads, pages separated by form feeds) and ``reference/INDEX.json`` (per file: how the reference was made, its page
count and headings where known).

Which program reads what (none of them is kaynak or a library kaynak's loader uses for that format):

* DOCX, ODT, RTF, DOC, HTML: LibreOffice headless ``--convert-to txt:Text`` (text), ``pdf`` (rendered page count:
  kaynak counts explicit page breaks, so this is reported apart), ``html`` (headings: ``<h1>``..``<h6>``, which
  LibreOffice writes for the heading styles and outline levels);
* PPTX, ODP, PPT: LibreOffice ``--convert-to pdf``, read by pdfium (text, one page per slide); headings = the
  title placeholders of LibreOffice's own ODP export;
* XLSX, XLS, ODS, CSV: LibreOffice ``--convert-to csv`` of every sheet, cells as shown (text; sheet count and names);
* PDF: pdfium's text layer (pypdfium2) and page count; headings from the outline (bookmarks) where there is one;
* EPUB: the spine's XHTML read with Python's zipfile and html.parser; chapters = spine items; headings = ``<h1-6>``;
* EML, MBOX: Python's email package (subject and text parts; HTML parts without tags when there is no plain part);
  messages = ``pages``;
* UDF: its own ``content.xml`` text pool; page count = page breaks + 1;
* text, Markdown: the file decoded with its known encoding (from the file name or the manifest: hand-checked);
* scans: the ground truth that ships with the image (Tesseract's ``testing/*.txt``), or a hand transcription.

    pip install pypdfium2   # or: pip install -e '.[bench]'
    python benchmarks/fidelity/make_references.py [--only docx,pdf] [--keep /tmp/fid-lo]

LibreOffice runs with a private profile (``-env:UserInstallation``) in batches of one format.
"""

from __future__ import annotations

import argparse
import base64
import csv
import email
import email.policy
import html.parser
import json
import mailbox
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from xml.etree import ElementTree

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
REFERENCE = HERE / "reference"

WRITER = {".docx", ".odt", ".rtf", ".doc", ".html", ".htm"}
SLIDES = {".pptx", ".odp", ".ppt"}
SHEETS = {".xlsx", ".xls", ".ods", ".csv"}
#: LibreOffice's CSV filter: comma, double quote, UTF-8, first line 1, default cell formats, language, quote text
#: cells, -, cells as shown, no formulas, keep spaces, every sheet (-1: one file per sheet, ``name-Sheet.csv``)
CSV_FILTER = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1"

#: hand transcriptions of scans that ship without ground truth (checked by looking at the image)
HAND: dict[str, str] = {
    "tika/testOCR.png": "This file contains some words.",
    "tika/testOCR_spacing.png": "The quick brown fox",
    "tika/testOCR.pdf": "Happy New Year 2003!",  # an image-only page
    # pdfium (and poppler) split these words at every kerned glyph ("H e re i s so me"); the page shows:
    "tika/testExtraSpaces.pdf": "Here is some formatted text",
}
#: HTML files whose declared charset is wrong (what they test): LibreOffice shows "???"; read with the real one
HTML_ENCODING = {
    "tika/testArabicMisleadingCharset.html": "cp1256",
    "tika/testHTMLNoisyMetaEncoding_3.html": "iso-8859-6",
}
#: page counts checked by hand where the other program is wrong: CPython's mailbox_01.mbox tests an unquoted
#: "From " line in a body (one message; Python's mailbox module splits it in two)
HAND_PAGES = {"cpython/mailbox_01.mbox": 1}
#: headings and explicit page breaks checked by hand where LibreOffice's own export does not show them: the issue's
#: LibreOffice-written files (headings as paragraphs whose automatic style derives from Heading 1; slide titles in
#: plain text boxes, not title placeholders)
HAND_HEADINGS = {
    "libreoffice/writer-html-headings-pagebreaks.odt": [
        "Birinci Bölüm Taraflar",
        "İkinci Bölüm Depozito",
        "Üçüncü Bölüm Fesih",
    ],
    "libreoffice/impress-textbox-titles-notes.odp": ["Toplantı Gündemi", "Mali Durum Özeti"],
    "libreoffice/impress-textbox-titles-notes.pptx": ["Toplantı Gündemi", "Mali Durum Özeti"],
}
HAND_PAGE_BREAKS = {"libreoffice/writer-html-headings-pagebreaks.odt": 3}
#: ground truth shipped beside a scan in its repository (Tesseract's test data)
GROUND_TRUTH = {
    "tesseract/phototest.tif": "testing/phototest.txt",
    "tesseract/phototest-rotated-R.png": "testing/phototest.txt",
    "tesseract/phototestrot.tif": "testing/phototest.txt",
    "tesseract/eurotext.tif": "testing/eurotext.txt",
    "tesseract/8071_093.3B.tif": "testing/8071_093.3B.txt",
    "tesseract/8087_054.3B.tif": "testing/8087_054.3B.txt",
}
ENCODING_IN_NAME = {"cp500": "cp500", "cp866": "cp866", "win-1252": "cp1252", "cp1254": "cp1254"}


def manifest() -> list[dict[str, str]]:
    with open(CORPUS / "MANIFEST.tsv", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


REUSE = False  # --reuse: take LibreOffice's outputs already in --keep


def soffice(files: list[Path], target: str, outdir: Path, timeout: float) -> None:
    """Convert ``files`` with LibreOffice headless into ``outdir`` (one batch; a private profile)."""
    if not files or (REUSE and outdir.is_dir()):
        return
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fid-lo-profile-") as profile:
        cmd = ["soffice", "--headless", "--norestore", f"-env:UserInstallation=file://{profile}",
               "--convert-to", target, "--outdir", str(outdir), *map(str, files)]  # fmt: skip
        try:
            subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"soffice {target}: timed out after {timeout:g} s", file=sys.stderr)


def pdfium_pages(data: bytes | Path) -> tuple[list[str], list[str]]:
    """(page texts, outline titles) by pdfium; ValueError when pdfium cannot open it."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data if isinstance(data, bytes) else str(data))
    except pdfium.PdfiumError as err:
        raise ValueError(str(err)) from err
    texts = []
    for i in range(len(pdf)):
        page = pdf[i]
        tp = page.get_textpage()
        texts.append(tp.get_text_range())
        tp.close()
        page.close()
    toc = []
    try:
        for item in pdf.get_toc():
            if item.title:
                toc.append(item.title)
    except Exception:
        pass
    pdf.close()
    return texts, toc


class _Strip(html.parser.HTMLParser):
    """Text of an HTML page (no script/style), and its headings."""

    BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "title", "dt", "dd"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.headings: list[str] = []
        self._skip = 0
        self._h: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        if tag in self.BLOCK:
            self.out.append("\n")
        if re.fullmatch(r"h[1-6]", tag):
            self._h = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if re.fullmatch(r"h[1-6]", tag) and self._h is not None:
            text = " ".join("".join(self._h).split())
            if text:
                self.headings.append(text)
            self._h = None
        if tag in self.BLOCK:
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.out.append(data)
        if self._h is not None:
            self._h.append(data)


def strip_html(text: str) -> tuple[str, list[str]]:
    p = _Strip()
    p.feed(text)
    p.close()
    return "".join(p.out), p.headings


def mail_text(msg: email.message.Message) -> str:
    """Subject, sender, recipients, date and the text a reader sees: text/plain parts, and an HTML part without
    its tags where its multipart/alternative has no plain part; an attached message (``message/rfc822``, also
    when base64-encoded) the same way; other attachments with a file name are left out."""
    out = [str(msg.get(h)) for h in ("Subject", "From", "To", "Cc", "Date") if msg.get(h)]  # values, not names
    _mail_body(msg, out)
    return "\n".join(out)


def _mail_body(part: email.message.Message, out: list[str]) -> None:
    ctype = part.get_content_type()
    if ctype == "message/rfc822":
        if (part.get("Content-Transfer-Encoding") or "").strip().lower() == "base64":
            raw = part.get_payload()  # the parser took the base64 text for a message without headers
            if isinstance(raw, list):
                raw = raw[0].get_payload() if raw else ""
            inner = email.message_from_bytes(base64.b64decode(str(raw)), policy=email.policy.compat32)
            out.append(mail_text(inner))
        else:
            for sub in part.get_payload() if isinstance(part.get_payload(), list) else []:
                out.append(mail_text(sub))
        return
    if part.is_multipart():
        subs = part.get_payload()
        plain = ctype == "multipart/alternative" and any(p.get_content_type() == "text/plain" for p in subs)
        for sub in subs:
            if plain and sub.get_content_type() == "text/html":
                continue
            _mail_body(sub, out)
        return
    if ctype not in ("text/plain", "text/html") or part.get_filename():
        return
    payload = part.get_payload(decode=True) or b""
    try:
        text = payload.decode(part.get_content_charset() or "utf-8", errors="replace")
    except LookupError:
        text = payload.decode("latin-1")
    out.append(strip_html(text)[0] if ctype == "text/html" else text)


def slide_titles(odp: Path) -> list[str]:
    """The title placeholders' text of each slide, as LibreOffice Impress writes them after reading the deck."""
    with zipfile.ZipFile(odp) as zf:
        root = ElementTree.fromstring(zf.read("content.xml"))
    ns_p = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}class"
    titles = []
    for page in root.iter("{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}page"):
        for frame in page.iter("{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}frame"):
            if frame.get(ns_p) == "title":
                text = " ".join("".join(frame.itertext()).split())
                if text:
                    titles.append(text)
                break
    return titles


def epub_reference(path: Path) -> tuple[list[str], list[str]]:
    """(chapter texts in spine order, headings)."""
    with zipfile.ZipFile(path) as zf:
        container = ElementTree.fromstring(zf.read("META-INF/container.xml"))
        rootfile = next(el.get("full-path") for el in container.iter() if el.tag.endswith("rootfile"))
        assert rootfile
        opf = ElementTree.fromstring(zf.read(rootfile))
        base = PurePosixPath(rootfile).parent
        items = {el.get("id"): el.get("href") for el in opf.iter() if el.tag.endswith("item")}
        chapters, headings = [], []
        for ref in opf.iter():
            if ref.tag.endswith("itemref"):
                href = items.get(ref.get("idref"))
                if not href:
                    continue
                name = str(base / href) if str(base) != "." else href
                try:
                    raw = zf.read(name).decode("utf-8", errors="replace")
                except KeyError:
                    continue
                text, heads = strip_html(raw)
                if re.search(r"\w", text):  # a cover image alone is no chapter to find
                    chapters.append(text)
                headings += heads
    return chapters, headings


def udf_reference(path: Path) -> tuple[str, int]:
    with zipfile.ZipFile(path) as zf:
        root = ElementTree.fromstring(zf.read("content.xml"))
    pool = root.findtext("content") or ""
    breaks = sum(1 for el in root.iter() if el.tag == "page-break")
    return pool, breaks + 1


def decode_known(path: Path, raw: bytes) -> str:
    for key, enc in ENCODING_IN_NAME.items():
        if key in path.name:
            return raw.decode(enc)
    for enc in ("utf-8-sig", "utf-16"):
        try:
            return raw.decode(enc)
        except UnicodeDecodeError:
            continue
    return raw.decode("cp1252", errors="replace")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated extensions (docx,pdf) to redo")
    ap.add_argument("--keep", type=Path, default=None, help="keep LibreOffice's outputs in this folder")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--reuse", action="store_true", help="use the LibreOffice outputs already in --keep")
    args = ap.parse_args()
    global REUSE
    REUSE = args.reuse
    only = {"." + e.strip(".").lower() for e in args.only.split(",") if e.strip()}
    rows = manifest()
    index_path = REFERENCE / "INDEX.json"
    index: dict[str, dict] = json.loads(index_path.read_text()) if index_path.exists() else {}
    work = args.keep or Path(tempfile.mkdtemp(prefix="fid-lo-"))
    todo = [r for r in rows if not only or Path(r["file"]).suffix.lower() in only]
    by_ext: dict[str, list[Path]] = {}
    for r in todo:
        by_ext.setdefault(Path(r["file"]).suffix.lower(), []).append(CORPUS / r["file"])
    # LibreOffice batches (one per format and target); outputs are named by the file's stem, so each source
    # folder gets its own output folder
    for ext, files in sorted(by_ext.items()):
        groups: dict[str, list[Path]] = {}
        for f in files:
            groups.setdefault(f.parent.name, []).append(f)
        for src, group in groups.items():
            out = work / src / ext.strip(".")
            if ext in WRITER:
                soffice(group, "txt:Text (encoded):UTF8", out / "txt", args.timeout)
                soffice(group, "pdf", out / "pdf", args.timeout)
                soffice(
                    group,
                    "html:XHTML Writer File:UTF8" if ext not in (".html", ".htm") else "html",
                    out / "html",
                    args.timeout,
                )
            elif ext in SLIDES:
                soffice(group, "pdf", out / "pdf", args.timeout)
                soffice(group, "odp", out / "odp", args.timeout)
            elif ext in SHEETS:
                soffice(group, CSV_FILTER, out / "csv", args.timeout)
            print(f"LibreOffice: {src} {ext} ({len(group)} files) done", file=sys.stderr)
    for r in todo:
        rel = r["file"]
        path = CORPUS / rel
        out = work / path.parent.name / path.suffix.lower().strip(".")
        index[rel] = reference_for(rel, path, out)
    REFERENCE.mkdir(exist_ok=True)
    private = sorted(r["file"] for r in rows if r["committable"] != "yes")  # not committed, nor their references
    (REFERENCE / ".gitignore").write_text("".join(f"/{f}.txt\n" for f in private), encoding="utf-8")
    index_path.write_text(
        json.dumps(dict(sorted(index.items())), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(todo)} references; {sum(1 for r in todo if index[r['file']]['has_text'])} with text")


def reference_for(rel: str, path: Path, out: Path) -> dict:  # noqa: C901  (one flat dispatch over the formats)
    """Write ``reference/<rel>.txt`` from what LibreOffice left in ``out`` or another reader; the INDEX entry."""
    ext = path.suffix.lower()
    entry: dict = {"method": None, "pages": None, "pages_kind": None, "headings": None}
    text: str | None = None
    try:
        if ext in WRITER:
            t = out / "txt" / (path.stem + ".txt")
            if rel in HTML_ENCODING:
                text = strip_html(path.read_bytes().decode(HTML_ENCODING[rel]))[0]
                entry["method"] = f"html.parser on the file decoded as {HTML_ENCODING[rel]} (its real charset)"
            elif t.exists():
                text = t.read_text(encoding="utf-8", errors="replace")
                entry["method"] = "LibreOffice txt export"
            p = out / "pdf" / (path.stem + ".pdf")
            if p.exists():
                entry["pages"] = len(pdfium_pages(p)[0])
                entry["pages_kind"] = "rendered"
            h = out / "html" / (path.stem + ".html")
            if h.exists():
                entry["headings"] = strip_html(h.read_text(encoding="utf-8", errors="replace"))[1]
        elif ext in SLIDES:
            p = out / "pdf" / (path.stem + ".pdf")
            if p.exists():
                pages, _ = pdfium_pages(p)
                text = "\f".join(pages)
                entry.update(method="LibreOffice pdf export read by pdfium", pages=len(pages), pages_kind="slides")
            o = out / "odp" / (path.stem + ".odp")
            if o.exists():
                entry["headings"] = slide_titles(o) or None
        elif ext in SHEETS:
            found = sorted((out / "csv").glob(glob_escape(path.stem) + "*.csv"))
            found = [f for f in found if f.stem == path.stem or f.stem.startswith(path.stem + "-")]
            if found:
                parts, names = [], []
                for f in found:
                    sheet = f.read_text(encoding="utf-8", errors="replace")
                    if not re.search(r"\w", sheet):  # an empty sheet (or a chart sheet): no page to find
                        continue
                    parts.append(sheet)
                    names.append(f.stem[len(path.stem) + 1 :] if f.stem != path.stem else path.stem)
                text = "\f".join(parts)
                entry.update(method="LibreOffice csv export (every sheet, as shown)", pages=len(parts),
                             pages_kind="sheets", headings=names if ext != ".csv" else None)  # fmt: skip
        elif ext == ".pdf":
            pages, toc = pdfium_pages(path)
            text = "\f".join(pages)
            if rel in HAND:
                text = HAND[rel]
            entry.update(
                method="pdfium text layer" if rel not in HAND else "hand transcription (a scan)",
                pages=len(pages),
                pages_kind="pdf",
                headings=toc or None,
            )
        elif ext == ".epub":
            chapters, heads = epub_reference(path)
            text = "\f".join(chapters)
            entry.update(method="EPUB spine XHTML via html.parser", pages=len(chapters), pages_kind="chapters",
                         headings=heads or None)  # fmt: skip
        elif ext == ".eml":
            msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.compat32)
            text = mail_text(msg)
            entry.update(method="Python email package", pages=None)
        elif ext in (".mbox", ".mbx"):
            box = mailbox.mbox(str(path), create=False)
            msgs = [mail_text(m) for m in box]
            box.close()
            text = "\f".join(msgs)
            entry.update(method="Python mailbox/email packages", pages=HAND_PAGES.get(rel, len(msgs)),
                         pages_kind="messages")  # fmt: skip
        elif ext == ".udf":
            text, pages = udf_reference(path)
            entry.update(method="the file's content.xml text pool", pages=pages, pages_kind="page breaks")
        elif ext in (".txt", ".md"):
            text = decode_known(path, path.read_bytes())
            entry["method"] = "the file decoded with its known encoding"
            if ext == ".md":  # what a reader of the rendered page sees: no link targets, tags, emphasis marks
                text = re.sub(r"\]\([^)]*\)", "]", text)
                text = re.sub(r"<[^>\n]+>", " ", text)
                entry["headings"] = [
                    m.group(1).strip() for m in re.finditer(r"(?m)^#{1,6}\s+(.+?)\s*#*$", text)
                ] or None
        elif ext in (".png", ".jpg", ".jpeg", ".tif", ".tiff"):
            if rel in GROUND_TRUTH:
                root = Path("/work/.mirror/tesseract-ocr+test/repo")
                text = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{GROUND_TRUTH[rel]}"],
                                      capture_output=True, check=True).stdout.decode("utf-8")  # fmt: skip
                entry["method"] = f"ground truth shipped with the image ({GROUND_TRUTH[rel]})"
            elif rel in HAND:
                text = HAND[rel]
                entry["method"] = "hand transcription"
    except Exception as err:  # a reference the other program cannot make: recorded, the file is still run
        entry["error"] = f"{type(err).__name__}: {err}"
    if rel in HAND_HEADINGS:
        entry["headings"] = HAND_HEADINGS[rel]
    if rel in HAND_PAGE_BREAKS:
        entry.update(pages=HAND_PAGE_BREAKS[rel], pages_kind="explicit page breaks (hand-checked)")
    if text is not None:
        target = REFERENCE / (rel + ".txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        entry["words"] = len(re.findall(r"\w+", text))
    entry["has_text"] = bool(text and re.search(r"\w", text))
    return entry


def glob_escape(s: str) -> str:
    import glob

    return glob.escape(s)


if __name__ == "__main__":
    os.environ.setdefault("SAL_USE_VCLPLUGIN", "svp")
    main()
