-- Migration 5: frozen. The SQL this migration ran when it shipped, byte for byte (function bodies keep their
-- whitespace); never edit it: add a migration instead. tests/test_migrations.py pins its SHA-256.

        CREATE TABLE lexeme_stats (
            collection_id bigint NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            lexeme        text   NOT NULL,
            df            int    NOT NULL,
            max_tf        int    NOT NULL,
            min_dl        int    NOT NULL,
            PRIMARY KEY (collection_id, lexeme) INCLUDE (df, max_tf, min_dl)
        );

        INSERT INTO lexeme_stats (collection_id, lexeme, df, max_tf, min_dl)
        SELECT collection_id, lexeme, count(*), max(tf), min(dl) FROM postings GROUP BY 1, 2;

        -- Rows are touched in (collection, lexeme) order, so concurrent writers lock them in one order.
        CREATE FUNCTION kaynak_postings_added() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO lexeme_stats AS s (collection_id, lexeme, df, max_tf, min_dl)
            SELECT collection_id, lexeme, count(*), max(tf), min(dl) FROM added GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (collection_id, lexeme) DO UPDATE
               SET df = s.df + excluded.df,
                   max_tf = greatest(s.max_tf, excluded.max_tf),
                   min_dl = least(s.min_dl, excluded.min_dl);
            RETURN NULL;
        END $$;

        CREATE FUNCTION kaynak_postings_removed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE lexeme_stats s SET df = s.df - gone.n
              FROM (SELECT collection_id, lexeme, count(*) AS n FROM removed GROUP BY 1, 2 ORDER BY 1, 2) gone
             WHERE s.collection_id = gone.collection_id AND s.lexeme = gone.lexeme;
            DELETE FROM lexeme_stats s
             USING (SELECT DISTINCT collection_id, lexeme FROM removed) gone
             WHERE s.collection_id = gone.collection_id AND s.lexeme = gone.lexeme AND s.df <= 0;
            RETURN NULL;
        END $$;

        CREATE TRIGGER postings_stats_insert AFTER INSERT ON postings
            REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_added();
        CREATE TRIGGER postings_stats_delete AFTER DELETE ON postings
            REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_removed();
        -- kaynak never updates postings in place; should anything do so, the statistics follow all the same.
        CREATE TRIGGER postings_stats_update_old AFTER UPDATE ON postings
            REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_removed();
        CREATE TRIGGER postings_stats_update_new AFTER UPDATE ON postings
            REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION kaynak_postings_added();
