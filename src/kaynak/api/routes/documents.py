"""Documents of a collection: list, page text, upload (multipart), show, delete; chunks with their neighbours."""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from kaynak.context import Context
from kaynak.errors import UnsupportedFileType, UsageError
from kaynak.vocabulary import LanguageName

from ..deps import Read, Write, get_context
from ..uploads import CONTENT_TYPES, GENERIC_TYPES, MAX_UPLOAD_FILES, safe_relpath, supported_extensions

router = APIRouter(prefix="/v1", tags=["documents"])
Ctx = Annotated[Context, Depends(get_context)]


@router.get("/collections/{name}/documents", dependencies=[Read])
def documents_list(
    name: str,
    ctx: Ctx,
    prefix: Annotated[str | None, Query(max_length=1000, description="Only sources starting with this.")] = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict[str, Any]:
    """A collection's documents, ordered by source."""
    return {"documents": [d.to_dict() for d in ctx.search.list_documents(name, prefix, limit, offset)]}


@router.get("/collections/{name}/page", dependencies=[Read])
def page_get(
    name: str,
    ctx: Ctx,
    source: Annotated[str, Query(min_length=1, max_length=4000)],
    number: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> dict[str, Any]:
    """The full text of one page of a document (formats without pages have only page 1)."""
    return {"collection": name, "source": source, "page": number,
            "text": ctx.search.page_text(name, source, number)}


@router.post("/collections/{name}/documents", dependencies=[Write])
async def documents_upload(
    name: str,
    ctx: Ctx,
    files: Annotated[list[UploadFile], File(description="One or more documents (pdf, md, txt, html, docx).")],
    language: Annotated[LanguageName | None, Form()] = None,
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


@router.get("/collections/{name}/documents/{source:path}", dependencies=[Read])
def documents_get(name: str, source: str, ctx: Ctx) -> dict[str, Any]:
    """One document with its metadata (the source path may contain slashes)."""
    return ctx.search.get_document(name, source).to_dict()


@router.delete("/collections/{name}/documents/{source:path}", dependencies=[Write])
def documents_delete(name: str, source: str, ctx: Ctx) -> dict[str, Any]:
    """Delete one document from a collection (needs the API token)."""
    ctx.ingest.delete_document(name, source)
    return {"deleted": source, "collection": name}


@router.get("/chunks/{chunk_id}", dependencies=[Read])
def chunk_get(
    chunk_id: Annotated[str, PathParam(min_length=1, max_length=64)],
    ctx: Ctx,
    before: Annotated[int, Query(ge=0, le=20)] = 1,
    after: Annotated[int, Query(ge=0, le=20)] = 1,
) -> dict[str, Any]:
    """A chunk (by the `chunk_id` of a hit) and its neighbours in the same document, in order."""
    chunks = ctx.search.chunk_context(chunk_id, before, after)
    hit = next((c for c in chunks if c.id == chunk_id), None)
    return {"chunk": hit.to_dict() if hit else None, "context": [c.to_dict() for c in chunks]}
