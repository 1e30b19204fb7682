"""Migration 17 (issue 50): stored documents re-stemmed in their own language, only those whose language differs,
in committed batches that a stopped ``kaynak migrate`` resumes."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from kaynak.config import Settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import MigrationRequired
from kaynak.search import SearchService
from kaynak.store import Store, migrations
from kaynak.store.migrations import steps
from kaynak.store.upgrade import migrate, migration_status
from kaynak.types import Chunk, Page
from testkit.languages import english_doc, turkish_doc
from testkit.migrating import copy_as_version_1 as _copy_as_version_1
from testkit.migrating import keyword_contents as _contents
from testkit.migrating import stored_analyses as _analyses

HASH = HashEmbedder()
TURKISH = [f"tr_{i}.md" for i in range(4)]
ENGLISH = [f"en_{i}.md" for i in range(6)]


def _ingest(store: Store, name: str) -> None:
    """An English collection holding 6 English and 4 Turkish documents (interleaved), one chunk per paragraph."""
    col = store.create_collection(name, "english", "hash", HASH.dim)
    texts = {f"en_{i}.md": english_doc(i) for i in range(6)} | {f"tr_{i}.md": turkish_doc(i) for i in range(4)}
    for source in sorted(texts, key=lambda s: (s[3], s[:2])):
        text = texts[source]
        chunks = [Chunk(n, 1, None, m.start(), m.end(), m.group()) for n, m in enumerate(re.finditer(r"[^\n]+", text))]
        emb = HASH.embed_passages([c.text for c in chunks])
        sha = hashlib.sha256(source.encode()).hexdigest()
        store.replace_document(col, source, sha, source, {}, [Page(1, text)], chunks, emb)


def _at_version_16_stemmed_by_collection(fresh: str, old: str) -> None:
    """``old`` at schema 16 holding ``fresh``'s documents as kaynak wrote them before migration 17: every chunk
    stemmed with its collection's language."""
    _copy_as_version_1(fresh, old)
    with psycopg.connect(old, autocommit=True) as conn:
        conn.execute("DELETE FROM postings")
        conn.execute(
            "UPDATE chunks k SET language = c.language::regconfig FROM collections c WHERE c.id = k.collection_id"
        )
        conn.execute(
            "INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl) "
            "SELECT c.collection_id, u.lexeme, c.id, c.document_id, cardinality(u.positions), "
            "(SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(c.tsv)) FROM chunks c, unnest(c.tsv) u"
        )
        conn.execute(
            "UPDATE documents d SET token_count = (SELECT coalesce(sum(tf), 0) FROM postings p "
            "WHERE p.document_id = d.id)"
        )
        migrations.apply(conn, upto=16)


def _chunk_rows(url: str) -> dict[str, set[str]]:
    """Each document's chunks' physical row ids: an UPDATE moves a row, so unchanged ids mean untouched rows."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT d.source, array_agg(c.ctid::text) FROM chunks c JOIN documents d ON d.id = c.document_id GROUP BY 1"
        ).fetchall()
    return {r[0]: set(r[1]) for r in rows}


def _keyword_sources(url: str, name: str, query: str) -> set[str]:
    with Store(url, pool_size=1) as store:
        svc = SearchService(store, Settings(collection=name, embedder="hash"), lambda n: HASH)
        return {h.source for h in svc.search(query, name, mode="keyword", k=50)}


def _languages(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT d.source, d.language, d.keyword_language::text, array_agg(DISTINCT c.language::text) "
            "FROM documents d JOIN chunks c ON c.document_id = d.id GROUP BY 1, 2, 3 ORDER BY 1"
        ).fetchall()


def test_migration_17_restems_only_the_documents_whose_language_differs_and_resumes(
    new_database: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh, old = new_database(), new_database()
    name = "lang_" + uuid.uuid4().hex[:6]
    with Store(fresh, pool_size=1) as store:
        _ingest(store, name)
    _at_version_16_stemmed_by_collection(fresh, old)
    assert _contents(old) != _contents(fresh)  # the Turkish documents' postings are English-stemmed there
    before = _chunk_rows(old)

    monkeypatch.setattr(steps, "BATCH_DOCUMENTS", 1)  # one document per committed batch
    seen: list[tuple[int, int, int]] = []

    def stop_after_three(m: migrations.Migration, done: int, total: int) -> None:
        seen.append((m.version, done, total))
        if len(seen) == 3:
            raise KeyboardInterrupt  # like Ctrl-C or a kill: the batch in flight was committed or rolled back

    with pytest.raises(KeyboardInterrupt):
        migrate(old, progress=stop_after_three)
    st = migration_status(old)
    assert st.version == 16 and st.in_progress[17][0] == 3 and [v for v, _, _ in st.pending] == [17]
    assert seen[-1][1] < seen[-1][2]  # progress: part of the estimated rows done
    with pytest.raises(MigrationRequired, match=r"under way.*kaynak migrate"):
        Store(old, pool_size=1)
    assert migrate(old) == [17]
    assert migration_status(old).in_progress == {}

    # the same postings, statistics and token counts as a fresh ingest; chunks and languages alike
    assert _contents(old) == _contents(fresh)
    assert _languages(old) == _languages(fresh)
    assert {r[0]: r[2] for r in _languages(fresh)} == {s: "english" for s in ENGLISH} | {s: "turkish" for s in TURKISH}
    after = _chunk_rows(old)
    assert all(after[s] == before[s] for s in ENGLISH)  # English documents' chunks were not rewritten
    assert all(after[s] != before[s] for s in TURKISH)
    with Store(old, pool_size=1) as store:  # `kaynak migrate` stores the dropped analyses again
        assert store.sentences_pending() == len(DOCS_PENDING_AFTER_V1)
        store.fill_sentences()
    assert _analyses(old) == _analyses(fresh)
    assert _keyword_sources(old, name, "mahkeme") == set(TURKISH) == _keyword_sources(fresh, name, "mahkeme")


#: Every document: a database copied at version 1 predates migration 14's stored analyses.
DOCS_PENDING_AFTER_V1 = TURKISH + ENGLISH
