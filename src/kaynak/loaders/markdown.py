"""Markdown (and MDX) loader: one page whose sections are heading paths (``Install › From source``).

Parsed with markdown-it-py (CommonMark plus tables). Front matter (YAML ``---`` or TOML ``+++``) becomes metadata,
not text. The page text is the rendered prose, not the markup: headings, paragraphs (soft line breaks reflowed),
list items one per line, table rows as ``cell | cell``, link and image text without their targets. Code blocks are
kept verbatim as blocks of their own, so they are never merged into prose sentences. MDX component tags and
``{/* comments */}`` are dropped, their inner text kept.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from markdown_it import MarkdownIt
from markdown_it.token import Token

from kaynak.errors import CorruptFile
from kaynak.types import LoadedDocument, Page

from .common import TextBuilder, json_safe, meaningful_title, stem_title
from .normalize import NotText, decode_text

_FRONT_MATTER_RE = re.compile(r"\A(?:---|\+\+\+)[ \t]*\n")
_MDX_COMMENT_RE = re.compile(r"\{/\*.*?\*/\}", re.S)
_HEADING_ID_RE = re.compile(r"\s*\{#[\w:.-]+\}\s*$")
_TAG_RE = re.compile(r"</?[A-Za-z][^<>]*?/?>")
_HTML_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def split_front_matter(text: str) -> tuple[str | None, str | None, str]:
    """``(kind, raw_front_matter, body)``; kind is 'yaml', 'toml' or None."""
    m = _FRONT_MATTER_RE.match(text)
    if not m:
        return None, None, text
    fence = text[:3]
    closing = re.compile(r"^(?:" + re.escape(fence) + (r"|\.\.\." if fence == "---" else "") + r")[ \t]*$", re.M)
    end = closing.search(text, m.end())
    if end is None:
        return None, None, text
    raw = text[m.end() : end.start()]
    body = text[end.end() :].lstrip("\n")
    return ("yaml" if fence == "---" else "toml"), raw, body


#: Front matter longer than this is not parsed (it is metadata, not a document).
MAX_FRONT_MATTER = 64 * 1024


def _safe_yaml(raw: str) -> Any:
    """YAML with the safe loader, refusing aliases (``*name``): expanding them is how a "billion laughs" bomb
    turns a few hundred bytes into billions of nodes."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("it uses YAML aliases (*name), which kaynak does not expand")
            return super().compose_node(parent, index)

    return yaml.load(raw, Loader=NoAliases)  # a SafeLoader subclass


def _parse_front_matter(kind: str, raw: str) -> tuple[dict[str, Any], str | None]:
    """The front matter as a dict, and a warning when it cannot be read."""
    if len(raw) > MAX_FRONT_MATTER:
        return {}, f"front matter of {len(raw)} characters is over the {MAX_FRONT_MATTER} limit; kept out of the text"
    try:
        if kind == "toml":
            data: Any = tomllib.loads(raw)
        else:
            data = _safe_yaml(raw) if raw.strip() else {}
    except Exception as err:  # malformed front matter is the author's problem, not a reason to drop the file
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return {}, f"front matter could not be parsed ({first}); kept out of the text"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {"front_matter": json_safe(data)}, None
    return json_safe(data), None


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def strip_mdx_comments(source: str) -> str:
    """Remove MDX ``{/* … */}`` comments (heading anchors) outside code fences, before Markdown parsing: the
    parser would read their stars as emphasis."""
    if "{/*" not in source:
        return source
    out: list[str] = []
    fence: str | None = None
    for line in source.split("\n"):
        m = _FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
        elif fence is not None and m and m.group(1).startswith(fence):
            fence = None
        elif fence is None and "{/*" in line:
            line = (
                _MDX_COMMENT_RE.sub("", line).rstrip()
                if line.strip().startswith("#")
                else _MDX_COMMENT_RE.sub("", line)
            )
        out.append(line)
    return "\n".join(out)


def _strip_markup(text: str) -> str:
    text = _MDX_COMMENT_RE.sub("", text)
    text = _HTML_COMMENT_RE.sub("", text)
    return _TAG_RE.sub("", text)


def _inline_text(token: Token) -> str:
    """Plain text of an inline token: emphasis, links and inline HTML dropped, code and image alt text kept."""
    out: list[str] = []
    for child in token.children or []:
        kind = child.type
        if kind in ("text", "code_inline"):
            out.append(child.content)
        elif kind == "softbreak":
            out.append(" ")
        elif kind == "hardbreak":
            out.append("\n")
        elif kind == "image":
            alt = "".join(c.content for c in child.children or [] if c.type in ("text", "code_inline"))
            if alt.strip():
                out.append(alt)
        elif kind == "html_inline":
            continue
    return _MDX_COMMENT_RE.sub("", "".join(out))


class _Renderer:
    """Walks the block tokens (a flat list with open/close pairs) and feeds blocks and headings to a builder;
    one method per token kind it reacts to (``_HANDLERS``), the state of open lists, tables and headings here."""

    def __init__(self, builder: TextBuilder) -> None:
        self.builder = builder
        self.list_stack: list[list[int]] = []  # per open list: [is_ordered, next number]
        self.item_prefix: str | None = None  # the marker for the first paragraph of the current list item
        self.in_table_row: list[str] | None = None
        self.table_rows: list[str] = []
        self.cell_parts: list[str] = []
        self.heading_level: int | None = None

    def heading_open(self, tok: Token) -> None:
        self.heading_level = int(tok.tag[1]) if tok.tag[1:].isdigit() else 1

    def heading_close(self, tok: Token) -> None:
        self.heading_level = None

    def list_open(self, tok: Token) -> None:
        ordered = tok.type == "ordered_list_open"
        start = int(tok.attrs.get("start", 1) or 1) if ordered else 0
        self.list_stack.append([ordered, start])

    def list_close(self, tok: Token) -> None:
        if self.list_stack:
            self.list_stack.pop()

    def list_item_open(self, tok: Token) -> None:
        if self.list_stack and self.list_stack[-1][0]:
            self.item_prefix = f"{self.list_stack[-1][1]}. "
            self.list_stack[-1][1] += 1
        else:
            self.item_prefix = "• "

    def tr_open(self, tok: Token) -> None:
        self.in_table_row = []

    def tr_close(self, tok: Token) -> None:
        if self.in_table_row is not None and any(c.strip() for c in self.in_table_row):
            self.table_rows.append(" | ".join(c.strip() for c in self.in_table_row))
        self.in_table_row = None

    def cell_open(self, tok: Token) -> None:
        self.cell_parts = []

    def cell_close(self, tok: Token) -> None:
        if self.in_table_row is not None:
            self.in_table_row.append(" ".join(self.cell_parts))

    def table_close(self, tok: Token) -> None:
        if self.table_rows:
            self.builder.block("\n".join(self.table_rows))
        self.table_rows = []

    def inline(self, tok: Token) -> None:
        text = _inline_text(tok)
        if self.heading_level is not None:
            self.builder.heading(self.heading_level, _HEADING_ID_RE.sub("", text))
        elif self.in_table_row is not None:
            self.cell_parts.append(text)
        elif self.item_prefix is not None:
            # The first paragraph of a list item goes on its own line with its marker.
            self.builder.block(self.item_prefix + text, sep="\n")
            self.item_prefix = None
        else:
            self.builder.block(text, sep="\n" if self.list_stack else "\n\n")

    def code(self, tok: Token) -> None:
        self.item_prefix = None
        self.builder.block(tok.content, keep_layout=True)

    def html_block(self, tok: Token) -> None:
        text = _strip_markup(tok.content)
        if any(ch.isalpha() for ch in text):
            self.builder.block(text)

    _HANDLERS: ClassVar[dict[str, Callable[[_Renderer, Token], None]]] = {
        "heading_open": heading_open,
        "heading_close": heading_close,
        "bullet_list_open": list_open,
        "ordered_list_open": list_open,
        "bullet_list_close": list_close,
        "ordered_list_close": list_close,
        "list_item_open": list_item_open,
        "tr_open": tr_open,
        "tr_close": tr_close,
        "th_open": cell_open,
        "td_open": cell_open,
        "th_close": cell_close,
        "td_close": cell_close,
        "table_close": table_close,
        "inline": inline,
        "fence": code,
        "code_block": code,
        "html_block": html_block,
    }


def _render(tokens: list[Token], builder: TextBuilder) -> None:
    """Walk the block tokens and feed blocks and headings to ``builder`` (see ``_Renderer``)."""
    renderer = _Renderer(builder)
    for tok in tokens:
        handler = _Renderer._HANDLERS.get(tok.type)
        if handler is not None:
            handler(renderer, tok)


def load_markdown(path: Path, data: bytes) -> LoadedDocument:
    try:
        decoded = decode_text(data)
    except NotText as err:
        raise CorruptFile(path, str(err)) from None
    text, encoding = decoded.text, decoded.encoding
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    warnings: list[str] = list(decoded.warnings)
    kind, raw_front, body = split_front_matter(text)
    front: dict[str, Any] = {}
    if kind is not None and raw_front is not None:
        front, warning = _parse_front_matter(kind, raw_front)
        if warning:
            warnings.append(warning)

    builder = TextBuilder()
    _render(_parser().parse(strip_mdx_comments(body)), builder)
    page_text, sections = builder.finish()

    title = meaningful_title(front.get("title")) if isinstance(front.get("title"), str) else None
    if title is None:
        h1 = [t for level, t in builder.headings if level == 1]
        title = h1[0] if h1 else (builder.headings[0][1] if builder.headings else None)
    metadata: dict[str, Any] = {"format": "markdown", "encoding": encoding}
    if front:
        metadata["front_matter"] = front
    return LoadedDocument(
        title=title or stem_title(path),
        pages=[Page(number=1, text=page_text, sections=sections)],
        metadata=metadata,
        warnings=warnings,
    )
