"""Migration 12 (issue 14): the postings name their chunk by an integer key instead of its text id.

A posting was ``(collection, lexeme, chunk_id text) INCLUDE (document_id, tf, dl)``. Grouping the ~20,000 postings
a query reads by a 20-character text id, and an index tuple twice the size it needs, made up about half of the
BM25 leg's cost (docs/adr/0022-bm25-chunk-keys.md has the measurement). The key is now
``chunk_key = document_id << 24 | ord``: a bigint that needs no new column in ``chunks`` (a chunk is already unique
by document and position) and carries the posting's document (``chunk_key >> 24``), so the primary key covers
``(collection, lexeme, chunk_key) INCLUDE (tf, dl)`` and a filter on documents stays an index-only scan. The text id
is found at the end for the k best only (``chunks (document_id, ord)`` is unique). A document holds at most
2^24 chunks (16,777,216: a 13 GB text at 800 characters a chunk), checked on ``chunks``.

The migration copies the postings into a new table in key order and builds its index once (a rebuilt, unbloated
index), then recreates the statistics triggers of migration 5 on it: ``lexeme_stats`` does not change, since the
postings' lexemes, tf and dl do not. ``kaynak_bm25_topk`` is recreated over the new key; migration 6's
``kaynak_bm25_top`` (kept for benchmarks only) is dropped. The writer (``store/writes.py``) inserts postings with
``KEYED_POSTINGS_SELECT``; moving a document no longer touches its postings (its key does not change).
"""

from __future__ import annotations

import psycopg

from kaynak.store.migrations.bm25_pruning import INT_KEY, topk_function
from kaynak.store.migrations.document_context import postings_select

#: Bits of a chunk key that hold the chunk's position in its document (the rest hold the document id).
CHUNK_KEY_BITS = 24
MAX_CHUNKS_PER_DOCUMENT = 1 << CHUNK_KEY_BITS

#: The postings of every chunk of the documents matched by ``{where}`` (migration 10's terms), keyed by chunk key.
KEYED_POSTINGS_SELECT = postings_select("kaynak_chunk_key(c.document_id, c.ord)")

#: ``chunks`` rows of a chunk key (the SQL expression ``{key}``), for joins back to the text ids.
CHUNK_OF_KEY = (
    f"k.document_id = ({{key}} >> {CHUNK_KEY_BITS}) AND k.ord = ({{key}} & {MAX_CHUNKS_PER_DOCUMENT - 1})::int"
)

_TRIGGERS = """
    CREATE TRIGGER postings_stats_insert AFTER INSERT ON postings
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_added();
    CREATE TRIGGER postings_stats_delete AFTER DELETE ON postings
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_removed();
    CREATE TRIGGER postings_stats_update_old AFTER UPDATE ON postings
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_removed();
    CREATE TRIGGER postings_stats_update_new AFTER UPDATE ON postings
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_added();
"""


def m12_chunk_keys(conn: psycopg.Connection) -> None:
    conn.execute("SET LOCAL maintenance_work_mem = '1GB'")  # the new primary key is built in one sort
    conn.execute(
        f"""
        CREATE FUNCTION kaynak_chunk_key(p_document bigint, p_ord int) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN (p_document << {CHUNK_KEY_BITS}) | p_ord;

        ALTER TABLE chunks ADD CONSTRAINT chunks_ord_fits_key
            CHECK (ord >= 0 AND ord < {MAX_CHUNKS_PER_DOCUMENT}) NOT VALID;

        CREATE TABLE postings_keyed (
            collection_id bigint NOT NULL,
            lexeme        text   NOT NULL,
            chunk_key     bigint NOT NULL,
            document_id   bigint NOT NULL,
            tf            int    NOT NULL,
            dl            int    NOT NULL
        );
        INSERT INTO postings_keyed (collection_id, lexeme, chunk_key, document_id, tf, dl)
        SELECT p.collection_id, p.lexeme, kaynak_chunk_key(c.document_id, c.ord), p.document_id, p.tf, p.dl
          FROM postings p JOIN chunks c ON c.id = p.chunk_id
         ORDER BY 1, 2, 3;

        DROP FUNCTION kaynak_bm25_top(bigint, text[], int, float8, float8, bigint[], int, int, float8);
        DROP FUNCTION kaynak_bm25_topk(bigint, text[], int, float8, float8, bigint[], int, int, float8);
        DROP TABLE postings;
        ALTER TABLE postings_keyed RENAME TO postings;
        ALTER TABLE postings ADD CONSTRAINT postings_pkey
            PRIMARY KEY (collection_id, lexeme, chunk_key) INCLUDE (tf, dl);
        CREATE INDEX postings_document ON postings (document_id);
        ALTER TABLE postings ADD CONSTRAINT postings_document_id_fkey
            FOREIGN KEY (document_id) REFERENCES documents(id) ON DELETE CASCADE;
        {_TRIGGERS}
        """
    )
    conn.execute(topk_function("kaynak_bm25_topk", INT_KEY))
