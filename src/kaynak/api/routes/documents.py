"""Documents of a collection: list, page text, upload (multipart), show, delete; chunks with their neighbours."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from kaynak import upload_store
from kaynak.context import Context
from kaynak.errors import Conflict, UnsupportedFileType, UsageError
from kaynak.rules import upload_paths
from kaynak.vocabulary import LanguageName

from ..deps import Read, Write, get_context
from ..models import ChunkContext, Document, DocumentDeleted, DocumentList, IngestReport, PageText
from ..problems import problem, responses
from ..uploads import CONTENT_TYPES, GENERIC_TYPES, MAX_UPLOAD_FILES, supported_extensions

router = APIRouter(prefix="/v1", tags=["documents"], responses=responses(400, 401, 403, 404, 422, 503))
Ctx = Annotated[Context, Depends(get_context)]


@router.get("/collections/{name}/documents", dependencies=[Read], response_model=DocumentList)
def documents_list(
    name: str,
    ctx: Ctx,
    prefix: Annotated[str | None, Query(max_length=1000, description="Only sources starting with this.")] = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict[str, Any]:
    """A collection's documents, ordered by source, `limit` at a time from `offset`: with `total` (how many match)
    and `next_offset` (the offset of the next page; null at the end)."""
    docs = ctx.search.list_documents(name, prefix, limit, offset)
    total = ctx.search.count_documents(name, prefix)
    end = offset + len(docs)
    return {
        "documents": [d.to_dict() for d in docs],
        "total": total,
        "next_offset": end if docs and end < total else None,
    }


@router.get("/collections/{name}/page", dependencies=[Read], response_model=PageText)
def page_get(
    name: str,
    ctx: Ctx,
    source: Annotated[str, Query(min_length=1, max_length=4000)],
    number: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000, description="Start here (characters into the page).")] = 0,
    max_chars: Annotated[
        int | None, Query(ge=1, le=10_000_000, description="At most this many characters; omit for the rest.")
    ] = None,
) -> dict[str, Any]:
    """The text of one page of a document: all of it, or `max_chars` characters from `offset`, with `total_chars`
    and `next_offset` (null when the text reaches the page's end). Formats without pages are split into pages at
    ingest (at headings, or about every 8,000 characters)."""
    from kaynak.search.browse import page_piece

    text = ctx.search.page_text(name, source, number)
    return {"collection": name, "source": source, "page": number, **page_piece(text, offset, max_chars)}


@router.post(
    "/collections/{name}/documents",
    dependencies=[Write],
    response_model=IngestReport,
    responses={
        207: {"description": "Some files were stored, some failed: the report lists them"},
        **responses(400, 401, 403, 408, 409, 413, 422, 503),
    },
)
async def documents_upload(
    name: str,
    ctx: Ctx,
    files: Annotated[list[UploadFile], File(description="One or more documents, of any type kaynak reads.")],
    language: Annotated[LanguageName | None, Form()] = None,
    embedder: Annotated[str | None, Form(max_length=200)] = None,
) -> JSONResponse:
    """Upload and ingest files into a collection (created if missing; needs the API token).

    The request is limited to `KAYNAK_MAX_UPLOAD_MB`. Names become safe, unique relative paths (folders kept, `..`
    dropped, long names shortened keeping their extension); the files are kept under
    `<data_dir>/uploads/<collection>/` (deleting a document deletes its copy) and parsed by the isolated parse
    workers. Answers 200 with the ingest report when every file was stored whole, 207 with the report when some
    failed or were stored in part, and 422 (problem+json with the report) when none could be stored.
    """
    if len(files) > MAX_UPLOAD_FILES:
        raise UsageError(f"at most {MAX_UPLOAD_FILES} files per upload", "files")
    allowed = supported_extensions()
    rels = upload_paths(upload.filename for upload in files)
    for rel, upload in zip(rels, files, strict=True):
        ext = PurePosixPath(rel).suffix.lower()
        if ext not in allowed:
            raise UnsupportedFileType(
                rel, f"unsupported file type {ext or '(no extension)'}; kaynak reads {', '.join(sorted(allowed))}"
            )
        declared = (upload.content_type or "").split(";")[0].strip().lower()
        if declared not in GENERIC_TYPES and declared not in CONTENT_TYPES.get(ext, {declared}):
            raise UnsupportedFileType(rel, f"content type {declared} does not match the extension {ext}")
    root = upload_store.collection_folder(ctx.settings.data_dir, name)
    previous: dict[str, Path] = {}  # rel -> the earlier upload's bytes, put back if the new file fails
    written: list[str] = []

    def settle(rel: str, stored: bool) -> None:
        """A stored file keeps its new copy; a failed one gets the earlier copy back (or none)."""
        target = root.joinpath(*PurePosixPath(rel).parts)
        earlier = previous.pop(rel, None)
        if stored:
            if earlier is not None:
                earlier.unlink(missing_ok=True)
        elif earlier is not None:
            os.replace(earlier, target)
        else:
            upload_store.remove_copy(ctx.settings.data_dir, name, rel)

    try:
        for rel, upload in zip(rels, files, strict=True):
            kept = await _store_upload(root, rel, upload)
            written.append(rel)
            if kept is not None:
                previous[rel] = kept
        report = await run_in_threadpool(
            ctx.ingest.ingest, [root], name, language=language, embedder=embedder, include=rels
        )
    except BaseException as err:  # keep the copies of documents stored before the failure (err.report)
        done = getattr(err, "report", None)
        ok = {
            *getattr(done, "added", ()),
            *getattr(done, "updated", ()),
            *getattr(done, "unchanged", ()),
            *getattr(done, "partial", ()),
        }
        for rel in written:
            settle(rel, rel in ok)
        raise
    body = _report_for(report.to_dict(), set(rels), root, ctx.settings.data_dir)
    failed = {f["source"] for f in body["failed"]}
    for rel in rels:
        settle(rel, rel not in failed)
    stored = [*body["added"], *body["updated"], *body["unchanged"], *body["partial"]]
    if body["failed"] and not stored:
        first = body["failed"][0]["error"]
        detail = f"no file could be stored ({len(body['failed'])} failed); first: {first}"
        body.pop("ok", None)
        return problem(
            422, "no file could be ingested", detail, f"/v1/collections/{name}/documents", report={**body, "ok": False}
        )
    return JSONResponse(body, status_code=200 if not body["failed"] and not body["partial"] else 207)


async def _store_upload(root: Path, rel: str, upload: UploadFile) -> Path | None:
    """Write one upload to ``root/rel`` (through a temporary file, replaced atomically). An earlier upload of the
    same name is moved aside first and its new place returned, so that it can come back if this one fails."""
    target = root.joinpath(*PurePosixPath(rel).parts)
    stem = f".{target.name[:100]}.{os.getpid()}.{id(upload):x}"
    earlier: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() or target.is_symlink():
            raise IsADirectoryError(rel)
        tmp = target.with_name(stem + ".part")
        with tmp.open("wb") as out:
            while chunk := await upload.read(1 << 20):
                out.write(chunk)
        if target.is_file():
            earlier = target.with_name(stem + ".prev")
            os.replace(target, earlier)
        os.replace(tmp, target)
    except (NotADirectoryError, IsADirectoryError, FileExistsError):
        raise Conflict(
            f"upload {rel!r} clashes with a folder or file of that name uploaded earlier to this collection; "
            "rename it, or delete the other document first"
        ) from None
    finally:
        await upload.close()
    return earlier


def _report_for(report: dict[str, Any], rels: set[str], root: Path, data_dir: Path) -> dict[str, Any]:
    """The ingest report about this upload's files only, with no server paths in its messages."""

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for path, shown in ((str(root) + os.sep, ""), (str(root), "."), (str(data_dir), "<data_dir>")):
                value = value.replace(path, shown)
            return value
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        return value

    out = dict(report)
    for key, items in report.items():
        if key in ("added", "updated", "unchanged", "partial"):
            out[key] = [s for s in items if s in rels]
        elif key in ("failed", "skipped", "warnings"):
            out[key] = [item for item in items if item.get("source") in rels]
    return scrub(out)


@router.get("/collections/{name}/documents/{source:path}", dependencies=[Read], response_model=Document)
def documents_get(name: str, source: str, ctx: Ctx) -> dict[str, Any]:
    """One document with its metadata (the source path may contain slashes)."""
    return ctx.search.get_document(name, source).to_dict()


@router.delete("/collections/{name}/documents/{source:path}", dependencies=[Write], response_model=DocumentDeleted)
def documents_delete(name: str, source: str, ctx: Ctx) -> dict[str, Any]:
    """Delete one document from a collection (needs the API token)."""
    ctx.ingest.delete_document(name, source)
    return {"deleted": source, "collection": name}


@router.get("/chunks/{chunk_id}", dependencies=[Read], response_model=ChunkContext)
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
