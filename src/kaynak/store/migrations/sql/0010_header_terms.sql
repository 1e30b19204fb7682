-- Migration 10, first step: frozen, never edit (add a migration instead; tests/test_migrations.py pins its
-- SHA-256). Then steps.m10_batch rebuilds the postings with the title's terms, a batch of documents at a time.

        CREATE FUNCTION kaynak_header_tsv(p_language regconfig, p_title text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN to_tsvector(p_language, tr_lower(coalesce(p_title, '')));
