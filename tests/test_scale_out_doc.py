"""docs/scale-out.md: every statement plain PostgreSQL can run is run here (Citus cannot be installed).

Each ``<!-- test: NAME -->`` SQL block of the document runs on a fresh database whose schema kaynak's migrations
made (with a document already in it), and kaynak's own reads and writes are then checked to work on the changed
keys. The layout-B BM25 queries must rank exactly as the store's BM25 does.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from kaynak.store import Store
from kaynak.types import Chunk, Page

DOC = Path(__file__).resolve().parents[1] / "docs" / "scale-out.md"
BLOCK = re.compile(r"<!-- test: ([\w-]+) -->\s*```sql\n(.*?)```", re.DOTALL)


def blocks(name: str) -> list[str]:
    found = [body for tag, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if tag == name]
    assert found, f"docs/scale-out.md has no '{name}' block"
    return found


@pytest.fixture
def fresh(database_url: str) -> Iterator[str]:
    name = "scale_" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield make_conninfo(database_url, dbname=name)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


TEXTS = [
    "Kat malikleri kurulu yılda bir kez toplanır ve yöneticiyi seçer.",
    "The landlord repairs the roof and the tenant pays the rent.",
    "Kiracı kira bedelini öder; kurul kararları yazılı olur.",
    "Vector search finds passages that share meaning, keyword search finds shared words.",
]


def put(store: Store, col, source: str, text: str, pages: bool = True) -> int:
    rng = np.random.default_rng(abs(hash(source)) % 2**32)
    chunks = [Chunk(ord=i, text=t, page=1, section=None, char_start=0, char_end=len(t)) for i, t in enumerate(text)]
    emb = rng.normal(size=(len(chunks), 4)).astype(np.float32)
    doc_id = store.replace_document(
        col, source, uuid.uuid4().hex, source, {}, [Page(1, " ".join(text))] if pages else [], chunks, emb
    )
    assert doc_id is not None
    return doc_id


def _run(url: str, sql_text: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql_text)


def _check_kaynak_works(store: Store, col, pages: bool) -> None:
    put(store, col, "b.txt", TEXTS[1:3], pages=pages)
    put(store, col, "b.txt", TEXTS[1:4], pages=pages)  # replacement: old rows cascade away
    assert {d.source for d in store.list_documents(col)} == {"a.txt", "b.txt"}
    assert store.vector_search(col, np.ones(4, dtype=np.float32), k=3)
    hits = store.keyword_search([col], "kurul kararları", 5, "bm25")
    assert hits and store.get_chunks([h[0] for h in hits])
    assert store.delete_document(col, "b.txt")
    with psycopg.connect(store.url) as conn:
        for table in ("chunks", "postings"):
            orphans = conn.execute(
                f"SELECT count(*) FROM {table} t "
                "WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = t.document_id)"
            ).fetchone()[0]
            assert orphans == 0, table


def test_layout_a_key_changes_run_and_kaynak_still_works(fresh: str) -> None:
    with Store(fresh, pool_size=2) as store:
        col = store.create_collection("a", "turkish", "hash", 4)
        put(store, col, "a.txt", TEXTS[:2])
        for sql_text in blocks("layout-a"):
            _run(fresh, sql_text)
        with psycopg.connect(fresh) as conn:
            assert conn.execute("SELECT count(*) FROM pages WHERE collection_id IS NULL").fetchone()[0] == 0
        # unchanged code writes no pages under layout A (the COPY must gain collection_id: "queries that change")
        _check_kaynak_works(store, col, pages=False)
        with psycopg.connect(fresh, autocommit=True) as conn:
            doc_id = conn.execute("SELECT id FROM documents WHERE source = 'a.txt'").fetchone()[0]
            conn.execute(
                "INSERT INTO pages (collection_id, document_id, number, text) VALUES (%s, %s, 2, 'x')", (col.id, doc_id)
            )
        store.delete_collection("a")
        with psycopg.connect(fresh) as conn:
            for table in ("documents", "pages", "chunks", "postings"):
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_layout_b_key_changes_and_two_phase_bm25(fresh: str) -> None:
    with Store(fresh, pool_size=2) as store:
        col = store.create_collection("b", "turkish", "hash", 4)
        put(store, col, "a.txt", TEXTS[:2])
        for sql_text in blocks("layout-b"):
            _run(fresh, sql_text)
        _check_kaynak_works(store, col, pages=True)
        put(store, col, "c.txt", TEXTS)
        put(store, col, "d.txt", TEXTS[2:] * 3)

        query = "kurul kararları kira bedeli"
        expected = store.keyword_search([col], query, 10, "bm25")
        lexemes = store.query_lexemes(col.language, query)
        phase1, phase2 = blocks("query-b")
        with psycopg.connect(fresh) as conn:
            stats = conn.execute(phase1, {"collection": col.id, "lexemes": lexemes}).fetchall()
            assert stats
            n, avgdl = stats[0][2], stats[0][3]
            rows = conn.execute(
                phase2,
                {
                    "collection": col.id,
                    "lexemes": [s[0] for s in stats],
                    "dfs": [s[1] for s in stats],
                    "n": n,
                    "avgdl": avgdl,
                    "k1": 0.9,
                    "b": 0.4,
                    "k": 10,
                },
            ).fetchall()
        # the same ranking (chunks with equal scores may come in another order: floating-point sums)
        assert np.allclose([float(r[1]) for r in rows], [h[1] for h in expected], rtol=1e-9)
        best = dict(expected)
        for chunk, score in rows:
            if chunk in best:
                assert abs(float(score) - best[chunk]) <= 1e-9 * abs(best[chunk])
        assert len({r[0] for r in rows} & set(best)) >= len(best) - sum(
            1 for h in expected if np.isclose(h[1], expected[-1][1], rtol=1e-9)
        )
