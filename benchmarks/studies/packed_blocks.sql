-- Issue 56, step 1: packed posting blocks with per-block bounds, beside today's postings (a study, not a
-- migration). benchmarks/studies/packed_blocks.py installs this file and fills pb_blocks from `postings`.
--
-- pb_blocks: one row per term and run of 128 postings in chunk-key order. The keys, term frequencies and chunk
-- lengths are parallel arrays; the key range, the count and (max_tf, min_dl) are plain columns. The block's bound
-- for any k1, b and average length is c1 · max_tf / (max_tf + k1·(1 − b) + k1·b/avgdl · min_dl) (tf/(tf + K(dl))
-- grows with tf and shrinks with dl), so it stays valid whatever later ingests do to the statistics.
--
-- pb_bm25_topk: today's exact MaxScore (migration 16, same θ, same essential terms, same candidate rule) over the
-- blocks, plus block-max skipping: a block of essential term j is not read when
--     c1_j · bound(block) + Σ_{i ≠ j} ub_i < θ − ε.
-- Exactness: any chunk with a posting in such a block scores below θ − ε (its term j adds at most the block's
-- bound, every other term at most its bound), hence below the k-th best; a chunk that reaches θ has none of its
-- postings in a skipped block, so its essential postings are all read and its score is completed as today. A
-- chunk whose partial score misses a skipped block's posting only scores lower, and was below θ anyway.
-- Completion (phase 1's θ and phase 3's candidates): per other term, the blocks holding a candidate are found by
-- width_bucket over the term's block starts (a binary search), read by `lo = ANY(...)`, unnested and joined.
-- p_documents (the filter) is not supported by the prototype: blocks carry no document ids.

CREATE TABLE IF NOT EXISTS pb_blocks (
    collection_id bigint   NOT NULL,
    lexeme        text     NOT NULL,
    lo            bigint   NOT NULL,
    hi            bigint   NOT NULL,
    n             int      NOT NULL,
    max_tf        int      NOT NULL,
    min_dl        int      NOT NULL,
    keys          bigint[] NOT NULL,
    tfs           int[]    NOT NULL,
    dls           int[]    NOT NULL,
    PRIMARY KEY (collection_id, lexeme, lo)
);

CREATE OR REPLACE FUNCTION pb_fill(p_collection bigint, p_size int DEFAULT 128) RETURNS bigint
LANGUAGE sql AS $$
    DELETE FROM pb_blocks WHERE collection_id = p_collection;
    WITH ins AS (
        INSERT INTO pb_blocks
        SELECT p_collection, s.lexeme, min(s.chunk_key), max(s.chunk_key), count(*)::int, max(s.tf), min(s.dl),
               array_agg(s.chunk_key ORDER BY s.chunk_key), array_agg(s.tf ORDER BY s.chunk_key),
               array_agg(s.dl ORDER BY s.chunk_key)
          FROM (SELECT q.lexeme, q.chunk_key, q.tf, q.dl,
                       (row_number() OVER (PARTITION BY q.lexeme ORDER BY q.chunk_key) - 1) / p_size AS blk
                  FROM postings q WHERE q.collection_id = p_collection) s
         GROUP BY s.lexeme, s.blk
        RETURNING 1)
    SELECT count(*) FROM ins;
$$;

-- The starts of a term's blocks that may hold one of the keys: a binary search (width_bucket) per key over the
-- term's block starts, read from the primary key alone.
CREATE OR REPLACE FUNCTION pb_needed(p_collection bigint, p_lexeme text, p_keys bigint[], OUT need bigint[])
LANGUAGE sql STABLE AS $$
    SELECT ARRAY(SELECT DISTINCT l.los[w] FROM unnest(p_keys) x, LATERAL width_bucket(x, l.los) w WHERE w > 0)
      FROM (SELECT array_agg(b.lo ORDER BY b.lo) AS los FROM pb_blocks b
             WHERE b.collection_id = p_collection AND b.lexeme = p_lexeme) l
$$;

CREATE OR REPLACE FUNCTION pb_bm25_topk(
            p_collection bigint, p_lexemes text[], p_k int, p_k1 float8, p_b float8,
            p_min_postings int DEFAULT 8000, p_seed_postings int DEFAULT 2000, p_split float8 DEFAULT 0.5,
            p_skip boolean DEFAULT true, p_diag boolean DEFAULT false
        ) RETURNS TABLE (chunk_key bigint, score float8)
        LANGUAGE plpgsql STABLE AS $$
        #variable_conflict use_column
        DECLARE
            v_n float8;
            v_avgdl float8;
            v_c2 float8;
            v_c3 float8;
            v_lex text[];
            v_c1 float8[];
            v_ub float8[];
            v_df int[];
            v_rest float8[];
            v_thr float8[];    -- v_thr[j]: a block of essential term j is read only if c1_j · bound ≥ v_thr[j]
            v_count int;
            v_seed int := 1;
            v_i int;
            v_theta float8;
            v_eps float8;
            v_ids bigint[];
            v_part float8[];
        BEGIN
            SELECT s.chunks::float8, greatest(s.tokens::float8 / greatest(s.chunks, 1), 1.0)
              INTO v_n, v_avgdl
              FROM collection_stats s WHERE s.collection_id = p_collection AND s.documents > 0;
            IF v_n IS NULL THEN
                RETURN;
            END IF;
            v_c2 := p_k1 * (1 - p_b);
            v_c3 := p_k1 * p_b / v_avgdl;
            SELECT array_agg(t.lexeme ORDER BY t.ub DESC, t.lexeme), array_agg(t.c1 ORDER BY t.ub DESC, t.lexeme),
                   array_agg(t.ub ORDER BY t.ub DESC, t.lexeme), array_agg(t.df ORDER BY t.ub DESC, t.lexeme)
              INTO v_lex, v_c1, v_ub, v_df
              FROM (SELECT s.lexeme, s.df, x.c1, x.c1 * s.max_tf / (s.max_tf + v_c2 + v_c3 * s.min_dl) AS ub
                      FROM lexeme_stats s
                      CROSS JOIN LATERAL (
                            SELECT ln(1 + (v_n - s.df::float8 + 0.5) / (s.df::float8 + 0.5)) * (p_k1 + 1) AS c1) x
                     WHERE s.collection_id = p_collection AND s.lexeme = ANY(p_lexemes) AND s.df > 0) t;
            v_count := coalesce(array_length(v_lex, 1), 0);
            IF v_count = 0 THEN
                RETURN;
            END IF;
            v_rest := array_fill(0::float8, ARRAY[v_count + 1]);
            FOR j IN REVERSE v_count..1 LOOP
                v_rest[j] := v_rest[j + 1] + v_ub[j];
            END LOOP;
            v_eps := 1e-9 * v_rest[1];
            IF (SELECT sum(x) FROM unnest(v_df) x) <= p_min_postings THEN
                v_seed := v_count;
            END IF;

            -- 1. θ, as today: the rarest terms' postings (every block of them), the 4k best completed.
            WHILE v_seed < v_count
                  AND v_df[v_seed + 1] + (SELECT sum(x) FROM unnest(v_df[1:v_seed]) x) <= p_seed_postings LOOP
                v_seed := v_seed + 1;
            END LOOP;
            IF v_seed < v_count THEN
                SELECT array_agg(top.chunk_key), array_agg(top.s) INTO v_ids, v_part
                  FROM (SELECT u.k AS chunk_key, sum(t.c1 * u.tf / (u.tf + v_c2 + v_c3 * u.dl)) AS s
                          FROM unnest(v_lex[1:v_seed], v_c1[1:v_seed]) AS t(lexeme, c1)
                          JOIN pb_blocks b ON b.collection_id = p_collection AND b.lexeme = t.lexeme
                          CROSS JOIN LATERAL unnest(b.keys, b.tfs, b.dls) AS u(k, tf, dl)
                         GROUP BY u.k ORDER BY s DESC LIMIT 4 * p_k) top;
                SELECT min(f.s) INTO v_theta FROM (
                    SELECT c.s + coalesce(e.s, 0) AS s
                      FROM unnest(v_ids, v_part) AS c(chunk_key, s)
                      LEFT JOIN (SELECT u.k, sum(t.c1 * u.tf / (u.tf + v_c2 + v_c3 * u.dl)) AS s
                                   FROM unnest(v_lex[v_seed + 1:], v_c1[v_seed + 1:]) AS t(lexeme, c1)
                                   CROSS JOIN LATERAL pb_needed(p_collection, t.lexeme, v_ids) l
                                   JOIN pb_blocks b ON b.collection_id = p_collection AND b.lexeme = t.lexeme
                                        AND b.lo = ANY(l.need)
                                   CROSS JOIN LATERAL unnest(b.keys, b.tfs, b.dls) AS u(k, tf, dl)
                                   JOIN unnest(v_ids) AS w(k) ON w.k = u.k
                                  GROUP BY u.k) e ON e.k = c.chunk_key
                     ORDER BY 1 DESC LIMIT p_k) f
                 HAVING count(*) >= p_k;
            END IF;
            v_theta := coalesce(v_theta, 0);

            -- 2. The essential terms, as today.
            v_i := 1;
            WHILE v_i < v_count AND v_rest[v_i + 1] >= p_split * v_theta - v_eps LOOP
                v_i := v_i + 1;
            END LOOP;
            v_thr := array_fill('-infinity'::float8, ARRAY[v_count]);
            IF p_skip AND v_theta > 0 THEN
                FOR j IN 1..v_i LOOP
                    v_thr[j] := v_theta - v_eps - (v_rest[1] - v_ub[j]);
                END LOOP;
            END IF;
            IF p_diag THEN
                PERFORM set_config('pb.diag', (
                    SELECT format('essential=%s/%s theta=%s terms_unskippable=%s blocks_read=%s blocks_skipped=%s postings_read=%s postings_skipped=%s',
                                  v_i, v_count, v_theta,
                                  (SELECT count(*) FROM unnest(v_thr[1:v_i]) x WHERE x <= 0),
                                  count(*) FILTER (WHERE r), count(*) FILTER (WHERE NOT r),
                                  coalesce(sum(b.n) FILTER (WHERE r), 0), coalesce(sum(b.n) FILTER (WHERE NOT r), 0))
                      FROM unnest(v_lex[1:v_i], v_c1[1:v_i], v_thr[1:v_i]) AS t(lexeme, c1, thr)
                      JOIN pb_blocks b ON b.collection_id = p_collection AND b.lexeme = t.lexeme
                      CROSS JOIN LATERAL (SELECT t.c1 * (b.max_tf::float8 / (b.max_tf + v_c2 + v_c3 * b.min_dl))
                                                 >= t.thr AS r) x), false);
            END IF;
            IF v_i = v_count THEN
                RETURN QUERY
                SELECT u.k, sum(t.c1 * u.tf / (u.tf + v_c2 + v_c3 * u.dl)) AS score
                  FROM unnest(v_lex, v_c1) AS t(lexeme, c1)
                  JOIN pb_blocks b ON b.collection_id = p_collection AND b.lexeme = t.lexeme
                  CROSS JOIN LATERAL unnest(b.keys, b.tfs, b.dls) AS u(k, tf, dl)
                 GROUP BY u.k
                 ORDER BY 2 DESC, 1
                 LIMIT p_k;
                RETURN;
            END IF;

            -- 3. Candidates from the essential terms' blocks that can still reach θ; the others complete them.
            SELECT array_agg(c.k), array_agg(c.s) INTO v_ids, v_part
              FROM (SELECT u.k, sum(t.c1 * u.tf / (u.tf + v_c2 + v_c3 * u.dl)) AS s
                      FROM unnest(v_lex[1:v_i], v_c1[1:v_i], v_thr[1:v_i]) AS t(lexeme, c1, thr)
                      JOIN pb_blocks b ON b.collection_id = p_collection AND b.lexeme = t.lexeme
                           AND t.c1 * (b.max_tf::float8 / (b.max_tf + v_c2 + v_c3 * b.min_dl)) >= t.thr
                      CROSS JOIN LATERAL unnest(b.keys, b.tfs, b.dls) AS u(k, tf, dl)
                     GROUP BY u.k) c
             WHERE c.s + v_rest[v_i + 1] >= v_theta - v_eps;
            IF v_ids IS NULL THEN
                RETURN;
            END IF;
            RETURN QUERY
            SELECT c.chunk_key, c.s + coalesce(e.s, 0) AS score
              FROM unnest(v_ids, v_part) AS c(chunk_key, s)
              LEFT JOIN (SELECT u.k, sum(t.c1 * u.tf / (u.tf + v_c2 + v_c3 * u.dl)) AS s
                           FROM unnest(v_lex[v_i + 1:], v_c1[v_i + 1:]) AS t(lexeme, c1)
                           CROSS JOIN LATERAL pb_needed(p_collection, t.lexeme, v_ids) l
                           JOIN pb_blocks b ON b.collection_id = p_collection AND b.lexeme = t.lexeme
                                AND b.lo = ANY(l.need)
                           CROSS JOIN LATERAL unnest(b.keys, b.tfs, b.dls) AS u(k, tf, dl)
                           JOIN unnest(v_ids) AS w(k) ON w.k = u.k
                          GROUP BY u.k) e ON e.k = c.chunk_key
             ORDER BY 2 DESC, 1
             LIMIT p_k;
        END $$;
