"""``GET /v1/health``: database and model status; 200 when usable, 503 otherwise. Open to everyone."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from kaynak import __version__
from kaynak.context import Context
from kaynak.errors import DatabaseUnavailable

from ..deps import get_context
from ..models import Health
from ..problems import hide_paths

router = APIRouter(prefix="/v1", tags=["health"])


@router.get(
    "/health",
    response_model=Health,
    responses={503: {"model": Health, "description": "Database or model unusable: the body says which"}},
)
def health(ctx: Annotated[Context, Depends(get_context)]) -> JSONResponse:
    """Database and model status within about a second; 200 when usable, 503 (with `Retry-After`) otherwise.

    `database` says whether the primary answers (and each read replica, with its lag); while it is away the
    server restarts an embedded database by itself and `database.error` says what is wrong. Does not load a model.
    """
    settings = ctx.settings
    body: dict[str, Any] = {"status": "ok", "version": __version__}
    headers: dict[str, str] = {}
    database = ctx.database_status(timeout=1.0)
    retry_after = database.pop("retry_after", None)
    if retry_after:
        headers["Retry-After"] = str(retry_after)
    body["database"] = database
    if not database["ok"]:
        body["status"] = "unavailable"
        headers.setdefault("Retry-After", str(DatabaseUnavailable.retry_after or 2))
    model = ctx.model_status()
    if not model["ok"]:
        body["status"] = "unavailable"
    model["reranker"] = settings.reranker
    body["model"] = model
    if not body["database"]["ok"]:
        body["database"]["error"] = hide_paths(str(body["database"]["error"]), settings.data_dir)
    return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503, headers=headers or None)
