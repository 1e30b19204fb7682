"""Serving a team: who each request is (its ``Access``), rate budgets, the caller's view of the services, the audit
trail of writes, request ids and one JSON log line per request (docs/adr/0024-team-access.md).

``TeamGate`` is the app's outermost ASGI layer. For every HTTP request it

1. gives the request an id of its own (a sane client ``X-Request-ID`` is kept beside it as ``client_request_id``
   and echoed as ``X-Client-Request-ID``), returned in ``X-Request-ID`` and added to every problem+json body;
2. checks Host and Origin (``kaynak.api.limits.check_host``) before it looks at any token, so a request from a
   DNS-rebinding page or another site costs no one's budget; refuses two ``Authorization`` headers;
3. resolves the caller's ``Access`` from ``Authorization: Bearer`` (``Team.resolve``): ``KAYNAK_API_TOKEN`` (all
   rights, everywhere), ``KAYNAK_READ_TOKEN`` (reads everywhere), a token of ``kaynak tokens create`` (looked up
   by its SHA-256; revoked and expired ones refused), or none (reads open only while no read token is set and no
   token was ever created). A valid token always passes; wrong tokens count against the client address, and
   past its budget get 429, answered a second late (docs/adr/0037-team-leaks.md);
4. spends the caller's search or upload budget (429 with ``Retry-After`` when it is spent): searches, MCP
   requests and event streams (at most ``MCP_STREAMS_PER_CALLER`` open, each closed after ``MCP_STREAM_MAX_S``)
   and PDF page images share the search budget;
5. after the answer: request metrics (``kaynak.api.observe``), one JSON line on the ``kaynak.requests`` log (never
   the query string, never a token; control, separator and bidi characters escaped) and, for a refused write, an
   audit entry (``refused``). API answers carry ``Cache-Control: no-store``.

Routes reach the services only through ``get_context`` (``kaynak.api.deps``), which hands out a ``CallerContext``:
its ``search`` reads through a store view limited to the caller's read scope (``kaynak.store.scoped``), its
``ingest`` checks the write scope and records each write in the audit trail. No route can forget the scope.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kaynak.access import (
    API_TOKEN,
    EVERYTHING,
    NOBODY,
    OPEN,
    READ_TOKEN,
    Access,
    looks_like_token,
    secret_hash,
)
from kaynak.errors import AuthError, CollectionNotFound, KaynakError, RateLimited, UsageError
from kaynak.store.scoped import scoped_missing, scoped_view

from .observe import METRICS, route_label
from .problems import PROBLEM, error_response

if TYPE_CHECKING:
    from kaynak.context import Context
    from kaynak.ingest import IngestReport

ACCESS = "kaynak.access"  # scope key: the caller's Access, or the KaynakError resolving it raised
REQUEST_ID = "kaynak.request_id"
REQUEST_ID_HEADER = "x-request-id"
CLIENT_REQUEST_ID = "kaynak.client_request_id"  # scope key: the client's own X-Request-ID, kept beside the server's
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
READ_POSTS = frozenset({"/v1/search", "/v1/highlights", "/mcp"})  # POSTs that read
WRONG_TOKEN_DELAY_S = 1.0  # a wrong token past its address's budget is answered (429) this much later
REFUSALS_AUDITED_PER_MIN = 60  # refused writes written to the audit trail per address and minute
MCP_STREAM_MAX_S = 300.0  # a GET /mcp event stream is closed after this long (clients reconnect)
MCP_STREAMS_PER_CALLER = 4
MIN_SECRET_CHARS = 24  # configured tokens shorter than this are warned about at start
# Paths resolved only when asked (never before): they answer without a caller, even while the database is away.
LAZY_PATHS = frozenset({"/v1/health", "/metrics", "/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect", "/"})
LOOPBACK_CLIENTS = frozenset({"127.0.0.1", "::1", "testclient"})
AUTO_SEARCHES_PER_MIN = 120
AUTO_UPLOADS_PER_MIN = 30
TOUCH_EVERY_S = 60.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SANE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_UPLOAD = re.compile(r"^/v1/collections/[^/]+/documents/?$")
_PAGE_IMAGE = re.compile(r"^/v1/documents/[^/]+/pages/[^/]+/image/?$")

log = logging.getLogger("kaynak.api")
request_log = logging.getLogger("kaynak.requests")


def bearer(headers: Any) -> str | None:
    """The bearer token of ``Authorization``, or None."""
    header = headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def matches(token: str | None, *expected: str | None) -> bool:
    """Constant-time comparison against each configured token."""
    import hmac

    return token is not None and any(
        e is not None and hmac.compare_digest(token.encode(), e.encode()) for e in expected
    )


def client_host(scope: Scope) -> str:
    return str((scope.get("client") or ("",))[0] or "")


def is_loopback(scope: Scope, headers: dict[str, str]) -> bool:
    """A request from this machine that no proxy forwarded (a proxy on the same host adds X-Forwarded-For)."""
    return client_host(scope) in LOOPBACK_CLIENTS and "x-forwarded-for" not in headers and "forwarded" not in headers


class Buckets:
    """Token buckets per key: ``per_min`` requests a minute, refilled continuously, bursts up to ``per_min``."""

    def __init__(self, max_keys: int = 100_000) -> None:
        self._state: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self.max_keys = max_keys

    def take(self, key: str, per_min: int, cost: float = 1.0) -> float:
        """Spend ``cost`` from ``key``'s bucket: 0 when allowed, else the seconds until it would be."""
        now = time.monotonic()
        rate = per_min / 60.0
        with self._lock:
            level, last = self._state.get(key, (float(per_min), now))
            level = min(float(per_min), level + (now - last) * rate)
            if level >= cost:
                self._state[key] = (level - cost, now)
                return 0.0
            self._state[key] = (level, now)
            if len(self._state) > self.max_keys:  # forget the oldest keys (their buckets are full again anyway)
                for k in sorted(self._state, key=lambda k: self._state[k][1])[: self.max_keys // 10]:
                    del self._state[k]
            return (cost - level) / rate

    def blocked(self, key: str, per_min: int) -> float:
        """Seconds until ``key`` could spend one more, without spending (0: it could now)."""
        now = time.monotonic()
        with self._lock:
            level, last = self._state.get(key, (float(per_min), now))
        level = min(float(per_min), level + (now - last) * per_min / 60.0)
        return 0.0 if level >= 1.0 else (1.0 - level) / (per_min / 60.0)


class Team:
    """Per app: resolves callers, keeps their budgets, knows whether tokens exist (``app.state.team``)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.settings = context.settings
        self.failures = Buckets()
        self.budgets = Buckets()
        self._tokens_seen = False
        self._checked_at = -1e9
        self._touched: dict[int, float] = {}
        for setting, value in (
            ("KAYNAK_API_TOKEN", self.settings.api_token),
            ("KAYNAK_READ_TOKEN", self.settings.read_token),
        ):
            if value and len(value) < MIN_SECRET_CHARS:
                log.warning(
                    "%s is %d characters long: a token a person chose can be guessed; use at least %d random "
                    "characters (or kaynak tokens create)",
                    setting,
                    len(value),
                    MIN_SECRET_CHARS,
                )

    # ------------------------------------------------------------------ who is calling
    def tokens_exist(self) -> bool:
        """Whether a token was ever created here: once true, it stays true for this process; a negative answer is
        asked again after two seconds (a token made meanwhile by ``kaynak tokens create`` closes open reads)."""
        if self._tokens_seen:
            return True
        now = time.monotonic()
        if now - self._checked_at < 2.0:
            return False
        found = self.context.store.tokens_exist()
        self._checked_at = now
        self._tokens_seen = found
        return found

    def reads_open(self) -> bool:
        return not self.settings.read_token and not self.tokens_exist()

    def writes_enabled(self) -> bool:
        return bool(self.settings.api_token) or self.tokens_exist()

    def quick(self, headers: dict[str, str]) -> Access | None:
        """The caller's Access when it is known without the database (the configured tokens, or no token once the
        answer about tokens is cached), else None: ``resolve`` then runs in a worker thread."""
        s = self.settings
        token = bearer(headers)
        if token is None:
            if s.read_token or self._tokens_seen:
                return NOBODY
            return OPEN if time.monotonic() - self._checked_at < 2.0 else None
        if s.api_token and matches(token, s.api_token):
            return API_TOKEN
        if s.read_token and matches(token, s.read_token):
            return READ_TOKEN
        return None

    def resolve(self, headers: dict[str, str], client: str, method: str = "GET") -> Access:
        """The caller's Access (see the module docstring). Raises RateLimited when the address sent too many wrong
        tokens, AuthError for a revoked or expired token; a wrong token gives an Access without rights (reads
        stay open where they are open to everyone).

        A wrong token counts against the address when it could be a guess that matters: one shaped like a
        ``kaynak tokens`` token, any token while reads are closed, or one sent with a write. A stale token a page
        keeps sending on open reads does not (it was ignored before tokens existed, and still is)."""
        s = self.settings
        token = bearer(headers)
        if token is None:
            return OPEN if self.reads_open() else NOBODY
        if s.api_token and matches(token, s.api_token):
            return API_TOKEN
        if s.read_token and matches(token, s.read_token):
            return READ_TOKEN
        guarded = bool(s.api_token or s.read_token) or self.tokens_exist()
        per_min = s.auth_failures_per_min
        # A valid token always passes, whatever wrong ones its address sent (docs/adr/0035-team-leaks.md): a
        # lockout before the check let any local process or DNS-rebinding page lock every client out.
        record = self.context.store.token_by_secret_hash(secret_hash(token)) if looks_like_token(token) else None
        if record is None or not record.active:
            if guarded and (looks_like_token(token) or not self.reads_open() or method not in SAFE_METHODS):
                METRICS.inc("kaynak_auth_failures_total")
                wait = self.failures.take(client, per_min)
                if wait > 0:  # past the address's budget: 429 (answered late by the gate), the token unsaid
                    METRICS.inc("kaynak_rate_limited_total", {"budget": "auth"})
                    raise RateLimited(
                        f"too many wrong tokens from this address ({per_min} a minute, "
                        f"KAYNAK_AUTH_FAILURES_PER_MIN); try again in {wait:.0f} s",
                        retry_after=int(wait) + 1,
                    )
            if record is not None:
                why = "was revoked" if record.revoked_at else "has expired"
                raise AuthError(f"this token ({record.name}) {why}; ask for a new one (kaynak tokens create)")
            return Access(None, "invalid", OPEN.read if self.reads_open() else frozenset())
        self._touch(record.id)
        return Access(record.name, "token", frozenset(record.read), frozenset(record.write), frozenset(record.admin))

    def _touch(self, token_id: int) -> None:
        now = time.monotonic()
        if now - self._touched.get(token_id, -1e9) >= TOUCH_EVERY_S:
            self._touched[token_id] = now
            try:
                self.context.store.touch_token(token_id)
            except KaynakError as err:  # last use is a convenience; never fail a request over it
                log.warning("could not record a token's last use: %s", err)

    # ------------------------------------------------------------------ budgets
    def budget_of(self, method: str, path: str) -> str | None:
        if path == "/v1/search" or (path == "/mcp" and method in ("POST", "GET")):
            return "search"
        if method == "GET" and _PAGE_IMAGE.match(path):  # drawing a PDF page costs more CPU than a search
            return "search"
        if method == "POST" and _UPLOAD.match(path):
            return "upload"
        return None

    def per_min(self, budget: str) -> int:
        """The budget's requests a minute (0: unlimited): as set, else the defaults once tokens exist."""
        s = self.settings
        given = s.rate_search_per_min if budget == "search" else s.rate_upload_per_min
        if given is not None:
            return given
        if not self.tokens_exist():
            return 0  # the loopback-only, tokenless setup: no limits unless asked for
        return AUTO_SEARCHES_PER_MIN if budget == "search" else AUTO_UPLOADS_PER_MIN

    def spend(self, budget: str, access: Access, client: str) -> None:
        limit = self.per_min(budget)
        if limit <= 0:
            return
        key = f"{budget}:token:{access.name}" if access.name else f"{budget}:address:{client}"
        wait = self.budgets.take(key, limit)
        if wait > 0:
            METRICS.inc("kaynak_rate_limited_total", {"budget": budget})
            who = f"token {access.name}" if access.name else "this address"
            setting = "KAYNAK_RATE_SEARCH_PER_MIN" if budget == "search" else "KAYNAK_RATE_UPLOAD_PER_MIN"
            raise RateLimited(
                f"{who} has used its {budget} budget ({limit} a minute, {setting}); try again in {wait:.1f} s",
                retry_after=int(wait) + 1,
            )


def caller_key(access: Access, client: str = "") -> str:
    """Whose query vectors these are: the token's name (``KAYNAK_API_TOKEN`` and the like for the configured
    ones), else the address of an anonymous caller."""
    return f"token:{access.name}" if access.name else f"{access.kind}:{client}"


def team_of(scope: Scope) -> Team:
    return scope["app"].state.team


def caller(scope: Scope) -> Access:
    """The request's Access (resolved now if the gate left it for later); raises what resolving raised."""
    found = scope.get(ACCESS)
    if found is None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            found = team_of(scope).resolve(headers, client_host(scope), scope.get("method", "GET"))
        except KaynakError as err:
            found = err
        scope[ACCESS] = found
    if isinstance(found, KaynakError):
        raise found
    return found


# ---------------------------------------------------------------------------------------------- checks
def check_read(access: Access) -> None:
    """Refuse a caller with no read right at all (the collection-level check is the store view's)."""
    if access.any("read"):
        return
    if access.kind == "token":
        raise AuthError(f"token {access.name} may not read; ask for a token with --read", status=403)
    raise AuthError(
        "reads need Authorization: Bearer <token> on this server (KAYNAK_READ_TOKEN, or a token from "
        "kaynak tokens create)"
    )


def check_write(access: Access, writes_enabled: bool) -> None:
    """Refuse a caller with no write right at all, with the answers of a server without team tokens."""
    if access.any("write"):
        return
    if access.kind == "token":
        raise AuthError(f"token {access.name} may not write; ask for a token with --write", status=403)
    if not writes_enabled:
        raise AuthError(
            "write endpoints are disabled: set KAYNAK_API_TOKEN (or api_token in kaynak.toml) when starting "
            "`kaynak serve`, or create a token with `kaynak tokens create`, then send Authorization: Bearer <token>",
            status=403,
        )
    if access.kind == "anonymous":
        raise AuthError("this endpoint writes: send Authorization: Bearer <KAYNAK_API_TOKEN or your token>")
    raise AuthError("wrong API token: send Authorization: Bearer <KAYNAK_API_TOKEN or your token>", status=403)


def check_collection(access: Access, right: str, name: str, context: Context) -> None:
    """``right`` on collection ``name``: a collection the caller cannot even read answers exactly like a missing
    one (404 listing only the collections it may read); one it may read but not change is 403."""
    if access.allows(right, name):
        return
    if access.allows("read", name):
        raise AuthError(f"token {access.name} may read collection {name!r} but not {_verb(right)} it", status=403)
    raise scoped_missing(context.store, access.visible("read") or frozenset(), name)


def _verb(right: str) -> str:
    return {"write": "change", "admin": "delete", "read": "read"}[right]


# ---------------------------------------------------------------------------------------------- the caller's context
class CallerContext:
    """What a route gets from ``get_context``: the app's Context as this caller may use it.

    ``search`` sees only the collections the caller may read; ``ingest`` checks the write (and, for deleting a
    collection, admin) scope and records every write in the audit trail. Everything else is the app's Context.
    The caller is resolved on first use, so a route that needs none (health) never waits for it.
    """

    def __init__(self, base: Context, scope: Scope) -> None:
        self._base = base
        self._scope = scope
        self.client = client_host(scope)
        self.request_id: str | None = scope.get(REQUEST_ID)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    @property
    def access(self) -> Access:
        return caller(self._scope)

    @cached_property
    def search(self) -> Any:
        """The search service seeing only the caller's collections, the server's paths only where it is an admin
        (paths name the server's folders; readers get documents without their ``origin``), and query vectors
        cached for this caller alone (a shared cache let any token time what others searched)."""
        access = self.access
        visible, paths = access.visible("read"), access.visible("admin")
        service = self._base.search
        view = copy.copy(service)
        view.query_vectors = service.query_vectors.partition(caller_key(access, self.client))
        view.store = scoped_view(service.store, visible, paths)
        return view

    @cached_property
    def ingest(self) -> AuditedIngest:
        return AuditedIngest(self)


class AuditedIngest:
    """The write side for one caller: each write checked against the scope, then recorded in the audit trail.

    Errors say only what the caller may see: a collection in its scope that does not exist answers with the list
    of the collections it may read (the store's own message lists every one). A refusal (out of scope, a right it
    lacks, an embedder it may not choose) is recorded in the audit trail too (``refused``)."""

    def __init__(self, caller: CallerContext) -> None:
        self._caller = caller
        self._base = caller._base

    def _audit(self, action: str, collection: str, sources: list[str], detail: dict[str, Any] | None = None) -> None:
        c = self._caller
        client_id = c._scope.get(CLIENT_REQUEST_ID)
        if client_id:  # the client's own id, beside the server's (``request_id``)
            detail = {**(detail or {}), "client_request_id": client_id}
        try:
            self._base.store.record_audit(action, c.access.name, c.client, collection, sources, c.request_id, detail)
        except KaynakError as err:  # the write happened; say loudly that its record did not
            log.error("audit entry for %s on %r could not be written: %s", action, collection, err)

    @contextlib.contextmanager
    def _guarded(self, action: str, name: str, right: str) -> Iterator[None]:
        """Check ``right`` on ``name``; then run the write, answering a missing collection in the caller's words.
        A refusal is noted for the audit trail (``TeamGate`` records it after the answer)."""
        try:
            check_collection(self._caller.access, right, name, self._base)
        except (AuthError, CollectionNotFound) as err:
            note_refusal(self._caller._scope, action, name, err.message)
            raise
        try:
            yield
        except CollectionNotFound:
            visible = self._caller.access.visible("read")
            if visible is None:
                raise
            raise scoped_missing(self._base.store, visible, name) from None

    def _check_embedder(self, action: str, name: str, embedder: str | None) -> None:
        """A client may choose only among the server's named embedders (``client_embedders``): never a path or an
        ``st:`` model, which would let it probe the server's folders or load any model (the owner's decision)."""
        if embedder is None:
            return
        allowed = client_embedders(self._base.settings)
        if embedder.strip().lower() in allowed:
            return
        message = (
            f"embedder {embedder[:200]!r} is not one of this server's named embedders ({', '.join(sorted(allowed))}); "
            "other models and folders are chosen by the server's owner (KAYNAK_EMBEDDER, or the CLI)"
        )
        note_refusal(self._caller._scope, action, name, message, embedder=embedder[:500])
        raise UsageError(message, "embedder")

    def create_collection(self, name: str, language: str | None = None, embedder: str | None = None) -> Any:
        self._check_embedder("create_collection", name, embedder)
        with self._guarded("create_collection", name, "write"):
            made = self._base.ingest.create_collection(name, language, embedder)
        self._audit("create_collection", name, [], {"language": made.language, "embedder": made.embedder})
        return made

    def delete_collection(self, name: str) -> None:
        with self._guarded("delete_collection", name, "admin"):
            self._base.ingest.delete_collection(name)
        self._audit("delete_collection", name, [])

    def delete_document(self, name: str, source: str) -> None:
        with self._guarded("delete_document", name, "write"):
            self._base.ingest.delete_document(name, source)
        self._audit("delete_document", name, [source])

    def ingest(self, paths: Any, name: str, **kwargs: Any) -> IngestReport:
        self._check_embedder("upload", name, kwargs.get("embedder"))
        report: Any = None
        try:
            with self._guarded("upload", name, "write"):
                report = self._base.ingest.ingest(paths, name, **kwargs)
            return cast("IngestReport", report)
        except BaseException as err:
            report = getattr(err, "report", None)
            raise
        finally:
            if report is not None:
                self._record_upload(name, report)

    def _record_upload(self, name: str, report: Any) -> None:
        outcomes = {
            k: list(getattr(report, k, []) or [])
            for k in ("added", "updated", "unchanged", "partial", "failed", "skipped")
        }
        for outcome, items in outcomes.items():
            if items:
                METRICS.inc("kaynak_ingest_files_total", {"outcome": outcome}, len(items))
        stored = [*outcomes["added"], *outcomes["updated"], *outcomes["partial"]]
        failed = [str(f.get("source")) for f in outcomes["failed"] if isinstance(f, dict)]
        detail = {k: len(v) for k, v in outcomes.items()}
        self._audit("upload", name, [str(s) for s in stored], {**detail, "failed_sources": failed[:100]})


def client_embedders(settings: Any) -> frozenset[str]:
    """The embedders a client may name over REST: the built-in named ones (``e5-small``, ``use-m3``, ``hash`` …,
    never a prefix such as ``st:``) and the server's own ``KAYNAK_EMBEDDER`` as configured."""
    from kaynak.embeddings import _REGISTRY

    named = {e.name for e in _REGISTRY.entries() if not e.is_prefix}
    return frozenset({*named, str(settings.embedder).strip().lower()})


REFUSAL = "kaynak.refusal"  # scope key: (action, collection, reason, extra) of a refused write, for the audit trail


def note_refusal(scope: Scope, action: str, collection: str | None, reason: str, **extra: Any) -> None:
    """Remember why this request's write was refused (``TeamGate`` records it in the audit trail)."""
    scope[REFUSAL] = (action, collection, reason, extra)


def caller_context(scope: Scope) -> CallerContext:
    """The route's view of the app's Context for this request (made once per request)."""
    found = scope.get("kaynak.caller_context")
    if found is None:
        found = CallerContext(scope["app"].state.context, scope)
        scope["kaynak.caller_context"] = found
    return found


# ---------------------------------------------------------------------------------------------- the gate
class TeamGate:
    """The outermost ASGI layer (see the module docstring)."""

    def __init__(self, app: ASGIApp, team: Team, routes: Sequence[Any] = ()) -> None:
        self.app = app
        self.team = team
        self.routes = list(routes)  # to name the route of a request refused before routing (metrics, log)
        self.refusals = Buckets()  # refused writes recorded in the audit trail, per address (a flood is not)
        self.streams: dict[str, int] = {}  # open GET /mcp event streams per caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from .limits import check_host  # (limits imports deps, which imports this module)

        started = time.perf_counter()
        raw_headers = scope.get("headers", [])
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw_headers}
        given = headers.get(REQUEST_ID_HEADER, "")
        request_id = uuid.uuid4().hex  # always the server's own: the audit trail's ids are never a client's choice
        client_id = given if _SANE_ID.match(given) else None
        scope[REQUEST_ID] = request_id
        if client_id:
            scope[CLIENT_REQUEST_ID] = client_id
        client = client_host(scope)
        path, method = scope.get("path", ""), scope.get("method", "")
        status = {"code": 500}

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        no_store = path.startswith("/v1/") or path == "/mcp"
        reply = _ProblemIds(send_with_id, request_id, client_id, no_store)
        try:
            # Host / Origin first: a request a DNS-rebinding page or a foreign site sends costs nobody anything.
            check_host(scope, headers, self.team.settings)
            if sum(1 for k, _ in raw_headers if k.lower() == b"authorization") > 1:
                raise UsageError("send one Authorization header, not several", "Authorization")
            if path not in LAZY_PATHS and not path.startswith(("/static/", "/docs/")):
                try:
                    quick = self.team.quick(headers)  # no thread hop when the database has nothing to say
                    scope[ACCESS] = quick or await anyio.to_thread.run_sync(self.team.resolve, headers, client, method)
                except RateLimited:
                    await anyio.sleep(WRONG_TOKEN_DELAY_S)  # a guess past the budget: slowed, never a lockout
                    raise
                except KaynakError as err:  # a revoked token, the database away: said when a route needs it
                    scope[ACCESS] = err
                budget = self.team.budget_of(method, path)
                access = scope[ACCESS]
                if budget is not None and isinstance(access, Access):
                    await anyio.to_thread.run_sync(self.team.spend, budget, access, client)  # may ask tokens_exist
        except KaynakError as err:
            await _send_error(reply, err, path)
        else:
            if path == "/mcp" and method == "GET":
                await self._stream(scope, receive, reply, client)
            else:
                await self.app(scope, receive, reply)
            if (
                self.team.settings.audit_searches
                and path == "/v1/search"
                and status["code"] == 200
                and isinstance(scope.get(ACCESS), Access)
                and scope[ACCESS].name
            ):
                await anyio.to_thread.run_sync(self._count_search, scope[ACCESS].name)
        finally:
            await self._after(scope, status["code"], time.perf_counter() - started, client)

    async def _after(self, scope: Scope, status: int, elapsed: float, client: str) -> None:
        """Metrics, the JSON request log line and, for a refused write, its audit entry."""
        path, method = scope.get("path", ""), scope.get("method", "")
        route = route_label(scope, self.routes)
        METRICS.observe_request(route, method, status, elapsed)
        access = scope.get(ACCESS)
        line = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "request_id": scope.get(REQUEST_ID),
            "method": method,
            "path": path,
            "route": route,
            "status": status,
            "ms": round(elapsed * 1000, 1),
            "client": client,
            "token": access.name if isinstance(access, Access) else None,
        }
        if scope.get(CLIENT_REQUEST_ID):
            line["client_request_id"] = scope[CLIENT_REQUEST_ID]
        request_log.info(log_safe(json.dumps(line, ensure_ascii=False)))
        if self._refused(scope, method, path, status):
            with contextlib.suppress(Exception):  # the answer is sent; a lost record is logged inside
                await anyio.to_thread.run_sync(self._record_refusal, scope, method, route, status, client)

    # ------------------------------------------------------------------ GET /mcp event streams
    async def _stream(self, scope: Scope, receive: Receive, send: Send, client: str) -> None:
        """An MCP event stream (GET /mcp): at most ``MCP_STREAMS_PER_CALLER`` open per token (or address), each
        closed after ``MCP_STREAM_MAX_S`` (clients reconnect); opening one spends the search budget."""
        access = scope.get(ACCESS)
        key = access.name if isinstance(access, Access) and access.name else f"address:{client}"
        if self.streams.get(key, 0) >= MCP_STREAMS_PER_CALLER:
            METRICS.inc("kaynak_rate_limited_total", {"budget": "streams"})
            await _send_error(
                send,
                RateLimited(
                    f"{MCP_STREAMS_PER_CALLER} MCP event streams are open for this caller already; close one first",
                    retry_after=5,
                ),
                "/mcp",
            )
            return
        self.streams[key] = self.streams.get(key, 0) + 1
        state = {"started": False, "ended": False}

        async def tracking(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["ended"] = True
            await send(message)

        try:
            with anyio.move_on_after(MCP_STREAM_MAX_S):
                await self.app(scope, receive, tracking)
            if state["started"] and not state["ended"]:  # the stream's time is up: end it cleanly
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            left = self.streams.get(key, 1) - 1
            if left > 0:
                self.streams[key] = left
            else:
                self.streams.pop(key, None)

    # ------------------------------------------------------------------ refused writes in the audit trail
    @staticmethod
    def _refused(scope: Scope, method: str, path: str, status: int) -> bool:
        if REFUSAL in scope:
            return True
        return method in WRITE_METHODS and path not in READ_POSTS and status in (401, 403)

    def _record_refusal(self, scope: Scope, method: str, route: str, status: int, client: str) -> None:
        if self.refusals.take(f"refused:{client}", REFUSALS_AUDITED_PER_MIN) > 0:
            METRICS.inc("kaynak_refusals_not_audited_total")
            return  # a flood of refusals from one address: counted, not each written down
        noted: tuple[str, str | None, str, dict[str, Any]] = scope.get(REFUSAL) or (f"{method} {route}", None, "", {})
        action, collection, reason, extra = noted
        if collection is None:
            collection = (scope.get("path_params") or {}).get("name")
        access = scope.get(ACCESS)
        detail: dict[str, Any] = {"attempt": action, "method": method, "route": route, "status": status, **extra}
        if reason:
            detail["reason"] = reason[:500]
        if scope.get(CLIENT_REQUEST_ID):
            detail["client_request_id"] = scope[CLIENT_REQUEST_ID]
        try:
            self.team.context.store.record_audit(
                "refused",
                access.name if isinstance(access, Access) else None,
                client,
                collection if isinstance(collection, str) else None,
                [],
                scope.get(REQUEST_ID),
                detail,
            )
        except KaynakError as err:
            log.error("audit entry for a refused %s could not be written: %s", action, err)

    def _count_search(self, token: str) -> None:
        try:
            self.team.context.store.count_search(token)
        except KaynakError as err:
            log.warning("could not count a search: %s", err)


async def _send_error(send: Send, err: KaynakError, path: str) -> None:
    response = error_response(err, path)
    await send({"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})


# Characters that must not reach a log line raw: C0/C1 controls, line and paragraph separators, bidi controls.
_UNSAFE_IN_LOGS = re.compile(
    "[\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]"
)


def log_safe(text: str) -> str:
    """``text`` with control, separator and bidi characters written as ``\\uXXXX`` (JSON's own escape, so a JSON
    line stays the same JSON), so that a path or header cannot break a log line or reorder what a reader sees."""
    return _UNSAFE_IN_LOGS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _ProblemIds:
    """``send`` that adds ``X-Request-ID`` (and the client's own id as ``X-Client-Request-ID``) to every response,
    ``request_id`` to every problem+json body, and ``Cache-Control: no-store`` to API answers (they may hold
    document text)."""

    def __init__(self, send: Send, request_id: str, client_id: str | None = None, no_store: bool = False) -> None:
        self.send = send
        self.request_id = request_id
        self.client_id = client_id
        self.no_store = no_store
        self.start: Message | None = None
        self.body = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            drop = {b"x-request-id", b"x-client-request-id"}
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in drop]
            headers.append((b"x-request-id", self.request_id.encode()))
            if self.client_id:
                headers.append((b"x-client-request-id", self.client_id.encode()))
            if self.no_store and not any(k.lower() == b"cache-control" for k, _ in headers):
                headers.append((b"cache-control", b"no-store"))
            message = {**message, "headers": headers}
            content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            if content_type.decode("latin-1").startswith(PROBLEM):
                self.start = message  # held until the body is complete
                return
            await self.send(message)
            return
        if message["type"] == "http.response.body" and self.start is not None:
            self.body += message.get("body", b"")
            if message.get("more_body", False):
                return
            body = self.body
            try:
                problem = json.loads(body)
                if isinstance(problem, dict):
                    problem["request_id"] = self.request_id
                    body = json.dumps(problem, ensure_ascii=False, separators=(",", ":")).encode()
            except ValueError:
                pass
            headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            start, self.start = self.start, None
            await self.send({**start, "headers": headers})
            await self.send({"type": "http.response.body", "body": body})
            return
        await self.send(message)


def configure_request_log(log_file: Path | None = None) -> None:
    """``kaynak serve``: the ``kaynak.requests`` lines, bare JSON, to stderr (and ``log_file``), once."""
    if getattr(request_log, "_kaynak_configured", False):
        return
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    for h in handlers:
        h.setFormatter(logging.Formatter("%(message)s"))
        request_log.addHandler(h)
    request_log.setLevel(logging.INFO)
    request_log.propagate = False
    request_log._kaynak_configured = True  # type: ignore[attr-defined]


__all__ = [
    "EVERYTHING",
    "CallerContext",
    "Team",
    "TeamGate",
    "caller",
    "caller_context",
    "check_collection",
    "check_read",
    "check_write",
    "configure_request_log",
]
