-- Migration 14 (issue 30): each chunk's sentence analysis, stored at ingest so that a search does not split and
-- stem its hits' sentences again (docs/adr/0030-stored-sentence-analysis.md).
--
-- * ``chunk_sentences``: one row per chunk, keyed like the chunk within its document (``document_id``, ``ord``),
--   so that a document's rows go with it and a renamed source (new chunk ids) keeps them. ``analysis`` is the
--   JSON text ``kaynak.quotes.encode`` writes: the sentences' spans and lexemes, and the words of sentences longer
--   than the quote limit, with the version and limit it was made for. A chunk without a row (ingested before this
--   migration) is analysed at search, as before. ``collection_id`` is carried for scale-out (docs/scale-out.md).
-- * ``chunk_sentences_pending``: the documents ingested before this migration, whose analyses kaynak stores after
--   it (``Store.fill_sentences``: at the end of an ingest or sync of their collection, or by ``kaynak migrate``).
--   Frozen SQL cannot compute them (kaynak's sentence splitter does), so this migration only lists them.
--
-- Frozen: never edit this file once shipped; add a migration instead. tests/store/test_migrations.py pins its SHA-256.

CREATE TABLE chunk_sentences (
    collection_id bigint NOT NULL,
    document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord         int    NOT NULL,
    analysis    text   NOT NULL,
    PRIMARY KEY (document_id, ord)
);

CREATE TABLE chunk_sentences_pending (
    collection_id bigint NOT NULL,
    document_id   bigint PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE
);
INSERT INTO chunk_sentences_pending (collection_id, document_id) SELECT collection_id, id FROM documents;
