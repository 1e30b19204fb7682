"""Schema migrations: an ordered list, applied at start-up, each recorded in ``kaynak_migrations``.

``apply(conn)`` takes a transaction-scoped advisory lock first, so two processes starting at once apply each
migration exactly once (the second waits, then finds nothing left to do). Add a migration by appending to
``MIGRATIONS``; never edit one that has shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from kaynak.store.migrations.bm25_pruning import (
    m5_lexeme_stats,
    m6_pruned_bm25,
    m8_collection_stats,
    m9_bm25_topk,
)
from kaynak.store.migrations.chunk_keys import m12_chunk_keys
from kaynak.store.migrations.document_context import m10_header_terms, m11_document_language
from kaynak.store.migrations.ingest_outcomes import m3_document_warnings_origin, m4_ingest_failures
from kaynak.store.migrations.sync_sources import m7_sync_sources
from kaynak.store.migrations.team_access import m13_team_access

# pg_advisory_xact_lock key for migrations: any fixed 64-bit number unique to kaynak ("kaynak" in ASCII).
_LOCK_KEY = 0x6B61796E616B


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    run: Callable[[psycopg.Connection], None]


def _tr_lower_sql(conn: psycopg.Connection) -> str:
    # pg_c_utf8 (PostgreSQL 17+) lower-cases by Unicode's simple case mapping whatever the database's locale,
    # which is what the Python twin does. Older servers use the database's default collation.
    has_builtin = conn.execute("SELECT 1 FROM pg_collation WHERE collname = 'pg_c_utf8'").fetchone()
    collate = ' COLLATE "pg_c_utf8"' if has_builtin else ""
    return f"""
        CREATE OR REPLACE FUNCTION tr_lower(t text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN lower(replace(replace(t, 'İ', 'i'), 'I', 'ı'){collate});
    """


def _m1_initial(conn: psycopg.Connection) -> None:
    conn.execute(_tr_lower_sql(conn))
    conn.execute(
        """
        CREATE TABLE collections (
            id          bigserial PRIMARY KEY,
            name        text NOT NULL UNIQUE,
            language    text NOT NULL CHECK (language IN ('turkish', 'english', 'simple')),
            embedder    text NOT NULL,
            dim         int  NOT NULL CHECK (dim > 0 AND dim <= 16000),
            created_at  timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE documents (
            id            bigserial PRIMARY KEY,
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            source        text NOT NULL,
            sha256        text NOT NULL,
            title         text NOT NULL DEFAULT '',
            page_count    int  NOT NULL DEFAULT 0,
            chunk_count   int  NOT NULL DEFAULT 0,
            token_count   bigint NOT NULL DEFAULT 0,
            metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
            ingested_at   timestamptz NOT NULL DEFAULT now(),
            UNIQUE (collection_id, source)
        );

        CREATE TABLE pages (
            document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            number      int NOT NULL,
            text        text NOT NULL,
            PRIMARY KEY (document_id, number)
        );

        CREATE TABLE chunks (
            id            text PRIMARY KEY,
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            document_id   bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord           int NOT NULL,
            page          int NOT NULL,
            section       text,
            char_start    int NOT NULL,
            char_end      int NOT NULL,
            text          text NOT NULL,
            language      regconfig NOT NULL,
            tsv           tsvector GENERATED ALWAYS AS
                            (to_tsvector(language, tr_lower(coalesce(section, '') || ' ' || text))) STORED,
            embedding     vector,
            UNIQUE (document_id, ord)
        );
        CREATE INDEX chunks_collection ON chunks (collection_id);
        CREATE INDEX chunks_tsv ON chunks USING gin (tsv);

        -- BM25 postings: one row per (chunk, lexeme) with the term frequency and the chunk's length in lexemes.
        -- Document frequencies are counted from here at query time, so statistics never drift.
        CREATE TABLE postings (
            collection_id bigint NOT NULL,
            lexeme        text   NOT NULL,
            chunk_id      text   NOT NULL,
            document_id   bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            tf            int    NOT NULL,
            dl            int    NOT NULL,
            PRIMARY KEY (collection_id, lexeme, chunk_id)
        );
        CREATE INDEX postings_document ON postings (document_id);
        """
    )


def _m2_covering_postings(conn: psycopg.Connection) -> None:
    # BM25 reads every posting of every query term. With the term frequency, length and document id inside the
    # primary key's index, that is an index-only scan instead of one random heap read per posting (measured in
    # docs/adr/0005).
    conn.execute(
        """
        ALTER TABLE postings DROP CONSTRAINT postings_pkey;
        ALTER TABLE postings ADD CONSTRAINT postings_pkey
            PRIMARY KEY (collection_id, lexeme, chunk_id) INCLUDE (document_id, tf, dl);
        """
    )


MIGRATIONS: list[Migration] = [
    Migration(1, "initial schema: collections, documents, pages, chunks, postings, tr_lower", _m1_initial),
    Migration(2, "postings primary key covers tf, dl and document_id (index-only BM25 scans)", _m2_covering_postings),
    Migration(3, "documents.warnings and documents.origin (issue 11)", m3_document_warnings_origin),
    Migration(4, "ingest_failures: remembered failures of unchanged files (issue 11)", m4_ingest_failures),
    Migration(5, "lexeme_stats kept by triggers on postings (df, max tf, min length per lexeme)", m5_lexeme_stats),
    Migration(6, "kaynak_bm25_top: exact BM25 top k with MaxScore pruning", m6_pruned_bm25),
    Migration(7, "collection_sources, documents.file_size/file_mtime_ns, sync_watchers (issue 19)", m7_sync_sources),
    Migration(8, "collection_stats: documents, chunks and tokens per collection", m8_collection_stats),
    Migration(9, "kaynak_bm25_topk: pruned BM25 with per-term constants over collection_stats", m9_bm25_topk),
    Migration(10, "postings carry each chunk's document title terms: kaynak_header_tsv (issue 17)", m10_header_terms),
    Migration(11, "documents.language detected from the text (issue 17)", m11_document_language),
    Migration(12, "postings keyed by a 60-bit integer chunk key, kaynak_chunk_key(id) (issue 14)", m12_chunk_keys),
    Migration(13, "access_tokens, audit_log, token_search_counts: team access (issue 31)", m13_team_access),
]


def apply(conn: psycopg.Connection) -> list[int]:
    """Apply every migration not yet recorded; return the versions applied now."""
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            """
            CREATE TABLE IF NOT EXISTS kaynak_migrations (
                version    int PRIMARY KEY,
                name       text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
        done = {row[0] for row in conn.execute("SELECT version FROM kaynak_migrations")}
        for m in MIGRATIONS:
            if m.version in done:
                continue
            m.run(conn)
            conn.execute("INSERT INTO kaynak_migrations (version, name) VALUES (%s, %s)", (m.version, m.name))
            applied_now.append(m.version)
    return applied_now


def current_version(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM kaynak_migrations").fetchone()
    return int(row[0]) if row else 0
