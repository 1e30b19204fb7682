"""Pruned BM25 returns the same top k and scores as full BM25 (same ids, scores to 1e-12).

``kaynak_bm25_topk`` (migration 9's MaxScore over migration 12's integer chunk keys) is checked on the development
sets (SciFact abstracts cut into chunks, XQuAD
Turkish and English paragraphs) with their real queries, with filters, across collections, and after replaces
and deletes; on random collections (skewed term frequencies, repeated words, short and long chunks, duplicated
chunks) with random queries, before and after replaces and deletes; plus the statistics themselves: ``df`` equals
the postings' count for every lexeme, and ``max_tf`` / ``min_dl`` bound them.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kaynak.store import SearchFilters, Store
from kaynak.types import Chunk, Collection, Page
from testkit.paths import SHARED_DATA

DATA = SHARED_DATA / "retrieval"
needs_data = pytest.mark.skipif(not (DATA / "scifact").exists(), reason=f"development sets not found under {DATA}")


def jsonl(path: Path, limit: int | None = None) -> list[dict]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
                if limit and len(out) >= limit:
                    break
    return out


def pieces(text: str, size: int = 400) -> list[str]:
    parts, cur = [], ""
    for sent in text.replace("\n", " ").split(". "):
        cur = f"{cur}. {sent}" if cur else sent
        if len(cur) >= size:
            parts.append(cur)
            cur = ""
    if cur.strip():
        parts.append(cur)
    return parts


def put_doc(store: Store, col: Collection, source: str, texts: list[str], sha: str | None = None) -> None:
    page, chunks = "", []
    for i, t in enumerate(texts):
        start = len(page)
        page += t + "\n\n"
        chunks.append(Chunk(i, 1, None, start, start + len(t), t))
    store.replace_document(col, source, sha or uuid.uuid4().hex, source, {}, [Page(1, page)], chunks, None)


# kaynak_bm25_topk (migration 9's algorithm over migration 12's chunk keys), in one statement and over ranges of
# chunk keys in parts side by side (migration 15, ADR 0032)
PRUNED: list[dict] = [{"pruned": True}, {"pruned": True, "parts": 2}, {"pruned": True, "parts": 3}]


def assert_same(store: Store, cols: list[Collection], queries: list[str | list[str]], k: int, **kw) -> int:
    """Pruned and full BM25 agree on every query; returns how many queries had hits.

    Same scores position by position (to 1e-12: the two paths add the same float8 term scores in different
    orders), and every chunk the pruned path returns is one the full path ranks there with that score. Chunks
    whose scores are equal to the last bits (duplicated text) may come in either order: the full path's own
    order among them depends on how its aggregation happens to add.
    """
    with_hits = 0
    for q in queries:
        text, lexemes = (None, q) if isinstance(q, list) else (q, None)
        full = store.keyword_search(cols, text, k + 50, "bm25", pruned=False, lexemes=lexemes, **kw)
        for how in PRUNED:
            pruned = store.keyword_search(cols, text, k, "bm25", lexemes=lexemes, **how, **kw)
            assert len(pruned) == len(full[:k]), (how, q)
            full_score = dict(full)
            for (cid, score), (_, expected) in zip(pruned, full, strict=False):
                assert math.isclose(score, expected, rel_tol=1e-12), (how, q, score, expected)
                assert cid in full_score and math.isclose(score, full_score[cid], rel_tol=1e-12), (how, q, cid)
            assert len({c for c, _ in pruned}) == len(pruned), (how, q)
        with_hits += bool(full)
    return with_hits


def same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """The same scores position by position (to 1e-12) and the same chunks above the last score; chunks whose
    scores are equal to the last bits may swap places (the paths add the same term scores in different orders)."""
    if len(a) != len(b) or not all(math.isclose(x, y, rel_tol=1e-12) for (_, x), (_, y) in zip(a, b, strict=True)):
        return False
    last = a[-1][1] * (1 + 1e-12) if a else 0.0
    return {c for c, s in a if s > last} == {c for c, s in b if s > last}


def stats_are_exact(store: Store, col: Collection) -> None:
    with store._conn() as conn:
        wrong = conn.execute(
            """
            SELECT count(*) FROM (
                SELECT lexeme, count(*) AS df, max(tf) AS max_tf, min(dl) AS min_dl
                FROM postings WHERE collection_id = %s GROUP BY lexeme
            ) p FULL JOIN (SELECT * FROM lexeme_stats WHERE collection_id = %s) s USING (lexeme)
            WHERE p.df IS DISTINCT FROM s.df OR s.max_tf < p.max_tf OR s.min_dl > p.min_dl
            """,
            (col.id, col.id),
        ).fetchone()[0]
        counted = conn.execute(
            "SELECT documents, chunks, tokens FROM collection_stats WHERE collection_id = %s", (col.id,)
        ).fetchone()
        summed = conn.execute(
            "SELECT count(*), coalesce(sum(chunk_count), 0), coalesce(sum(token_count), 0) "
            "FROM documents WHERE collection_id = %s",
            (col.id,),
        ).fetchone()
    assert wrong == 0
    assert counted == summed  # collection_stats (migration 8): N and avgdl of the pruned BM25


@pytest.fixture(autouse=True)
def prune_limits(store: Store) -> Iterator[None]:
    """Force pruning on these small sets (the shipped limits sum small queries plainly, which is trivially equal;
    ``benchmarks/bench_search.py scale`` checks the shipped limits at 100,000 chunks)."""
    store.bm25_prune_limits = (0, 64, 0.5)
    yield
    store.bm25_prune_limits = Store.bm25_prune_limits


@pytest.fixture(scope="module")
def scifact(store: Store) -> Iterator[tuple[Collection, list[str]]]:
    """700 SciFact abstracts in about 2,700 chunks, 100 of them twice (tied scores), and 150 claims."""
    corpus = jsonl(DATA / "scifact" / "corpus.jsonl", 700)
    col = store.create_collection("prune_" + uuid.uuid4().hex[:8], "english", "hash", 8)
    for d in corpus:
        put_doc(store, col, d["_id"], pieces(d["title"] + ". " + d["text"]))
    for d in corpus[:100]:
        put_doc(store, col, "copy/" + d["_id"], pieces(d["title"] + ". " + d["text"]))
    queries = [q["text"] for q in jsonl(DATA / "scifact" / "queries.jsonl", 150)]
    yield store.get_collection(col.name), queries
    store.delete_collection(col.name)


@needs_data
@pytest.mark.parametrize("k", [10, 40])
def test_pruned_equals_full_on_scifact(store: Store, scifact: tuple[Collection, list[str]], k: int) -> None:
    col, queries = scifact
    assert col.chunk_count > 2500
    assert assert_same(store, [col], queries, k) > 120


@needs_data
def test_pruned_equals_full_with_filters(store: Store, scifact: tuple[Collection, list[str]]) -> None:
    col, queries = scifact
    assert assert_same(store, [col], queries[:60], 40, filters=SearchFilters(source_prefix="copy/")) > 30
    assert assert_same(store, [col], queries[:60], 10, filters=SearchFilters(source_prefix="1")) > 30


@needs_data
@pytest.mark.parametrize("lang", ["tr", "en"])
def test_pruned_equals_full_on_xquad(store: Store, lang: str) -> None:
    corpus = jsonl(DATA / "xquad" / lang / "corpus.jsonl")
    language = {"tr": "turkish", "en": "english"}[lang]
    a = store.create_collection("prune_xa_" + uuid.uuid4().hex[:8], language, "hash", 8)
    b = store.create_collection("prune_xb_" + uuid.uuid4().hex[:8], language, "hash", 8)
    for i, d in enumerate(corpus):
        put_doc(store, a if i % 2 else b, d["_id"], pieces(d["title"] + ". " + d["text"], 300))
    queries = [q["text"] for q in jsonl(DATA / "xquad" / lang / "queries.jsonl")]
    try:
        assert assert_same(store, [a], queries[:300], 10) > 250
        assert assert_same(store, [a, b], queries[:100], 40) > 90  # two collections: per-collection IDF, merged
        for q in queries[:100]:  # each collection's scores as shares of its best: the parts merge them the same
            one = store.keyword_search([a, b], q, 40, per_collection=True)
            for parts in (2, 4):
                assert same_ranking(store.keyword_search([a, b], q, 40, per_collection=True, parts=parts), one)
    finally:
        store.delete_collection(a.name)
        store.delete_collection(b.name)


@needs_data
def test_statistics_stay_exact_after_replace_and_delete(store: Store) -> None:
    corpus = jsonl(DATA / "scifact" / "corpus.jsonl", 250)
    col = store.create_collection("prune_st_" + uuid.uuid4().hex[:8], "english", "hash", 8)
    try:
        for d in corpus[:150]:
            put_doc(store, col, d["_id"], pieces(d["title"] + ". " + d["text"]))
        stats_are_exact(store, col)
        # replace a quarter with other abstracts, delete another quarter, replace one with a single short chunk
        for old, new in zip(corpus[:50], corpus[150:200], strict=True):
            put_doc(store, col, old["_id"], pieces(new["title"] + ". " + new["text"]))
        for d in corpus[50:100]:
            assert store.delete_document(col, d["_id"])
        put_doc(store, col, corpus[100]["_id"], ["Cells."])
        stats_are_exact(store, col)
        queries = [q["text"] for q in jsonl(DATA / "scifact" / "queries.jsonl", 100)]
        assert assert_same(store, [col], queries, 10) > 40
        # a lexeme whose last posting goes loses its statistics row
        put_doc(store, col, "only.txt", ["zyxwvut qqqqrrrr"])
        assert store.lexeme_stats(col, ["zyxwvut"])["zyxwvut"][0] == 1
        store.delete_document(col, "only.txt")
        assert store.lexeme_stats(col, ["zyxwvut"]) == {}
        stats_are_exact(store, col)
    finally:
        store.delete_collection(col.name)
    with store._conn() as conn:
        left = conn.execute("SELECT count(*) FROM lexeme_stats WHERE collection_id = %s", (col.id,)).fetchone()[0]
        left += conn.execute("SELECT count(*) FROM collection_stats WHERE collection_id = %s", (col.id,)).fetchone()[0]
    assert left == 0


def test_pruned_handles_unknown_and_repeated_terms(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", 8)
    try:
        put_doc(store, col, "a.txt", ["protein kinase inhibitor", "protein diet", "diet study"])
        assert store.keyword_search([col], "zebra", pruned=True) == []
        assert assert_same(store, [col], [["protein", "protein", "kinas"], ["protein", "kinas"]], 3) == 2
        with pytest.raises(ValueError):
            store.keyword_search([col], "protein", pruned="fastest")
        assert assert_same(store, [col], ["protein", "diet protein", "kinase diet study", "the of"], 1) == 3
    finally:
        store.delete_collection(unique_name)


def random_chunks(rng: random.Random, vocabulary: list[str], n: int) -> list[str]:
    """Chunks of 1–120 words drawn with Zipf-like weights (common words repeat within a chunk, so tf > 1)."""
    weights = [1 / (i + 1) ** 1.1 for i in range(len(vocabulary))]
    out = []
    for _ in range(n):
        length = rng.choice([1, 2, 5, 12, 30, 60, 120]) + rng.randrange(5)
        out.append(" ".join(rng.choices(vocabulary, weights, k=length)))
    return out


def test_pruned_equals_full_on_random_collections(store: Store) -> None:
    """Random collections and random queries (2–12 terms, rare and common mixed, some unknown), k from 1 to 60,
    then a third of the documents replaced with others and a quarter deleted: same top k, same scores."""
    rng = random.Random(14)
    vocabulary = [f"w{i}x" for i in range(400)]  # words the English stemmer leaves as they are
    col = store.create_collection("prune_rnd_" + uuid.uuid4().hex[:8], "simple", "hash", 8)
    try:
        docs = {f"d{i}.txt": random_chunks(rng, vocabulary, rng.randrange(1, 12)) for i in range(300)}
        for i, (source, texts) in enumerate(docs.items()):
            put_doc(store, col, source, texts + (docs["d0.txt"] if i % 10 == 0 else []))  # duplicated chunks tie
        queries = [
            rng.sample(vocabulary[:40], rng.randrange(1, 4))
            + rng.sample(vocabulary, rng.randrange(1, 9))
            + (["nowordx"] if rng.random() < 0.2 else [])
            for _ in range(60)
        ]
        for k in (1, 10, 60):
            assert assert_same(store, [col], queries, k) > 50
        for source in list(docs)[:100]:
            put_doc(store, col, source, random_chunks(rng, vocabulary, rng.randrange(1, 8)))
        for source in list(docs)[100:175]:
            assert store.delete_document(col, source)
        stats_are_exact(store, col)
        for k in (1, 10, 60):
            assert assert_same(store, [col], queries, k) > 50
        assert assert_same(store, [col], queries[:20], 10, filters=SearchFilters(source_prefix="d2")) > 10
    finally:
        store.delete_collection(col.name)


def test_collection_stats_leave_no_pending_trigger_events(store: Store, unique_name: str) -> None:
    """Outside ``replace_document`` the collection_stats trigger runs at once: a transaction that updates
    documents and then alters the table (what a later migration may do) must not fail on pending events."""
    col = store.create_collection(unique_name, "english", "hash", 8)
    try:
        put_doc(store, col, "a.txt", ["protein kinase", "diet study"])
        with store._conn() as conn, conn.transaction():
            conn.execute("UPDATE documents SET token_count = token_count + 1 WHERE collection_id = %s", (col.id,))
            conn.execute("ALTER TABLE documents ADD COLUMN p14_probe int")
            conn.execute("ALTER TABLE documents DROP COLUMN p14_probe")
            conn.execute("UPDATE documents SET token_count = token_count - 1 WHERE collection_id = %s", (col.id,))
        stats_are_exact(store, col)
    finally:
        store.delete_collection(unique_name)


def test_seed_budget_grows_with_the_square_root_of_the_collection() -> None:
    """The pruned leg's seed budget is the configured one at 100,000 chunks and grows as √size (never below 1)."""
    from kaynak.store.retrieval import seed_postings

    assert seed_postings(4000, 100_000) == 4000
    assert seed_postings(4000, 1_000_000) == 12649
    assert seed_postings(4000, 25_000) == 2000
    assert seed_postings(1, 10) == 1 and seed_postings(4000, 0) == 13


@needs_data
def test_parts_on_one_connection_run_in_turn(
    store: Store, database_url: str, scifact: tuple[Collection, list[str]]
) -> None:
    """A pool with no connection to spare ranks the parts one after another on the one it has: same results."""
    col, queries = scifact
    lone = Store(database_url, pool_size=1)
    lone.bm25_prune_limits = store.bm25_prune_limits
    try:
        for q in queries[:30]:
            assert same_ranking(lone.keyword_search([col], q, 10, parts=3), lone.keyword_search([col], q, 10)), q
    finally:
        lone.close()


def test_key_ranges_cover_every_chunk_key_once() -> None:
    from kaynak.store.retrieval import KEY_SPACE, key_ranges

    for n in (1, 2, 3, 7):
        ranges = key_ranges(n)
        assert ranges[0][0] == 0 and ranges[-1][1] == KEY_SPACE - 1 and len(ranges) == n
        assert all(hi + 1 == lo for (_, hi), (lo, _) in itertools.pairwise(ranges))
    with pytest.raises(ValueError, match="parts"):
        Store.__new__(Store).keyword_search([Collection(1, "c", "english", "hash", 8)], "x", parts=0)


def test_merge_parts_keeps_each_collections_best_k() -> None:
    """Two collections, each split over two parts: each collection's k best of the union, scores shared out by
    the collection's best when fair (ties: the collection's best first, then chunk key)."""
    from kaynak.store.retrieval import merge_parts

    rows = [(1, 5, "a5", 4.0), (1, 2, "a2", 2.0), (2, 9, "b9", 1.0), (1, 7, "a7", 3.0), (2, 3, "b3", 0.5)]
    assert merge_parts(rows, 3, fair=False) == [("a5", 4.0), ("a7", 3.0), ("a2", 2.0)]
    assert merge_parts(rows, 3, fair=True) == [("a5", 1.0), ("b9", 1.0), ("a7", 0.75)]
    assert merge_parts(rows, 2, fair=True)[1] == ("b9", 1.0)  # a one-hit collection's best is not cut by k
