"""HTML loader: the visible text of a page, with h1–h6 as heading-path sections and ``<title>`` as title.

Parsed with selectolax (lexbor). Not text: ``<head>``, scripts, styles, templates, SVG, forms' controls,
navigation (``<nav>``, ARIA landmarks), page-level ``<header>``/``<footer>``/``<aside>`` outside ``<main>`` and
``<article>``, and anything hidden (``hidden``, ``aria-hidden``, ``display:none``). Block elements become
paragraphs, ``<br>`` a line break, table rows ``cell | cell`` lines, ``<pre>`` keeps its layout.

The declared charset (BOM, ``<meta charset>``, ``http-equiv``, XML declaration) is honoured; without one the
text fallback chain applies. The tree is walked without recursion, and markup nested deeper than
``MAX_DEPTH`` levels is flattened before parsing, because the HTML tree builder needs time quadratic in depth.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import TextBuilder, collapse_whitespace, meaningful_title, stem_title
from .normalize import NotText, clean_decoded, decode_text

MAX_DEPTH = 512

_SKIP_TAGS = frozenset(
    {
        "head", "script", "style", "noscript", "template", "svg", "math", "canvas", "iframe", "object", "embed",
        "nav", "button", "select", "option", "optgroup", "textarea", "input", "datalist", "dialog", "map",
        "audio", "video", "picture", "source", "track", "meta", "link", "title", "base",
    }
)  # fmt: skip
_PAGE_CHROME = frozenset({"header", "footer", "aside"})
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar"})
_CONTENT_ROOTS = frozenset({"main", "article"})
_BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote", "figure",
        "figcaption", "address", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot",
        "caption", "form", "fieldset", "legend", "details", "summary", "hr", "center", "body", "html",
    }
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
# Elements whose end tag may be omitted: they do not deepen the tree the way an unclosed <div> does.
_OPTIONAL_END = frozenset(
    {"p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot", "option", "optgroup", "colgroup",
     "caption", "rb", "rt", "rp", "rtc", "html", "head", "body"}
)  # fmt: skip
_HIDDEN_STYLE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_TAG_TOKEN_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>|<!--.*?-->", re.S)
_RAW_TEXT_RE = re.compile(r"<(script|style|textarea|title|xmp)\b.*?</\1\s*>", re.S | re.I)
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_BODY_START_RE = re.compile(rb"<body[\s>]", re.I)
_XML_DECL_RE = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")
_SPACES_RE = re.compile(r"[ \t\r\n\f\u00a0]+")

# WHATWG Encoding Standard: these labels mean the Windows superset, not the ISO charset.
_ENCODING_ALIASES = {
    "iso-8859-9": "cp1254", "iso8859-9": "cp1254", "latin5": "cp1254", "l5": "cp1254", "iso-ir-148": "cp1254",
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "latin1": "cp1252", "l1": "cp1252", "us-ascii": "cp1252",
    "ascii": "cp1252", "x-user-defined": "cp1252", "utf8": "utf-8", "unicode": "utf-16",
}  # fmt: skip


def declared_charset(data: bytes) -> str | None:
    """The charset the document declares before its body (within its first 64 KB: a long script may come first),
    as a Python codec name, if Python knows it."""
    head = data[:65536]
    body = _BODY_START_RE.search(head)
    if body:
        head = head[: body.start()]
    m = _XML_DECL_RE.search(head) or _META_CHARSET_RE.search(head)
    if not m:
        return None
    label = m.group(1).decode("ascii", errors="ignore").strip().lower()
    label = _ENCODING_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def decode_html(data: bytes) -> tuple[str, str, list[str]]:
    """``(text, encoding used, warnings)``: BOM first, then the declared charset, then ``decode_text``.

    Raises NotText for bytes that are text in no encoding kaynak reads (and declare none that fits)."""
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        d = decode_text(data)
        return d.text, d.encoding, d.warnings
    charset = declared_charset(data)
    if charset is not None and not charset.startswith(("utf-16", "utf-32")):
        try:
            d = clean_decoded(data.decode(charset), charset, [])
            return d.text, d.encoding, d.warnings
        except UnicodeDecodeError:
            d = decode_text(data)
            return (
                d.text,
                d.encoding,
                [f"declared charset {charset} does not fit the bytes; read as {d.encoding}", *d.warnings],
            )
    d = decode_text(data)
    return d.text, d.encoding, d.warnings


def limit_nesting(html: str, max_depth: int = MAX_DEPTH) -> tuple[str, bool]:
    """Drop the tags (not the text) of elements nested deeper than ``max_depth``; linear time.

    Returns the (possibly rewritten) markup and whether anything was flattened.
    """
    scan = _RAW_TEXT_RE.sub("", html) if "<script" in html or "<style" in html else html
    depth = deepest = 0
    for m in _TAG_TOKEN_RE.finditer(scan):
        name = (m.group(2) or "").lower()
        if not name or name in _VOID_TAGS or name in _OPTIONAL_END or (m.group(3) or "").rstrip().endswith("/"):
            continue
        if m.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
            deepest = max(deepest, depth)
    if deepest <= max_depth:
        return html, False

    out: list[str] = []
    pos = 0
    depth = 0
    for m in _TAG_TOKEN_RE.finditer(html):
        name = (m.group(2) or "").lower()
        if not name or name in _VOID_TAGS or name in _OPTIONAL_END or (m.group(3) or "").rstrip().endswith("/"):
            continue
        closing = bool(m.group(1))
        too_deep = depth > max_depth if closing else depth >= max_depth
        if closing:
            depth = max(0, depth - 1)
        else:
            depth += 1
        if too_deep:
            out.append(html[pos : m.start()])
            out.append(" ")
            pos = m.end()
    out.append(html[pos:])
    return "".join(out), True


def _is_hidden(node: LexborNode, attrs: dict[str, Any]) -> bool:
    if "hidden" in attrs:
        return True
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attrs.get("style")
    return bool(style and _HIDDEN_STYLE_RE.search(style))


class _Table:
    __slots__ = ("cell", "row", "rows")

    def __init__(self) -> None:
        self.rows: list[str] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None


class _Extractor:
    """Turns the element tree into blocks for a TextBuilder, walking with an explicit stack."""

    def __init__(self, builder: TextBuilder) -> None:
        self.builder = builder
        self.inline: list[str] = []  # text of the block being collected
        self.pre_depth = 0
        self.tables: list[_Table] = []

    def _sink(self) -> list[str]:
        if self.tables and self.tables[-1].cell is not None:
            return self.tables[-1].cell
        return self.inline

    def text(self, value: str) -> None:
        self._sink().append(value if self.pre_depth else _SPACES_RE.sub(" ", value))

    def flush(self) -> None:
        text = "".join(self.inline)
        self.inline = []
        if text.strip():
            self.builder.block(text, keep_layout=self.pre_depth > 0)

    def walk(self, root: LexborNode) -> None:
        # Stack entries: (node, entering). Leaving a node closes its block, cell, row or table.
        stack: list[tuple[LexborNode, bool]] = [(root, True)]
        while stack:
            node, entering = stack.pop()
            tag = node.tag or ""
            if not entering:
                self._leave(tag)
                continue
            if tag == "-text":
                self.text(node.text_content or "")
                continue
            if not node.is_element_node:
                continue  # comments, doctype
            attrs = node.attributes
            if self._skip(node, tag, attrs):
                continue
            self._enter(tag)
            stack.append((node, False))
            children: list[LexborNode] = []
            child = node.child
            while child is not None:
                children.append(child)
                child = child.next
            stack.extend((c, True) for c in reversed(children))

    def _skip(self, node: LexborNode, tag: str, attrs: dict[str, Any]) -> bool:
        if tag in _SKIP_TAGS or _is_hidden(node, attrs):
            return True
        role = (attrs.get("role") or "").strip().lower()
        if role in _SKIP_ROLES:
            return True
        if tag in _PAGE_CHROME:
            parent = node.parent
            while parent is not None:
                if parent.tag in _CONTENT_ROOTS or (parent.attributes.get("role") or "") == "main":
                    return False
                parent = parent.parent
            return True
        return False

    def _in_cell(self) -> bool:
        return bool(self.tables) and self.tables[-1].cell is not None

    def _enter(self, tag: str) -> None:
        if (tag in _HEADINGS or tag in _BLOCK_TAGS or tag in ("pre", "tr")) and not self._in_cell():
            self.flush()
        if tag == "pre":
            self.pre_depth += 1
        elif tag == "br":
            self._sink().append("\n")
        elif tag == "table":
            self.tables.append(_Table())
        elif tag == "tr" and self.tables:
            self.tables[-1].row = []
        elif tag in ("td", "th") and self.tables:
            self.tables[-1].cell = []
        elif tag in _BLOCK_TAGS and self._in_cell():
            self._sink().append(" ")

    def _leave(self, tag: str) -> None:
        if tag in _HEADINGS and not self._in_cell():
            text = "".join(self.inline)
            self.inline = []
            self.builder.heading(_HEADINGS[tag], text)
        elif tag in ("td", "th") and self.tables:
            table = self.tables[-1]
            if table.cell is not None and table.row is not None:
                table.row.append(collapse_whitespace("".join(table.cell)))
            table.cell = None
        elif tag == "tr" and self.tables:
            table = self.tables[-1]
            if table.row is not None and any(table.row):
                table.rows.append(" | ".join(table.row))
            table.row = None
        elif tag == "table" and self.tables:
            table = self.tables.pop()
            if not table.rows:
                return
            if self._in_cell():
                self._sink().append(" " + "; ".join(table.rows) + " ")
            else:
                self.flush()
                self.builder.block("\n".join(table.rows))
        elif tag == "pre":
            if not self._in_cell():
                self.flush()
            self.pre_depth = max(0, self.pre_depth - 1)
        elif tag in _BLOCK_TAGS:
            if self._in_cell():
                self._sink().append(" ")
            else:
                self.flush()


def load_html(path: Path, data: bytes) -> LoadedDocument:
    try:
        markup, encoding, warnings = decode_html(data)
    except NotText as err:
        raise CorruptFile(path, str(err)) from None
    markup, flattened = limit_nesting(markup)
    if flattened:
        warnings.append(f"markup nested deeper than {MAX_DEPTH} levels was flattened")
    try:
        tree = LexborHTMLParser(markup)
    except Exception as err:  # lexbor rarely refuses input, but a refusal names the file
        raise CorruptFile(path, f"HTML could not be parsed ({err})") from None

    title_node = tree.css_first("title")
    raw_title = title_node.text(deep=True) if title_node is not None else None
    html_node = tree.css_first("html")
    lang = html_node.attributes.get("lang") if html_node is not None else None
    meta: dict[str, str] = {}
    for node in tree.css("meta[name]"):
        name = (node.attributes.get("name") or "").strip().lower()
        content = node.attributes.get("content")
        if name in ("description", "author", "keywords", "generator") and content:
            meta[name] = collapse_whitespace(content)

    builder = TextBuilder()
    extractor = _Extractor(builder)
    root = tree.body or tree.root
    if root is not None:
        mains = tree.css("main, [role=main]")
        extractor.walk(mains[0] if len(mains) == 1 else root)
        extractor.flush()
    text, sections = builder.finish()

    title = meaningful_title(raw_title)
    if title is None:
        h1 = [t for level, t in builder.headings if level == 1]
        title = h1[0] if h1 else None
    metadata: dict[str, Any] = {"format": "html", "encoding": encoding}
    if lang:
        metadata["lang"] = lang.strip()
    metadata.update(meta)
    return LoadedDocument(
        title=title or stem_title(path),
        pages=[Page(number=1, text=text, sections=sections)],
        metadata=metadata,
        warnings=warnings,
    )
