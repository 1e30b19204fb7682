"""Who may do what: the ``Access`` a caller has (per right, the collections it may touch) and the token secrets.

A token's scope is, for each right (``read``, ``write``, ``admin``), a set of collection names or ``*`` (every
collection, present and future). ``LOCAL`` is the full access of the person at the machine (the CLI, stdio MCP);
``KAYNAK_API_TOKEN`` has the same, ``KAYNAK_READ_TOKEN`` reads everything (docs/adr/0024-team-access.md).

Token secrets: ``kyk_`` followed by 43 URL-safe characters (32 random bytes). Only their SHA-256 is stored; the
plaintext is shown once, by ``kaynak tokens create``, and is never logged. Pure helpers here, no I/O.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from kaynak.errors import UsageError

RIGHTS = ("read", "write", "admin")
ALL = "*"
TOKEN_PREFIX = "kyk_"
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_DURATION = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$", re.IGNORECASE)
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

Scope = frozenset[str]  # collection names; containing "*" means every collection


@dataclass(frozen=True)
class Access:
    """What one caller may do: per right, the collections in scope (``*`` = all). ``name`` names the caller in
    the audit trail and logs (a token's name; ``KAYNAK_API_TOKEN``; None when anonymous); ``kind`` is ``local``,
    ``legacy``, ``token`` or ``anonymous``."""

    name: str | None
    kind: str
    read: Scope = frozenset()
    write: Scope = frozenset()
    admin: Scope = frozenset()
    scopes: dict[str, Scope] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Rights are nested: whoever may delete a collection (admin) may change it (write), and may read it.
        write = _union(self.write, self.admin)
        read = _union(self.read, write)
        object.__setattr__(self, "write", write)
        object.__setattr__(self, "read", read)
        object.__setattr__(self, "scopes", {"read": read, "write": write, "admin": self.admin})

    def allows(self, right: str, collection: str) -> bool:
        """Whether this caller has ``right`` on ``collection``."""
        scope = self.scopes[right]
        return ALL in scope or collection in scope

    def any(self, right: str) -> bool:
        """Whether this caller has ``right`` on at least one collection."""
        return bool(self.scopes[right])

    def everything(self, right: str) -> bool:
        return ALL in self.scopes[right]

    def visible(self, right: str = "read") -> frozenset[str] | None:
        """The collections this caller may see for ``right``: None means all of them."""
        scope = self.scopes[right]
        return None if ALL in scope else scope

    def describe(self) -> dict[str, list[str] | str]:
        """Per right, ``"*"`` or the sorted names (``/v1/access``, ``kaynak tokens list``)."""
        return {r: ALL if ALL in s else sorted(s) for r, s in self.scopes.items()}


def _union(a: Scope, b: Scope) -> Scope:
    return EVERYTHING if ALL in a or ALL in b else frozenset(a | b)


EVERYTHING: Scope = frozenset({ALL})
LOCAL = Access("local", "local", EVERYTHING, EVERYTHING, EVERYTHING)
API_TOKEN = Access("KAYNAK_API_TOKEN", "legacy", EVERYTHING, EVERYTHING, EVERYTHING)
READ_TOKEN = Access("KAYNAK_READ_TOKEN", "legacy", EVERYTHING)
OPEN = Access(None, "anonymous", EVERYTHING)  # reads open: no read token configured and no token created
NOBODY = Access(None, "anonymous")


def new_secret() -> str:
    """A fresh token: ``kyk_`` + 32 random bytes, URL-safe base64 (256 bits of entropy)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def secret_hash(secret: str) -> bytes:
    """SHA-256 of the token text: what the database stores and looks tokens up by."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def looks_like_token(text: str) -> bool:
    return text.startswith(TOKEN_PREFIX) and 20 <= len(text) <= 200


def check_token_name(name: str) -> str:
    if not TOKEN_NAME.match(name or ""):
        raise UsageError(
            f"invalid token name {name!r}: use 1–64 letters, digits, '.', '_', '@' or '-', starting with a letter "
            "or digit",
            "name",
        )
    return name


def parse_scope(text: str | None, right: str) -> Scope:
    """``"hukuk,ik"`` → ``{"hukuk", "ik"}``; ``"*"`` → every collection; None or empty → none."""
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    for n in names:
        if len(n) > 200 or "\x00" in n:
            raise UsageError(f"invalid collection name {n[:40]!r} in --{right}", right)
    return EVERYTHING if ALL in names else frozenset(names)


def parse_expiry(text: str | None, now: datetime | None = None) -> datetime | None:
    """``90d``, ``12h``, ``30m``, ``2w`` from now, or an ISO date/time; None or ``never`` → no expiry."""
    if text is None or text.strip().lower() in ("", "never"):
        return None
    now = now or datetime.now(UTC)
    m = _DURATION.match(text)
    if m:
        seconds = int(m.group(1)) * _UNITS[m.group(2).lower()]
        if seconds <= 0:
            raise UsageError(f"--expires {text!r} is not in the future", "expires")
        return now + timedelta(seconds=seconds)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--expires {text!r} is neither a duration (90d, 12h, 30m, 2w) nor a date (2027-01-31)", "expires"
        ) from None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    if when <= now:
        raise UsageError(f"--expires {text!r} is in the past", "expires")
    return when


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """``kaynak audit --since``: a duration back from now (``7d``, ``12h``) or an ISO date/time."""
    if text is None or not text.strip():
        return None
    now = now or datetime.now(UTC)
    m = _DURATION.match(text)
    if m:
        return now - timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2).lower()])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since {text!r} is neither a duration (7d, 12h) nor a date (2027-01-31)", "since") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
