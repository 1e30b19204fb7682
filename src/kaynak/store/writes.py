"""Writes of documents: replace one (or the set one file holds) in a single transaction, delete, move (rename),
remembered ingest failures.

A document is never half-stored: ``replace_document`` removes the old version's rows and adds the new pages,
chunks (with vectors) and BM25 postings in one transaction, under a per-source advisory lock that
``delete_document`` and ``move_document`` take too.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from kaynak.errors import DataRejected, DocumentRejected, StoreError, WriteConflict
from kaynak.langdetect import detect_document, keyword_language, stored_language
from kaynak.quotes import analyse, encode
from kaynak.store.base import StoreBase, like_escape
from kaynak.store.boundary import one
from kaynak.store.retrieval import stem_texts
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


def document_languages(pages: Sequence[Page], collection: Collection) -> tuple[str | None, str]:
    """A document's ``documents.language`` (Turkish, English or None: what the cross-language rule compares) and
    the text search configuration its chunks, postings and sentence analyses are stemmed with (its own language;
    ``simple`` for another language; the collection's when too short to tell or mixed: docs/adr/0038)."""
    detected = detect_document([p.text for p in pages])
    return stored_language(detected), keyword_language(detected, collection.language)


#: Chunks whose sentences one stemming statement analyses at ingest (a mailbox of 10,000 messages is a few).
ANALYSIS_BATCH = 500


def write_sentences(conn: Any, collection_id: int, language: str, rows: Sequence[tuple[int, int, str]]) -> None:
    """Store each chunk's sentence analysis (``kaynak.quotes.analyse``: spans and lexemes, stemmed on ``conn``
    exactly as a search would, under the collection's ``language``) in ``chunk_sentences``; ``rows`` are
    (document id, ord, text) of chunks of collection ``collection_id``. A search then quotes its hits without
    splitting and stemming them again (migration 14)."""
    encoded: list[str] = []
    for b in range(0, len(rows), ANALYSIS_BATCH):
        texts = [t for _, _, t in rows[b : b + ANALYSIS_BATCH]]
        encoded += [encode(a) for a in analyse(texts, lambda items: stem_texts(conn, language, items))]
    copy_sql = "COPY chunk_sentences (collection_id, document_id, ord, analysis) FROM STDIN"
    with conn.cursor() as cur, cur.copy(copy_sql) as copy:
        for (doc_id, ord_, _), analysis in zip(rows, encoded, strict=True):
            copy.write_row((collection_id, doc_id, ord_, analysis))


#: Documents whose sentence analyses one committed transaction of ``fill_sentences`` stores.
FILL_DOCUMENTS = 50


@dataclass
class DocumentVersion:
    """One document of a set written together (``replace_document_set``)."""

    source: str
    sha256: str
    title: str
    metadata: dict[str, Any]
    pages: Sequence[Page]
    chunks: Sequence[Chunk]
    embeddings: np.ndarray | None
    warnings: Sequence[str] = ()
    origin: str | None = None
    file_stat: tuple[int, int] | None = None


#: The postings of several documents' chunks at once (``replace_document_set``), as _POSTINGS_OF_DOCUMENT.
_POSTINGS_OF_DOCUMENTS = _POSTINGS_OF_DOCUMENT.replace("c.document_id = %s", "c.document_id = ANY(%s)")


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
        language, stemming = document_languages(pages, collection)
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
                    "warnings, origin, file_size, file_mtime_ns, language, keyword_language) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
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
                        stemming,
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
                                stemming,
                                vec,
                            )
                        )
            write_sentences(conn, collection.id, stemming, [(doc_id, c.ord, c.text) for c in chunks])
            conn.execute(_POSTINGS_OF_DOCUMENT, (doc_id,))
            conn.execute(
                "UPDATE documents SET token_count = "
                "(SELECT coalesce(sum(tf), 0) FROM postings WHERE document_id = %s) WHERE id = %s",
                (doc_id, doc_id),
            )
            if self._before_commit is not None:
                self._before_commit()
        return int(doc_id)

    def _insert_versions(self, conn: Any, collection: Collection, members: Sequence[DocumentVersion]) -> dict[str, int]:
        """Insert many documents' rows with a fixed number of statements (a mailbox of 10,000 messages is not
        50,000 round trips): the documents in one pipelined executemany, pages and chunks in one COPY each, the
        postings and token counts in one statement each."""
        if not members:
            return {}
        params = []
        stemmings: list[str] = []
        for m in members:
            size, mtime_ns = m.file_stat if m.file_stat is not None else (None, None)
            language, stemming = document_languages(m.pages, collection)
            stemmings.append(stemming)
            params.append(
                (collection.id, m.source, m.sha256, m.title, len(m.pages), len(m.chunks), Jsonb(m.metadata),
                 Jsonb(list(m.warnings)), m.origin, size, mtime_ns, language, stemming)
            )  # fmt: skip
        ids: list[int] = []
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO documents (collection_id, source, sha256, title, page_count, chunk_count, metadata, "
                "warnings, origin, file_size, file_mtime_ns, language, keyword_language) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                params,
                returning=True,
            )
            while True:
                ids.append(int(cur.fetchone()[0]))
                if not cur.nextset():
                    break
            with cur.copy("COPY pages (document_id, number, text) FROM STDIN") as copy:
                for doc_id, m in zip(ids, members, strict=True):
                    for p in m.pages:
                        copy.write_row((doc_id, p.number, p.text))
            with cur.copy(
                "COPY chunks (id, collection_id, document_id, ord, page, section, char_start, char_end, "
                "text, language, embedding) FROM STDIN"
            ) as copy:
                for doc_id, m, stemming in zip(ids, members, stemmings, strict=True):
                    for i, c in enumerate(m.chunks):
                        vec = None
                        if m.embeddings is not None:
                            vec = "[" + ",".join(repr(float(x)) for x in m.embeddings[i]) + "]"
                        copy.write_row(
                            (chunk_id(collection.name, m.source, m.sha256, c.ord), collection.id, doc_id, c.ord,
                             c.page, c.section, c.char_start, c.char_end, c.text, stemming, vec)
                        )  # fmt: skip
        by_language: dict[str, list[tuple[int, int, str]]] = {}
        for d, m, stemming in zip(ids, members, stemmings, strict=True):
            by_language.setdefault(stemming, []).extend((d, c.ord, c.text) for c in m.chunks)
        for stemming, sentences in sorted(by_language.items()):
            write_sentences(conn, collection.id, stemming, sentences)
        conn.execute(_POSTINGS_OF_DOCUMENTS, (ids,))
        conn.execute(
            "UPDATE documents d SET token_count = coalesce(t.n, 0) FROM "
            "(SELECT i.id, (SELECT sum(tf) FROM postings p WHERE p.document_id = i.id) AS n "
            "FROM unnest(%s::bigint[]) AS i(id)) t WHERE d.id = t.id",
            (ids,),
        )
        return {m.source: doc_id for doc_id, m in zip(ids, members, strict=True)}

    def replace_document_set(
        self,
        collection: Collection,
        container: str,
        members: Sequence[DocumentVersion],
        *,
        skip_if_unchanged: bool = False,
    ) -> dict[str, int] | None:
        """Put the documents one file holds (a mailbox's messages, a message and its attachments) in the collection
        in one transaction, replacing every earlier document of that file.

        The file's documents are ``container`` itself and the sources ``container#…``
        (kaynak.ingest.sources.container_of); all of them go and ``members`` come, or nothing changes, so the
        database never holds half a mailbox. Returns source → new document id, or None when ``skip_if_unchanged``
        and the stored documents of the file are exactly these sources with the same sha256. A remembered failure
        of the file goes in the same transaction. Only the file's key is locked (one advisory lock, however many
        messages).
        """
        pattern = like_escape(container + "#") + "%"
        for attempt in range(3):
            try:
                with self._conn() as conn, conn.transaction():
                    conn.execute("SET CONSTRAINTS documents_stats DEFERRED")
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{collection.id}\x1f{container}",)
                    )
                    old = conn.execute(
                        "SELECT source, sha256 FROM documents WHERE collection_id = %s "
                        "AND (source = %s OR source LIKE %s)",
                        (collection.id, container, pattern),
                    ).fetchall()
                    if (
                        skip_if_unchanged
                        and old
                        and {(r[0], r[1]) for r in old} == {(m.source, m.sha256) for m in members}
                    ):
                        return None
                    conn.execute(
                        "DELETE FROM documents WHERE collection_id = %s AND (source = %s OR source LIKE %s)",
                        (collection.id, container, pattern),
                    )
                    conn.execute(
                        "DELETE FROM ingest_failures WHERE collection_id = %s AND source = %s",
                        (collection.id, container),
                    )
                    ids = self._insert_versions(conn, collection, members)
                    if self._before_commit is not None:
                        self._before_commit()
                return ids
            except WriteConflict as err:
                if attempt == 2:
                    raise WriteConflict(f"{container}: could not be written after 3 tries ({err.message})") from err
                time.sleep(0.05 * (attempt + 1))
            except DocumentRejected:
                raise
            except DataRejected as err:
                raise DocumentRejected(f"{container}: the database refused the document ({err.message})") from err
            except StoreError as err:
                err.message = f"while writing {container}: {err.message}"
                raise
        return None  # pragma: no cover

    def sentences_pending(self, collection: Collection | None = None) -> int:
        """Documents (of ``collection``, or of all) ingested before kaynak stored sentence analyses (migration 14
        lists them) whose analyses ``fill_sentences`` has not stored yet; their hits are analysed at search."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT count(*) FROM chunk_sentences_pending WHERE %(c)s::bigint IS NULL OR collection_id = %(c)s",
                {"c": collection.id if collection is not None else None},
            ).fetchone()
        return int(row[0]) if row else 0

    def fill_sentences(
        self,
        collection: Collection | None = None,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
    ) -> int:
        """Store the sentence analyses of the documents ``sentences_pending`` counts (of ``collection``, or of
        all), ``FILL_DOCUMENTS`` per committed transaction, so that a stopped fill resumes where it stopped and
        searches go on meanwhile; ``progress(done, total)`` after each; setting ``stop`` ends it after the batch
        under way. Returns the documents filled.

        Each batch locks its documents (shared): a concurrent replace, rename or delete of one waits for the
        batch, and documents another process is filling (or writing) are skipped, not waited for."""
        total = self.sentences_pending(collection)
        done = 0
        col_id = collection.id if collection is not None else None
        while total and not (stop is not None and stop.is_set()):
            with self._conn() as conn, conn.transaction():
                docs = conn.execute(
                    "SELECT p.document_id, p.collection_id, coalesce(d.keyword_language::text, col.language::text) "
                    "FROM chunk_sentences_pending p "
                    "JOIN documents d ON d.id = p.document_id JOIN collections col ON col.id = p.collection_id "
                    "WHERE %(c)s::bigint IS NULL OR p.collection_id = %(c)s ORDER BY p.document_id LIMIT %(n)s "
                    "FOR UPDATE OF p SKIP LOCKED FOR SHARE OF d SKIP LOCKED",
                    {"c": col_id, "n": FILL_DOCUMENTS},
                ).fetchall()
                if not docs:
                    break
                ids = [int(d[0]) for d in docs]
                chunks = conn.execute(
                    "SELECT document_id, ord, text FROM chunks WHERE document_id = ANY(%s) ORDER BY document_id, ord",
                    (ids,),
                ).fetchall()
                conn.execute("DELETE FROM chunk_sentences WHERE document_id = ANY(%s)", (ids,))
                by_doc: dict[int, list[tuple[int, int, str]]] = {}
                for doc_id, ord_, text in chunks:
                    by_doc.setdefault(int(doc_id), []).append((int(doc_id), int(ord_), text))
                groups: dict[tuple[int, str], list[tuple[int, int, str]]] = {}
                for doc_id, c_id, language in docs:
                    groups.setdefault((int(c_id), language), []).extend(by_doc.get(int(doc_id), []))
                for (c_id, language), rows in groups.items():
                    write_sentences(conn, c_id, language, rows)
                conn.execute("DELETE FROM chunk_sentences_pending WHERE document_id = ANY(%s)", (ids,))
            done += len(ids)
            if progress is not None:
                progress(done, max(total, done))
        return done

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
