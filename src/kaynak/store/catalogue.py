"""The catalogue: reads of what is stored (collections, documents, pages, chunks) and collection create/delete.

Vector layout (docs/adr/0001-vector-layout.md): creating a collection creates its partial HNSW index on
``(embedding::vector(dim))`` restricted to ``collection_id = <id>``; deleting it drops the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import sql

from kaynak.errors import ChunkNotFound, CollectionNotFound, Conflict, DocumentNotFound, UsageError
from kaynak.store.base import StoreBase, like_escape, vector_param
from kaynak.store.boundary import one
from kaynak.types import ChunkRecord, Collection, DocumentInfo
from kaynak.vocabulary import LANGUAGES


@dataclass
class HitChunk:
    """A search hit's chunk as ``hit_chunks`` returns it: the record, the OCR confidence of its page (None when
    the page was not read by OCR) and its document's file facts (origin, size, mtime_ns, sha256)."""

    record: ChunkRecord
    ocr: float | None
    file: tuple[str | None, int | None, int | None, str]
    similarity: float | None = None  # with ``hit_chunks(fill=…)``: its cosine similarity to the query vector
    sentences: str | None = None  # its sentence analysis stored at ingest (``kaynak.quotes.encode``), if any


@dataclass
class SimilarityFill:
    """What ``hit_chunks`` also answers for convex fusion's fill-in (ADR 0021): the cosine similarity to
    ``vector`` (``dim`` values) of those ``chunk_ids`` that are embedded chunks of ``collection_ids``."""

    collection_ids: Sequence[int]
    vector: Sequence[float] | np.ndarray  # sent as pgvector's binary form (``vector_param``)
    dim: int
    chunk_ids: Sequence[str]


class CatalogueMixin(StoreBase):
    """Collections, documents, pages and chunks as stored (no search, no writes of documents)."""

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

    # A collection's document and chunk counts come from ``collection_stats`` (migration 8 keeps them at every
    # commit), not from summing its documents: that sum grew with the number of files and ran on every search.
    _COLLECTION_SELECT = """
        SELECT c.id, c.name, c.language, c.embedder, c.dim,
               coalesce(s.documents, 0), coalesce(s.chunks, 0),
               to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        FROM collections c LEFT JOIN collection_stats s ON s.collection_id = c.id
    """

    @staticmethod
    def _collection_from_row(r: Sequence[Any]) -> Collection:
        return Collection(int(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), r[7])

    def _collection_rows(self, where: str = "", params: Sequence[Any] = ()) -> list[Collection]:
        with self._conn() as conn:
            rows = conn.execute(f"{self._COLLECTION_SELECT} {where} ORDER BY c.name", params).fetchall()
        return [self._collection_from_row(r) for r in rows]

    def list_collections(self) -> list[Collection]:
        return self._collection_rows()

    def document_languages(self, names: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Collection name → the languages detected in its documents (``documents.language``), sorted; a
        collection none of whose documents has a detected language is left out. ``names``: only those."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT c.name, array_agg(DISTINCT d.language ORDER BY d.language) FROM documents d "
                "JOIN collections c ON c.id = d.collection_id WHERE d.language IS NOT NULL "
                "AND (%s OR c.name = ANY(%s::text[])) GROUP BY c.name",
                (names is None, list(names or [])),
            ).fetchall()
        return {r[0]: list(r[1]) for r in rows}

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

    _DOC_COLS = (  # timestamps as ISO 8601 UTC, the one format of every face
        "id, source, sha256, title, page_count, chunk_count, metadata, "
        """to_char(ingested_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), warnings, origin"""
    )

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
                (collection.id, prefix, like_escape(prefix or "") + "%", limit, offset),
            ).fetchall()
        return [self._doc_from_row(r, collection.name) for r in rows]

    def count_documents(self, collection: Collection, prefix: str | None = None) -> int:
        """How many documents ``list_documents`` pages through (its ``total``)."""
        if prefix is None:
            return collection.document_count
        with self._conn() as conn:
            row = conn.execute(
                "SELECT count(*) FROM documents WHERE collection_id = %s AND source LIKE %s",
                (collection.id, like_escape(prefix) + "%"),
            ).fetchone()
        return int(row[0]) if row else 0

    def document_hashes(self, collection: Collection) -> dict[str, str]:
        """source → sha256 for every document of the collection (what ingest compares files against)."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, sha256 FROM documents WHERE collection_id = %s", (collection.id,)
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    # ------------------------------------------------------------------ ingest outcomes
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

    # ------------------------------------------------------------------ chunks and pages
    _CHUNK_SELECT = """
        SELECT c.id, col.name, c.document_id, d.source, d.title, c.ord, c.page, c.section,
               c.char_start, c.char_end, c.text
        FROM chunks c JOIN documents d ON d.id = c.document_id JOIN collections col ON col.id = c.collection_id
    """

    @staticmethod
    def _chunk_from_row(r: Sequence[Any]) -> ChunkRecord:
        return ChunkRecord(r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), int(r[6]), r[7], int(r[8]), int(r[9]), r[10])

    def hit_chunks(
        self,
        ids: Sequence[str],
        probe: tuple[str, Sequence[int], str] | None = None,
        fill: SimilarityFill | None = None,
    ) -> tuple[dict[str, HitChunk], tuple[str | None, bool] | None]:
        """The chunks of a search's hits with what a hit shows besides its text (the OCR confidence of its page,
        the file facts ``stale`` is judged by), in one statement. With ``probe`` = (chunk id, collection ids,
        language) the same statement answers ``language_probe`` for that chunk (returned second; None without
        ``probe``); the probed chunk is returned among the hits only if it is in ``ids``. With ``fill`` the same
        statement gives those chunks their ``similarity``, by the expression ``vector_similarities`` uses (the
        same numbers), which saves the search the fill-in's round trip. Each chunk comes with its stored sentence
        analysis (``HitChunk.sentences``), so that quoting it needs no stemming call."""
        wanted = list(dict.fromkeys(ids))
        best, collection_ids, language = probe if probe is not None else (None, (), None)
        if not wanted and best is None:
            return {}, None
        fetch = wanted + ([best] if best is not None and best not in wanted else [])
        similarity: sql.Composable = sql.SQL("NULL::float8")
        params: dict[str, Any] = {"ids": fetch, "best": best, "language": language, "cols": list(collection_ids)}
        if fill is not None:
            if len(fill.vector) != fill.dim:
                raise UsageError(f"query vector has {len(fill.vector)} dimensions, the collections {fill.dim}")
            similarity = sql.SQL(
                "CASE WHEN c.id = ANY(%(fill_ids)s) AND c.collection_id = ANY(%(fill_cols)s) "
                "AND c.embedding IS NOT NULL THEN 1 - ((c.embedding::vector({dim})) <=> %(vec)s::vector({dim})) END"
            ).format(dim=sql.Literal(fill.dim))
            params["fill_ids"] = list(fill.chunk_ids)
            params["fill_cols"] = list(fill.collection_ids)
            params["vec"] = vector_param(fill.vector)
        with self._conn() as conn:
            rows = conn.execute(
                sql.SQL(
                    """
                SELECT c.id, col.name, c.document_id, d.source, d.title, c.ord, c.page, c.section,
                       c.char_start, c.char_end, c.text,
                       CASE WHEN d.metadata ? 'ocr' THEN (d.metadata -> 'ocr' -> 'pages' ->> c.page::text)::float8
                       END,
                       d.origin, d.file_size, d.file_mtime_ns, d.sha256,
                       CASE WHEN c.id = %(best)s THEN d.language END,
                       CASE WHEN c.id = %(best)s AND d.language <> %(language)s THEN EXISTS (
                           SELECT 1 FROM documents x WHERE x.collection_id = ANY(%(cols)s) AND x.language = %(language)s
                       ) ELSE false END,
                       {similarity}, s.analysis
                FROM chunks c JOIN documents d ON d.id = c.document_id JOIN collections col ON col.id = c.collection_id
                LEFT JOIN chunk_sentences s ON s.document_id = c.document_id AND s.ord = c.ord
                WHERE c.id = ANY(%(ids)s)
                """
                ).format(similarity=similarity),
                params,
            ).fetchall()
        keep = set(wanted)
        out: dict[str, HitChunk] = {}
        probed: tuple[str | None, bool] | None = None if probe is None else (None, False)
        for r in rows:
            if r[0] in keep:
                out[r[0]] = HitChunk(
                    self._chunk_from_row(r),
                    None if r[11] is None else float(r[11]),
                    (r[12], r[13], r[14], r[15]),
                    None if r[18] is None else float(r[18]),
                    r[19],
                )
            if probe is not None and r[0] == best:
                probed = (r[16], bool(r[17]))
        return out, probed

    def get_chunks(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        if not ids:
            return {}
        with self._conn() as conn:
            rows = conn.execute(self._CHUNK_SELECT + " WHERE c.id = ANY(%s)", (list(ids),)).fetchall()
        return {r[0]: self._chunk_from_row(r) for r in rows}

    def chunk_with_neighbours(
        self, chunk_id_: str, before: int = 1, after: int = 1, within: Sequence[str] | None = None
    ) -> list[ChunkRecord]:
        """The chunk and up to ``before``/``after`` chunks of the same document around it, in order. ``within``:
        only a chunk of these collections (by name) is found; any other answers as missing, by the same single
        lookup, so that its existence does not show in the time the answer takes."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT c.document_id, c.ord FROM chunks c WHERE c.id = %s AND (%s::text[] IS NULL OR "
                "c.collection_id IN (SELECT id FROM collections WHERE name = ANY(%s::text[])))",
                (chunk_id_, None if within is None else list(within), None if within is None else list(within)),
            ).fetchone()
            if row is None:
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

    def document_origin(self, document_id: int, within: Sequence[str] | None = None) -> tuple[DocumentInfo, str | None]:
        """A document by its id, with ``origin`` (the file it was ingested from; the web page serves it).
        ``within``: only a document of these collections is found (as in ``chunk_with_neighbours``)."""
        names = None if within is None else list(within)
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {self._DOC_COLS}, origin, "
                "(SELECT name FROM collections c WHERE c.id = documents.collection_id) FROM documents WHERE id = %s "
                "AND (%s::text[] IS NULL OR collection_id IN "
                "(SELECT id FROM collections WHERE name = ANY(%s::text[])))",
                (document_id, names, names),
            ).fetchone()
        if row is None:
            raise DocumentNotFound(f"no document with id {document_id}")
        return self._doc_from_row(row[:-2], row[-1]), row[-2]

    # ------------------------------------------------------------------ maintenance
    def chunk_count(self, collection: Collection) -> int:
        with self._conn() as conn:
            row = one(conn.execute("SELECT count(*) FROM chunks WHERE collection_id = %s", (collection.id,)))
        return int(row[0])

    # ------------------------------------------------------------------ document languages (documents.language)
    def language_probe(self, chunk_id_: str, collection_ids: Sequence[int], language: str) -> tuple[str | None, bool]:
        """The language of the document ``chunk_id_`` belongs to, and — only when that is another language than
        ``language`` — whether the collections hold any document in ``language`` (else False). One round trip; the
        search service's cross-language rule (ADR 0017). The second look scans the collections' documents, so it
        runs only for queries whose best vector match is in another language."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT d.language, CASE WHEN d.language <> %s THEN EXISTS (SELECT 1 FROM documents x "
                "WHERE x.collection_id = ANY(%s) AND x.language = %s) ELSE false END "
                "FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = %s",
                (language, list(collection_ids), language, chunk_id_),
            ).fetchone()
        return (row[0], bool(row[1])) if row else (None, False)
