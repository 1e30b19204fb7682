"""Migrations 5 and 6: per-lexeme BM25 statistics kept by triggers, and the pruned (MaxScore) BM25 function.

Migration 5 adds ``lexeme_stats`` (collection, lexeme → document frequency ``df``, largest term frequency
``max_tf``, shortest chunk ``min_dl``). Statement-level triggers on ``postings`` keep it in the same transaction as
the postings themselves, whoever writes or deletes them (replace, delete, a cascade from documents or
collections), so ``df`` is always exactly ``count(*)`` of the lexeme's postings. ``max_tf`` and ``min_dl`` only
widen while a lexeme has postings (a delete does not re-scan the rest); they are bounds, and a bound that is
too loose costs time, never correctness. A lexeme whose last posting goes loses its row, so the next posting
starts its bounds afresh.

Migration 6 adds ``kaynak_bm25_top(collection, lexemes, k, k1, b, documents, min_postings, seed_postings)``:
the top ``k`` chunks by Okapi BM25 with MaxScore-style pruning (docs/adr/0012-bm25-pruning.md). Each term's
score is bounded from its statistics, ``idf · max_tf · (k1 + 1) / (max_tf + k1 · (1 − b + b · min_dl / avgdl))``,
and the terms are ordered by bound, highest (rarest) first.

1. θ: the rarest terms (up to ``seed_postings`` postings) give candidates; the 4k best by partial score are
   scored fully (primary-key probes for the other terms); the k-th best of those real scores is θ, a lower bound
   of the final k-th score.
2. The essential terms are the fewest highest-bound terms such that the other terms' bounds add up to less than
   θ: a chunk containing none of them cannot reach θ, so the other terms' postings need not be scanned.
3. Candidates are the chunks of the essential terms whose partial score plus the other bounds reaches θ; the
   other terms are probed per candidate on the primary key, or read once when that is cheaper.

The result is the same top k with the same scores as summing every posting (``Store.keyword_search(...,
pruned=False)``), up to the last bits of floating-point addition order. Queries whose terms have at most
``min_postings`` postings in all are summed plainly (pruning would cost more than it saves).
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

# One term's BM25 contribution, written exactly as the full query in Store.keyword_search writes it, so both
# paths compute bit-identical term scores (same operations in the same order, all float8).
_TERM = "{idf} * {p}.tf * (p_k1 + 1) / ({p}.tf + p_k1 * (1 - p_b + p_b * {p}.dl / v_avgdl))"


def m5_lexeme_stats(conn: psycopg.Connection) -> None:
    conn.execute(
        """
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
        """
    )


def m6_pruned_bm25(conn: psycopg.Connection) -> None:
    partial = _TERM.format(idf="v_idf[array_position(v_lex, p.lexeme)]", p="p")
    conn.execute(
        f"""
        CREATE FUNCTION kaynak_bm25_top(
            p_collection bigint, p_lexemes text[], p_k int, p_k1 float8, p_b float8, p_documents bigint[],
            p_min_postings int DEFAULT 8000, p_seed_postings int DEFAULT 2000, p_split float8 DEFAULT 0.5
        ) RETURNS TABLE (chunk_id text, score float8)
        LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
        #variable_conflict use_column
        DECLARE
            v_n float8;
            v_avgdl float8;
            v_lex text[];      -- the query's known lexemes, highest bound first
            v_idf float8[];
            v_ub float8[];
            v_df int[];
            v_rest float8[];   -- v_rest[i]: sum of the bounds of terms i.. (v_rest[count + 1] = 0)
            v_count int;
            v_seed int := 1;   -- terms 1..v_seed give the first candidates, from which θ is taken
            v_i int;           -- terms 1..v_i are read in full; the others only probed
            v_theta float8;
            v_eps float8;
            v_ids text[];
            v_part float8[];
            v_rest_df bigint;
        BEGIN
            SELECT sum(d.chunk_count)::float8,
                   greatest(sum(d.token_count)::float8 / greatest(sum(d.chunk_count), 1), 1.0)
              INTO v_n, v_avgdl
              FROM documents d WHERE d.collection_id = p_collection;
            IF v_n IS NULL THEN
                RETURN;
            END IF;
            SELECT array_agg(t.lexeme ORDER BY t.ub DESC, t.lexeme), array_agg(t.idf ORDER BY t.ub DESC, t.lexeme),
                   array_agg(t.ub ORDER BY t.ub DESC, t.lexeme), array_agg(t.df ORDER BY t.ub DESC, t.lexeme)
              INTO v_lex, v_idf, v_ub, v_df
              FROM (SELECT s.lexeme, s.df, x.idf,
                           x.idf * s.max_tf * (p_k1 + 1)
                               / (s.max_tf + p_k1 * (1 - p_b + p_b * s.min_dl / v_avgdl)) AS ub
                      FROM lexeme_stats s
                      CROSS JOIN LATERAL (SELECT ln(1 + (v_n - s.df::float8 + 0.5) / (s.df::float8 + 0.5)) AS idf) x
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
            --    candidates; the 4k best of them by partial score are scored fully (primary-key probes for the
            --    other terms), and the k-th best of those real scores is θ (0 while fewer than k chunks match).
            WHILE v_seed < v_count
                  AND v_df[v_seed + 1] + (SELECT sum(x) FROM unnest(v_df[1:v_seed]) x) <= p_seed_postings LOOP
                v_seed := v_seed + 1;
            END LOOP;
            IF v_seed < v_count THEN
                SELECT min(f.s) INTO v_theta FROM (
                    SELECT top.s + coalesce(e.s, 0) AS s
                      FROM (SELECT p.chunk_id, sum({partial}) AS s
                              FROM postings p
                             WHERE p.collection_id = p_collection AND p.lexeme = ANY(v_lex[1:v_seed])
                               AND (p_documents IS NULL OR p.document_id = ANY(p_documents))
                             GROUP BY p.chunk_id ORDER BY s DESC LIMIT 4 * p_k) top
                      CROSS JOIN LATERAL (
                            SELECT sum({partial}) AS s FROM postings p
                             WHERE p.collection_id = p_collection AND p.lexeme = ANY(v_lex[v_seed + 1:])
                               AND p.chunk_id = top.chunk_id) e
                     ORDER BY 1 DESC LIMIT p_k) f
                 HAVING count(*) >= p_k;
            END IF;
            v_theta := coalesce(v_theta, 0);  -- no θ (fewer than k matches, or no pruning): every term is read

            -- 2. Read in full only the terms that can still matter: the fewest highest-bound terms whose
            --    remaining bounds add up to less than p_split · θ. Any split below θ is exact (a chunk with none
            --    of them cannot reach θ); a smaller one reads more postings but leaves far fewer candidates.
            v_i := 1;
            WHILE v_i < v_count AND v_rest[v_i + 1] >= p_split * v_theta - v_eps LOOP
                v_i := v_i + 1;
            END LOOP;
            IF v_i = v_count THEN
                RETURN QUERY
                SELECT p.chunk_id, sum({partial}) AS score
                  FROM postings p
                 WHERE p.collection_id = p_collection AND p.lexeme = ANY(v_lex)
                   AND (p_documents IS NULL OR p.document_id = ANY(p_documents))
                 GROUP BY p.chunk_id
                 ORDER BY 2 DESC, p.chunk_id COLLATE "C"
                 LIMIT p_k;
                RETURN;
            END IF;

            -- 3. Candidates: chunks of those terms whose partial score plus the other terms' bounds reaches θ;
            --    the other terms are probed per candidate, or read once when that is cheaper.
            SELECT array_agg(c.chunk_id), array_agg(c.s) INTO v_ids, v_part
              FROM (SELECT p.chunk_id, sum({partial}) AS s
                      FROM postings p
                     WHERE p.collection_id = p_collection AND p.lexeme = ANY(v_lex[1:v_i])
                       AND (p_documents IS NULL OR p.document_id = ANY(p_documents))
                     GROUP BY p.chunk_id) c
             WHERE c.s + v_rest[v_i + 1] >= v_theta - v_eps;
            IF v_ids IS NULL THEN
                RETURN;
            END IF;
            SELECT sum(x) INTO v_rest_df FROM unnest(v_df[v_i + 1:]) x;
            RAISE DEBUG 'kaynak_bm25_top seed % theta % essential % of % candidates % rest_df %',
                v_seed, v_theta, v_i, v_count, cardinality(v_ids), v_rest_df;
            IF cardinality(v_ids) * 12 < v_rest_df THEN  -- a probe costs about as much as reading 12 postings
                RETURN QUERY
                SELECT c.chunk_id, c.s + coalesce(e.s, 0) AS score
                  FROM unnest(v_ids, v_part) AS c(chunk_id, s)
                  CROSS JOIN LATERAL (
                        SELECT sum({partial}) AS s FROM postings p
                         WHERE p.collection_id = p_collection AND p.lexeme = ANY(v_lex[v_i + 1:])
                           AND p.chunk_id = c.chunk_id) e
                 ORDER BY 2 DESC, c.chunk_id COLLATE "C"
                 LIMIT p_k;
            ELSE
                RETURN QUERY
                SELECT c.chunk_id, c.s + coalesce(e.s, 0) AS score
                  FROM unnest(v_ids, v_part) AS c(chunk_id, s)
                  LEFT JOIN (SELECT p.chunk_id, sum({partial}) AS s FROM postings p
                              WHERE p.collection_id = p_collection AND p.lexeme = ANY(v_lex[v_i + 1:])
                              GROUP BY p.chunk_id) e ON e.chunk_id = c.chunk_id
                 ORDER BY 2 DESC, c.chunk_id COLLATE "C"
                 LIMIT p_k;
            END IF;
        END $$;
        """
    )


def m8_collection_stats(conn: psycopg.Connection) -> None:
    """``collection_stats``: per collection the number of documents, chunks and tokens (BM25's N and avgdl).

    The pruned BM25 read them by summing ``documents`` on every query — a cost that grows with the number of
    documents (a folder of 100,000 small files pays it on every search). The sums are kept instead by a
    deferrable row trigger on ``documents``, immediate by default; ``replace_document`` defers it (``SET
    CONSTRAINTS documents_stats DEFERRED``) so that it runs at commit and the writer holds the collection's row
    lock only while it commits — firing at the document's INSERT would hold it to the end of the transaction and
    serialize concurrent ingests into one collection. Deferred by default it would leave pending trigger events
    behind any UPDATE of documents, and a later ``ALTER TABLE documents`` in the same transaction (a migration)
    would fail. Integer sums, so equal to summing ``documents`` whenever that is summed; tests compare them after
    replaces and deletes.
    """
    conn.execute(
        """
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
        """
    )


# Migration 9's term score: c1 · tf / (tf + c2 + c3 · dl) with c1 = idf · (k1 + 1) per term and c2 = k1 · (1 − b),
# c3 = k1 · b / avgdl per query — Okapi BM25 rearranged (equal to migration 6's form to about 1e-15 relative).
# Each term's postings are read by a lateral scan that carries the term's c1, so no row looks its term up.
_TERM8 = "{t}.c1 * {p}.tf / ({p}.tf + v_c2 + v_c3 * {p}.dl)"


@dataclass(frozen=True)
class ChunkKey:
    """How the postings name a chunk: migration 9's text ``chunk_id``, or migration 12's ``chunk_key`` (a bigint
    from the chunk id's MD5, ``kaynak_chunk_key(id)``)."""

    column: str
    type: str
    collate: str  # the tie-break's collation
    document: str  # the posting's document id, from the primary key's columns


TEXT_KEY = ChunkKey("chunk_id", "text", ' COLLATE "C"', "q.document_id")
INT_KEY = ChunkKey("chunk_key", "bigint", "", "q.document_id")


def _postings_of(terms: str, p: str = "p", filtered: bool = True, key: ChunkKey = TEXT_KEY) -> str:
    """The postings of each term in ``terms`` (an ``unnest(lexemes, c1s) AS t(lexeme, c1)`` slice), one scan per
    term on the primary key, as ``{p}(<key>, tf, dl)`` beside ``t``."""
    docs = f"AND (p_documents IS NULL OR {key.document} = ANY(p_documents))" if filtered else ""
    return f"""unnest({terms}) AS t(lexeme, c1)
              CROSS JOIN LATERAL (
                    SELECT q.{key.column}, q.tf, q.dl FROM postings q
                     WHERE q.collection_id = p_collection AND q.lexeme = t.lexeme {docs}) {p}"""


def _probe(terms: str, chunk: str, key: ChunkKey = TEXT_KEY) -> str:
    """The summed score of ``chunk`` for the terms in ``terms`` (primary-key probes), as ``e(s)``."""
    return f"""CROSS JOIN LATERAL (
                    SELECT sum({_TERM8.format(t="t", p="q")}) AS s
                      FROM unnest({terms}) AS t(lexeme, c1)
                      JOIN postings q ON q.collection_id = p_collection AND q.lexeme = t.lexeme
                                     AND q.{key.column} = {chunk}) e"""


def m9_bm25_topk(conn: psycopg.Connection) -> None:
    """``kaynak_bm25_topk``: migration 6's MaxScore with the per-row work cut (docs/adr/0020-bm25-leg.md).

    Same arguments, same plan (θ from the rarest terms, essential terms read in full, candidates probed), same
    exact result. What changed: the collection's size and mean chunk length come from ``collection_stats``
    (migration 8) instead of a sum over its documents, and the cost of a posting: migration 6 found each row's
    term weight with ``v_idf[array_position(v_lex, p.lexeme)]`` — a linear search with a text comparison per
    query term, for every posting — and evaluated BM25 in its textbook form with eight float operations. Here
    every term's postings come from their own lateral scan that carries the term's constant, and the score is
    three operations (docs/performance-search.md has the measurement).
    """
    conn.execute(topk_function("kaynak_bm25_topk", TEXT_KEY))


def topk_function(name: str, key: ChunkKey) -> str:
    """``CREATE FUNCTION name(...)``: the pruned BM25 top k over postings whose chunks are named by ``key``."""
    score = _TERM8.format(t="t", p="p")
    k, post = key.column, key
    return f"""
        CREATE FUNCTION {name}(
            p_collection bigint, p_lexemes text[], p_k int, p_k1 float8, p_b float8, p_documents bigint[],
            p_min_postings int DEFAULT 8000, p_seed_postings int DEFAULT 2000, p_split float8 DEFAULT 0.5
        ) RETURNS TABLE ({k} {key.type}, score float8)
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
            v_ids {key.type}[];
            v_part float8[];
            v_rest_df bigint;
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
            --    candidates; the 4k best by partial score are scored fully, and the k-th best of those is θ.
            WHILE v_seed < v_count
                  AND v_df[v_seed + 1] + (SELECT sum(x) FROM unnest(v_df[1:v_seed]) x) <= p_seed_postings LOOP
                v_seed := v_seed + 1;
            END LOOP;
            IF v_seed < v_count THEN
                SELECT min(f.s) INTO v_theta FROM (
                    SELECT top.s + coalesce(e.s, 0) AS s
                      FROM (SELECT p.{k}, sum({score}) AS s
                              FROM {_postings_of("v_lex[1:v_seed], v_c1[1:v_seed]", key=post)}
                             GROUP BY p.{k} ORDER BY s DESC LIMIT 4 * p_k) top
                      {_probe("v_lex[v_seed + 1:], v_c1[v_seed + 1:]", "top." + k, post)}
                     ORDER BY 1 DESC LIMIT p_k) f
                 HAVING count(*) >= p_k;
            END IF;
            v_theta := coalesce(v_theta, 0);  -- no θ (fewer than k matches, or no pruning): every term is read

            -- 2. Read in full only the fewest highest-bound terms whose remaining bounds add up to less than
            --    p_split · θ (any split below θ is exact: a chunk with none of them cannot reach θ).
            v_i := 1;
            WHILE v_i < v_count AND v_rest[v_i + 1] >= p_split * v_theta - v_eps LOOP
                v_i := v_i + 1;
            END LOOP;
            IF v_i = v_count THEN
                RETURN QUERY
                SELECT p.{k}, sum({score}) AS score
                  FROM {_postings_of("v_lex, v_c1", key=post)}
                 GROUP BY p.{k}
                 ORDER BY 2 DESC, p.{k}{key.collate}
                 LIMIT p_k;
                RETURN;
            END IF;

            -- 3. Candidates: chunks of those terms whose partial score plus the other terms' bounds reaches θ;
            --    the other terms are probed per candidate, or read once when that is cheaper.
            SELECT array_agg(c.{k}), array_agg(c.s) INTO v_ids, v_part
              FROM (SELECT p.{k}, sum({score}) AS s
                      FROM {_postings_of("v_lex[1:v_i], v_c1[1:v_i]", key=post)}
                     GROUP BY p.{k}) c
             WHERE c.s + v_rest[v_i + 1] >= v_theta - v_eps;
            IF v_ids IS NULL THEN
                RETURN;
            END IF;
            SELECT sum(x) INTO v_rest_df FROM unnest(v_df[v_i + 1:]) x;
            IF cardinality(v_ids) * 12 < v_rest_df THEN  -- a probe costs about as much as reading 12 postings
                RETURN QUERY
                SELECT c.{k}, c.s + coalesce(e.s, 0) AS score
                  FROM unnest(v_ids, v_part) AS c({k}, s)
                  {_probe("v_lex[v_i + 1:], v_c1[v_i + 1:]", "c." + k, post)}
                 ORDER BY 2 DESC, c.{k}{key.collate}
                 LIMIT p_k;
            ELSE
                RETURN QUERY
                SELECT c.{k}, c.s + coalesce(e.s, 0) AS score
                  FROM unnest(v_ids, v_part) AS c({k}, s)
                  LEFT JOIN (SELECT p.{k}, sum({score}) AS s
                               FROM {_postings_of("v_lex[v_i + 1:], v_c1[v_i + 1:]", filtered=False, key=post)}
                              GROUP BY p.{k}) e ON e.{k} = c.{k}
                 ORDER BY 2 DESC, c.{k}{key.collate}
                 LIMIT p_k;
            END IF;
        END $$;
        """
