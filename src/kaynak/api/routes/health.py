"""``GET /v1/health``: database and model status; 200 when usable, 503 otherwise. Open to everyone."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from kaynak import __version__
from kaynak.context import Context
from kaynak.errors import KaynakError

from ..deps import get_context

router = APIRouter(prefix="/v1", tags=["health"])


@router.get("/health")
def health(ctx: Annotated[Context, Depends(get_context)]) -> JSONResponse:
    """Database and model status; 200 when usable, 503 otherwise. Does not load a model."""
    settings = ctx.settings
    body: dict[str, Any] = {"status": "ok", "version": __version__}
    try:
        info = ctx.store.server_info()
        body["database"] = {"ok": True, **info}
        if settings.read_database_urls:  # each read replica: ok, lag_bytes, lag_seconds, in_rotation, schema_behind
            body["database"]["replicas"] = ctx.store.health(timeout=1.0)["replicas"]
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
