"""Wiring: one object that owns the settings, the store and the models, and hands out the two services.

Every face (CLI, REST API, MCP server, eval harness) builds a ``Context`` and talks only to
``context.search`` (reads) and ``context.ingest`` (writes); health checks ask ``database_status`` and
``model_status``. Everything is created lazily, so a command that
needs no database or model starts fast.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kaynak.config import Settings, load_settings

if TYPE_CHECKING:
    from kaynak.embeddings.base import Embedder
    from kaynak.embeddings.rerank import Reranker
    from kaynak.ingest import IngestService
    from kaynak.search import SearchService
    from kaynak.store import Store


T = TypeVar("T")


class _once(Generic[T]):  # lower case: used as a decorator, like functools.cached_property
    """A cached property made once per object even when threads ask for it at the same moment.

    ``functools.cached_property`` has no lock (since Python 3.12), so eight first requests arriving together could
    open eight stores and pools. The value is kept in the object's ``__dict__`` under the property's name (tests may
    put a stand-in there); the object's re-entrant ``_lock`` is held while it is made and the cache is checked
    again under it.
    """

    def __init__(self, make: Callable[[Any], T]) -> None:
        self.make = make
        self.name = make.__name__
        self.__doc__ = make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:
            raise AttributeError(self.name)
        with obj._lock:
            if self.name not in obj.__dict__:
                obj.__dict__[self.name] = self.make(obj)
            value: T = obj.__dict__[self.name]
            return value


class Context:
    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        self.settings = settings or load_settings(**overrides)
        self._lock = threading.RLock()

    @_once
    def store(self) -> Store:
        from kaynak.store import Store

        if self.settings.migrate == "always" and self.settings.migrate_backup:
            self._backup_before_upgrade()
        return Store.open(
            self.settings.database_url,
            self.settings.data_dir,
            self.settings.pool_size,
            read_urls=self.settings.read_database_urls,
            migrate=self.settings.migrate,
        )

    def _backup_before_upgrade(self) -> None:
        """With ``KAYNAK_MIGRATE=always``, a backup under ``<data_dir>/backups/`` before an upgrade that rewrites
        data (the CLI's ``kaynak migrate`` offers one instead)."""
        import time

        from kaynak import backup
        from kaynak.store.server import resolve_url
        from kaynak.store.upgrade import migration_status

        s = self.settings
        url = resolve_url(s.database_url, s.data_dir)
        status = migration_status(url)
        if status.version > 0 and status.rows > 0:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            target = s.data_dir / "backups" / f"before-schema-{status.latest}-{stamp}.dump"
            target.parent.mkdir(parents=True, exist_ok=True)
            backup.backup(url, target, data_dir=None if s.database_url else s.data_dir)

    def embedder(self, name: str | None = None) -> Embedder:
        from kaynak.embeddings import get_embedder

        return get_embedder(
            name or self.settings.embedder,
            threads=self.settings.threads,
            prefixes=self.settings.model_prefixes,
            data_dir=self.settings.data_dir,
        )

    def reranker(self, name: str | None = None) -> Reranker | None:
        from kaynak.embeddings.rerank import get_reranker

        return get_reranker(name or self.settings.reranker)

    @_once
    def search(self) -> SearchService:
        from kaynak.search import SearchService

        # reads go to a read replica when KAYNAK_READ_DATABASE_URL names one (Store.reader)
        return SearchService(self.store.reader(), self.settings, self.embedder, self.reranker)

    @_once
    def ingest(self) -> IngestService:
        from kaynak.ingest import IngestService

        return IngestService(self.store, self.settings, self.embedder)

    def database_status(self, timeout: float = 1.0) -> dict[str, Any]:
        """Whether the database answers, within about ``timeout`` seconds (``/v1/health``, ``kaynak doctor``):
        ``{"ok": True, <Store.server_info()>, "replicas": [...]}`` or ``{"ok": False, "error", "replicas"?}``,
        with ``retry_after`` (seconds) when the error says when to try again. An outage is reported, not raised."""
        from kaynak.errors import KaynakError

        try:
            db = self.store.health(timeout=timeout)
            if db.get("ok"):
                return {"ok": True, **self.store.server_info(), "replicas": db.get("replicas", [])}
            primary = db.get("primary") or {}
            error = primary.get("error") or "the database does not answer"
            return {"ok": False, "error": error, "replicas": db.get("replicas", [])}
        except KaynakError as err:
            out: dict[str, Any] = {"ok": False, "error": err.message}
            if err.retry_after:
                out["retry_after"] = err.retry_after
            return out

    def migration_status(self) -> dict[str, Any]:
        """The database's schema version, pending and unfinished migrations (``kaynak doctor``, ``migrate
        --status``), read without upgrading anything: ``{"ok": True, "version", "latest", "pending", …,
        "analyses_pending"}`` (documents whose quote analyses are still to store) or ``{"ok": False, "error"}``."""
        from kaynak.errors import KaynakError
        from kaynak.store.server import resolve_url
        from kaynak.store.upgrade import analyses_pending, migration_status

        try:
            url = resolve_url(self.settings.database_url, self.settings.data_dir)
            return {"ok": True, **migration_status(url).as_dict(), "analyses_pending": analyses_pending(url)}
        except KaynakError as err:
            return {"ok": False, "error": err.message}

    def model_status(self) -> dict[str, Any]:
        """The configured embedder without loading it: ``{"name", "ok": True, "dim"}`` or ``{"name", "ok": False,
        "error"}`` (an unknown name, a missing extra)."""
        from kaynak.embeddings import embedder_dim
        from kaynak.errors import KaynakError

        name = self.settings.embedder
        try:
            return {"name": name, "ok": True, "dim": embedder_dim(name)}
        except KaynakError as err:
            return {"name": name, "ok": False, "error": err.message}

    def close(self) -> None:
        if "ingest" in self.__dict__:  # stops the parse worker processes
            self.ingest.close()
        with self._lock:
            store = self.__dict__.pop("store", None)
        if store is not None:
            store.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
