"""Migrations 10 and 11 (issue 17): chunks that remember their document, and each document's language.

Migration 10 adds ``kaynak_header_tsv(language, title)``: the document title's terms, stemmed as the keyword leg
stems. The postings INSERT (``store/writes.py``) merges it into every chunk's vector (``c.tsv ||
kaynak_header_tsv(c.language, d.title)``), so a chunk's BM25 sees its document's title as extra terms (BM25F-style,
weight 1) while its stored text and offsets stay as they are; the section path is already in ``chunks.tsv``. The
terms are in the postings rows themselves, so the pruned and the full BM25 read the same numbers
(docs/adr/0017-fusion-by-measurement.md). Existing postings are rebuilt the same way, one collection at a time
(the statement triggers on postings keep ``lexeme_stats`` exact), and ``documents.token_count`` follows.

Migration 11 adds ``documents.language`` (``turkish``, ``english`` or NULL when the text is short, mixed or
another language; detected from the text at ingest by ``kaynak.langdetect.detect_language``) and fills it for the
stored documents from their first pages.
"""

from __future__ import annotations

import psycopg


def postings_select(chunk: str) -> str:
    """The postings of every chunk of the documents matched by ``{where}``: the chunk's terms merged with its
    document's header terms (tf and the chunk length dl both count them), the chunk named by the SQL ``chunk``."""
    return (
        f"""
    SELECT c.collection_id, u.lexeme, {chunk}, c.document_id, cardinality(u.positions), t.dl"""
        """
    FROM chunks c
    JOIN documents d ON d.id = c.document_id
    CROSS JOIN LATERAL (SELECT c.tsv || kaynak_header_tsv(c.language, d.title) AS v) h
    CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl FROM unnest(h.v)) t
    CROSS JOIN LATERAL unnest(h.v) u
    WHERE {where}
"""
    )


# Migration 10's postings, named by the chunk's text id (the writer uses migration 12's chunk keys since).
POSTINGS_SELECT = postings_select("c.id")


def m10_header_terms(conn: psycopg.Connection) -> None:
    conn.execute(
        """
        CREATE FUNCTION kaynak_header_tsv(p_language regconfig, p_title text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN to_tsvector(p_language, tr_lower(coalesce(p_title, '')));
        """
    )
    collections = [r[0] for r in conn.execute("SELECT id FROM collections ORDER BY id").fetchall()]
    for cid in collections:
        conn.execute("DELETE FROM postings WHERE collection_id = %s", (cid,))
        conn.execute(
            "INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl) "
            + POSTINGS_SELECT.format(where="c.collection_id = %s"),
            (cid,),
        )
        conn.execute(
            "UPDATE documents d SET token_count = coalesce(s.n, 0) FROM documents x "
            "LEFT JOIN (SELECT document_id, sum(tf) AS n FROM postings WHERE collection_id = %s "
            "GROUP BY document_id) s ON s.document_id = x.id WHERE d.id = x.id AND x.collection_id = %s",
            (cid, cid),
        )


def m11_document_language(conn: psycopg.Connection) -> None:
    from kaynak.langdetect import detect_language

    conn.execute("ALTER TABLE documents ADD COLUMN language text")
    ids = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY id").fetchall()]
    for doc_id in ids:
        row = conn.execute(
            "SELECT string_agg(left(text, 20000), E'\\n' ORDER BY number) FROM "
            "(SELECT text, number FROM pages WHERE document_id = %s ORDER BY number LIMIT 5) p",
            (doc_id,),
        ).fetchone()
        language = detect_language(row[0] or "") if row else None
        if language is not None:
            conn.execute("UPDATE documents SET language = %s WHERE id = %s", (language, doc_id))
