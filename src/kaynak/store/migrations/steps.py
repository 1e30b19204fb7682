"""The migration steps that need more than one frozen SQL file: a choice by server, or data rewritten in batches.

Every statement here is literal text frozen with its migration, like the files under ``sql/``; nothing is built
from the store's runtime SQL, so a later change to how kaynak searches or writes cannot change what an old
migration does. What each migration is for is said in the docstring of its step (or in the ADR its file names).

Data-rewriting migrations (10 and 12) run as a ``Backfill``: a schema step in one short transaction, then batches
of documents, each committed with the position it reached, then a finishing step in one short transaction. A
stopped upgrade (Ctrl-C, SIGKILL, a crash) resumes at the last committed batch; the old schema stays usable by the
old version until the finishing step swaps in the new one (docs/adr/0027-upgrades.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg

#: Documents per committed batch of a data-rewriting migration (a few seconds of work at most on this machine).
BATCH_DOCUMENTS = 200


def frozen_sql(filename: str) -> str:
    """The text of one frozen migration file under ``sql/``."""
    return resources.files(__package__).joinpath("sql", filename).read_text(encoding="utf-8")


def run_file(filename: str) -> Callable[[psycopg.Connection[Any]], None]:
    """A migration step that runs one frozen file (several statements, no parameters)."""

    def step(conn: psycopg.Connection[Any]) -> None:
        conn.execute(frozen_sql(filename).encode("utf-8"))

    step.__name__ = f"run_{filename}"
    return step


@dataclass(frozen=True)
class Backfill:
    """How a migration rewrites data in committed batches.

    ``rows``: how many rows it will rewrite (for the estimate); ``batch(conn, after)``: rewrite the next batch of
    documents whose id is above ``after`` and return the last id done, or None when nothing was left;
    ``finish``: the step that makes the result the schema, in one short transaction.
    """

    rows: Callable[[psycopg.Connection[Any]], int]
    batch: Callable[[psycopg.Connection[Any], int], int | None]
    finish: Callable[[psycopg.Connection[Any]], None]


def _next_documents(conn: psycopg.Connection[Any], after: int) -> int | None:
    """The id of the last document of the next batch above ``after``, or None when there is none."""
    row = conn.execute(
        "SELECT max(id) FROM (SELECT id FROM documents WHERE id > %s ORDER BY id LIMIT %s) d",
        (after, BATCH_DOCUMENTS),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


#: Bytes a posting row takes on disk, about (for tables never analysed, whose row count PostgreSQL does not know).
_POSTING_BYTES = 48


def _postings_rows(conn: psycopg.Connection[Any]) -> int:
    """The postings a rewrite will touch, from the planner's statistics (no count(*) over millions of rows)."""
    row = conn.execute(
        "SELECT c.reltuples::bigint, pg_relation_size(c.oid) FROM pg_class c WHERE c.oid = to_regclass('postings')"
    ).fetchone()
    if row is None:
        return 0
    tuples, size = int(row[0]), int(row[1])
    return tuples if tuples >= 0 else size // _POSTING_BYTES


# ---------------------------------------------------------------------------------------------- migration 1
_TR_LOWER_BUILTIN = """
        CREATE OR REPLACE FUNCTION tr_lower(t text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN lower(replace(replace(t, 'İ', 'i'), 'I', 'ı') COLLATE "pg_c_utf8");
    """
_TR_LOWER_DEFAULT = """
        CREATE OR REPLACE FUNCTION tr_lower(t text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN lower(replace(replace(t, 'İ', 'i'), 'I', 'ı'));
    """


def m1_initial(conn: psycopg.Connection[Any]) -> None:
    """``tr_lower`` (İ→i and I→ı before ``lower``) and the tables. pg_c_utf8 (PostgreSQL 17+) lower-cases by
    Unicode's simple case mapping whatever the database's locale, as the Python twin does; older servers use the
    database's default collation."""
    builtin = conn.execute("SELECT 1 FROM pg_collation WHERE collname = 'pg_c_utf8'").fetchone()
    conn.execute(_TR_LOWER_BUILTIN if builtin else _TR_LOWER_DEFAULT)
    run_file("0001_initial.sql")(conn)


# --------------------------------------------------------------------------------------------- migration 10
# The postings of the chunks of some documents, their terms merged with the document title's, named by the chunk's
# text id (the form postings had until migration 12).
_M10_POSTINGS = """
    INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl)
    SELECT c.collection_id, u.lexeme, c.id, c.document_id, cardinality(u.positions), t.dl
    FROM chunks c
    JOIN documents d ON d.id = c.document_id
    CROSS JOIN LATERAL (SELECT c.tsv || kaynak_header_tsv(c.language, d.title) AS v) h
    CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl FROM unnest(h.v)) t
    CROSS JOIN LATERAL unnest(h.v) u
    WHERE c.document_id > %(after)s AND c.document_id <= %(upto)s
"""


def m10_batch(conn: psycopg.Connection[Any], after: int) -> int | None:
    """Migration 10's rewrite of one batch of documents: their postings rebuilt with the title's terms (the
    statement triggers on postings keep ``lexeme_stats`` exact) and ``documents.token_count`` recounted."""
    upto = _next_documents(conn, after)
    if upto is None:
        return None
    span = {"after": after, "upto": upto}
    conn.execute("DELETE FROM postings WHERE document_id > %(after)s AND document_id <= %(upto)s", span)
    conn.execute(_M10_POSTINGS, span)
    conn.execute(
        "UPDATE documents d SET token_count = coalesce(s.n, 0) FROM documents x "
        "LEFT JOIN (SELECT document_id, sum(tf) AS n FROM postings "
        "WHERE document_id > %(after)s AND document_id <= %(upto)s GROUP BY document_id) s ON s.document_id = x.id "
        "WHERE d.id = x.id AND x.id > %(after)s AND x.id <= %(upto)s",
        span,
    )
    return upto


M10 = Backfill(rows=_postings_rows, batch=m10_batch, finish=lambda conn: None)


# --------------------------------------------------------------------------------------------- migration 11
def m11_document_language(conn: psycopg.Connection[Any]) -> None:
    """``documents.language``, filled for stored documents from their first pages (the same detector as ingest
    uses: Python code, not SQL, so it is imported; it only fills a column that ingest fills the same way)."""
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


# --------------------------------------------------------------------------------------------- migration 12
def m12_batch(conn: psycopg.Connection[Any], after: int) -> int | None:
    """Migration 12's copy of one batch of documents' postings into ``postings_keyed``, keyed by chunk key."""
    upto = _next_documents(conn, after)
    if upto is None:
        return None
    conn.execute(
        "INSERT INTO postings_keyed (collection_id, lexeme, chunk_key, document_id, tf, dl) "
        "SELECT collection_id, lexeme, kaynak_chunk_key(chunk_id), document_id, tf, dl FROM postings "
        "WHERE document_id > %(after)s AND document_id <= %(upto)s",
        {"after": after, "upto": upto},
    )
    return upto


M12 = Backfill(rows=_postings_rows, batch=m12_batch, finish=run_file("0012_chunk_keys_finish.sql"))
