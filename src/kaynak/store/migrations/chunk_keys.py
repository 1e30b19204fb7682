"""Migration 12 (issue 14): the postings name their chunk by a 60-bit integer key instead of its text id.

A posting was ``(collection, lexeme, chunk_id text) INCLUDE (document_id, tf, dl)``. Grouping the ~20,000 postings
a query reads by a 20-character text id, and an index tuple larger than it needs to be, made up about half of the
BM25 leg's cost (docs/adr/0022-bm25-chunk-keys.md has the measurement). The key is now
``chunk_key = kaynak_chunk_key(chunk id)``: the first 60 bits of the id's MD5, so keys are spread evenly over the
bigint range. That matters: PostgreSQL hashes a bigint by folding its two halves together with XOR, and a key
packed from document id and position (``document_id << 24 | ord``, tried first) folds whole families of chunks
onto one hash value — grouping a million-chunk collection's postings then degenerated into tens of thousands of
spilled batches (53 s instead of 0.14 s for one claim). A unique index on ``chunks (kaynak_chunk_key(id))`` turns
the k best keys back into chunks (and would refuse the 1-in-10^11 chance of two chunks sharing a key at a million
chunks, rather than mix up their postings). The postings' primary key covers ``(collection, lexeme, chunk_key)
INCLUDE (document_id, tf, dl)``, so a filter on documents stays an index-only scan.

The migration copies the postings into a new table in key order and builds its index once (an index that
migration 10's rebuild left at twice its size comes out compact), then recreates migration 5's statistics
triggers on it: ``lexeme_stats`` does not change, since the postings' lexemes, tf and dl do not.
``kaynak_bm25_topk`` is recreated over the key; migration 6's ``kaynak_bm25_top`` (kept for benchmarks only) is
dropped. The writer (``store/writes.py``) inserts postings with ``KEYED_POSTINGS_SELECT``.
"""

from __future__ import annotations

import psycopg

from kaynak.store.migrations.bm25_pruning import INT_KEY, topk_function
from kaynak.store.migrations.document_context import postings_select

#: The postings of every chunk of the documents matched by ``{where}`` (migration 10's terms), keyed by chunk key.
KEYED_POSTINGS_SELECT = postings_select("kaynak_chunk_key(c.id)")

#: The ``chunks`` row ``k`` of a chunk key (the SQL expression ``{key}``), for joins back to the chunks.
CHUNK_OF_KEY = "kaynak_chunk_key(k.id) = {key}"

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
        CREATE FUNCTION kaynak_chunk_key(p_id text) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN ('x' || left(md5(p_id), 15))::bit(60)::bigint;

        CREATE UNIQUE INDEX chunks_key ON chunks (kaynak_chunk_key(id));

        CREATE TABLE postings_keyed (
            collection_id bigint NOT NULL,
            lexeme        text   NOT NULL,
            chunk_key     bigint NOT NULL,
            document_id   bigint NOT NULL,
            tf            int    NOT NULL,
            dl            int    NOT NULL
        );
        INSERT INTO postings_keyed (collection_id, lexeme, chunk_key, document_id, tf, dl)
        SELECT collection_id, lexeme, kaynak_chunk_key(chunk_id), document_id, tf, dl FROM postings
         ORDER BY 1, 2, 3;

        DROP FUNCTION kaynak_bm25_top(bigint, text[], int, float8, float8, bigint[], int, int, float8);
        DROP FUNCTION kaynak_bm25_topk(bigint, text[], int, float8, float8, bigint[], int, int, float8);
        DROP TABLE postings;
        ALTER TABLE postings_keyed RENAME TO postings;
        ALTER TABLE postings ADD CONSTRAINT postings_pkey
            PRIMARY KEY (collection_id, lexeme, chunk_key) INCLUDE (document_id, tf, dl);
        CREATE INDEX postings_document ON postings (document_id);
        ALTER TABLE postings ADD CONSTRAINT postings_document_id_fkey
            FOREIGN KEY (document_id) REFERENCES documents(id) ON DELETE CASCADE;
        {_TRIGGERS}
        """
    )
    conn.execute(topk_function("kaynak_bm25_topk", INT_KEY))
