"""Migration 17 (issue 50): each stored document's keyword postings stemmed in its own language.

The schema step (``sql/0017_document_keyword_language.sql``) adds ``documents.keyword_language``; the batches
(``BATCH_DOCUMENTS`` documents each, committed with the last id done, so a stopped ``kaynak migrate`` resumes)
detect each document's language from the same sampled pages an ingest reads (``kaynak.langdetect``), record it,
and re-stem only the documents whose language differs from the one their chunks were stemmed with: their
chunks' ``language`` (``tsv`` follows), their postings (the statement triggers keep ``lexeme_stats`` exact, the
document's ``token_count`` is recounted, so ``collection_stats`` follows) and their sentence analyses (dropped and
listed in ``chunk_sentences_pending``: ``Store.fill_sentences`` stores them again, as after migration 14).

Every statement is literal text frozen here; only the detector is kaynak's (as migration 11's).
"""

from __future__ import annotations

from typing import Any

import psycopg

from kaynak.langdetect import PAGE_CHARS, SAMPLE_PAGES, detect_document, keyword_language, stored_language
from kaynak.store.migrations import steps
from kaynak.store.migrations.steps import Backfill

#: Rows of work one document's detection counts as in the upgrade's estimate: reading its sampled pages, looking
#: at up to 40,000 characters and recording the result took 17.8 s for 5,423 documents (XQuAD tr and en, SciFact;
#: none re-stemmed) on this project's 2-core machine, 3.3 ms each, what rewriting about 560 postings takes
#: (ROWS_PER_SECOND); a re-stemmed document adds its postings' rewrite (docs/adr/0038).
ROWS_PER_DOCUMENT = 500

_DOCUMENTS = """
    SELECT d.id, c.language,
           (SELECT k.language::text FROM chunks k WHERE k.document_id = d.id ORDER BY k.ord LIMIT 1),
           d.keyword_language::text
    FROM documents d JOIN collections c ON c.id = d.collection_id
    WHERE d.id > %(after)s AND d.id <= %(upto)s ORDER BY d.id
"""

# The sampled pages of each document (kaynak.langdetect.sample_indices, in SQL): all up to SAMPLE_PAGES, else
# SAMPLE_PAGES evenly spaced by integer division, the first PAGE_CHARS characters of each.
_PAGES = """
    SELECT s.document_id, s.i, s.n, left(s.text, %(chars)s) FROM (
        SELECT p.document_id, p.text,
               (row_number() OVER (PARTITION BY p.document_id ORDER BY p.number) - 1)::int AS i,
               (count(*) OVER (PARTITION BY p.document_id))::int AS n
        FROM pages p WHERE p.document_id > %(after)s AND p.document_id <= %(upto)s
    ) s
    WHERE s.n <= %(sample)s
       OR s.i IN (SELECT j * (s.n - 1) / (%(sample)s - 1) FROM generate_series(0, %(sample)s - 1) j)
    ORDER BY s.document_id, s.i
"""

# The postings of some documents' chunks, their terms merged with the document title's, keyed by chunk key (the
# form migration 12 left).
_POSTINGS = """
    INSERT INTO postings (collection_id, lexeme, chunk_key, document_id, tf, dl)
    SELECT c.collection_id, u.lexeme, kaynak_chunk_key(c.id), c.document_id, cardinality(u.positions), t.dl
    FROM chunks c
    JOIN documents d ON d.id = c.document_id
    CROSS JOIN LATERAL (SELECT c.tsv || kaynak_header_tsv(c.language, d.title) AS v) h
    CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl FROM unnest(h.v)) t
    CROSS JOIN LATERAL unnest(h.v) u
    WHERE c.document_id = ANY(%(ids)s)
"""


def rows(conn: psycopg.Connection[Any]) -> int:
    """The upgrade's work in posting-rewrite rows: ``ROWS_PER_DOCUMENT`` per document (the planner's count)."""
    row = conn.execute(
        "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass('documents')"
    ).fetchone()
    if row is None:  # a new database: migration 1 has not run yet
        return 0
    documents = int(row[0])
    if documents == 0:
        counted = conn.execute("SELECT count(*) FROM documents").fetchone()
        documents = int(counted[0]) if counted else 0
    return documents * ROWS_PER_DOCUMENT


def batch(conn: psycopg.Connection[Any], after: int) -> int | None:
    """Detect the next batch of documents' languages; re-stem those whose language differs from their chunks'."""
    row = conn.execute(
        "SELECT max(id) FROM (SELECT id FROM documents WHERE id > %s ORDER BY id LIMIT %s) d",
        (after, steps.BATCH_DOCUMENTS),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    upto = int(row[0])
    span = {"after": after, "upto": upto}
    pages: dict[int, list[str]] = {}
    for doc_id, i, n, text in conn.execute(_PAGES, {**span, "chars": PAGE_CHARS, "sample": SAMPLE_PAGES}):
        texts = pages.setdefault(int(doc_id), [""] * int(n))
        texts[int(i)] = text or ""
    updates: list[tuple[int, str | None, str]] = []
    restem: dict[str, list[int]] = {}
    for doc_id, collection_language, chunk_language, recorded in conn.execute(_DOCUMENTS, span).fetchall():
        detected = detect_document(pages.get(int(doc_id), []))
        wanted = keyword_language(detected, collection_language)
        updates.append((int(doc_id), stored_language(detected), wanted))
        stemmed = chunk_language or recorded or collection_language
        if chunk_language is not None and stemmed != wanted:
            restem.setdefault(wanted, []).append(int(doc_id))
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE documents SET language = %s, keyword_language = %s::regconfig WHERE id = %s",
            [(lang, kw, doc_id) for doc_id, lang, kw in updates],
        )
    ids = [doc_id for docs in restem.values() for doc_id in docs]
    if ids:
        for language, docs in sorted(restem.items()):
            conn.execute("UPDATE chunks SET language = %s::regconfig WHERE document_id = ANY(%s)", (language, docs))
        conn.execute("DELETE FROM postings WHERE document_id = ANY(%s)", (ids,))
        conn.execute(_POSTINGS, {"ids": ids})
        conn.execute(
            "UPDATE documents d SET token_count = coalesce(t.n, 0) FROM "
            "(SELECT i.id, (SELECT sum(tf) FROM postings p WHERE p.document_id = i.id) AS n "
            "FROM unnest(%s::bigint[]) AS i(id)) t WHERE d.id = t.id",
            (ids,),
        )
        conn.execute("DELETE FROM chunk_sentences WHERE document_id = ANY(%s)", (ids,))
        conn.execute(
            "INSERT INTO chunk_sentences_pending (collection_id, document_id) "
            "SELECT collection_id, id FROM documents WHERE id = ANY(%s) ON CONFLICT DO NOTHING",
            (ids,),
        )
    return upto


M17 = Backfill(rows=rows, batch=batch, finish=lambda conn: None)
