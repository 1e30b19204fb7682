"""Store: every SQL statement kaynak runs lives here (collections, documents, chunks, searches).

Vector layout (docs/adr/0001-vector-layout.md): one ``embedding vector`` column without a fixed dimension, and
one partial HNSW index per collection on ``(embedding::vector(dim))`` restricted to ``collection_id = <id>``.
Queries name the collection id as a literal so the planner can match the partial index.

Keyword rankings: ``ts_rank_cd`` (the specification's OR tsquery ranked with ``ts_rank_cd(…, 1)``) and BM25
over the ``postings`` table (per-collection IDF, k1 saturation, b length normalisation).
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from kaynak.errors import (
    CollectionNotFound,
    Conflict,
    DataRejected,
    DocumentNotFound,
    DocumentRejected,
    StoreError,
    UsageError,
    WriteConflict,
)
from kaynak.globs import postgres_regex
from kaynak.store import migrations
from kaynak.store.connections import Database, map_errors
from kaynak.store.server import check_connection, resolve_url, restart_embedded
from kaynak.types import LANGUAGES, Chunk, ChunkRecord, Collection, DocumentInfo, Page

log = logging.getLogger(__name__)

MAX_QUERY_LEXEMES = 64


def chunk_id(collection: str, source: str, sha256: str, ord: int) -> str:
    """The specification's chunk id: sha1(collection, source, sha256, ord)[:20]."""
    key = "\x1f".join((collection, source, sha256, str(ord)))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


@dataclass
class SearchFilters:
    """Restrictions on which chunks a search may return."""

    source_prefix: str | None = None
    source_glob: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.source_prefix or self.source_glob or self.metadata)


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else err.__class__.__name__


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def glob_to_like(pattern: str) -> str:
    """``docs/*.pdf`` → ``docs/%.pdf`` (``*`` and ``**`` match any run, ``?`` one character)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1
            out.append("%")
        elif ch == "?":
            out.append("_")
        else:
            out.append(_like_escape(ch))
        i += 1
    return "".join(out)


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """An OR tsquery of already-normalised lexemes: 'a' | 'b' | 'c' (quoted, so any character is text)."""
    quoted = ["'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes]
    return " | ".join(quoted)


class Store:
    """The database. Create with ``Store.open(settings)``; close with ``close()`` (or use as a context manager).

    Connections come from ``kaynak.store.connections.Database``: the primary's pool, or a read replica's in the
    view ``reader()`` returns; every statement runs inside its error boundary (psycopg errors → KaynakErrors).
    """

    def __init__(
        self,
        url: str,
        pool_size: int = 4,
        *,
        read_urls: Sequence[str] = (),
        restart: Callable[[], None] | None = None,
    ) -> None:
        check_connection(url)
        self.url = url
        self.db = Database(url, pool_size, tuple(read_urls), restart=restart)
        self._read = False
        try:
            with self.db.connection() as conn:
                self.applied_migrations = migrations.apply(conn)  # migrations run on the primary only
                self.db.schema_version = migrations.current_version(conn)
        except BaseException:
            self.db.close()
            raise
        self.db.check_replica_schemas(wait_s=5.0 if self.applied_migrations else 0.0)
        self._collections: dict[str, Collection] = {}
        self._lock = threading.Lock()
        # Test hook: called inside replace_document's transaction just before it commits.
        self._before_commit: Callable[[], None] | None = None

    @classmethod
    def open(
        cls, database_url: str | None, data_dir: Path, pool_size: int = 4, read_urls: Sequence[str] = ()
    ) -> Store:
        """The store for the settings: the server ``database_url`` names, else the embedded one (restarted by this
        process if it stops); ``read_urls`` are read replicas of it."""
        restart = None if database_url else (lambda: restart_embedded(data_dir))
        return cls(resolve_url(database_url, data_dir), pool_size=pool_size, read_urls=read_urls, restart=restart)

    @property
    def pool(self) -> ConnectionPool:
        """The primary's current pool (replaced after an outage); for tests and diagnostics, not for queries."""
        return self.db.primary.pool

    def reader(self) -> Store:
        """This store for reads: the same object without replicas, else a view whose queries go to a replica
        (falling back to the primary while none is healthy). Give it to searches and listings, never to writes."""
        if not self.db.replicas:
            return self
        view = copy.copy(self)
        view._read = True
        return view

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        """A checked connection inside the error boundary (``map_errors``): no psycopg error leaves the store."""
        with self.db.connection(read=self._read) as conn:
            yield conn

    # ------------------------------------------------------------------ health, replication (the connection layer)
    def health(self, timeout: float = 1.0) -> dict[str, Any]:
        """Whether the primary and each replica answer, with replication lag, within about ``timeout`` seconds.

        ``{"ok": bool, "primary": {"ok", "error"?, "schema_version", ...}, "replicas": [{"name", "ok",
        "lag_bytes", "lag_seconds", "in_rotation", "schema_behind", "error"?}], "elapsed_ms"}``. Never raises for
        an outage (that is what it reports); a down embedded server is restarted in the background.
        """
        return self.db.health(timeout)

    def wait_for_replicas(self, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until every read replica has replayed the primary's writes so far (see ``Database``)."""
        with map_errors("the primary database"):
            return self.db.wait_for_replicas(timeout)

    # ------------------------------------------------------------------ server facts
    def server_info(self) -> dict[str, Any]:
        with self._conn() as conn:
            pg = conn.execute("SHOW server_version").fetchone()[0]
            vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            version = migrations.current_version(conn)
            ts = conn.execute(
                "SELECT array_agg(cfgname ORDER BY cfgname) FROM pg_ts_config "
                "WHERE cfgname IN ('turkish', 'english', 'simple')"
            ).fetchone()[0]
        return {
            "postgresql": pg,
            "pgvector": vec[0] if vec else None,
            "schema_version": version,
            "text_search_configs": ts or [],
        }

    # ------------------------------------------------------------------ collections
    def create_collection(self, name: str, language: str, embedder: str, dim: int) -> Collection:
        if not name or len(name) > 200 or name.strip() != name:
            raise UsageError(f"invalid collection name {name!r}: use 1–200 characters, no edge spaces", "name")
        if language not in LANGUAGES:
            raise UsageError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}", "language")
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                "INSERT INTO collections (name, language, embedder, dim) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (name) DO NOTHING RETURNING id",
                (name, language, embedder, dim),
            ).fetchone()
            if row is None:
                raise Conflict(f"collection {name!r} already exists")
            cid = int(row[0])
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {idx} ON chunks USING hnsw "
                    "((embedding::vector({dim})) vector_cosine_ops) WHERE collection_id = {cid}"
                ).format(idx=sql.Identifier(f"chunks_hnsw_{cid}"), dim=sql.Literal(dim), cid=sql.Literal(cid))
            )
        self._collections.pop(name, None)
        return self.get_collection(name)

    def ensure_collection(self, name: str, language: str, embedder: str, dim: int) -> Collection:
        """The collection ``name``, created with these settings if it does not exist (safe under concurrency)."""
        try:
            return self.get_collection(name)
        except CollectionNotFound:
            pass
        try:
            return self.create_collection(name, language, embedder, dim)
        except Conflict:
            return self.get_collection(name)

    def _collection_rows(self, where: str = "", params: Sequence[Any] = ()) -> list[Collection]:
        query = f"""
            SELECT c.id, c.name, c.language, c.embedder, c.dim,
                   count(d.id), coalesce(sum(d.chunk_count), 0), c.created_at::text
            FROM collections c LEFT JOIN documents d ON d.collection_id = c.id
            {where}
            GROUP BY c.id ORDER BY c.name
        """
        with self._conn() as conn:
            rows = conn.execute(query, params).fetchall()
        return [Collection(int(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), r[7]) for r in rows]

    def list_collections(self) -> list[Collection]:
        return self._collection_rows()

    def get_collection(self, name: str) -> Collection:
        rows = self._collection_rows("WHERE c.name = %s", (name,))
        if not rows:
            names = [c.name for c in self._collection_rows()]
            known = ", ".join(repr(n) for n in names) if names else "none yet; ingest documents to create one"
            raise CollectionNotFound(f"no collection named {name!r}; existing collections: {known}")
        return rows[0]

    def delete_collection(self, name: str) -> None:
        col = self.get_collection(name)
        with self._conn() as conn, conn.transaction():
            conn.execute("DELETE FROM collections WHERE id = %s", (col.id,))
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(f"chunks_hnsw_{col.id}")))

    # ------------------------------------------------------------------ documents
    def _doc_from_row(self, r: Sequence[Any], collection: str) -> DocumentInfo:
        return DocumentInfo(
            id=int(r[0]),
            collection=collection,
            source=r[1],
            sha256=r[2],
            title=r[3],
            page_count=int(r[4]),
            chunk_count=int(r[5]),
            metadata=r[6] or {},
            ingested_at=r[7],
            warnings=list(r[8] or []) if len(r) > 8 else [],
            origin=r[9] if len(r) > 9 else None,
        )

    _DOC_COLS = "id, source, sha256, title, page_count, chunk_count, metadata, ingested_at::text, warnings, origin"

    def find_document(self, collection: Collection, source: str) -> DocumentInfo | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {self._DOC_COLS} FROM documents WHERE collection_id = %s AND source = %s",
                (collection.id, source),
            ).fetchone()
        return self._doc_from_row(row, collection.name) if row else None

    def get_document(self, collection: Collection, source: str) -> DocumentInfo:
        doc = self.find_document(collection, source)
        if doc is None:
            raise DocumentNotFound(f"collection {collection.name!r} has no document {source!r}")
        return doc

    def list_documents(
        self, collection: Collection, prefix: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentInfo]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {self._DOC_COLS} FROM documents WHERE collection_id = %s "
                "AND (%s::text IS NULL OR source LIKE %s) ORDER BY source LIMIT %s OFFSET %s",
                (collection.id, prefix, _like_escape(prefix or "") + "%", limit, offset),
            ).fetchall()
        return [self._doc_from_row(r, collection.name) for r in rows]

    def document_hashes(self, collection: Collection) -> dict[str, str]:
        """source → sha256 for every document of the collection (what ingest compares files against)."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, sha256 FROM documents WHERE collection_id = %s", (collection.id,)
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def delete_document(self, collection: Collection, source: str) -> bool:
        with self._conn() as conn, conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{collection.id}\x1f{source}",)
            )
            row = conn.execute(
                "DELETE FROM documents WHERE collection_id = %s AND source = %s RETURNING id",
                (collection.id, source),
            ).fetchone()
        return row is not None

    def replace_document(
        self,
        collection: Collection,
        source: str,
        sha256: str,
        title: str,
        metadata: dict[str, Any],
        pages: Sequence[Page],
        chunks: Sequence[Chunk],
        embeddings: np.ndarray | None,
        *,
        skip_if_unchanged: bool = False,
        warnings: Sequence[str] = (),
        origin: str | None = None,
        file_stat: tuple[int, int] | None = None,
    ) -> int | None:
        """Put one document in the collection, replacing any previous version, in one transaction.

        Either the old version's rows all go and the new ones all come, or nothing changes. Returns the new
        document id, or None when ``skip_if_unchanged`` and the stored version has the same sha256 (another
        process got there first). ``warnings`` are stored with the document, ``origin`` is the file's absolute
        path; a remembered failure of the source (ingest_failures) goes in the same transaction. ``file_stat`` is
        the file's (size, mtime_ns) when it was hashed (kaynak sync skips files whose stat still matches).
        """
        if embeddings is not None and len(embeddings) != len(chunks):
            raise ValueError("one embedding per chunk is required")
        for attempt in range(3):
            try:
                return self._replace_once(
                    collection, source, sha256, title, metadata, pages, chunks, embeddings, skip_if_unchanged,
                    list(warnings), origin, file_stat,
                )
            except WriteConflict as err:
                if attempt == 2:
                    raise WriteConflict(f"{source}: could not be written after 3 tries ({err.message})") from err
                time.sleep(0.05 * (attempt + 1))
            except DocumentRejected:
                raise
            except DataRejected as err:  # e.g. text PostgreSQL cannot hold: this document only
                raise DocumentRejected(f"{source}: the database refused the document ({err.message})") from err
            except StoreError as err:
                err.message = f"while writing {source}: {err.message}"
                raise
        return None  # pragma: no cover

    def _replace_once(
        self,
        collection: Collection,
        source: str,
        sha256: str,
        title: str,
        metadata: dict[str, Any],
        pages: Sequence[Page],
        chunks: Sequence[Chunk],
        embeddings: np.ndarray | None,
        skip_if_unchanged: bool,
        warnings: list[str] | None = None,
        origin: str | None = None,
        file_stat: tuple[int, int] | None = None,
    ) -> int | None:
        size, mtime_ns = file_stat if file_stat is not None else (None, None)
        with self._conn() as conn, conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{collection.id}\x1f{source}",)
            )
            old = conn.execute(
                "SELECT id, sha256 FROM documents WHERE collection_id = %s AND source = %s",
                (collection.id, source),
            ).fetchone()
            if old is not None:
                if skip_if_unchanged and old[1] == sha256:
                    return None
                conn.execute("DELETE FROM documents WHERE id = %s", (old[0],))
            doc_id = conn.execute(
                "INSERT INTO documents (collection_id, source, sha256, title, page_count, chunk_count, metadata, "
                "warnings, origin, file_size, file_mtime_ns) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "RETURNING id",
                (collection.id, source, sha256, title, len(pages), len(chunks), Jsonb(metadata),
                 Jsonb(list(warnings or [])), origin, size, mtime_ns),
            ).fetchone()[0]
            conn.execute(
                "DELETE FROM ingest_failures WHERE collection_id = %s AND source = %s", (collection.id, source)
            )
            with conn.cursor() as cur:
                with cur.copy("COPY pages (document_id, number, text) FROM STDIN") as copy:
                    for p in pages:
                        copy.write_row((doc_id, p.number, p.text))
                with cur.copy(
                    "COPY chunks (id, collection_id, document_id, ord, page, section, char_start, char_end, "
                    "text, language, embedding) FROM STDIN"
                ) as copy:
                    for i, c in enumerate(chunks):
                        vec = None
                        if embeddings is not None:
                            vec = "[" + ",".join(repr(float(x)) for x in embeddings[i]) + "]"
                        copy.write_row(
                            (
                                chunk_id(collection.name, source, sha256, c.ord),
                                collection.id,
                                doc_id,
                                c.ord,
                                c.page,
                                c.section,
                                c.char_start,
                                c.char_end,
                                c.text,
                                collection.language,
                                vec,
                            )
                        )
            conn.execute(
                """
                INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl)
                SELECT c.collection_id, u.lexeme, c.id, c.document_id, cardinality(u.positions), t.dl
                FROM chunks c
                CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl
                                    FROM unnest(c.tsv)) t
                CROSS JOIN LATERAL unnest(c.tsv) u
                WHERE c.document_id = %s
                """,
                (doc_id,),
            )
            conn.execute(
                "UPDATE documents SET token_count = "
                "(SELECT coalesce(sum(tf), 0) FROM postings WHERE document_id = %s) WHERE id = %s",
                (doc_id, doc_id),
            )
            if self._before_commit is not None:
                self._before_commit()
        return int(doc_id)

    # ------------------------------------------------------------------ ingest outcomes (issue 11)
    def document_states(self, collection: Collection) -> dict[str, tuple[str, list[str]]]:
        """source → (sha256, stored warnings) for every document of the collection."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, sha256, warnings FROM documents WHERE collection_id = %s", (collection.id,)
            ).fetchall()
        return {r[0]: (r[1], list(r[2] or [])) for r in rows}

    def ingest_failures(self, collection: Collection) -> dict[str, tuple[str, str, str]]:
        """source → (sha256, reason, parser) of the files whose last ingest failed."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, sha256, reason, parser FROM ingest_failures WHERE collection_id = %s", (collection.id,)
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def remember_failure(self, collection: Collection, source: str, sha256: str, reason: str, parser: str) -> None:
        """Record (or replace) the failure of ``source`` with the bytes' sha256 and the parser limits used."""
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO ingest_failures (collection_id, source, sha256, reason, parser) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (collection_id, source) DO UPDATE SET "
                "sha256 = EXCLUDED.sha256, reason = EXCLUDED.reason, parser = EXCLUDED.parser, failed_at = now()",
                (collection.id, source, sha256, reason or "failed", parser),
            )

    def forget_failures(self, collection: Collection, sources: Sequence[str]) -> None:
        """Drop remembered failures of ``sources`` (files gone, or now taken)."""
        if sources:
            with self._conn() as conn:
                conn.execute(
                    "DELETE FROM ingest_failures WHERE collection_id = %s AND source = ANY(%s)",
                    (collection.id, list(sources)),
                )

    # ------------------------------------------------------------------ chunks and pages
    _CHUNK_SELECT = """
        SELECT c.id, col.name, c.document_id, d.source, d.title, c.ord, c.page, c.section,
               c.char_start, c.char_end, c.text
        FROM chunks c JOIN documents d ON d.id = c.document_id JOIN collections col ON col.id = c.collection_id
    """

    @staticmethod
    def _chunk_from_row(r: Sequence[Any]) -> ChunkRecord:
        return ChunkRecord(r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), int(r[6]), r[7], int(r[8]), int(r[9]), r[10])

    def get_chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        if not ids:
            return {}
        with self._conn() as conn:
            rows = conn.execute(self._CHUNK_SELECT + " WHERE c.id = ANY(%s)", (list(ids),)).fetchall()
        return {r[0]: self._chunk_from_row(r) for r in rows}

    def chunk_with_neighbours(self, chunk_id_: str, before: int = 1, after: int = 1) -> list[ChunkRecord]:
        """The chunk and up to ``before``/``after`` chunks of the same document around it, in order."""
        with self._conn() as conn:
            row = conn.execute("SELECT document_id, ord FROM chunks WHERE id = %s", (chunk_id_,)).fetchone()
            if row is None:
                from kaynak.errors import ChunkNotFound

                raise ChunkNotFound(f"no chunk with id {chunk_id_!r}")
            rows = conn.execute(
                self._CHUNK_SELECT + " WHERE c.document_id = %s AND c.ord BETWEEN %s AND %s ORDER BY c.ord",
                (row[0], row[1] - before, row[1] + after),
            ).fetchall()
        return [self._chunk_from_row(r) for r in rows]

    def get_page(self, collection: Collection, source: str, number: int) -> str:
        with self._conn() as conn:
            row = conn.execute(
                "SELECT p.text FROM pages p JOIN documents d ON d.id = p.document_id "
                "WHERE d.collection_id = %s AND d.source = %s AND p.number = %s",
                (collection.id, source, number),
            ).fetchone()
        if row is None:
            raise DocumentNotFound(f"collection {collection.name!r} has no page {number} of {source!r}")
        return str(row[0])

    def document_origin(self, document_id: int) -> tuple[DocumentInfo, str | None]:
        """A document by its id, with ``origin`` (the file it was ingested from; the web page serves it)."""
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {self._DOC_COLS}, origin, "
                "(SELECT name FROM collections c WHERE c.id = documents.collection_id) FROM documents WHERE id = %s",
                (document_id,),
            ).fetchone()
        if row is None:
            raise DocumentNotFound(f"no document with id {document_id}")
        return self._doc_from_row(row[:-2], row[-1]), row[-2]

    # ------------------------------------------------------------------ search
    def _documents_where(self, collection_ids: Sequence[int], filters: SearchFilters) -> tuple[sql.Composable, list]:
        """A condition on ``documents`` rows for the filters."""
        conds = [sql.SQL("collection_id = ANY(%s)")]
        params: list[Any] = [list(collection_ids)]
        if filters.source_prefix:
            conds.append(sql.SQL("source LIKE %s"))
            params.append(_like_escape(filters.source_prefix) + "%")
        if filters.source_glob:  # kaynak.globs: `*` within a folder, `**` across (the ingest --include dialect)
            conds.append(sql.SQL("source ~ %s"))
            params.append(postgres_regex(filters.source_glob))
        if filters.metadata:
            conds.append(sql.SQL("metadata @> %s"))
            params.append(Jsonb(filters.metadata))
        return sql.SQL(" AND ").join(conds), params

    def _filter_sql(self, collection_ids: Sequence[int], filters: SearchFilters | None) -> tuple[sql.Composable, list]:
        """A condition on ``document_id`` for the filters (TRUE when there are none)."""
        if filters is None or filters.empty():
            return sql.SQL("TRUE"), []
        where, params = self._documents_where(collection_ids, filters)
        return sql.SQL("document_id = ANY(ARRAY(SELECT id FROM documents WHERE {}))").format(where), params

    def _filter_documents_sql(
        self, collection_ids: Sequence[int], filters: SearchFilters | None
    ) -> tuple[sql.Composable, list]:
        """The ids of the documents the filters keep, as a ``bigint[]`` expression (NULL when there are none)."""
        if filters is None or filters.empty():
            return sql.SQL("NULL::bigint[]"), []
        where, params = self._documents_where(collection_ids, filters)
        return sql.SQL("ARRAY(SELECT id FROM documents WHERE {})").format(where), params

    def vector_search(
        self,
        collection: Collection,
        query_vector: np.ndarray,
        k: int = 40,
        filters: SearchFilters | None = None,
        ef_search: int = 100,
    ) -> list[tuple[str, float]]:
        """Nearest chunks by cosine distance: [(chunk_id, distance)], closest first.

        HNSW with ``hnsw.ef_search`` raised and ``hnsw.iterative_scan = relaxed_order``, so filters that keep
        few rows still yield k results.
        """
        if len(query_vector) != collection.dim:
            raise UsageError(
                f"query vector has {len(query_vector)} dimensions; collection {collection.name!r} has {collection.dim}"
            )
        cond, params = self._filter_sql([collection.id], filters)
        vec = "[" + ",".join(repr(float(x)) for x in query_vector) + "]"
        dim = sql.Literal(collection.dim)
        query = sql.SQL(
            """
            SELECT id, dist FROM (
                SELECT id, (embedding::vector({dim})) <=> %s::vector({dim}) AS dist
                FROM chunks
                WHERE collection_id = {cid} AND embedding IS NOT NULL AND {cond}
                ORDER BY (embedding::vector({dim})) <=> %s::vector({dim})
                LIMIT %s
            ) t ORDER BY dist
            """
        ).format(dim=dim, cid=sql.Literal(collection.id), cond=cond)
        with self._conn() as conn, conn.transaction():
            conn.execute(  # one round trip for the three settings
                sql.SQL(
                    "SET LOCAL hnsw.ef_search = {}; SET LOCAL hnsw.iterative_scan = relaxed_order; "
                    "SET LOCAL hnsw.max_scan_tuples = 50000"
                ).format(sql.Literal(max(ef_search, k)))
            )
            rows = conn.execute(query, [vec, *params, vec, k]).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def query_lexemes(self, language: str, text: str, limit: int = MAX_QUERY_LEXEMES) -> list[str]:
        """The distinct lexemes of ``to_tsvector(language, tr_lower(text))``, in order of first appearance."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) "
                "ORDER BY positions[1] LIMIT %s",
                (language, text, limit),
            ).fetchall()
        return [r[0] for r in rows]

    def lexemes_of(self, language: str, texts: Sequence[str]) -> list[set[str]]:
        """The lexeme set of each text, stemmed exactly as the keyword leg stems (for quote selection)."""
        if not texts:
            return []
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT t.ord, array(SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(t.txt)))) "
                "FROM unnest(%s::text[]) WITH ORDINALITY AS t(txt, ord) ORDER BY t.ord",
                (language, list(texts)),
            ).fetchall()
        return [set(r[1]) for r in rows]

    def tr_lower(self, text: str) -> str:
        with self._conn() as conn:
            return str(conn.execute("SELECT tr_lower(%s)", (text,)).fetchone()[0])

    # kaynak_bm25_top's (min_postings, seed_postings, split): below min_postings in all a query is summed plainly;
    # the rarest terms up to seed_postings give θ; terms are read in full until the others' bounds sum below
    # split · θ. Tests lower the first two to exercise pruning on small sets.
    bm25_prune_limits: tuple[int, int, float] = (8000, 2000, 0.5)

    def keyword_search(
        self,
        collections: Sequence[Collection],
        query: str | None = None,
        k: int = 40,
        ranking: str = "bm25",
        filters: SearchFilters | None = None,
        k1: float = 0.9,
        b: float = 0.4,
        *,
        lexemes: Sequence[str] | None = None,
        pruned: bool = True,
    ) -> list[tuple[str, float]]:
        """Keyword ranking over collections that share one language: [(chunk_id, score)], best first.

        ``lexemes`` (already stemmed, e.g. a search plan's) spare stemming ``query`` again.
        ``ts_rank_cd``: the specification's OR tsquery of the query's lexemes ranked with ts_rank_cd(…, 1).
        ``bm25``: Okapi BM25 with per-collection IDF ln(1 + (N − df + .5)/(df + .5)). ``pruned`` (default) runs
        ``kaynak_bm25_top`` (MaxScore over ``lexeme_stats``; docs/adr/0012-bm25-pruning.md), which returns the
        same top k and scores as summing every posting of every term (``pruned=False``, the first path).
        """
        if not collections:
            return []
        languages = {c.language for c in collections}
        if len(languages) != 1:
            raise ValueError("keyword_search ranks one language at a time")
        language = languages.pop()
        if lexemes is None:
            lexemes = self.query_lexemes(language, query or "")
        lexemes = list(dict.fromkeys(lexemes))[:MAX_QUERY_LEXEMES]
        if not lexemes:
            return []
        ids = [c.id for c in collections]
        if ranking == "bm25" and pruned:
            docs, params = self._filter_documents_sql(ids, filters)
            query_sql = sql.SQL(
                """
                SELECT t.chunk_id, t.score
                FROM unnest(%s::bigint[]) AS c(id),
                     LATERAL kaynak_bm25_top(
                         c.id, %s::text[], %s::int, %s::float8, %s::float8, {docs}, %s::int, %s::int, %s::float8
                     ) t
                ORDER BY t.score DESC, t.chunk_id COLLATE "C" LIMIT %s
                """
            ).format(docs=docs)
            args: list[Any] = [ids, lexemes, k, k1, b, *params, *self.bm25_prune_limits, k]
        elif ranking == "bm25":
            cond, params = self._filter_sql(ids, filters)
            query_sql = sql.SQL(
                """
                WITH p AS MATERIALIZED (
                    SELECT collection_id, lexeme, chunk_id COLLATE "C" AS chunk_id, document_id, tf, dl
                    FROM postings WHERE collection_id = ANY(%s) AND lexeme = ANY(%s)
                ),
                df AS (SELECT collection_id, lexeme, count(*)::float8 AS df FROM p GROUP BY 1, 2),
                st AS (
                    SELECT collection_id, sum(chunk_count)::float8 AS n,
                           greatest(sum(token_count)::float8 / greatest(sum(chunk_count), 1), 1.0) AS avgdl
                    FROM documents WHERE collection_id = ANY(%s) GROUP BY 1
                )
                SELECT p.chunk_id,
                       sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5))
                           * p.tf * (%s + 1) / (p.tf + %s * (1 - %s + %s * p.dl / st.avgdl))) AS score
                FROM p JOIN df USING (collection_id, lexeme) JOIN st USING (collection_id)
                WHERE {cond}
                GROUP BY p.chunk_id
                ORDER BY score DESC, p.chunk_id LIMIT %s
                """
            ).format(cond=cond)
            args = [ids, lexemes, ids, k1, k1, b, b, *params, k]
        elif ranking == "ts_rank_cd":
            cond, params = self._filter_sql(ids, filters)
            query_sql = sql.SQL(
                """
                SELECT id, ts_rank_cd(tsv, q, 1) AS score
                FROM chunks, (SELECT %s::tsquery AS q) qq
                WHERE collection_id = ANY(%s) AND tsv @@ q AND {cond}
                ORDER BY score DESC, id LIMIT %s
                """
            ).format(cond=cond)
            args = [tsquery_literal(lexemes), ids, *params, k]
        else:
            raise UsageError(f"unknown keyword ranking {ranking!r}; choose bm25 or ts_rank_cd", "ranking")
        with self._conn() as conn:
            rows = conn.execute(query_sql, args).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def lexeme_stats(self, collection: Collection, lexemes: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """lexeme → (df, max tf, min length) from ``lexeme_stats`` (what BM25 pruning bounds each term with)."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT lexeme, df, max_tf, min_dl FROM lexeme_stats WHERE collection_id = %s AND lexeme = ANY(%s)",
                (collection.id, list(lexemes)),
            ).fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}

    # ------------------------------------------------------------------ maintenance
    def chunk_count(self, collection: Collection) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT count(*) FROM chunks WHERE collection_id = %s", (collection.id,)).fetchone()
        return int(row[0])

    # ------------------------------------------------------------------ OCR marks (issue 18)
    def ocr_confidences(self, chunk_ids: Sequence[str]) -> dict[str, float]:
        """For the chunks among ``chunk_ids`` that lie on OCR'd pages: Tesseract's mean confidence of that page
        (0–100), from the document's metadata (``ocr.pages``, written by the loaders)."""
        if not chunk_ids:
            return {}
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT c.id, (d.metadata -> 'ocr' -> 'pages' ->> c.page::text)::float8 FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s) AND d.metadata ? 'ocr'",
                (list(chunk_ids),),
            ).fetchall()
        return {r[0]: float(r[1]) for r in rows if r[1] is not None}

    # ------------------------------------------------------------------ search service helpers (issue 6)
    def embedded_collection_ids(self, collection_ids: Sequence[int]) -> set[int]:
        """The ids among ``collection_ids`` whose chunks have embeddings (what the vector leg can search)."""
        if not collection_ids:
            return set()
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT c.id FROM collections c WHERE c.id = ANY(%s) AND EXISTS "
                "(SELECT 1 FROM chunks k WHERE k.collection_id = c.id AND k.embedding IS NOT NULL)",
                (list(collection_ids),),
            ).fetchall()
        return {int(r[0]) for r in rows}

    def query_terms(
        self, language: str, text: str, collection_ids: Sequence[int], limit: int = MAX_QUERY_LEXEMES
    ) -> list[tuple[str, bool]]:
        """``query_lexemes`` with, for each lexeme, whether any chunk of the collections contains it (one round
        trip; the search service weights the keyword leg by the share of known terms)."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT u.lexeme, EXISTS (SELECT 1 FROM lexeme_stats s WHERE s.collection_id = ANY(%s) "
                "AND s.lexeme = u.lexeme) FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) u "
                "ORDER BY u.positions[1] LIMIT %s",
                (list(collection_ids), language, text, limit),
            ).fetchall()
        return [(r[0], bool(r[1])) for r in rows]

    # ------------------------------------------------------------------ sync and watch (issue 19)
    # Remembered sources, file stats of documents, renames without re-embedding, the per-collection sync lock and
    # watcher heartbeats (kaynak.ingest.sync, kaynak.ingest.watch; docs/adr/0015-watch-and-sync.md).
    def remember_source(
        self, collection: Collection, root: str, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> None:
        """Remember that ``collection`` mirrors the folder (or file) ``root`` (absolute) with these globs."""
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO collection_sources (collection_id, root, include, exclude) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (collection_id, root) DO UPDATE SET include = EXCLUDED.include, "
                "exclude = EXCLUDED.exclude",
                (collection.id, root, Jsonb(list(include)), Jsonb(list(exclude))),
            )

    def collection_sources(self, collection: Collection) -> list[dict[str, Any]]:
        """The remembered roots of ``collection``: root, include, exclude, added_at, last_sync_at, last_sync."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT root, include, exclude, added_at, last_sync_at, last_sync FROM collection_sources "
                "WHERE collection_id = %s ORDER BY root",
                (collection.id,),
            ).fetchall()
        return [
            {"root": r[0], "include": list(r[1] or []), "exclude": list(r[2] or []), "added_at": r[3],
             "last_sync_at": r[4], "last_sync": r[5]}
            for r in rows
        ]

    def forget_source(self, collection: Collection, root: str) -> bool:
        with self._conn() as conn:
            row = conn.execute(
                "DELETE FROM collection_sources WHERE collection_id = %s AND root = %s RETURNING root",
                (collection.id, root),
            ).fetchone()
        return row is not None

    def mark_synced(self, collection: Collection, roots: Sequence[str], summary: dict[str, Any]) -> None:
        """Record that ``roots`` of ``collection`` were brought up to date now (``summary``: what was done)."""
        with self._conn() as conn:
            conn.execute(
                "UPDATE collection_sources SET last_sync_at = now(), last_sync = %s "
                "WHERE collection_id = %s AND root = ANY(%s)",
                (Jsonb(summary), collection.id, list(roots)),
            )

    def file_states(self, collection: Collection) -> dict[str, tuple[str, int | None, int | None, str | None]]:
        """source → (sha256, file_size, file_mtime_ns, origin) for every document of the collection."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, sha256, file_size, file_mtime_ns, origin FROM documents WHERE collection_id = %s",
                (collection.id,),
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def set_file_stats(self, collection: Collection, rows: Sequence[tuple[str, str, int, int, str | None]]) -> None:
        """For (source, sha256, size, mtime_ns, origin): record the stat of an unchanged file (only where the
        stored sha256 is still that one, so a concurrent replace is never overwritten with an old stat)."""
        if not rows:
            return
        with self._conn() as conn:
            conn.execute(
                "UPDATE documents d SET file_size = u.size, file_mtime_ns = u.mtime, "
                "origin = coalesce(u.origin, d.origin) "
                "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::text[]) "
                "AS u(source, sha, size, mtime, origin) "
                "WHERE d.collection_id = %s AND d.source = u.source AND d.sha256 = u.sha",
                ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows],
                 [r[4] for r in rows], collection.id),
            )

    def move_document(
        self,
        collection: Collection,
        old_source: str,
        new_source: str,
        sha256: str,
        origin: str | None,
        file_stat: tuple[int, int] | None,
    ) -> bool:
        """Re-point the document at ``old_source`` (with content ``sha256``) to ``new_source``: a renamed or moved
        file, its pages, chunks and vectors kept (nothing re-embedded). Chunk ids are rewritten to
        ``chunk_id(collection, new_source, sha256, ord)`` (ids stay a function of the identity, so the old source
        can be ingested again later without a clash). Returns False, changing nothing, when the old document is
        gone or has other content, or the new source is taken (the caller ingests the file instead)."""
        first, second = sorted((old_source, new_source))
        with self._conn() as conn, conn.transaction():
            for s in (first, second):  # the same lock replace_document takes, in one order
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{collection.id}\x1f{s}",))
            old = conn.execute(
                "SELECT id, sha256 FROM documents WHERE collection_id = %s AND source = %s",
                (collection.id, old_source),
            ).fetchone()
            if old is None or old[1] != sha256:
                return False
            taken = conn.execute(
                "SELECT 1 FROM documents WHERE collection_id = %s AND source = %s", (collection.id, new_source)
            ).fetchone()
            if taken is not None:
                return False
            doc_id = int(old[0])
            ords = [int(r[0]) for r in conn.execute(
                "SELECT ord FROM chunks WHERE document_id = %s ORDER BY ord", (doc_id,)
            ).fetchall()]
            olds = [chunk_id(collection.name, old_source, sha256, o) for o in ords]
            news = [chunk_id(collection.name, new_source, sha256, o) for o in ords]
            size, mtime = file_stat if file_stat is not None else (None, None)
            conn.execute(
                "UPDATE documents SET source = %s, origin = %s, file_size = %s, file_mtime_ns = %s WHERE id = %s",
                (new_source, origin, size, mtime, doc_id),
            )
            conn.execute(
                "UPDATE chunks c SET id = m.new FROM unnest(%s::text[], %s::text[]) AS m(old, new) "
                "WHERE c.document_id = %s AND c.id = m.old",
                (olds, news, doc_id),
            )
            conn.execute(
                "UPDATE postings p SET chunk_id = m.new FROM unnest(%s::text[], %s::text[]) AS m(old, new) "
                "WHERE p.document_id = %s AND p.chunk_id = m.old",
                (olds, news, doc_id),
            )
            conn.execute(
                "DELETE FROM ingest_failures WHERE collection_id = %s AND source = %s", (collection.id, new_source)
            )
        return True

    @contextmanager
    def collection_lock(
        self, name: str, *, exclusive: bool, stop: Callable[[], bool] | None = None,
        on_wait: Callable[[], None] | None = None,
    ) -> Iterator[bool]:
        """Hold the collection's sync lock (a session advisory lock on a connection of its own, outside the pool)
        while the block runs: ``kaynak sync`` / ``kaynak watch`` take it exclusively, ``kaynak ingest`` shared, so
        a sync never overlaps an ingest of the same collection (no file embedded twice; the end state is that of
        one after the other) while ingests still run side by side. ``on_wait`` is called once when the lock is
        busy; ``stop()`` true gives up waiting (the block then runs with False and must do nothing)."""
        key = f"kaynak-sync\x1f{name}"
        fn = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"
        with map_errors("the primary database"):
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        try:
            with map_errors("the primary database"):
                got = bool(conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (key,)).fetchone()[0])
                waited = False
                while not got:
                    if stop is not None and stop():
                        break
                    if not waited and on_wait is not None:
                        on_wait()
                    waited = True
                    time.sleep(0.2)
                    got = bool(conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (key,)).fetchone()[0])
            yield got
        finally:
            conn.close()  # ends the session: the lock goes with it

    def watcher_heartbeat(
        self, watcher: str, host: str, pid: int, polling: bool, pending: dict[int, int]
    ) -> None:
        """Record that ``watcher`` is alive and watches the collections (by id) in ``pending``, with how many
        changed files wait in each."""
        if not pending:
            return
        ids = sorted(pending)
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO sync_watchers (collection_id, watcher, host, pid, polling, pending) "
                "SELECT u.id, %s, %s, %s, %s, u.pending FROM unnest(%s::bigint[], %s::int[]) AS u(id, pending) "
                "WHERE EXISTS (SELECT 1 FROM collections c WHERE c.id = u.id) "
                "ON CONFLICT (collection_id, watcher) DO UPDATE SET heartbeat_at = now(), pending = EXCLUDED.pending",
                (watcher, host, pid, polling, ids, [pending[i] for i in ids]),
            )

    def watcher_stopped(self, watcher: str) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM sync_watchers WHERE watcher = %s", (watcher,))

    def sync_state(self, collection: Collection, fresh_s: float) -> dict[str, Any]:
        """Watchers whose heartbeat is younger than ``fresh_s`` seconds, and the remembered failures."""
        with self._conn() as conn:
            watchers = conn.execute(
                "SELECT watcher, host, pid, polling, started_at, heartbeat_at, pending FROM sync_watchers "
                "WHERE collection_id = %s AND heartbeat_at > now() - make_interval(secs => %s) ORDER BY started_at",
                (collection.id, fresh_s),
            ).fetchall()
            failures = conn.execute(
                "SELECT source, reason, failed_at FROM ingest_failures WHERE collection_id = %s ORDER BY source",
                (collection.id,),
            ).fetchall()
        return {
            "watchers": [
                {"id": r[0], "host": r[1], "pid": r[2], "polling": r[3], "started_at": r[4], "heartbeat_at": r[5],
                 "pending": r[6]}
                for r in watchers
            ],
            "failing": [{"source": r[0], "reason": r[1], "failed_at": r[2]} for r in failures],
        }

    def chunk_files(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str | None, int | None, int | None, str]]:
        """chunk id → its document's (origin, file_size, file_mtime_ns, sha256): what ``stale`` is judged by."""
        if not chunk_ids:
            return {}
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT c.id, d.origin, d.file_size, d.file_mtime_ns, d.sha256 FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s)",
                (list(chunk_ids),),
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}
