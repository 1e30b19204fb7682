"""Team access in the database: access tokens (only their SHA-256 is stored), the audit trail, search counts.

Tables from migration 13 (``sql/0013_team_access.sql``). A token is looked up by the hash of the text a client
sends; the plaintext never reaches the database. Rows are never deleted: a revoked token keeps its row,
so audit entries made with it still name it.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from kaynak.errors import Conflict, NotFound
from kaynak.store.base import StoreBase


@dataclass(frozen=True)
class TokenRecord:
    """One access token as stored (never its secret)."""

    id: int
    name: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    admin: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    expired: bool = False

    @property
    def active(self) -> bool:
        return self.revoked_at is None and not self.expired

    def to_dict(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:  # ISO 8601 UTC, the timestamp format of every face
            return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if t is not None else None

        return {
            "name": self.name,
            "read": list(self.read),
            "write": list(self.write),
            "admin": list(self.admin),
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "revoked_at": iso(self.revoked_at),
            "last_used_at": iso(self.last_used_at),
            "status": "revoked" if self.revoked_at else "expired" if self.expired else "active",
        }


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    action: str
    token: str | None
    client: str | None
    collection: str | None
    sources: tuple[str, ...]
    request_id: str | None
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "action": self.action,
            "token": self.token,
            "client": self.client,
            "collection": self.collection,
            "sources": list(self.sources),
            "request_id": self.request_id,
            "detail": self.detail,
        }


_TOKEN_COLS = (
    "id, name, read_scope, write_scope, admin_scope, created_at, expires_at, revoked_at, last_used_at, "
    "coalesce(expires_at <= now(), false)"
)


def _token(r: Sequence[Any]) -> TokenRecord:
    return TokenRecord(int(r[0]), r[1], tuple(r[2]), tuple(r[3]), tuple(r[4]), r[5], r[6], r[7], r[8], bool(r[9]))


class AccessMixin(StoreBase):
    """Access tokens, the audit trail and per-token search counts."""

    # ------------------------------------------------------------------ tokens
    def create_token(
        self,
        name: str,
        secret_sha256: bytes,
        read: Iterable[str],
        write: Iterable[str],
        admin: Iterable[str],
        expires_at: datetime | None,
    ) -> TokenRecord:
        """Store a new token by its hash; Conflict when an unrevoked token already has ``name``."""
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                "INSERT INTO access_tokens (name, secret_sha256, read_scope, write_scope, admin_scope, expires_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING " + _TOKEN_COLS,
                (name, secret_sha256, sorted(read), sorted(write), sorted(admin), expires_at),
            ).fetchone()
        if row is None:
            raise Conflict(f"a token named {name!r} exists; revoke it first (kaynak tokens revoke {name})")
        return _token(row)

    def token_by_secret_hash(self, secret_sha256: bytes) -> TokenRecord | None:
        """The token whose secret hashes to ``secret_sha256`` (revoked and expired ones too), else None. The
        stored hash is compared again in constant time after the indexed lookup."""
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_TOKEN_COLS}, secret_sha256 FROM access_tokens WHERE secret_sha256 = %s", (secret_sha256,)
            ).fetchone()
        if row is None or not hmac.compare_digest(bytes(row[-1]), secret_sha256):
            return None
        return _token(row[:-1])

    def list_tokens(self, include_revoked: bool = False) -> list[TokenRecord]:
        where = "" if include_revoked else "WHERE revoked_at IS NULL"
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_TOKEN_COLS} FROM access_tokens {where} ORDER BY name, id").fetchall()
        return [_token(r) for r in rows]

    def revoke_token(self, name: str) -> TokenRecord:
        """Revoke the unrevoked token called ``name`` (NotFound when there is none)."""
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                f"UPDATE access_tokens SET revoked_at = now() WHERE name = %s AND revoked_at IS NULL "
                f"RETURNING {_TOKEN_COLS}",
                (name,),
            ).fetchone()
        if row is None:
            raise NotFound(f"no active token named {name!r}; `kaynak tokens list` shows them")
        return _token(row)

    def tokens_exist(self) -> bool:
        """Whether any token was ever created here (revoked ones count: revoking the last token does not open the
        server's reads to everyone again)."""
        with self._conn() as conn:
            row = conn.execute("SELECT EXISTS (SELECT 1 FROM access_tokens)").fetchone()
        return bool(row and row[0])

    def touch_token(self, token_id: int) -> None:
        """Record that the token was used now (callers throttle this)."""
        with self._conn() as conn, conn.transaction():
            conn.execute("UPDATE access_tokens SET last_used_at = now() WHERE id = %s", (token_id,))

    # ------------------------------------------------------------------ audit trail
    def record_audit(
        self,
        action: str,
        token: str | None,
        client: str | None,
        collection: str | None = None,
        sources: Sequence[str] = (),
        request_id: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        with self._conn() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO audit_log (action, token_name, client, collection, sources, request_id, detail) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (action, token, client, collection, list(sources), request_id, Jsonb(detail or {})),
            )

    def audit_entries(
        self, since: datetime | None = None, collection: str | None = None, limit: int = 1000
    ) -> list[AuditEntry]:
        """Audit entries, oldest first: the newest ``limit`` since ``since``, of ``collection`` if given."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT * FROM (SELECT id, at, action, token_name, client, collection, sources, request_id, detail "
                "FROM audit_log WHERE (%(since)s::timestamptz IS NULL OR at >= %(since)s) "
                "AND (%(col)s::text IS NULL OR collection = %(col)s) ORDER BY at DESC, id DESC LIMIT %(limit)s) x "
                "ORDER BY at, id",
                {"since": since, "col": collection, "limit": limit},
            ).fetchall()
        return [AuditEntry(int(r[0]), r[1], r[2], r[3], r[4], r[5], tuple(r[6] or ()), r[7], r[8] or {}) for r in rows]

    # ------------------------------------------------------------------ search counts (KAYNAK_AUDIT_SEARCHES)
    def count_search(self, token: str) -> None:
        """One more search by ``token`` today (no query text is kept)."""
        with self._conn() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO token_search_counts (token_name, day, searches) VALUES (%s, current_date, 1) "
                "ON CONFLICT (token_name, day) DO UPDATE SET searches = token_search_counts.searches + 1",
                (token,),
            )

    def search_counts(self, since: datetime | None = None) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT token_name, day, searches FROM token_search_counts "
                "WHERE %(since)s::timestamptz IS NULL OR day >= %(since)s::date ORDER BY day, token_name",
                {"since": since},
            ).fetchall()
        return [{"token": r[0], "day": r[1].isoformat(), "searches": int(r[2])} for r in rows]
