"""Store tests against the real embedded PostgreSQL + pgvector."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from kaynak.errors import (
    CollectionNotFound,
    Conflict,
    DatabaseUnavailable,
    DataDirError,
    DocumentRejected,
    ExtensionMissing,
    UsageError,
)
from kaynak.store import SearchFilters, Store, chunk_id, migrations
from kaynak.store.server import check_connection, embedded_uri
from kaynak.store.store import tsquery_literal
from kaynak.text import tr_lower
from kaynak.types import Chunk, Page

TURKISH_STRINGS = [
    "İSTANBUL",
    "IĞDIR",
    "ŞIRNAK ÇANAKKALE ÖDEMİŞ ÜSKÜDAR",
    "Kat Mülkiyeti Kanunu",
    "KAT MÜLKİYETİ",
    "Iİıi",
    "The QUICK brown FOX",
    "ΣΊΣΥΦΟΣ",
    "Straße ẞ",
    "ǅ ǈ ǋ",
    "",
]


def one_page_doc(text: str) -> tuple[list[Page], list[Chunk]]:
    page = Page(1, text)
    return [page], [Chunk(0, 1, None, 0, len(text), text)]


def put(store: Store, col, source: str, text: str, vec=None, sha: str | None = None, **kw) -> int | None:
    pages, chunks = one_page_doc(text)
    emb = None
    if vec is not None:
        emb = np.asarray([vec], dtype=np.float32)
    return store.replace_document(
        col, source, sha or uuid.uuid4().hex, source, kw.pop("metadata", {}), pages, chunks, emb, **kw
    )


def test_server_facts(store: Store) -> None:
    info = store.server_info()
    assert info["pgvector"] >= "0.8"
    assert {"turkish", "english", "simple"} <= set(info["text_search_configs"])
    assert info["schema_version"] == len(migrations.MIGRATIONS)


@pytest.mark.parametrize("text", TURKISH_STRINGS)
def test_tr_lower_sql_equals_python(store: Store, text: str) -> None:
    assert store.tr_lower(text) == tr_lower(text)


def test_tr_lower_turkish_cases() -> None:
    assert tr_lower("İSTANBUL") == "istanbul"
    assert tr_lower("IĞDIR") == "ığdır"


def test_migrations_twice_and_concurrently(database_url: str) -> None:
    name = "mig_" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(database_url, dbname=name)
    check_connection(url)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                results.append(migrations.apply(conn))
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    all_versions = sorted(v for r in results for v in r)
    assert all_versions == [m.version for m in migrations.MIGRATIONS]  # each applied exactly once
    with psycopg.connect(url, autocommit=True) as conn:
        assert migrations.apply(conn) == []  # a second start applies nothing
        rows = conn.execute("SELECT count(*) FROM kaynak_migrations").fetchone()
        assert rows[0] == len(migrations.MIGRATIONS)
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_collections_crud(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "turkish", "hash", 8)
    assert col.name == unique_name and col.dim == 8 and col.embedder == "hash"
    assert unique_name in [c.name for c in store.list_collections()]
    with pytest.raises(Conflict):
        store.create_collection(unique_name, "turkish", "hash", 8)
    assert store.ensure_collection(unique_name, "english", "other", 3).id == col.id
    store.delete_collection(unique_name)
    with pytest.raises(CollectionNotFound) as err:
        store.get_collection(unique_name)
    assert "existing collections" in str(err.value)


def test_collection_bad_input(store: Store) -> None:
    with pytest.raises(UsageError):
        store.create_collection("", "turkish", "hash", 8)
    with pytest.raises(UsageError) as err:
        store.create_collection("x" + uuid.uuid4().hex[:6], "klingon", "hash", 8)
    assert "turkish" in str(err.value)


def test_replace_document_and_delete(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", 4)
    first = put(store, col, "a.txt", "The cat sat on the mat.", [1, 0, 0, 0], sha="s1", metadata={"lang": "en"})
    doc = store.get_document(col, "a.txt")
    assert doc.id == first and doc.sha256 == "s1" and doc.chunk_count == 1 and doc.metadata == {"lang": "en"}
    assert put(store, col, "a.txt", "changed", [1, 0, 0, 0], sha="s1", skip_if_unchanged=True) is None
    put(store, col, "a.txt", "A dog ran in the park.", [0, 1, 0, 0], sha="s2")
    assert store.document_hashes(col) == {"a.txt": "s2"}
    assert store.chunk_count(col) == 1
    cid = chunk_id(col.name, "a.txt", "s2", 0)
    assert store.get_chunks([cid])[cid].text == "A dog ran in the park."
    assert store.get_page(col, "a.txt", 1) == "A dog ran in the park."
    assert store.delete_document(col, "a.txt")
    assert not store.delete_document(col, "a.txt")
    assert store.chunk_count(col) == 0
    store.delete_collection(unique_name)


def test_replace_is_atomic_under_injected_failure(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", 4)
    put(store, col, "a.txt", "original text about cats", [1, 0, 0, 0], sha="old")

    def boom() -> None:
        raise RuntimeError("injected failure")

    store._before_commit = boom
    try:
        with pytest.raises(RuntimeError):
            put(store, col, "a.txt", "new text about dogs", [0, 1, 0, 0], sha="new")
    finally:
        store._before_commit = None
    doc = store.get_document(col, "a.txt")
    assert doc.sha256 == "old"
    hits = store.keyword_search([col], "cats")
    assert [h for h, _ in hits] == [chunk_id(col.name, "a.txt", "old", 0)]
    assert store.keyword_search([col], "dogs") == []
    store.delete_collection(unique_name)


def test_turkish_collection_matches_lowercase_query(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "turkish", "hash", 4)
    put(store, col, "iller.txt", "IĞDIR doğu sınırında bir ildir.", [1, 0, 0, 0])
    put(store, col, "kanun.txt", "Kat mülkiyeti kanunu kat maliklerinin haklarını düzenler.", [0, 1, 0, 0])
    for ranking in ("bm25", "ts_rank_cd"):
        hits = store.keyword_search([col], "ığdır", ranking=ranking)
        assert len(hits) == 1, ranking
        assert store.get_chunks([hits[0][0]])[hits[0][0]].text.startswith("IĞDIR")
        hits = store.keyword_search([col], "KAT MÜLKİYETİ", ranking=ranking)
        assert store.get_chunks([hits[0][0]])[hits[0][0]].text.startswith("Kat mülkiyeti")
    store.delete_collection(unique_name)


def test_keyword_search_per_language(store: Store) -> None:
    tr = store.create_collection("tr_" + uuid.uuid4().hex[:8], "turkish", "hash", 4)
    en = store.create_collection("en_" + uuid.uuid4().hex[:8], "english", "hash", 4)
    put(store, tr, "k.txt", "Kitaplıklarımızdan kitap aldık.", [1, 0, 0, 0])
    put(store, en, "k.txt", "The libraries were running many programs.", [1, 0, 0, 0])
    # Turkish stemming: kitaplık matches kitaplıklarımızdan; English stemming: run matches running.
    assert len(store.keyword_search([tr], "kitaplık")) == 1
    assert len(store.keyword_search([en], "run program")) == 1
    # the English stemmer does not know Turkish suffixes
    assert store.keyword_search([en], "kitaplık") == []
    with pytest.raises(ValueError):
        store.keyword_search([tr, en], "kitap")
    store.delete_collection(tr.name)
    store.delete_collection(en.name)


def test_bm25_prefers_rare_terms_and_stays_right_after_changes(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", 4)
    for i in range(6):
        put(store, col, f"common{i}.txt", "protein protein protein diet study", [1, 0, 0, 0], sha=f"c{i}")
    put(store, col, "rare.txt", "protein kinase inhibitor", [1, 0, 0, 0], sha="r")
    top = store.keyword_search([col], "kinase protein")[0][0]
    assert top == chunk_id(col.name, "rare.txt", "r", 0)
    # after a replace and a delete the statistics follow: documents and postings agree
    put(store, col, "rare.txt", "nothing relevant here", [1, 0, 0, 0], sha="r2")
    assert store.keyword_search([col], "kinase") == []
    store.delete_document(col, "common0.txt")
    hits = store.keyword_search([col], "protein")
    assert len(hits) == 5
    with store._conn() as conn:
        n_doc = conn.execute("SELECT sum(chunk_count) FROM documents WHERE collection_id=%s", (col.id,)).fetchone()[0]
        n_post = conn.execute(
            "SELECT count(DISTINCT chunk_key) FROM postings WHERE collection_id=%s", (col.id,)
        ).fetchone()[0]
    assert n_doc == n_post == 6
    store.delete_collection(unique_name)


def test_query_syntax_is_text(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", 4)
    put(store, col, "a.txt", "Operators like and or not appear in text.", [1, 0, 0, 0])
    for q in ["'", "&", "|", "!", ":*", "\\", "a & b | !c:*", "'; DROP TABLE chunks; --", "operators'"]:
        for ranking in ("bm25", "ts_rank_cd"):
            store.keyword_search([col], q, ranking=ranking)  # never raises
    assert store.keyword_search([col], "operators' & !text") != []
    store.delete_collection(unique_name)


def test_filtered_vector_search_is_not_starved(store: Store, unique_name: str) -> None:
    dim = 32
    col = store.create_collection(unique_name, "simple", "hash", dim)
    rng = np.random.default_rng(0)
    n_docs, per_doc = 100, 200  # 20,000 chunks
    for d in range(n_docs):
        text = "x"
        pages = [Page(1, text)]
        chunks = [Chunk(i, 1, None, 0, 1, text) for i in range(per_doc)]
        emb = rng.normal(size=(per_doc, dim)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        src = f"keep/{d}.txt" if d == 0 else f"other/{d}.txt"
        store.replace_document(col, src, f"h{d}", src, {"group": "keep" if d == 0 else "other"}, pages, chunks, emb)
    assert store.chunk_count(col) == 20_000
    q = rng.normal(size=dim).astype(np.float32)
    for filters in (
        SearchFilters(source_prefix="keep/"),
        SearchFilters(source_glob="keep/*.txt"),
        SearchFilters(metadata={"group": "keep"}),
    ):
        hits = store.vector_search(col, q, k=10, filters=filters)
        assert len(hits) == 10, filters
        rows = store.get_chunks([h for h, _ in hits])
        assert all(r.source.startswith("keep/") for r in rows.values())
        dists = [d for _, d in hits]
        assert dists == sorted(dists)
    assert len(store.vector_search(col, q, k=40)) == 40
    with store._conn() as conn:
        conn.execute("ANALYZE chunks")  # fresh statistics, as autovacuum would give after such a bulk insert
        plan = conn.execute(
            sql.SQL(
                "EXPLAIN SELECT id FROM chunks WHERE collection_id = {cid} "
                "ORDER BY (embedding::vector({dim})) <=> %s::vector({dim}) LIMIT 10"
            ).format(cid=sql.Literal(col.id), dim=sql.Literal(dim)),
            ["[" + ",".join(["0.1"] * dim) + "]"],
        ).fetchall()
    assert "chunks_hnsw_" in " ".join(r[0] for r in plan)
    store.delete_collection(unique_name)


def test_vector_search_sets_hnsw_once_per_pooled_connection(store: Store, unique_name: str) -> None:
    """The HNSW settings go out once per pooled connection (a pipeline of the settings and the search); after
    that a search is one statement, until a search needs another ``ef_search``. The results are the same."""
    from testkit.roundtrips import RoundTrips

    dim = 8
    col = store.create_collection(unique_name, "simple", "hash", dim)
    rng = np.random.default_rng(1)
    emb = rng.normal(size=(30, dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    chunks = [Chunk(i, 1, None, 0, 1, "x") for i in range(30)]
    store.replace_document(col, "a.txt", "h", "a", {}, [Page(1, "x")], chunks, emb)
    q = rng.normal(size=dim).astype(np.float32)
    first = store.vector_search(col, q, k=5)
    with RoundTrips.counting() as rt:
        again = [store.vector_search(col, q, k=5) for _ in range(12)]
    assert all(a == first for a in again)
    settings = [s for s in rt.statements if s == "(pipeline)"]
    assert len(settings) < store.db.primary.pool_size, rt.statements  # at most once per other connection
    assert len([s for s in rt.statements if s == "(pipeline)" or "dist" in s]) == 12  # one round trip each
    with RoundTrips.counting() as rt:
        wider = store.vector_search(col, q, k=5, ef_search=150)
    assert rt.statements == ["(pipeline)"] and wider == first  # another ef_search: set again
    with store._conn() as conn:
        ef = getattr(conn, "_kaynak_hnsw_ef", None)
        assert ef in (100, 150)
        assert conn.execute("SHOW hnsw.ef_search").fetchone() == (str(ef),)
        assert conn.execute("SHOW hnsw.iterative_scan").fetchone() == ("relaxed_order",)
    store.delete_collection(unique_name)


def test_vector_dimension_mismatch(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "simple", "hash", 4)
    with pytest.raises(UsageError):
        store.vector_search(col, np.zeros(3, dtype=np.float32))
    store.delete_collection(unique_name)


def test_helpers() -> None:
    assert tsquery_literal(["a'b", "c\\d"]) == "'a''b' | 'c\\\\d'"


def test_unreachable_server() -> None:
    with pytest.raises(DatabaseUnavailable) as err:
        check_connection("postgresql://kaynak:secret@127.0.0.1:1/kaynak")
    assert "secret" not in str(err.value)
    assert "KAYNAK_DATABASE_URL" in str(err.value)


def test_wrong_password_or_user(database_url: str) -> None:
    url = psycopg.conninfo.make_conninfo(database_url, user="nobody_here", password="x")
    with pytest.raises(DatabaseUnavailable):
        check_connection(url)


def test_data_dir_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(DataDirError) as err:
        embedded_uri(blocker / "sub")
    assert "KAYNAK_DATA_DIR" in str(err.value)


class _FakeConn:
    """A connection to a server whose catalogue has no pgvector."""

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def execute(self, *a, **k):
        class R:
            def fetchone(self):
                return None

        return R()


def test_server_without_pgvector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psycopg, "connect", lambda *a, **k: _FakeConn())
    with pytest.raises(ExtensionMissing) as err:
        check_connection("postgresql://somewhere/db")
    assert "pgvector" in str(err.value) and "vector" in str(err.value)


def test_document_the_database_refuses(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", 4)
    put(store, col, "ok.txt", "fine text", [1, 0, 0, 0], sha="s1")
    with pytest.raises(DocumentRejected) as err:
        put(store, col, "bad.txt", "a NUL \x00 inside", [1, 0, 0, 0])
    assert "bad.txt" in str(err.value)
    assert store.find_document(col, "bad.txt") is None
    assert store.get_document(col, "ok.txt").sha256 == "s1"
    store.delete_collection(unique_name)


def test_connections_add_only_spare_ones(database_url: str) -> None:
    """``Database.connections`` gives one connection as ``connection`` does and only adds those free at once, from
    the same pool: with every other connection held it gives one, and it never waits for more."""
    s = Store(database_url, pool_size=2)
    try:
        with s.db.connections(3) as conns:
            assert 1 <= len(conns) <= 2 and len({id(c) for c in conns}) == len(conns)
        with s.db.connection() as held, s.db.connections(3) as conns:
            assert len(conns) == 1 and conns[0] is not held
            assert conns[0].execute("SELECT 1").fetchone() == (1,)
        with s.db.connections(2) as conns:  # both back in the pool
            assert len(conns) == 2
    finally:
        s.close()
