-- Migration 1: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

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
