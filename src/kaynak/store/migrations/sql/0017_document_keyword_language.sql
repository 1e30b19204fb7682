-- Migration 17 (issue 50): each document's keyword postings stemmed in its own language
-- (docs/adr/0038-per-document-language.md).
--
-- * ``documents.keyword_language``: the text search configuration the document's chunks (``chunks.language``,
--   hence ``chunks.tsv``) and postings were stemmed with; NULL (documents written before this migration, or by an
--   older kaynak meanwhile) means the collection's language, which is what their chunks were stemmed with.
-- * ``documents_keyword_language``: a search asks, per collection, whether any document is stemmed in a language
--   other than the collection's (an index probe), and analyses the query in those languages too.
--
-- The batches that follow (kaynak.store.migrations.m17) detect each stored document's language and re-stem only
-- the documents whose language differs from the one their chunks have.
--
-- Frozen: never edit this file once shipped; add a migration instead. tests/store/test_migrations.py pins its SHA-256.

ALTER TABLE documents ADD COLUMN keyword_language regconfig;
CREATE INDEX documents_keyword_language ON documents (collection_id, keyword_language);
