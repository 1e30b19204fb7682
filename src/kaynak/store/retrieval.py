"""Retrieval: the vector and keyword legs of a search, query stemming and the document filters they share.

Vector leg: HNSW over each collection's partial index (docs/adr/0001-vector-layout.md); the collection id is a
literal so the planner can match the partial index, and its HNSW settings are made once per pooled connection
(docs/adr/0034-hnsw-settings-per-session.md). Keyword leg: ``ts_rank_cd`` (the specification's OR tsquery
ranked with ``ts_rank_cd(…, 1)``) or BM25 over the ``postings`` table (per-collection IDF, k1 saturation, b length
normalisation), pruned with MaxScore by default (docs/adr/0012-bm25-pruning.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from kaynak.errors import UsageError
from kaynak.globs import postgres_regex
from kaynak.store.base import StoreBase, like_escape, vector_param
from kaynak.store.boundary import one
from kaynak.types import Collection

# The HNSW settings of ``vector_search`` for the session, as one statement (a pipeline sends no multi-command strings).
_HNSW_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, false), set_config('hnsw.iterative_scan', 'relaxed_order', false), "
    "set_config('hnsw.max_scan_tuples', '50000', false)"
)
_HNSW_SET = "_kaynak_hnsw_ef"  # on a pooled connection: the ef_search its session was set to

MAX_QUERY_LEXEMES = 64

#: The text search configurations a document's keyword postings may be stemmed with (documents.keyword_language;
#: kaynak.langdetect.keyword_language): a search analyses its query in each one a collection's documents use.
STEMMINGS = ("turkish", "english", "simple")
#: A query's Turkish words are looked up as written too (their ``simple`` lexeme, where Turkish stems the word and
#: the form occurs): the Turkish stemmer cuts a bare noun's last vowel as if it were a suffix (mahkeme → mahke)
#: while the inflected forms keep it (mahkemeye, mahkemede, mahkemenin → mahkeme) (docs/adr/0038).
TURKISH_SURFACE_FORMS = True
# ``keyword_search(pruned=True)`` → the SQL function that ranks (migration 9's algorithm over migration 12's keys).
BM25_FUNCTION = "kaynak_bm25_topk"
# A score as a share of its collection's best (``keyword_search(per_collection=True)``).
_PER_COLLECTION = "score / greatest(max(score) OVER (PARTITION BY cid), 1e-12)"
# Among equal shares, each collection's best comes first (a one-note collection's only hit ties at 1.0 with the
# best of a large collection, and must not lose the tie to the large one's other chunks at 1.0).
_PER_COLLECTION_TIE = "row_number() OVER (PARTITION BY cid ORDER BY score DESC, {key})"
# The chunks row of a BM25 result row ``t`` (by its chunk key).
_CHUNK_OF_T = sql.SQL("kaynak_chunk_key(k.id) = t.chunk_key")
# Chunk keys are 60-bit (migration 12): [0, KEY_SPACE).
KEY_SPACE = 1 << 60
# Runs the parts of a keyword leg split by chunk key beside the part the calling thread runs (``parts``).
_PARTS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kaynak-part")


def key_ranges(parts: int) -> list[tuple[int, int]]:
    """``parts`` ranges of chunk keys, [lo, hi] inclusive, of equal width, covering all keys in order."""
    return [(i * KEY_SPACE // parts, (i + 1) * KEY_SPACE // parts - 1) for i in range(parts)]


def merge_parts(rows: Sequence[tuple[int, int, str, float]], k: int, fair: bool) -> list[tuple[str, float]]:
    """The parts' rows (collection id, chunk key, chunk id, score: each part's top k of each collection) as one
    ranking: each collection's top k of the union (exact: a chunk among a collection's k best is among its part's
    k best), then merged as the one-statement path merges them (``_PER_COLLECTION``/``_PER_COLLECTION_TIE`` when
    ``fair``, plain scores otherwise; ties by chunk key), best k first."""
    by_collection: dict[int, list[tuple[float, int, str]]] = {}
    for cid, key, chunk_id, score in rows:
        by_collection.setdefault(cid, []).append((float(score), key, chunk_id))
    merged: list[tuple[float, int, int, str]] = []
    for hits in by_collection.values():
        hits.sort(key=lambda h: (-h[0], h[1]))
        del hits[k:]
        if fair:
            best = max(hits[0][0], 1e-12)
            merged.extend((score / best, rank, key, chunk) for rank, (score, key, chunk) in enumerate(hits, 1))
        else:
            merged.extend((score, 0, key, chunk) for score, key, chunk in hits)
    merged.sort(key=lambda h: (-h[0], h[1], h[2]))
    return [(chunk_id, score) for score, _, _, chunk_id in merged[:k]]


def seed_postings(base: int, chunks: int) -> int:
    """The pruned BM25 leg's seed budget (postings of the rarest terms that give θ) for a collection of ``chunks``
    chunks: ``base`` at 100,000 chunks, growing with the square root of the size (the best budget measured was
    4,000 at 100,000 chunks and 8,000–16,000 at 1,000,000; docs/adr/0012). At least 1."""
    return max(1, round(base * math.sqrt(max(chunks, 1) / 100_000)))


def stem_texts(conn: Any, language: str, texts: Sequence[str]) -> list[set[str]]:
    """The lexeme set of each text under text search configuration ``language``, Turkish-aware lowered: what the
    keyword leg matches (``Store.lexemes_of`` for quotes at search, the stored sentence analysis at ingest)."""
    if not texts:
        return []
    rows = conn.execute(
        "SELECT t.ord, array(SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(t.txt)))) "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS t(txt, ord) ORDER BY t.ord",
        (language, list(texts)),
    ).fetchall()
    return [set(r[1]) for r in rows]


@dataclass
class SearchFilters:
    """Restrictions on which chunks a search may return."""

    source_prefix: str | None = None
    source_glob: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.source_prefix or self.source_glob or self.metadata)


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """An OR tsquery of already-normalised lexemes: 'a' | 'b' | 'c' (quoted, so any character is text)."""
    quoted = ["'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes]
    return " | ".join(quoted)


class RetrievalMixin(StoreBase):
    """The search legs and the stemming helpers the search service plans with."""

    def _documents_where(
        self, collection_ids: Sequence[int], filters: SearchFilters
    ) -> tuple[sql.Composable, dict[str, Any]]:
        """A condition on ``documents`` rows for the filters, with its parameters by name (``f_…``)."""
        conds = [sql.SQL("collection_id = ANY(%(f_collections)s)")]
        params: dict[str, Any] = {"f_collections": list(collection_ids)}
        if filters.source_prefix:
            conds.append(sql.SQL("source LIKE %(f_prefix)s"))
            params["f_prefix"] = like_escape(filters.source_prefix) + "%"
        if filters.source_glob:  # kaynak.globs: `*` within a folder, `**` across (the ingest --include dialect)
            conds.append(sql.SQL("source ~ %(f_regex)s"))
            params["f_regex"] = postgres_regex(filters.source_glob)
        if filters.metadata:
            conds.append(sql.SQL("metadata @> %(f_metadata)s"))
            params["f_metadata"] = Jsonb(filters.metadata)
        return sql.SQL(" AND ").join(conds), params

    def _filter_sql(
        self, collection_ids: Sequence[int], filters: SearchFilters | None
    ) -> tuple[sql.Composable, dict[str, Any]]:
        """A condition on ``document_id`` for the filters (TRUE when there are none), parameters by name."""
        if filters is None or filters.empty():
            return sql.SQL("TRUE"), {}
        where, params = self._documents_where(collection_ids, filters)
        return sql.SQL("document_id = ANY(ARRAY(SELECT id FROM documents WHERE {}))").format(where), params

    def _filter_documents_sql(
        self, collection_ids: Sequence[int], filters: SearchFilters | None
    ) -> tuple[sql.Composable, dict[str, Any]]:
        """The ids of the documents the filters keep, as a ``bigint[]`` expression (NULL when there are none)."""
        if filters is None or filters.empty():
            return sql.SQL("NULL::bigint[]"), {}
        where, params = self._documents_where(collection_ids, filters)
        return sql.SQL("ARRAY(SELECT id FROM documents WHERE {})").format(where), params

    def vector_search(
        self,
        collection: Collection,
        query_vector: np.ndarray,
        k: int = 40,
        filters: SearchFilters | None = None,
        ef_search: int = 100,
    ) -> list[tuple[str, float]]:
        """Nearest chunks by cosine distance: [(chunk_id, distance)], closest first.

        HNSW with ``hnsw.ef_search`` raised and ``hnsw.iterative_scan = relaxed_order``, so filters that keep
        few rows still yield k results. The settings are made once per pooled connection (session-wide; only
        this method scans HNSW), and again when a search needs another ``ef_search``.
        """
        if len(query_vector) != collection.dim:
            raise UsageError(
                f"query vector has {len(query_vector)} dimensions; collection {collection.name!r} has {collection.dim}"
            )
        cond, params = self._filter_sql([collection.id], filters)
        vec = vector_param(query_vector)
        dim = sql.Literal(collection.dim)
        query = sql.SQL(
            """
            SELECT id, dist FROM (
                SELECT id, (embedding::vector({dim})) <=> %(vec)s::vector({dim}) AS dist
                FROM chunks
                WHERE collection_id = {cid} AND embedding IS NOT NULL AND {cond}
                ORDER BY (embedding::vector({dim})) <=> %(vec)s::vector({dim})
                LIMIT %(k)s
            ) t ORDER BY dist
            """
        ).format(dim=dim, cid=sql.Literal(collection.id), cond=cond)
        ef = max(ef_search, k)
        args = {"vec": vec, "k": k, **params}
        with self._conn() as conn:
            if getattr(conn, _HNSW_SET, None) == ef:  # this session already has the settings: the search alone
                rows = conn.execute(query, args).fetchall()
            else:
                # One round trip: the settings for the session (kept by the pooled connection, so that its next
                # searches send one statement instead of BEGIN, SET LOCAL, search, COMMIT: issue 30), then the
                # search. Recorded only outside a transaction, where nothing can roll the settings back.
                idle = conn.info.transaction_status == TransactionStatus.IDLE
                with conn.pipeline():
                    conn.execute(_HNSW_SETTINGS, (str(ef),))
                    cur = conn.execute(query, args)
                rows = cur.fetchall()
                if idle:
                    setattr(conn, _HNSW_SET, ef)
        return [(r[0], float(r[1])) for r in rows]

    def query_lexemes(self, language: str, text: str, limit: int = MAX_QUERY_LEXEMES) -> list[str]:
        """The distinct lexemes of ``to_tsvector(language, tr_lower(text))``, in order of first appearance."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) ORDER BY positions[1] LIMIT %s",
                (language, text, limit),
            ).fetchall()
        return [r[0] for r in rows]

    def lexemes_of(self, language: str, texts: Sequence[str]) -> list[set[str]]:
        """The lexeme set of each text, stemmed exactly as the keyword leg stems (for quote selection)."""
        if not texts:
            return []
        with self._conn() as conn:
            return stem_texts(conn, language, texts)

    def lexemes_in(self, languages: Sequence[str], texts: Sequence[str]) -> list[set[str]]:
        """The lexemes of each text under every one of ``languages`` (text search configurations), each tagged
        ``language:lexeme`` — one statement (highlighting in ``simple`` collections: stop words drop out and
        inflected forms meet, in either language)."""
        if not texts:
            return []
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT t.ord, array(SELECT l.cfg || ':' || v.lexeme FROM unnest(%s::text[]) AS l(cfg), "
                "unnest(to_tsvector(l.cfg::regconfig, tr_lower(t.txt))) AS v) "
                "FROM unnest(%s::text[]) WITH ORDINALITY AS t(txt, ord) ORDER BY t.ord",
                (list(languages), list(texts)),
            ).fetchall()
        return [set(r[1]) for r in rows]

    def tr_lower(self, text: str) -> str:
        with self._conn() as conn:
            return str(one(conn.execute("SELECT tr_lower(%s)", (text,)))[0])

    # The pruned BM25 functions' (min_postings, seed_postings, split): below min_postings in all a query is summed
    # plainly; the rarest terms up to seed_postings give θ; terms are read in full until the others' bounds sum
    # below split · θ. seed_postings is for a collection of 100,000 chunks and grows with the square root of its
    # size (``seed_postings``; docs/adr/0012, "Seed by collection size"). Tests lower the first two to exercise
    # pruning on small sets.
    bm25_prune_limits: tuple[int, int, float] = (8000, 4000, 0.5)

    def keyword_search(
        self,
        collections: Sequence[Collection],
        query: str | None = None,
        k: int = 40,
        ranking: str = "bm25",
        filters: SearchFilters | None = None,
        k1: float = 0.9,
        b: float = 0.4,
        *,
        lexemes: Sequence[str] | None = None,
        pruned: bool = True,
        per_collection: bool = False,
        parts: int = 1,
    ) -> list[tuple[str, float]]:
        """Keyword ranking over collections that share one language: [(chunk_id, score)], best first.

        ``per_collection``: each collection's scores are divided by its own best before the collections are
        merged, so a small collection (whose per-collection IDF is low: few chunks) is not buried under a large
        one's scores (docs/adr/0026); the scores are then shares of the collection's best match, in (0, 1].

        ``lexemes`` (already stemmed, e.g. a search plan's) spare stemming ``query`` again.
        ``ts_rank_cd``: the specification's OR tsquery of the query's lexemes ranked with ts_rank_cd(…, 1).
        ``bm25``: Okapi BM25 with per-collection IDF ln(1 + (N − df + .5)/(df + .5)). ``pruned`` (default) runs
        ``kaynak_bm25_topk`` (MaxScore over ``lexeme_stats``, docs/adr/0012-bm25-pruning.md, with the per-posting
        work of docs/adr/0020-bm25-leg.md over integer chunk keys, docs/adr/0022-bm25-chunk-keys.md; candidates'
        scores completed by one index scan per term, docs/adr/0033-bm25-array-probes.md), which returns the same
        top k and scores as summing every posting of every term (``pruned=False``, the reference). Ties are
        broken by chunk key in both.

        ``parts`` > 1 (pruned BM25 only): the chunk keys are cut into that many ranges, each ranked by its own
        statement on its own connection at the same time (as many as the pool has free at once; the others run in
        turn), and the parts' top k merged (``merge_parts``): the same top k and scores, in less time on a server
        with cores to spare (docs/adr/0032-keyword-leg-in-parts.md).
        """
        if parts < 1:
            raise ValueError(f"parts must be at least 1, not {parts!r}")
        if not collections:
            return []
        languages = {c.language for c in collections}
        if len(languages) != 1:
            raise ValueError("keyword_search ranks one language at a time")
        language = languages.pop()
        if lexemes is None:
            lexemes = self.query_lexemes(language, query or "")
        lexemes = list(dict.fromkeys(lexemes))[:MAX_QUERY_LEXEMES]
        if not lexemes:
            return []
        ids = [c.id for c in collections]
        fair = per_collection and len(ids) > 1
        norm = sql.SQL(_PER_COLLECTION if fair else "score")
        tie = sql.SQL(_PER_COLLECTION_TIE.format(key="chunk_key") if fair else "0")
        sizes = [c.chunk_count for c in collections]
        if ranking == "bm25" and pruned and parts > 1:
            return self._bm25_in_parts(ids, lexemes, k, k1, b, filters, fair, sizes, parts)
        if ranking == "bm25" and pruned:
            query_sql, args = self._bm25_pruned_sql(ids, lexemes, k, k1, b, filters, pruned, norm, tie, sizes)
        elif ranking == "bm25":
            query_sql, args = self._bm25_full_sql(ids, lexemes, k, k1, b, filters, norm, tie)
        elif ranking == "ts_rank_cd":
            cond, params = self._filter_sql(ids, filters)
            query_sql = sql.SQL(
                """
                SELECT id, {norm} AS score, {tie} AS tie FROM (
                    SELECT id, collection_id AS cid, ts_rank_cd(tsv, q, 1) AS score
                    FROM chunks, (SELECT %(tsquery)s::tsquery AS q) qq
                    WHERE collection_id = ANY(%(collections)s) AND tsv @@ q AND {cond}
                ) s
                ORDER BY 2 DESC, 3, id LIMIT %(k)s
                """
            ).format(cond=cond, norm=norm, tie=sql.SQL(_PER_COLLECTION_TIE.format(key="id") if fair else "0"))
            args = {"tsquery": tsquery_literal(lexemes), "collections": ids, "k": k, **params}
        else:
            raise UsageError(f"unknown keyword ranking {ranking!r}; choose bm25 or ts_rank_cd", "ranking")
        with self._conn() as conn:
            rows = conn.execute(query_sql, args).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def _bm25_pruned_sql(
        self,
        ids: list[int],
        lexemes: list[str],
        k: int,
        k1: float,
        b: float,
        filters: SearchFilters | None,
        pruned: bool = True,
        norm: sql.Composable = sql.SQL("score"),
        tie: sql.Composable = sql.SQL("0"),
        sizes: Sequence[int] | None = None,
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """The top k of each collection by the pruned function, merged (per-collection IDF, as the full path);
        the k best chunk keys are turned back into chunk ids. ``sizes`` (each collection's chunk count) scale
        each one's seed budget (``seed_postings``); without them every collection gets the configured one."""
        if pruned is not True:
            raise ValueError(f"pruned must be True or False, not {pruned!r}")
        call, args = self._bm25_call(ids, lexemes, k, k1, b, filters, sizes, ranged=False)
        query_sql = sql.SQL(
            """
            SELECT k.id, t.score
            FROM (SELECT t.chunk_key, {norm} AS score, {tie} AS tie
                    FROM ({call}) t
                   ORDER BY 2 DESC, 3, t.chunk_key LIMIT %(k)s) t
            JOIN chunks k ON {chunk}
            ORDER BY t.score DESC, t.tie, t.chunk_key
            """
        ).format(call=call, chunk=_CHUNK_OF_T, norm=norm, tie=tie)
        return query_sql, args

    def _bm25_in_parts(
        self,
        ids: list[int],
        lexemes: list[str],
        k: int,
        k1: float,
        b: float,
        filters: SearchFilters | None,
        fair: bool,
        sizes: Sequence[int],
        parts: int,
    ) -> list[tuple[str, float]]:
        """``keyword_search``'s pruned BM25 in ``parts`` ranges of chunk keys, side by side (see there)."""
        call, args = self._bm25_call(ids, lexemes, k, k1, b, filters, sizes, ranged=True)
        query_sql = sql.SQL("SELECT t.cid, t.chunk_key, k.id, t.score FROM ({call}) t JOIN chunks k ON {chunk}").format(
            call=call, chunk=_CHUNK_OF_T
        )
        ranges = key_ranges(parts)
        with self.db.connections(parts, read=self._read) as conns:

            def run(j: int) -> list[Any]:  # connection j ranks ranges j, j + len(conns), …
                rows: list[Any] = []
                for lo, hi in ranges[j :: len(conns)]:
                    rows.extend(conns[j].execute(query_sql, {**args, "lo": lo, "hi": hi}).fetchall())
                return rows

            others = [_PARTS.submit(run, j) for j in range(1, len(conns))]
            try:
                rows = run(0)
            finally:
                wait(others)  # no connection goes back to the pool while a part still uses it
            for f in others:
                rows.extend(f.result())
        return merge_parts(rows, k, fair)

    def _bm25_call(
        self,
        ids: list[int],
        lexemes: list[str],
        k: int,
        k1: float,
        b: float,
        filters: SearchFilters | None,
        sizes: Sequence[int] | None,
        *,
        ranged: bool,
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """The pruned function's top k of each collection as rows (cid, chunk_key, score), and the statement's
        arguments; ``ranged``: over the chunk keys between the arguments ``lo`` and ``hi`` (inclusive)."""
        docs, params = self._filter_documents_sql(ids, filters)
        call = sql.SQL(
            """
            SELECT c.id AS cid, t.chunk_key, t.score
              FROM unnest(%(collections)s::bigint[], %(seeds)s::int[]) AS c(id, seed),
                   LATERAL {fn}(
                       p_collection     => c.id,
                       p_lexemes        => %(lexemes)s::text[],
                       p_k              => %(k)s::int,
                       p_k1             => %(k1)s::float8,
                       p_b              => %(b)s::float8,
                       p_documents      => {docs},
                       p_min_postings   => %(min_postings)s::int,
                       p_seed_postings  => c.seed,
                       p_split          => %(split)s::float8{range}
                   ) t
            """
        ).format(
            fn=sql.Identifier(BM25_FUNCTION),
            docs=docs,
            range=sql.SQL(",\n p_lo => %(lo)s::bigint, p_hi => %(hi)s::bigint" if ranged else ""),
        )
        min_postings, seed, split = self.bm25_prune_limits
        return call, {
            "collections": ids,
            "seeds": [seed] * len(ids) if sizes is None else [seed_postings(seed, n) for n in sizes],
            "lexemes": lexemes,
            "k": k,
            "k1": k1,
            "b": b,
            "min_postings": min_postings,
            "split": split,
            **params,
        }

    def _bm25_full_sql(
        self,
        ids: list[int],
        lexemes: list[str],
        k: int,
        k1: float,
        b: float,
        filters: SearchFilters | None,
        norm: sql.Composable = sql.SQL("score"),
        tie: sql.Composable = sql.SQL("0"),
    ) -> tuple[sql.Composed, dict[str, Any]]:
        """Every posting of every term summed: the reference the pruned paths are tested against (ADR 0005)."""
        cond, params = self._filter_sql(ids, filters)
        query_sql = sql.SQL(
            """
            WITH p AS MATERIALIZED (
                SELECT collection_id, lexeme, chunk_key, document_id, tf, dl
                FROM postings WHERE collection_id = ANY(%(collections)s) AND lexeme = ANY(%(lexemes)s)
            ),
            df AS (SELECT collection_id, lexeme, count(*)::float8 AS df FROM p GROUP BY 1, 2),
            st AS (
                SELECT collection_id, sum(chunk_count)::float8 AS n,
                       greatest(sum(token_count)::float8 / greatest(sum(chunk_count), 1), 1.0) AS avgdl
                FROM documents WHERE collection_id = ANY(%(collections)s) GROUP BY 1
            )
            SELECT k.id, t.score FROM (
                SELECT chunk_key, {norm} AS score, {tie} AS tie FROM (
                    SELECT p.chunk_key, p.collection_id AS cid,
                           sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5))
                               * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / st.avgdl)))
                               AS score
                    FROM p JOIN df USING (collection_id, lexeme) JOIN st USING (collection_id)
                    WHERE {cond}
                    GROUP BY p.chunk_key, p.collection_id
                ) s
                ORDER BY 2 DESC, 3, chunk_key LIMIT %(k)s
            ) t JOIN chunks k ON {chunk}
            ORDER BY t.score DESC, t.tie, t.chunk_key
            """
        ).format(cond=cond, chunk=_CHUNK_OF_T, norm=norm, tie=tie)
        return query_sql, {"collections": ids, "lexemes": lexemes, "k1": k1, "b": b, "k": k, **params}

    def lexeme_stats(self, collection: Collection, lexemes: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """lexeme → (df, max tf, min length) from ``lexeme_stats`` (what BM25 pruning bounds each term with)."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT lexeme, df, max_tf, min_dl FROM lexeme_stats WHERE collection_id = %s AND lexeme = ANY(%s)",
                (collection.id, list(lexemes)),
            ).fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}

    # ------------------------------------------------------------------ search service helpers
    def plan_facts(
        self,
        names: Sequence[str] | None,
        text: str | None,
        known_embedded: Sequence[int] = (),
        check_embedded: bool = False,
        limit: int = MAX_QUERY_LEXEMES,
    ) -> tuple[list[Collection], dict[str, list[tuple[str, int]]], set[int]]:
        """What a search plan needs, in one statement: the collections named (``None``: all, by name), for each
        of their languages the lexemes of ``text`` (``query_lexemes``) each with how many chunks of that language's
        collections contain it (when ``text`` is given), and — with ``check_embedded`` — the ids among them whose
        chunks have embeddings (those in ``known_embedded`` are taken as they are). Names that do not exist are
        left out (the caller names them).

        A collection whose documents are stemmed in other languages too (``documents.keyword_language``: a mixed
        folder) has the query analysed in each of them as well: another language's lexeme of a word follows the
        collection language's when it is new and occurs in the collections (document frequency above 0), and
        then replaces the collection language's lexeme of that word (same position) if that one occurs nowhere.
        In such a collection a word that one of its stemmings drops as a function word (English *the*, *is*;
        Turkish *ve*, *için*) is left out in every analysis: Turkish would otherwise keep an English question's
        *the* and *to*, which match the English strings of Turkish pages (docs/adr/0038, docqa).
        A collection of one language plans exactly as before, and the keyword leg ranks all of a collection's
        postings in one BM25 with the collection's own statistics (docs/adr/0038)."""
        with self._conn() as conn:
            rows = conn.execute(
                """
                WITH cols AS MATERIALIZED (
                    SELECT c.id, c.name, c.language, c.embedder, c.dim, coalesce(s.documents, 0) AS documents,
                           coalesce(s.chunks, 0) AS chunks,
                           to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created
                    FROM collections c LEFT JOIN collection_stats s ON s.collection_id = c.id
                    WHERE %(all)s OR c.name = ANY(%(names)s::text[])
                ),
                groups AS (SELECT language, array_agg(id) AS ids FROM cols GROUP BY language),
                analyses AS (  -- each group's language, then the others its collections' documents are stemmed in
                    SELECT g.language, g.ids, g.language::regconfig AS cfg, 0 AS extra FROM groups g
                    UNION ALL
                    SELECT g.language, g.ids, x.cfg, 1 FROM groups g, unnest(%(stemmings)s::regconfig[]) x(cfg)
                    WHERE x.cfg <> g.language::regconfig AND EXISTS (
                        SELECT 1 FROM documents d WHERE d.collection_id = ANY(g.ids) AND d.keyword_language = x.cfg)
                    UNION ALL  -- Turkish words as written too (the stemmer cuts a bare noun: mahkeme → mahke)
                    SELECT g.language, g.ids, 'simple'::regconfig, 2 FROM groups g
                    WHERE %(surface)s AND (g.language = 'turkish' OR EXISTS (
                        SELECT 1 FROM documents d WHERE d.collection_id = ANY(g.ids)
                        AND d.keyword_language = 'turkish'::regconfig))
                ),
                function_words AS (  -- a mixed group's words that one of its stemmings drops as a function word
                    SELECT DISTINCT a.language, w.pos FROM analyses a  -- (English the/is/to, Turkish ve/için/ne)
                    CROSS JOIN LATERAL (SELECT DISTINCT unnest(v.positions)::int AS pos
                                        FROM unnest(to_tsvector('simple', tr_lower(%(text)s::text))) v) w
                    WHERE a.extra <= 1 AND a.cfg <> 'simple'::regconfig
                      AND EXISTS (SELECT 1 FROM analyses m WHERE m.language = a.language AND m.extra = 1)
                      AND NOT EXISTS (SELECT 1 FROM unnest(to_tsvector(a.cfg, tr_lower(%(text)s::text))) s
                                      WHERE w.pos = ANY(s.positions))
                ),
                lexemes AS (
                    SELECT a.language, a.extra, a.cfg, array_position(%(stemmings)s::regconfig[], a.cfg) AS idx,
                           u.lexeme, u.pos,
                           (SELECT coalesce(sum(st.df), 0) FROM lexeme_stats st
                            WHERE st.collection_id = ANY(a.ids) AND st.lexeme = u.lexeme)::bigint AS df
                    FROM analyses a,
                         LATERAL (SELECT v.lexeme, v.positions[1] AS pos
                                  FROM unnest(to_tsvector(a.cfg, tr_lower(%(text)s::text))) v
                                  ORDER BY v.positions[1] LIMIT %(limit)s) u
                    WHERE %(text)s::text IS NOT NULL AND NOT EXISTS (
                        SELECT 1 FROM function_words f WHERE f.language = a.language AND f.pos = u.pos)
                ),
                terms AS (  -- per word: another analysis's lexeme where it is new and occurs (docs/adr/0038)
                    SELECT language, lexeme, (extra * 100000 + pos) * 4 + idx AS pos, df FROM lexemes l
                    WHERE (extra = 0 AND (df > 0 OR NOT EXISTS (
                              SELECT 1 FROM lexemes o WHERE o.language = l.language AND o.extra > 0
                              AND o.pos = l.pos AND o.df > 0)))
                       OR (extra > 0 AND df > 0
                           AND (extra = 1 OR EXISTS (  -- a word as written: only where Turkish stems it
                               SELECT 1 FROM lexemes t WHERE t.language = l.language AND t.pos = l.pos
                               AND t.cfg = 'turkish'::regconfig))
                           AND NOT EXISTS (
                               SELECT 1 FROM lexemes o WHERE o.language = l.language AND o.lexeme = l.lexeme
                               AND (o.extra, o.pos, o.idx) < (l.extra, l.pos, l.idx)))
                )
                SELECT 0 AS kind, id, name, language, embedder, dim, documents, chunks, created,
                       CASE WHEN NOT %(check)s THEN NULL WHEN id = ANY(%(known)s::bigint[]) THEN true
                            ELSE EXISTS (SELECT 1 FROM chunks k WHERE k.collection_id = cols.id
                                         AND k.embedding IS NOT NULL) END,
                       NULL::text, NULL::bigint, NULL::int AS pos
                FROM cols
                UNION ALL
                SELECT 1, NULL, NULL, language, NULL, NULL, NULL, NULL, NULL, NULL, lexeme, df, pos FROM terms
                ORDER BY kind, name, language, pos
                """,
                {
                    "all": names is None,
                    "names": list(names or []),
                    "text": text,
                    "limit": limit,
                    "stemmings": list(STEMMINGS),
                    "surface": TURKISH_SURFACE_FORMS,
                    "check": check_embedded,
                    "known": list(known_embedded),
                },
            ).fetchall()
        cols: list[Collection] = []
        embedded: set[int] = set()
        terms: dict[str, list[tuple[str, int]]] = {}
        for r in rows:
            if r[0] == 0:
                cols.append(Collection(int(r[1]), r[2], r[3], r[4], int(r[5]), int(r[6]), int(r[7]), r[8]))
                if r[9]:
                    embedded.add(int(r[1]))
                if text is not None:
                    terms.setdefault(r[3], [])
            else:
                terms.setdefault(r[3], []).append((r[10], int(r[11])))
        return cols, terms, embedded
