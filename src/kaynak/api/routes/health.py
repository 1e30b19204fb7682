"""``GET /v1/health``: database and model status; 200 when usable, 503 otherwise. Open to everyone."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from kaynak import __version__
from kaynak.context import Context
from kaynak.errors import DatabaseUnavailable, KaynakError

from ..deps import get_context
from ..problems import hide_paths

router = APIRouter(prefix="/v1", tags=["health"])


@router.get("/health", responses={503: {"description": "Database or model unusable: the body says which"}})
def health(ctx: Annotated[Context, Depends(get_context)]) -> JSONResponse:
    """Database and model status within about a second; 200 when usable, 503 (with `Retry-After`) otherwise.

    `database` says whether the primary answers (and each read replica, with its lag); while it is away the
    server restarts an embedded database by itself and `database.error` says what is wrong. Does not load a model.
    """
    settings = ctx.settings
    body: dict[str, Any] = {"status": "ok", "version": __version__}
    headers: dict[str, str] = {}
    try:
        db = ctx.store.health(timeout=1.0)
        if db.get("ok"):
            body["database"] = {"ok": True, **ctx.store.server_info(), "replicas": db.get("replicas", [])}
        else:
            primary = db.get("primary") or {}
            body["database"] = {"ok": False, "error": primary.get("error") or "the database does not answer",
                                "replicas": db.get("replicas", [])}
    except KaynakError as err:
        body["database"] = {"ok": False, "error": err.message}
        if err.retry_after:
            headers["Retry-After"] = str(err.retry_after)
    if not body["database"]["ok"]:
        body["status"] = "unavailable"
        headers.setdefault("Retry-After", str(DatabaseUnavailable.retry_after or 2))
    model: dict[str, Any] = {"name": settings.embedder}
    try:
        from kaynak.embeddings import embedder_dim

        model.update(ok=True, dim=embedder_dim(settings.embedder))
    except KaynakError as err:
        model.update(ok=False, error=err.message)
        body["status"] = "unavailable"
    model["reranker"] = settings.reranker
    body["model"] = model
    if not body["database"]["ok"]:
        body["database"]["error"] = hide_paths(str(body["database"]["error"]), settings.data_dir)
    return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503, headers=headers or None)
