"""``/v1/collections/{name}/status``: whether a collection is current with its folders: remembered
folders and their last sync, files pending, files failing with reasons, and whether a watcher keeps it current."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from kaynak.context import Context
from kaynak.store.scoped import shows_paths

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

    store = ctx.search.store
    found = await run_in_threadpool(status, store, name)
    if not shows_paths(store, name):  # the server's folders only to admins of the collection: their last name
        found["roots"] = [{**r, "root": PurePath(r["root"]).name} for r in found["roots"]]
    return found
