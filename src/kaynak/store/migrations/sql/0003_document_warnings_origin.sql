-- Migration 3: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

        ALTER TABLE documents ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]'::jsonb;
        ALTER TABLE documents ADD COLUMN origin text;
