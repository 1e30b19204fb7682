"""``/v1/collections``: list, create, show and delete collections (writes need the API token)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from kaynak.context import Context

from ..deps import Read, Write, get_context
from ..models import Collection, CollectionDeleted, CollectionIn, CollectionList
from ..problems import responses

router = APIRouter(prefix="/v1", tags=["collections"], responses=responses(400, 401, 403, 404, 408, 409, 413, 422, 503))
Ctx = Annotated[Context, Depends(get_context)]


@router.get("/collections", dependencies=[Read], response_model=CollectionList)
def collections_list(ctx: Ctx) -> dict[str, Any]:
    """All collections with language, embedder, dimension and document / chunk counts; `document_languages`:
    the languages detected in its documents (e.g. `["english", "turkish"]`), whatever its search `language`."""
    langs = ctx.search.document_languages()
    return {
        "collections": [
            {**c.to_dict(), "document_languages": langs.get(c.name, [])} for c in ctx.search.list_collections()
        ]
    }


@router.post(
    "/collections", dependencies=[Write], status_code=201, response_model=Collection, response_model_exclude_unset=True
)
def collections_create(body: CollectionIn, ctx: Ctx) -> dict[str, Any]:
    """Create an empty collection (needs the API token). 409 if it exists."""
    return ctx.ingest.create_collection(body.name, body.language, body.embedder).to_dict()


@router.get("/collections/{name}", dependencies=[Read], response_model=Collection)
def collections_get(name: str, ctx: Ctx) -> dict[str, Any]:
    """One collection with its counts and `document_languages`."""
    col = ctx.search.get_collection(name)
    return {**col.to_dict(), "document_languages": ctx.search.document_languages([name]).get(name, [])}


@router.delete("/collections/{name}", dependencies=[Write], response_model=CollectionDeleted)
def collections_delete(name: str, ctx: Ctx) -> dict[str, Any]:
    """Delete a collection with all its documents (needs the API token)."""
    ctx.ingest.delete_collection(name)
    return {"deleted": name}
