"""``/v1/collections/{name}/status``: whether a collection is current with its folders: remembered
folders and their last sync, files pending, files failing with reasons, and whether a watcher keeps it current."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from kaynak.context import Context

from ..deps import Read, get_context
from ..models import CollectionStatus

router = APIRouter(prefix="/v1", tags=["collections"])
Ctx = Annotated[Context, Depends(get_context)]


@router.get("/collections/{name}/status", dependencies=[Read], response_model=CollectionStatus)
async def collection_status(name: str, ctx: Ctx) -> dict[str, Any]:
    """Sync status: `roots` (folder, globs, status ok | missing, last_sync_at), `last_sync_at`, `files_pending`
    (new, changed or deleted on disk and not yet indexed; found by a stat walk, nothing read), `pending` (up to
    100 sources), `files_failing` and `failing` (source, reason, failed_at), `watching` and `watchers`. 404 for an
    unknown collection."""
    from kaynak.ingest.sync import collection_status as status

    return await run_in_threadpool(status, ctx.search.store, name)
