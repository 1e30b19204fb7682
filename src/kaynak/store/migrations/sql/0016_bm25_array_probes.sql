-- Migration 16 (issue 30): the pruned BM25 leg completes its candidates' scores by one index scan per term for all
-- candidates at once (``chunk_key = ANY(candidates)``, which PostgreSQL's B-tree walks in key order), instead of
-- one index descent per candidate and term (docs/adr/0033-bm25-array-probes.md). Phase 1 (θ from the rarest
-- terms' best candidates) and phase 3 (the candidates of the essential terms) both complete scores this way; the
-- old choice between per-candidate probes and a full read of the other terms' postings is gone, as the array scan
-- costs at most about what that read cost. Same arguments, same results: every score is the same sum.
--
-- Frozen: never edit this file once shipped; add a migration instead. tests/store/test_migrations.py pins its SHA-256.

CREATE OR REPLACE FUNCTION kaynak_bm25_topk(
            p_collection bigint, p_lexemes text[], p_k int, p_k1 float8, p_b float8, p_documents bigint[],
            p_min_postings int DEFAULT 8000, p_seed_postings int DEFAULT 2000, p_split float8 DEFAULT 0.5,
            p_lo bigint DEFAULT 0, p_hi bigint DEFAULT 1152921504606846975
        ) RETURNS TABLE (chunk_key bigint, score float8)
        LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
        #variable_conflict use_column
        DECLARE
            v_n float8;
            v_avgdl float8;
            v_c2 float8;       -- k1 · (1 − b)
            v_c3 float8;       -- k1 · b / avgdl
            v_lex text[];      -- the query's known lexemes, highest bound first
            v_c1 float8[];     -- idf · (k1 + 1) of each
            v_ub float8[];     -- each term's bound: c1 · max_tf / (max_tf + c2 + c3 · min_dl)
            v_df int[];
            v_rest float8[];   -- v_rest[i]: sum of the bounds of terms i.. (v_rest[count + 1] = 0)
            v_count int;
            v_seed int := 1;   -- terms 1..v_seed give the first candidates, from which θ is taken
            v_i int;           -- terms 1..v_i are read in full; the others only probed
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
            v_eps := 1e-9 * v_rest[1];  -- slack for the last bits of floating-point sums: never prune a tie
            IF (SELECT sum(x) FROM unnest(v_df) x) <= p_min_postings THEN
                v_seed := v_count;  -- few postings in all: one plain read is cheaper than pruning
            END IF;

            -- 1. θ, a lower bound of the k-th best score: the rarest terms (up to p_seed_postings postings) give
            --    candidates; the 4k best by partial score are scored fully (each other term by one scan of its
            --    postings for all of them), and the k-th best of those is θ.
            --    Over the whole collection, whatever the range: a part prunes as hard as one whole call.
            WHILE v_seed < v_count
                  AND v_df[v_seed + 1] + (SELECT sum(x) FROM unnest(v_df[1:v_seed]) x) <= p_seed_postings LOOP
                v_seed := v_seed + 1;
            END LOOP;
            IF v_seed < v_count THEN
                SELECT array_agg(top.chunk_key), array_agg(top.s) INTO v_ids, v_part
                  FROM (SELECT p.chunk_key, sum(t.c1 * p.tf / (p.tf + v_c2 + v_c3 * p.dl)) AS s
                          FROM unnest(v_lex[1:v_seed], v_c1[1:v_seed]) AS t(lexeme, c1)
              CROSS JOIN LATERAL (
                    SELECT q.chunk_key, q.tf, q.dl FROM postings q
                     WHERE q.collection_id = p_collection AND q.lexeme = t.lexeme AND (p_documents IS NULL OR q.document_id = ANY(p_documents))) p
                         GROUP BY p.chunk_key ORDER BY s DESC LIMIT 4 * p_k) top;
                SELECT min(f.s) INTO v_theta FROM (
                    SELECT c.s + coalesce(e.s, 0) AS s
                      FROM unnest(v_ids, v_part) AS c(chunk_key, s)
                      LEFT JOIN (SELECT q.chunk_key, sum(t.c1 * q.tf / (q.tf + v_c2 + v_c3 * q.dl)) AS s
                                   FROM unnest(v_lex[v_seed + 1:], v_c1[v_seed + 1:]) AS t(lexeme, c1)
                                   JOIN postings q ON q.collection_id = p_collection AND q.lexeme = t.lexeme
                                                  AND q.chunk_key = ANY(v_ids)
                                  GROUP BY q.chunk_key) e ON e.chunk_key = c.chunk_key
                     ORDER BY 1 DESC LIMIT p_k) f
                 HAVING count(*) >= p_k;
            END IF;
            v_theta := coalesce(v_theta, 0);  -- no θ (fewer than k matches, or no pruning): every term is read

            -- 2. Read in full (inside the range) only the fewest highest-bound terms whose remaining bounds add up
            --    to less than p_split · θ (any split below θ is exact: a chunk with none of them cannot reach θ).
            v_i := 1;
            WHILE v_i < v_count AND v_rest[v_i + 1] >= p_split * v_theta - v_eps LOOP
                v_i := v_i + 1;
            END LOOP;
            IF v_i = v_count THEN
                RETURN QUERY
                SELECT p.chunk_key, sum(t.c1 * p.tf / (p.tf + v_c2 + v_c3 * p.dl)) AS score
                  FROM unnest(v_lex, v_c1) AS t(lexeme, c1)
              CROSS JOIN LATERAL (
                    SELECT q.chunk_key, q.tf, q.dl FROM postings q
                     WHERE q.collection_id = p_collection AND q.lexeme = t.lexeme AND q.chunk_key BETWEEN p_lo AND p_hi AND (p_documents IS NULL OR q.document_id = ANY(p_documents))) p
                 GROUP BY p.chunk_key
                 ORDER BY 2 DESC, p.chunk_key
                 LIMIT p_k;
                RETURN;
            END IF;

            -- 3. Candidates: chunks of those terms whose partial score plus the other terms' bounds reaches θ;
            --    the other terms complete their scores, each by one scan of its postings for all candidates.
            SELECT array_agg(c.chunk_key), array_agg(c.s) INTO v_ids, v_part
              FROM (SELECT p.chunk_key, sum(t.c1 * p.tf / (p.tf + v_c2 + v_c3 * p.dl)) AS s
                      FROM unnest(v_lex[1:v_i], v_c1[1:v_i]) AS t(lexeme, c1)
              CROSS JOIN LATERAL (
                    SELECT q.chunk_key, q.tf, q.dl FROM postings q
                     WHERE q.collection_id = p_collection AND q.lexeme = t.lexeme AND q.chunk_key BETWEEN p_lo AND p_hi AND (p_documents IS NULL OR q.document_id = ANY(p_documents))) p
                     GROUP BY p.chunk_key) c
             WHERE c.s + v_rest[v_i + 1] >= v_theta - v_eps;
            IF v_ids IS NULL THEN
                RETURN;
            END IF;
            RETURN QUERY
            SELECT c.chunk_key, c.s + coalesce(e.s, 0) AS score
              FROM unnest(v_ids, v_part) AS c(chunk_key, s)
              LEFT JOIN (SELECT q.chunk_key, sum(t.c1 * q.tf / (q.tf + v_c2 + v_c3 * q.dl)) AS s
                           FROM unnest(v_lex[v_i + 1:], v_c1[v_i + 1:]) AS t(lexeme, c1)
                           JOIN postings q ON q.collection_id = p_collection AND q.lexeme = t.lexeme
                                          AND q.chunk_key = ANY(v_ids)
                          GROUP BY q.chunk_key) e ON e.chunk_key = c.chunk_key
             ORDER BY 2 DESC, c.chunk_key
             LIMIT p_k;
        END $$;
