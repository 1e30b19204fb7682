"""A store view that sees only some collections: the one place a token's read scope is enforced.

``scoped_view(store, names)`` returns a copy of ``store`` (the same pools, no new connections) whose reads answer
as if the other collections did not exist: they are left out of listings and of ``*`` searches, and naming one,
or reaching into one by a chunk id or document id, raises the same NotFound as a missing one, with the same
message (the list of existing collections it gives names only visible ones). So an out-of-scope name or id
answers exactly like a missing one (404), and names do not leak. A view may also hide the server's paths (a
document's ``origin``) outside the collections its caller administers.

Every read method that takes a collection, a name or an id is overridden here; a test
(tests/api/test_team_access.py) fails when the store gains such a method without an override.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from kaynak.errors import ChunkNotFound, CollectionNotFound, DocumentNotFound
from kaynak.store.catalogue import HitChunk, SimilarityFill
from kaynak.store.store import Store
from kaynak.types import ChunkRecord, Collection, DocumentInfo

# An id lookup that finds nothing the caller may read answers no sooner than this after it began: a row that exists
# out of scope costs the lookup a heap fetch a missing one does not (about 0.8 ms over REST, measured in
# benchmarks/bench_team_access.py --leaks); both now take the same floor, well above that difference.
ID_MISS_FLOOR_S = 0.01


def _pad(started: float) -> None:
    left = ID_MISS_FLOOR_S - (time.perf_counter() - started)
    if left > 0:
        time.sleep(left)


class ScopedStore(Store):
    """``Store`` restricted to ``_visible`` (collection names); built by ``scoped_view``, never directly."""

    _visible: frozenset[str] | None  # None: every collection
    _paths: frozenset[str] | None  # the collections whose server paths (a document's origin) it sees; None: all

    def __init__(self) -> None:  # pragma: no cover - made by copying a Store
        raise TypeError("use scoped_view(store, names)")

    def _sees(self, name: str) -> bool:
        return self._visible is None or name in self._visible

    def shows_paths(self, name: str) -> bool:
        """Whether this caller may see the server's paths in collection ``name`` (admins of it)."""
        return self._paths is None or name in self._paths

    def _pathless(self, doc: DocumentInfo) -> DocumentInfo:
        """``doc`` without the server path it was read from, unless the caller may see paths there."""
        if doc.origin is None or self.shows_paths(doc.collection):
            return doc
        return dataclasses.replace(doc, origin=None)

    def _wanted(self, names: Sequence[str] | None) -> list[str] | None:
        if self._visible is None:
            return None if names is None else list(names)
        return sorted(self._visible) if names is None else [n for n in names if self._sees(n)]

    def _check(self, collection: Collection) -> Collection:
        if not self._sees(collection.name):
            raise self._missing(collection.name)
        return collection

    def _missing(self, name: str) -> CollectionNotFound:
        """The very error a missing collection gives, listing only the visible collections."""
        names = [c.name for c in self.list_collections()]
        known = ", ".join(repr(n) for n in names) if names else "none yet; ingest documents to create one"
        return CollectionNotFound(f"no collection named {name!r}; existing collections: {known}")

    # ------------------------------------------------------------------ collections
    def list_collections(self) -> list[Collection]:
        return [c for c in super().list_collections() if self._sees(c.name)]

    def get_collection(self, name: str) -> Collection:
        if not isinstance(name, str) or not self._sees(name):
            raise self._missing(str(name))
        try:
            return super().get_collection(name)
        except CollectionNotFound:  # in scope but missing: the store's message lists every collection
            raise self._missing(name) from None

    def plan_facts(
        self,
        names: Sequence[str] | None,
        text: str | None,
        known_embedded: Sequence[int] = (),
        check_embedded: bool = False,
        limit: int = 64,
    ) -> tuple[list[Collection], dict[str, list[tuple[str, int]]], set[int]]:
        cols, terms, embedded = super().plan_facts(self._wanted(names), text, known_embedded, check_embedded, limit)
        return [c for c in cols if self._sees(c.name)], terms, embedded

    def document_languages(self, names: Sequence[str] | None = None) -> dict[str, list[str]]:
        return {k: v for k, v in super().document_languages(self._wanted(names)).items() if self._sees(k)}

    # ------------------------------------------------------------------ documents and pages (by collection)
    def find_document(self, collection: Collection, source: str) -> DocumentInfo | None:
        found = super().find_document(self._check(collection), source)
        return None if found is None else self._pathless(found)

    def get_document(self, collection: Collection, source: str) -> DocumentInfo:
        return self._pathless(super().get_document(self._check(collection), source))

    def list_documents(
        self, collection: Collection, prefix: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentInfo]:
        return [self._pathless(d) for d in super().list_documents(self._check(collection), prefix, limit, offset)]

    def count_documents(self, collection: Collection, prefix: str | None = None) -> int:
        return super().count_documents(self._check(collection), prefix)

    def get_page(self, collection: Collection, source: str, number: int) -> str:
        return super().get_page(self._check(collection), source, number)

    def document_hashes(self, collection: Collection) -> dict[str, str]:
        return super().document_hashes(self._check(collection))

    def document_states(self, collection: Collection) -> dict[str, tuple[str, list[str]]]:
        return super().document_states(self._check(collection))

    def ingest_failures(self, collection: Collection) -> dict[str, tuple[str, str, str]]:
        return super().ingest_failures(self._check(collection))

    def chunk_count(self, collection: Collection) -> int:
        return super().chunk_count(self._check(collection))

    def collection_sources(self, collection: Collection) -> list[dict[str, Any]]:
        return super().collection_sources(self._check(collection))

    def sync_state(self, collection: Collection, fresh_s: float) -> dict[str, Any]:
        return super().sync_state(self._check(collection), fresh_s)

    def file_states(self, collection: Collection) -> dict[str, tuple[str, int | None, int | None, str | None]]:
        return super().file_states(self._check(collection))

    def vector_search(self, collection: Collection, *args: Any, **kwargs: Any) -> Any:
        return super().vector_search(self._check(collection), *args, **kwargs)

    def vector_similarities(self, collection: Collection, *args: Any, **kwargs: Any) -> Any:
        return super().vector_similarities(self._check(collection), *args, **kwargs)

    def keyword_search(self, collections: Sequence[Collection], *args: Any, **kwargs: Any) -> Any:
        return super().keyword_search([self._check(c) for c in collections], *args, **kwargs)

    def lexeme_stats(self, collection: Collection, lexemes: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        return super().lexeme_stats(self._check(collection), lexemes)

    # ------------------------------------------------------------------ by id: out of scope reads as missing
    def _within(self, within: Sequence[str] | None) -> list[str] | None:
        """The collections an id lookup may find its row in: the visible ones (of ``within``, when given)."""
        return self._wanted(within)

    def chunk_with_neighbours(
        self, chunk_id_: str, before: int = 1, after: int = 1, within: Sequence[str] | None = None
    ) -> list[ChunkRecord]:
        started = time.perf_counter()
        try:  # out of scope is missing in the one lookup itself, and every miss takes the same floor of time
            chunks = super().chunk_with_neighbours(chunk_id_, before, after, self._within(within))
        except ChunkNotFound:
            chunks = []
        if not chunks or not self._sees(chunks[0].collection):
            _pad(started)
            raise ChunkNotFound(f"no chunk with id {chunk_id_!r}")
        return chunks

    def get_chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        return {k: c for k, c in super().get_chunks(ids).items() if self._sees(c.collection)}

    def hit_chunks(
        self,
        ids: Sequence[str],
        probe: tuple[str, Sequence[int], str] | None = None,
        fill: SimilarityFill | None = None,
    ) -> tuple[dict[str, HitChunk], tuple[str | None, bool] | None]:
        found, probed = super().hit_chunks(ids, probe, fill)
        return {k: h for k, h in found.items() if self._sees(h.record.collection)}, probed

    def document_origin(self, document_id: int, within: Sequence[str] | None = None) -> tuple[DocumentInfo, str | None]:
        started = time.perf_counter()
        try:
            doc, origin = super().document_origin(document_id, self._within(within))
        except DocumentNotFound:
            _pad(started)
            raise DocumentNotFound(f"no document with id {document_id}") from None
        if not self._sees(doc.collection):
            _pad(started)
            raise DocumentNotFound(f"no document with id {document_id}")
        return doc, origin


# Store methods that need no override: they take no collection, name or id of stored content, write (a scoped
# view is given to the read side only), or answer about ids that the view itself produced. Checked by the tests.
UNSCOPED_OK = frozenset(
    {
        "close",
        "reader",
        "health",
        "wait_for_replicas",
        "server_info",
        "pool",
        "open",
        "query_lexemes",
        "lexemes_of",
        "tr_lower",
        "language_probe",
        "lexemes_in",
        # writes: the read side never calls them; writes are checked against the write scope before they run
        "create_collection",
        "ensure_collection",
        "delete_collection",
        "delete_document",
        "replace_document",
        "replace_document_set",
        "remember_failure",
        "forget_failures",
        "move_document",
        "remember_source",
        "mark_synced",
        "set_file_stats",
        "collection_lock",
        "watcher_heartbeat",
        "watcher_stopped",
        # the upkeep of stored quote analyses (ingest and ``kaynak migrate``): counts and writes, no content read
        "sentences_pending",
        "fill_sentences",
        # team access itself
        "create_token",
        "token_by_secret_hash",
        "list_tokens",
        "revoke_token",
        "tokens_exist",
        "touch_token",
        "record_audit",
        "audit_entries",
        "count_search",
        "search_counts",
    }
)


def scoped_missing(store: Store, visible: frozenset[str], name: str) -> CollectionNotFound:
    """The error a caller that sees only ``visible`` gets for a missing collection ``name`` (or one it may not
    see): the message lists only the collections it may read."""
    view = scoped_view(store, frozenset(visible))
    assert isinstance(view, ScopedStore)
    return view._missing(name)


def scoped_view(store: Store, visible: frozenset[str] | None, paths: frozenset[str] | None = None) -> Store:
    """``store`` seeing only the collections ``visible`` (None: all of them), and the server's paths (a document's
    ``origin``) only in the collections ``paths`` (None: in all); ``store`` itself when both are None."""
    if visible is None and paths is None:
        return store
    view = copy.copy(store)
    view.__class__ = ScopedStore
    view._visible = None if visible is None else frozenset(visible)  # type: ignore[attr-defined]
    view._paths = None if paths is None else frozenset(paths)  # type: ignore[attr-defined]
    return view


def shows_paths(store: Store, name: str) -> bool:
    """Whether the caller that ``store`` was scoped for may see server paths in collection ``name``."""
    return not isinstance(store, ScopedStore) or store.shows_paths(name)
