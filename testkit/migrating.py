"""Helpers of the migration tests: empty databases on the session's server, a copy of a database as schema 1
wrote it, and what the keyword leg and the quotes read, for comparing an upgraded database with a fresh one."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from kaynak.store import migrations


def new_databases(database_url: str) -> Iterator[Callable[[], str]]:
    """Empty databases on the session's server, dropped afterwards."""
    made: list[str] = []

    def make() -> str:
        name = "mig_" + uuid.uuid4().hex[:10]
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
            made.append(name)
        url = make_conninfo(database_url, dbname=name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url

    yield make
    with psycopg.connect(database_url, autocommit=True) as conn:
        for name in made:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def copy_as_version_1(src: str, dst: str) -> None:
    """``dst`` at schema 1 (the oldest released) holding ``src``'s documents as version 1 wrote them."""
    with psycopg.connect(src) as a, psycopg.connect(dst, autocommit=True) as b:
        migrations.apply(b, upto=1)
        copies = {
            "collections": "id, name, language, embedder, dim, created_at",
            "documents": "id, collection_id, source, sha256, title, page_count, chunk_count, metadata, ingested_at",
            "pages": "document_id, number, text",
            "chunks": "id, collection_id, document_id, ord, page, section, char_start, char_end, text, language, "
            "embedding",
        }
        for table, columns in copies.items():
            with (
                a.cursor().copy(f"COPY (SELECT {columns} FROM {table}) TO STDOUT") as out,
                b.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as into,
            ):
                for block in out:
                    into.write(block)
        for cid, dim in b.execute("SELECT id, dim FROM collections").fetchall():  # as create_collection makes it
            b.execute(
                f"CREATE INDEX chunks_hnsw_{cid} ON chunks USING hnsw "
                f"((embedding::vector({dim})) vector_cosine_ops) WHERE collection_id = {cid}"
            )
        b.execute("SELECT setval('collections_id_seq', (SELECT max(id) FROM collections))")
        b.execute("SELECT setval('documents_id_seq', (SELECT max(id) FROM documents))")
        # version 1's postings: each chunk's own terms, keyed by its text id
        b.execute(
            "INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl) "
            "SELECT c.collection_id, u.lexeme, c.id, c.document_id, cardinality(u.positions), "
            "(SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(c.tsv)) FROM chunks c, unnest(c.tsv) u"
        )
        b.execute(
            "UPDATE documents d SET token_count = (SELECT coalesce(sum(tf), 0) FROM postings p "
            "WHERE p.document_id = d.id)"
        )


def keyword_contents(url: str) -> dict[str, Any]:
    """What the keyword leg reads, exactly: postings, lexeme statistics, collection statistics, token counts."""
    with psycopg.connect(url) as conn:
        return {
            "postings": conn.execute(
                "SELECT count(*), md5(string_agg(concat_ws(',', collection_id, lexeme, chunk_key, document_id, tf, "
                "dl), ';' ORDER BY collection_id, lexeme, chunk_key)) FROM postings"
            ).fetchone(),
            "lexeme_stats": conn.execute(
                "SELECT md5(string_agg(concat_ws(',', collection_id, lexeme, df, max_tf, min_dl), ';' "
                "ORDER BY collection_id, lexeme)) FROM lexeme_stats"
            ).fetchone(),
            "collection_stats": conn.execute("SELECT * FROM collection_stats ORDER BY 1").fetchall(),
            "documents": conn.execute("SELECT id, token_count, language FROM documents ORDER BY id").fetchall(),
        }


def stored_analyses(url: str) -> list[tuple[str, int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT d.source, s.ord, s.analysis FROM chunk_sentences s JOIN documents d ON d.id = s.document_id"
        ).fetchall()
    return sorted((r[0], r[1], r[2]) for r in rows)
