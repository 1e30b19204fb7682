"""Migration 12: postings keyed by integer chunk keys give the same BM25 results as the text-keyed postings did.

A database is brought to schema 11 (postings named by text chunk ids), filled with SQL as the writer of that
schema filled it, and ranked with that schema's ``kaynak_bm25_topk``; after migration 12 the store must return the
same chunks with the same scores, keep ``lexeme_stats`` as it was, and keep it exact through a replace and a delete.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from kaynak.store import Store, migrations
from kaynak.store.server import check_connection
from kaynak.types import Chunk, Page

TEXTS = [
    ["protein kinase inhibitors in cancer", "kinase activity of the protein", "a diet study of mice"],
    ["the protein diet", "mice and rats on a diet", "cancer cells divide", "protein protein protein"],
    ["kinase", "inhibitors of growth in cells", "growth of the protein kinase family in mice"],
]
#: Schema 11's writer: each chunk's terms merged with its document title's, named by the chunk's text id.
SCHEMA_11_POSTINGS = """
    INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl)
    SELECT c.collection_id, u.lexeme, c.id, c.document_id, cardinality(u.positions), t.dl
    FROM chunks c
    JOIN documents d ON d.id = c.document_id
    CROSS JOIN LATERAL (SELECT c.tsv || kaynak_header_tsv(c.language, d.title) AS v) h
    CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl FROM unnest(h.v)) t
    CROSS JOIN LATERAL unnest(h.v) u
    WHERE c.document_id = %s
"""
QUERIES = [["protein"], ["kinas", "protein"], ["diet", "mice", "cancer"], ["growth", "cell", "inhibitor", "protein"]]


@pytest.fixture()
def schema11(database_url: str) -> Iterator[str]:
    name = "keys_" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(database_url, dbname=name)
    check_connection(url)  # the vector extension
    yield url
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def fill_schema11(conn: psycopg.Connection) -> int:
    """A collection of three documents written as schema 11's writer wrote them (text-keyed postings)."""
    cid = conn.execute(
        "INSERT INTO collections (name, language, embedder, dim) VALUES ('c', 'english', 'hash', 8) RETURNING id"
    ).fetchone()[0]
    for d, texts in enumerate(TEXTS):
        doc = conn.execute(
            "INSERT INTO documents (collection_id, source, sha256, title, page_count, chunk_count) "
            "VALUES (%s, %s, 'x', %s, 1, %s) RETURNING id",
            (cid, f"d{d}.txt", f"document {d} title", len(texts)),
        ).fetchone()[0]
        for o, t in enumerate(texts):
            conn.execute(
                "INSERT INTO chunks (id, collection_id, document_id, ord, page, char_start, char_end, text, language) "
                "VALUES (%s, %s, %s, %s, 1, 0, %s, %s, 'english')",
                (f"c{d}-{o}", cid, doc, o, len(t), t),
            )
        conn.execute(SCHEMA_11_POSTINGS, (doc,))
        conn.execute(
            "UPDATE documents SET token_count = (SELECT sum(tf) FROM postings WHERE document_id = %s) WHERE id = %s",
            (doc, doc),
        )
    return int(cid)


def test_migration_12_keeps_every_score_and_statistic(schema11: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with psycopg.connect(schema11, autocommit=True) as conn:
        migrations.apply(conn, upto=11)
        cid = fill_schema11(conn)
        before = [
            conn.execute(
                "SELECT chunk_id, score FROM kaynak_bm25_topk(%s, %s, 5, 0.9, 0.4, NULL) ORDER BY score DESC, chunk_id",
                (cid, q),
            ).fetchall()
            for q in QUERIES
        ]
        stats = conn.execute("SELECT lexeme, df, max_tf, min_dl FROM lexeme_stats ORDER BY lexeme").fetchall()
        assert 12 in migrations.apply(conn)
        assert conn.execute("SELECT lexeme, df, max_tf, min_dl FROM lexeme_stats ORDER BY lexeme").fetchall() == stats
        keys = conn.execute("SELECT DISTINCT chunk_key FROM postings ORDER BY 1").fetchall()
        expected = conn.execute("SELECT kaynak_chunk_key(id) FROM chunks ORDER BY 1").fetchall()
        assert keys == expected
    store = Store(schema11)
    try:
        col = store.get_collection("c")
        for q, old in zip(QUERIES, before, strict=True):
            for how in (True, False):
                new = store.keyword_search([col], None, 5, lexemes=q, pruned=how)
                assert sorted(c for c, _ in new) == sorted(c for c, _ in old), (q, how)
                for (_, s_new), (_, s_old) in zip(sorted(new, key=lambda r: -r[1]), old, strict=True):
                    assert math.isclose(s_new, s_old, rel_tol=1e-12), (q, how)
        # the writer and the statistics triggers work on the new table
        text = "protein growth kinase"
        chunk = Chunk(0, 1, None, 0, len(text), text)
        store.replace_document(col, "d0.txt", "y", "new title", {}, [Page(1, text)], [chunk], None)
        store.delete_document(col, "d1.txt")
        with store._conn() as conn:
            wrong = conn.execute(
                """SELECT count(*) FROM (SELECT lexeme, count(*) AS df FROM postings GROUP BY lexeme) p
                   FULL JOIN lexeme_stats s USING (lexeme) WHERE p.df IS DISTINCT FROM s.df"""
            ).fetchone()[0]
            new_d0 = conn.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.source = 'd0.txt'"
            ).fetchone()[0]
        assert wrong == 0
        hits = {c for c, _ in store.keyword_search([col], "growth", 5)}
        assert hits == {new_d0, "c2-1", "c2-2"}
    finally:
        store.close()


def test_chunk_keys_are_spread_over_the_hash(store: Store, unique_name: str) -> None:
    """Keys of neighbouring chunks hash apart: PostgreSQL's bigint hash folds the two halves with XOR, which a key
    packed from document and position defeats (ADR 0022); a chunk's key is its id's, also after a move."""
    col = store.create_collection(unique_name, "english", "hash", 8)
    try:
        chunks = [Chunk(i, 1, None, 0, 5, f"word{i} kinase") for i in range(200)]
        doc = store.replace_document(col, "a.txt", "s", "a", {}, [Page(1, "x")], chunks, None)
        with store._conn() as conn:
            folded = conn.execute(
                "SELECT count(DISTINCT hashint8(chunk_key)), count(DISTINCT chunk_key), "
                "bool_and(chunk_key = kaynak_chunk_key(k.id)) FROM postings p JOIN chunks k "
                "ON k.document_id = p.document_id AND kaynak_chunk_key(k.id) = p.chunk_key WHERE p.document_id = %s",
                (doc,),
            ).fetchone()
        assert folded == (200, 200, True)
        assert store.move_document(col, "a.txt", "b.txt", "s", None, None)
        with store._conn() as conn:
            stray = conn.execute(
                "SELECT count(*) FROM postings p WHERE p.document_id = %s AND NOT EXISTS "
                "(SELECT 1 FROM chunks k WHERE kaynak_chunk_key(k.id) = p.chunk_key)",
                (doc,),
            ).fetchone()[0]
        assert stray == 0
        assert len(store.keyword_search([col], "kinase", 300)) == 200
    finally:
        store.delete_collection(unique_name)
