"""Writes of documents: replace one in a single transaction, delete, move (rename), remembered ingest failures.

A document is never half-stored: ``replace_document`` removes the old version's rows and adds the new pages,
chunks (with vectors) and BM25 postings in one transaction, under a per-source advisory lock that
``delete_document`` and ``move_document`` take too.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from kaynak.errors import DataRejected, DocumentRejected, StoreError, WriteConflict
from kaynak.langdetect import detect_language
from kaynak.store.base import StoreBase
from kaynak.store.boundary import one
from kaynak.types import Chunk, Collection, Page


def chunk_id(collection: str, source: str, sha256: str, ord: int) -> str:
    """The specification's chunk id: sha1(collection, source, sha256, ord)[:20]."""
    key = "\x1f".join((collection, source, sha256, str(ord)))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


# The BM25 postings of one document's chunks: each chunk's terms merged with its document's title terms (BM25F-style,
# weight 1: tf and the chunk length dl count them), keyed by the chunk's 60-bit key (docs/adr/0017, 0022).
_POSTINGS_OF_DOCUMENT = """
    INSERT INTO postings (collection_id, lexeme, chunk_key, document_id, tf, dl)
    SELECT c.collection_id, u.lexeme, kaynak_chunk_key(c.id), c.document_id, cardinality(u.positions), t.dl
    FROM chunks c
    JOIN documents d ON d.id = c.document_id
    CROSS JOIN LATERAL (SELECT c.tsv || kaynak_header_tsv(c.language, d.title) AS v) h
    CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl FROM unnest(h.v)) t
    CROSS JOIN LATERAL unnest(h.v) u
    WHERE c.document_id = %s
"""


class WritesMixin(StoreBase):
    """Every statement that adds, replaces, moves or deletes a document."""

    def delete_document(self, collection: Collection, source: str) -> bool:
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{collection.id}\x1f{source}",))
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
                    collection,
                    source,
                    sha256,
                    title,
                    metadata,
                    pages,
                    chunks,
                    embeddings,
                    skip_if_unchanged,
                    list(warnings),
                    origin,
                    file_stat,
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
        language = detect_language("\n".join(p.text[:20_000] for p in pages[:5]))  # documents.language
        with self._conn() as conn, conn.transaction():
            conn.execute("SET CONSTRAINTS documents_stats DEFERRED")  # collection_stats at commit (migration 8)
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{collection.id}\x1f{source}",))
            old = conn.execute(
                "SELECT id, sha256 FROM documents WHERE collection_id = %s AND source = %s",
                (collection.id, source),
            ).fetchone()
            if old is not None:
                if skip_if_unchanged and old[1] == sha256:
                    return None
                conn.execute("DELETE FROM documents WHERE id = %s", (old[0],))
            doc_id = one(
                conn.execute(
                    "INSERT INTO documents (collection_id, source, sha256, title, page_count, chunk_count, metadata, "
                    "warnings, origin, file_size, file_mtime_ns, language) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (
                        collection.id,
                        source,
                        sha256,
                        title,
                        len(pages),
                        len(chunks),
                        Jsonb(metadata),
                        Jsonb(list(warnings or [])),
                        origin,
                        size,
                        mtime_ns,
                        language,
                    ),
                )
            )[0]
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
            conn.execute(_POSTINGS_OF_DOCUMENT, (doc_id,))
            conn.execute(
                "UPDATE documents SET token_count = "
                "(SELECT coalesce(sum(tf), 0) FROM postings WHERE document_id = %s) WHERE id = %s",
                (doc_id, doc_id),
            )
            if self._before_commit is not None:
                self._before_commit()
        return int(doc_id)

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
        can be ingested again later without a clash; the postings follow). Returns False, changing nothing, when the
        old document is gone or has other content, or the new source is taken (the caller ingests the file instead)."""
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
            ords = [
                int(r[0])
                for r in conn.execute(
                    "SELECT ord FROM chunks WHERE document_id = %s ORDER BY ord", (doc_id,)
                ).fetchall()
            ]
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
                "UPDATE postings p SET chunk_key = kaynak_chunk_key(m.new) "
                "FROM unnest(%s::text[], %s::text[]) AS m(old, new) "
                "WHERE p.document_id = %s AND p.chunk_key = kaynak_chunk_key(m.old)",
                (olds, news, doc_id),
            )
            conn.execute(
                "DELETE FROM ingest_failures WHERE collection_id = %s AND source = %s", (collection.id, new_source)
            )
        return True
