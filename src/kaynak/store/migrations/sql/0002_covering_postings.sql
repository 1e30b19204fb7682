-- Migration 2: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

        ALTER TABLE postings DROP CONSTRAINT postings_pkey;
        ALTER TABLE postings ADD CONSTRAINT postings_pkey
            PRIMARY KEY (collection_id, lexeme, chunk_id) INCLUDE (document_id, tf, dl);
