"""``GET /v1/access``: what the caller's bearer token allows, and what the server asks of callers.

The web page uses it to ask for a token once and to show write controls only when the token may write; any client
may use it the same way.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from kaynak.access import NOBODY
from kaynak.errors import KaynakError
from kaynak.vocabulary import UI_LANGUAGES

from ..models import Access
from ..team import caller, team_of

router = APIRouter()


@router.get("/v1/access", tags=["web"], summary="What the bearer token allows", response_model=Access)
def access(request: Request) -> dict[str, Any]:
    """Whether the caller may read and write, whether reads need a token on this server, whether writes are
    enabled at all (`KAYNAK_API_TOKEN` set or tokens created), and for a token its name and, per right
    (`read`, `write`, `admin`), `"*"` or its collections. The web page uses it to ask for a token once."""
    team = team_of(request.scope)
    try:
        who = caller(request.scope)
    except KaynakError:  # a revoked or expired token, too many wrong ones: it allows nothing
        who = NOBODY
    return {
        "read": who.any("read"),
        "write": who.any("write"),
        "read_token_required": not team.reads_open(),
        "writes_enabled": team.writes_enabled(),
        "languages": list(UI_LANGUAGES),
        "token": who.name if who.kind in ("token", "legacy") else None,
        "scopes": who.describe(),
    }
