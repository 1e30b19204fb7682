-- Migration 8: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

        CREATE TABLE collection_stats (
            collection_id bigint PRIMARY KEY REFERENCES collections(id) ON DELETE CASCADE,
            documents     bigint NOT NULL DEFAULT 0,
            chunks        bigint NOT NULL DEFAULT 0,
            tokens        bigint NOT NULL DEFAULT 0
        );
        INSERT INTO collection_stats (collection_id, documents, chunks, tokens)
        SELECT c.id, count(d.id), coalesce(sum(d.chunk_count), 0), coalesce(sum(d.token_count), 0)
          FROM collections c LEFT JOIN documents d ON d.collection_id = c.id GROUP BY c.id;

        CREATE FUNCTION kaynak_collection_created() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO collection_stats (collection_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
            RETURN NULL;
        END $$;
        CREATE TRIGGER collections_stats AFTER INSERT ON collections
            FOR EACH ROW EXECUTE FUNCTION kaynak_collection_created();

        -- A document's contribution: +1 / chunks / tokens when it comes, − when it goes, the difference when its
        -- counts change (the writer sets token_count after the postings). A collection being deleted has no row.
        CREATE FUNCTION kaynak_document_counted() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            d_docs int := 0; d_chunks bigint := 0; d_tokens bigint := 0;
        BEGIN
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                d_docs := 1; d_chunks := NEW.chunk_count; d_tokens := NEW.token_count;
            END IF;
            IF TG_OP IN ('DELETE', 'UPDATE') THEN
                d_docs := d_docs - 1; d_chunks := d_chunks - OLD.chunk_count; d_tokens := d_tokens - OLD.token_count;
            END IF;
            IF TG_OP = 'UPDATE' AND NEW.collection_id <> OLD.collection_id THEN
                RAISE EXCEPTION 'documents do not move between collections';
            END IF;
            IF d_docs <> 0 OR d_chunks <> 0 OR d_tokens <> 0 THEN
                UPDATE collection_stats SET documents = documents + d_docs, chunks = chunks + d_chunks,
                                            tokens = tokens + d_tokens
                 WHERE collection_id = coalesce(NEW.collection_id, OLD.collection_id);
            END IF;
            RETURN NULL;
        END $$;
        CREATE CONSTRAINT TRIGGER documents_stats AFTER INSERT OR DELETE OR UPDATE OF chunk_count, token_count
            ON documents DEFERRABLE INITIALLY IMMEDIATE
            FOR EACH ROW EXECUTE FUNCTION kaynak_document_counted();
