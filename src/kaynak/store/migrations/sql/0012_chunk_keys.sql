-- Migration 12, first step: frozen, never edit (add a migration instead; tests/test_migrations.py pins its
-- SHA-256). Then steps.m12_batch copies the postings into postings_keyed, a batch of documents at a time, and
-- 0012_chunk_keys_finish.sql swaps the table in.
SET LOCAL maintenance_work_mem = '1GB';

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
