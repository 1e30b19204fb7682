"""The REST API (``/v1``) and the MCP Streamable HTTP endpoint (``/mcp``) in one ASGI app: ``create_app``.

A thin face over ``SearchService`` (reads) and ``IngestService`` (writes): request parsing, auth, uploads and error
translation live here; no SQL and no search logic. Blocking service calls run in the thread pool, so a long ingest
never stalls searches on the event loop.

- Errors are RFC 9457 ``application/problem+json`` built from the ``KaynakError`` (its ``status`` and ``title``,
  the message as ``detail``); request validation errors are 422 problems. Bad input never yields a 500.
- Writes need ``Authorization: Bearer <KAYNAK_API_TOKEN>``; with no token configured they answer 403 and say how to
  enable them. Reads (and ``/mcp``) are open unless ``KAYNAK_READ_TOKEN`` is set, then they need it (or the API
  token). ``/v1/health``, ``/docs`` and ``/openapi.json`` stay open.
- Uploads: the whole request is capped at ``max_upload_mb`` (checked on Content-Length and while streaming),
  extensions must be ones a loader reads, declared content types must fit the extension, and file names are
  reduced to safe relative paths inside a temporary folder that is deleted after the ingest.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import tempfile
import time
import unicodedata
from collections.abc import AsyncIterator, Callable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kaynak import __version__
from kaynak.context import Context
from kaynak.errors import KaynakError, UnsupportedFileType, UsageError
from kaynak.search import parse_metadata_pairs

log = logging.getLogger("kaynak.api")

PROBLEM = "application/problem+json"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
DEFAULT_EXTENSIONS = frozenset({".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx"})
GENERIC_TYPES = {"", "application/octet-stream", "binary/octet-stream", "application/x-www-form-urlencoded"}
# Declared content types that fit each extension (generic types above are always accepted).
CONTENT_TYPES: dict[str, set[str]] = {
    ".pdf": {"application/pdf", "application/x-pdf"},
    ".md": {"text/markdown", "text/x-markdown", "text/plain"},
    ".mdx": {"text/markdown", "text/x-markdown", "text/mdx", "text/plain"},
    ".xhtml": {"application/xhtml+xml", "text/html"},
    ".markdown": {"text/markdown", "text/x-markdown", "text/plain"},
    ".txt": {"text/plain"},
    ".text": {"text/plain"},
    ".html": {"text/html", "application/xhtml+xml"},
    ".htm": {"text/html", "application/xhtml+xml"},
    ".docx": {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip"},
}
MAX_UPLOAD_FILES = 1000

SearchMode = Literal["auto", "hybrid", "vector", "keyword"]


class AuthError(KaynakError):
    """Missing, wrong or unconfigured bearer token (401 / 403)."""

    title = "not authorised"

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class UploadTooLarge(StarletteHTTPException):
    """Raised from the receive channel when a request body passes ``max_upload_mb``."""

    def __init__(self, limit_mb: float) -> None:
        super().__init__(
            413,
            f"the upload is larger than the limit of {limit_mb:g} MB; send fewer or smaller files, "
            "or raise KAYNAK_MAX_UPLOAD_MB",
        )


# ---------------------------------------------------------------------------------------------- request models
def _reject_nul(value: Any, where: str) -> Any:
    """PostgreSQL text cannot hold NUL characters: refuse them at the door with a 400, not a 500 later."""
    if isinstance(value, str):
        if "\x00" in value:
            raise UsageError(f"{where} contains a NUL character (\\u0000), which kaynak cannot store or search", where)
    elif isinstance(value, dict):
        for k, v in value.items():
            _reject_nul(k, where)
            _reject_nul(v, where)
    elif isinstance(value, list | tuple):
        for v in value:
            _reject_nul(v, where)
    return value


def _no_nul_params(request: Request) -> None:
    for key, value in [*request.query_params.multi_items(), *request.path_params.items()]:
        _reject_nul(key, "a parameter name")
        _reject_nul(value, key)


class _NoNul(BaseModel):
    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, v: Any, info: Any) -> Any:
        try:
            return _reject_nul(v, info.field_name)
        except UsageError as err:
            raise ValueError(err.message) from None


class SearchFiltersIn(_NoNul):
    model_config = ConfigDict(extra="forbid")

    source_prefix: str | None = Field(None, max_length=1000, description="Only sources starting with this path.")
    source_glob: str | None = Field(None, max_length=1000, description="Only sources matching this glob (docs/*.pdf).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Only documents whose metadata contains this.")


class SearchRequest(_NoNul):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    q: str = Field(
        ..., min_length=1, max_length=4000, validation_alias=AliasChoices("q", "query"),
        description="The question or keywords.",
    )
    collections: list[str] | str | None = Field(
        None, description='Collection names (list or comma-separated); omit for the default, "*" for all.'
    )
    mode: SearchMode = "auto"
    k: int = Field(10, ge=1, le=100)
    filters: SearchFiltersIn | None = None
    rerank: bool | None = Field(None, description="Rerank with the configured cross-encoder; omit for the default.")
    ranking: Literal["bm25", "ts_rank_cd"] | None = Field(None, description="Keyword ranking; omit for the setting.")

    @field_validator("collections")
    @classmethod
    def _split(cls, v: list[str] | str | None) -> list[str] | str | None:
        return _parse_collections(v)


class CollectionIn(_NoNul):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=200)
    language: Literal["turkish", "english", "simple"] | None = None
    embedder: str | None = Field(None, max_length=200, description="e5-small | use-m3 | st:<model> | hash")


def _parse_collections(v: list[str] | str | None) -> list[str] | str | None:
    if v is None:
        return None
    items = v.split(",") if isinstance(v, str) else v
    names = [n.strip() for n in items if n and n.strip()]
    if not names:
        return None
    return "*" if names == ["*"] else names


# ---------------------------------------------------------------------------------------------- helpers
def problem(status: int, title: str, detail: str, instance: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    if instance:
        body["instance"] = instance
    body.update({k: v for k, v in extra.items() if v is not None})
    headers = {"WWW-Authenticate": 'Bearer realm="kaynak"'} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _matches(token: str | None, *expected: str | None) -> bool:
    return token is not None and any(
        e is not None and hmac.compare_digest(token.encode(), e.encode()) for e in expected
    )


def safe_relpath(name: str | None) -> str:
    """A client's file name as a harmless relative path: no traversal, no absolute paths, no hidden parts."""
    raw = unicodedata.normalize("NFC", name or "").replace("\\", "/")
    parts: list[str] = []
    for part in raw.split("/"):
        clean = "".join(ch for ch in part if ch.isprintable() and ch not in '<>:"|?*').strip().lstrip(".").strip()
        if clean and clean not in (".", ".."):
            parts.append(clean[:200])
    if not parts:
        raise UsageError(f"upload has no usable file name ({name!r}); name the file, e.g. report.pdf", "files")
    return str(PurePosixPath(*parts[-8:]))


def supported_extensions() -> frozenset[str]:
    try:
        from kaynak.loaders import SUPPORTED_EXTENSIONS

        return frozenset(e.lower() for e in SUPPORTED_EXTENSIONS)
    except ImportError:  # pragma: no cover - loaders are a base module
        return DEFAULT_EXTENSIONS


class _UploadLimit:
    """ASGI wrapper: refuse request bodies over the limit on uploads, by Content-Length and while streaming."""

    def __init__(self, app: ASGIApp, limit_bytes: Callable[[], int]) -> None:
        self.app = app
        self.limit_bytes = limit_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not headers.get("content-type", "").startswith("multipart/"):
            await self.app(scope, receive, send)
            return
        limit = self.limit_bytes()
        limit_mb = limit / 1_048_576
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await _send_problem(send, 413, "file too large", UploadTooLarge(limit_mb).detail, scope.get("path"))
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise UploadTooLarge(limit_mb)
            return message

        await self.app(scope, counting_receive, send)


async def _send_problem(send: Send, status: int, title: str, detail: str, instance: str | None) -> None:
    response = problem(status, title, detail, instance)
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})


class _ReadAuth:
    """ASGI wrapper for the MCP endpoint: when a read token is configured, require it (or the API token)."""

    def __init__(self, app: ASGIApp, context: Context) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        s = self.context.settings
        if scope["type"] == "http" and s.read_token:
            request = Request(scope)
            if not _matches(_bearer(request), s.read_token, s.api_token):
                await _send_problem(send, 401, "not authorised", "send Authorization: Bearer <KAYNAK_READ_TOKEN>",
                                    scope.get("path"))
                return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------------------------- the app
def create_app(context: Context | None = None) -> FastAPI:
    """The ASGI app: REST under ``/v1``, MCP Streamable HTTP at ``/mcp``, OpenAPI at ``/docs``.

    ``context`` defaults to a new ``Context`` from the environment; the database and models load on first use.
    """
    from kaynak.mcp_server import build_mcp

    ctx = context or Context()
    settings = ctx.settings
    mcp = build_mcp(lambda: ctx.search)
    mcp_starlette = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, host=settings.host)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield
        if context is None:
            ctx.close()

    app = FastAPI(
        title="kaynak",
        version=__version__,
        description=(
            "Search your own documents and quote the passage that answers, with file, page and section.\n\n"
            "Reads are open (or need `Authorization: Bearer <KAYNAK_READ_TOKEN>` when a read token is set); "
            "writes need `Authorization: Bearer <KAYNAK_API_TOKEN>`. Errors are RFC 9457 problem+json. "
            "The MCP Streamable HTTP endpoint is at `/mcp`."
        ),
        lifespan=lifespan,
        dependencies=[Depends(_no_nul_params)],
    )
    app.state.context = ctx

    # The MCP endpoint: the SDK's own route (with its DNS-rebinding protection on loopback), behind the read token.
    for route in mcp_starlette.routes:
        inner = getattr(route, "app", None)
        if getattr(route, "path", None) == "/mcp" and inner is not None:
            route.app = _ReadAuth(inner, ctx)  # type: ignore[attr-defined]
        app.router.routes.append(route)

    app.add_middleware(_UploadLimit, limit_bytes=lambda: int(settings.max_upload_mb * 1_048_576))

    # ------------------------------------------------------------------ errors → problem+json
    @app.exception_handler(KaynakError)
    async def _kaynak_error(request: Request, err: KaynakError) -> JSONResponse:
        extra: dict[str, Any] = {"field": getattr(err, "field", None)}
        if hasattr(err, "path"):
            extra["file"] = err.path
        return problem(err.status, err.title, err.message, request.url.path, **extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in err.errors()
        ]
        detail = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors) or "invalid request"
        return problem(422, "invalid request", detail, request.url.path, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        cause = err.__cause__ or err.__context__
        if isinstance(cause, UploadTooLarge):
            err = cause
        titles = {404: "not found", 405: "method not allowed", 413: "file too large"}
        detail = str(err.detail) if err.detail else titles.get(err.status_code, "error")
        if err.status_code == 404 and detail == "Not Found":
            detail = f"no such endpoint {request.method} {request.url.path}; see /docs for the API"
        return problem(err.status_code, titles.get(err.status_code, "error"), detail, request.url.path)

    @app.exception_handler(Exception)
    async def _crash(request: Request, err: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return problem(500, "internal error", f"unexpected {type(err).__name__}; see the server log",
                       request.url.path)

    # ------------------------------------------------------------------ auth
    def read_access(request: Request) -> None:
        s = settings
        if s.read_token and not _matches(_bearer(request), s.read_token, s.api_token):
            raise AuthError("reads need Authorization: Bearer <KAYNAK_READ_TOKEN> on this server")

    def write_access(request: Request) -> None:
        s = settings
        if not s.api_token:
            raise AuthError(
                "write endpoints are disabled: set KAYNAK_API_TOKEN (or api_token in kaynak.toml) when starting "
                "`kaynak serve`, then send Authorization: Bearer <token>",
                status=403,
            )
        token = _bearer(request)
        if token is None:
            raise AuthError("this endpoint writes: send Authorization: Bearer <KAYNAK_API_TOKEN>")
        if not _matches(token, s.api_token):
            raise AuthError("wrong API token: send Authorization: Bearer <KAYNAK_API_TOKEN>", status=403)

    Read = Depends(read_access)
    Write = Depends(write_access)

    def _search(req: SearchRequest) -> dict[str, Any]:
        filters = req.filters.model_dump(exclude_none=True) if req.filters else None
        if filters is not None and not filters.get("metadata"):
            filters.pop("metadata", None)
        start = time.perf_counter()
        hits = ctx.search.search(  # type: ignore[attr-defined]
            req.q, collections=req.collections, mode=req.mode, k=req.k, filters=filters or None, rerank=req.rerank,
            keyword_ranking=req.ranking,
        )
        took = (time.perf_counter() - start) * 1000
        log.info("search %r → %d hits in %.0f ms", req.q[:80], len(hits), took)
        return {"hits": [h.to_dict() for h in hits]}

    # ------------------------------------------------------------------ search
    @app.get("/v1/search", tags=["search"], dependencies=[Read], summary="Search (query string)")
    def search_get(
        q: Annotated[str, Query(min_length=1, max_length=4000, description="The question or keywords.")],
        collections: Annotated[
            str | None, Query(max_length=4000, description='Comma-separated names; "*" for all.')
        ] = None,
        mode: SearchMode = "auto",
        k: Annotated[int, Query(ge=1, le=100)] = 10,
        source_prefix: Annotated[str | None, Query(max_length=1000)] = None,
        source_glob: Annotated[str | None, Query(max_length=1000)] = None,
        meta: Annotated[
            list[str] | None, Query(max_length=1000, description="KEY=VALUE metadata filter (repeatable).")
        ] = None,
        rerank: bool | None = None,
        ranking: Literal["bm25", "ts_rank_cd"] | None = None,
    ) -> dict[str, Any]:
        """Hybrid search. Returns `{"hits": [...]}`, best first: each hit has `source`, `title`, `page`,
        `section`, `quote` (verbatim, with offsets into the page), `text`, `score`, per-retriever `scores` and
        `chunk_id`.

        Example: `GET /v1/search?q=kat%20malikleri%20kurulu&collections=hukuk&k=5`
        """
        metadata = parse_metadata_pairs(meta)
        filters = None
        if source_prefix or source_glob or metadata:
            filters = SearchFiltersIn(source_prefix=source_prefix, source_glob=source_glob, metadata=metadata)
        req = SearchRequest(q=q, collections=collections, mode=mode, k=k, filters=filters, rerank=rerank,
                            ranking=ranking)
        return _search(req)

    @app.post("/v1/search", tags=["search"], dependencies=[Read], summary="Search (JSON body)")
    def search_post(req: SearchRequest) -> dict[str, Any]:
        """The same search with a JSON body: `{"q": "...", "collections": ["a"], "mode": "hybrid", "k": 10,
        "filters": {"source_prefix": "docs/"}}`. Returns `{"hits": [...]}`.
        """
        return _search(req)

    # ------------------------------------------------------------------ collections
    @app.get("/v1/collections", tags=["collections"], dependencies=[Read])
    def collections_list() -> dict[str, Any]:
        """All collections with language, embedder, dimension and document / chunk counts."""
        return {"collections": [c.to_dict() for c in ctx.search.list_collections()]}

    @app.post("/v1/collections", tags=["collections"], dependencies=[Write], status_code=201)
    def collections_create(body: CollectionIn) -> dict[str, Any]:
        """Create an empty collection (needs the API token). 409 if it exists."""
        return ctx.ingest.create_collection(body.name, body.language, body.embedder).to_dict()

    @app.get("/v1/collections/{name}", tags=["collections"], dependencies=[Read])
    def collections_get(name: str) -> dict[str, Any]:
        """One collection with its counts."""
        return ctx.search.get_collection(name).to_dict()

    @app.delete("/v1/collections/{name}", tags=["collections"], dependencies=[Write])
    def collections_delete(name: str) -> dict[str, Any]:
        """Delete a collection with all its documents (needs the API token)."""
        ctx.ingest.delete_collection(name)
        return {"deleted": name}

    # ------------------------------------------------------------------ documents
    @app.get("/v1/collections/{name}/documents", tags=["documents"], dependencies=[Read])
    def documents_list(
        name: str,
        prefix: Annotated[str | None, Query(max_length=1000, description="Only sources starting with this.")] = None,
        limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
        offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    ) -> dict[str, Any]:
        """A collection's documents, ordered by source."""
        return {"documents": [d.to_dict() for d in ctx.search.list_documents(name, prefix, limit, offset)]}

    @app.get("/v1/collections/{name}/page", tags=["documents"], dependencies=[Read])
    def page_get(
        name: str,
        source: Annotated[str, Query(min_length=1, max_length=4000)],
        number: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    ) -> dict[str, Any]:
        """The full text of one page of a document (formats without pages have only page 1)."""
        return {"collection": name, "source": source, "page": number,
                "text": ctx.search.page_text(name, source, number)}

    @app.post("/v1/collections/{name}/documents", tags=["documents"], dependencies=[Write])
    async def documents_upload(
        name: str,
        files: Annotated[list[UploadFile], File(description="One or more documents (pdf, md, txt, html, docx).")],
        language: Annotated[Literal["turkish", "english", "simple"] | None, Form()] = None,
        embedder: Annotated[str | None, Form(max_length=200)] = None,
    ) -> JSONResponse:
        """Upload and ingest files into a collection (created if missing; needs the API token).

        The request is limited to `KAYNAK_MAX_UPLOAD_MB`; names are sanitised (folders kept as relative paths,
        `..` dropped); the files live in a temporary folder only for the ingest. Answers 200 with the ingest
        report, or 207 with the same report when some files failed.
        """
        if len(files) > MAX_UPLOAD_FILES:
            raise UsageError(f"at most {MAX_UPLOAD_FILES} files per upload", "files")
        allowed = supported_extensions()
        planned: dict[str, UploadFile] = {}
        for upload in files:
            rel = safe_relpath(upload.filename)
            ext = PurePosixPath(rel).suffix.lower()
            if ext not in allowed:
                raise UnsupportedFileType(
                    rel, f"unsupported file type {ext or '(no extension)'}; kaynak reads {', '.join(sorted(allowed))}"
                )
            declared = (upload.content_type or "").split(";")[0].strip().lower()
            if declared not in GENERIC_TYPES and declared not in CONTENT_TYPES.get(ext, {declared}):
                raise UnsupportedFileType(rel, f"content type {declared} does not match the extension {ext}")
            if rel in planned:
                raise UsageError(f"two uploaded files are both named {rel!r}; rename one", "files")
            planned[rel] = upload
        with tempfile.TemporaryDirectory(prefix="kaynak-upload-") as tmp:
            root = Path(tmp).resolve()
            for rel, upload in planned.items():
                target = (root / rel).resolve()
                if root not in target.parents:  # belt and braces: safe_relpath already forbids this
                    raise UsageError(f"file name {upload.filename!r} escapes the upload folder", "files")
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    while chunk := await upload.read(1 << 20):
                        out.write(chunk)
                await upload.close()
            report = await run_in_threadpool(ctx.ingest.ingest, [root], name, language=language, embedder=embedder)
        body = report.to_dict()
        return JSONResponse(body, status_code=200 if report.ok else 207)

    @app.get("/v1/collections/{name}/documents/{source:path}", tags=["documents"], dependencies=[Read])
    def documents_get(name: str, source: str) -> dict[str, Any]:
        """One document with its metadata (the source path may contain slashes)."""
        return ctx.search.get_document(name, source).to_dict()

    @app.delete("/v1/collections/{name}/documents/{source:path}", tags=["documents"], dependencies=[Write])
    def documents_delete(name: str, source: str) -> dict[str, Any]:
        """Delete one document from a collection (needs the API token)."""
        ctx.ingest.delete_document(name, source)
        return {"deleted": source, "collection": name}

    # ------------------------------------------------------------------ chunks
    @app.get("/v1/chunks/{chunk_id}", tags=["documents"], dependencies=[Read])
    def chunk_get(
        chunk_id: Annotated[str, PathParam(min_length=1, max_length=64)],
        before: Annotated[int, Query(ge=0, le=20)] = 1,
        after: Annotated[int, Query(ge=0, le=20)] = 1,
    ) -> dict[str, Any]:
        """A chunk (by the `chunk_id` of a hit) and its neighbours in the same document, in order."""
        chunks = ctx.search.chunk_context(chunk_id, before, after)
        hit = next((c for c in chunks if c.id == chunk_id), None)
        return {"chunk": hit.to_dict() if hit else None, "context": [c.to_dict() for c in chunks]}

    # ------------------------------------------------------------------ health
    @app.get("/v1/health", tags=["health"])
    def health() -> JSONResponse:
        """Database and model status; 200 when usable, 503 otherwise. Does not load a model."""
        body: dict[str, Any] = {"status": "ok", "version": __version__}
        try:
            info = ctx.store.server_info()
            body["database"] = {"ok": True, **info}
        except KaynakError as err:
            body["database"] = {"ok": False, "error": err.message}
            body["status"] = "unavailable"
        model: dict[str, Any] = {"name": settings.embedder}
        try:
            from kaynak.embeddings import embedder_dim

            model.update(ok=True, dim=embedder_dim(settings.embedder))
        except KaynakError as err:
            model.update(ok=False, error=err.message)
            body["status"] = "unavailable"
        except ImportError as err:  # pragma: no cover - embeddings registry missing
            model.update(ok=False, error=str(err))
        model["reranker"] = settings.reranker
        body["model"] = model
        return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503)

    return app


def serve(context: Context, host: str | None = None, port: int | None = None, log_level: str = "info") -> None:
    """Run the app with uvicorn (``kaynak serve``)."""
    import uvicorn

    app = create_app(context)
    uvicorn.run(
        app,
        host=host or context.settings.host,
        port=port or context.settings.port,
        log_level=log_level,
        proxy_headers=False,
        server_header=False,
    )

