"""Each chunk's sentence analysis is stored at ingest (migration 14): what quoting a hit needs, read with the chunk.

Written in the document's own transaction by both write paths, gone with the document, kept by a rename; a chunk
without one (ingested before migration 14) is analysed at search, with the same quotes and one round trip more, until
``Store.fill_sentences`` stores it (at the end of an ingest of its collection, or ``kaynak migrate``).
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from kaynak import quotes
from kaynak.config import load_settings
from kaynak.ingest import IngestService
from kaynak.store import Store, writes
from kaynak.store.writes import DocumentVersion
from kaynak.types import Chunk, Collection, Page
from testkit.roundtrips import RoundTrips
from testkit.searching import HASH, add_doc, factory, make_service

LONG = " ".join(["Kat malikleri kurulu yılda bir kez olağan toplanır ve yöneticiyi seçer"] * 6) + "."
PAGE = (
    "Yönetici kat malikleri kurulunca seçilir. Görev süresi bir yıldır.\n\n"
    f"Aidat her ay ödenir. {LONG} Gecikme faizi uygulanır.\n\n"
    "The pump seals fail at high pressure. They are replaced yearly."
)


def _stored(store: Store, col: Collection) -> dict[tuple[str, int], str]:
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT d.source, s.ord, s.analysis FROM chunk_sentences s JOIN documents d ON d.id = s.document_id "
            "WHERE d.collection_id = %s",
            (col.id,),
        ).fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def test_ingest_stores_what_a_search_would_compute(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "turkish", "hash", HASH.dim)
    add_doc(store, col, "a.txt", [PAGE])
    stored = _stored(store, col)
    texts = PAGE.split("\n\n")
    assert sorted(stored) == [("a.txt", i) for i in range(len(texts))]
    expected = quotes.analyse(texts, lambda items: store.lexemes_of("turkish", items))
    for i, a in enumerate(expected):
        assert quotes.decode(stored[("a.txt", i)]) == a
    assert any(quotes.decode(v).long_words for v in stored.values())  # type: ignore[union-attr]


def test_a_set_of_documents_stores_each_analysis_and_a_delete_takes_them(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", HASH.dim)
    members = []
    for n in range(3):
        text = f"Message {n} says the pump seals fail. They are replaced yearly."
        members.append(
            DocumentVersion(
                f"box.mbox#{n}",
                uuid.uuid4().hex,
                f"m{n}",
                {},
                [Page(1, text)],
                [Chunk(0, 1, None, 0, len(text), text)],
                None,
            )
        )
    store.replace_document_set(col, "box.mbox", members)
    assert sorted(_stored(store, col)) == [(f"box.mbox#{n}", 0) for n in range(3)]
    store.replace_document_set(col, "box.mbox", members[:1])
    assert sorted(_stored(store, col)) == [("box.mbox#0", 0)]
    add_doc(store, col, "b.txt", ["One sentence. Another one."])
    assert store.delete_document(col, "b.txt")
    assert sorted(_stored(store, col)) == [("box.mbox#0", 0)]


def test_a_renamed_document_keeps_its_analyses(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", HASH.dim)
    page = "The pump seals fail at high pressure. They are replaced yearly."
    sha = uuid.uuid4().hex
    store.replace_document(col, "old.txt", sha, "t", {}, [Page(1, page)], [Chunk(0, 1, None, 0, len(page), page)], None)
    before = _stored(store, col)[("old.txt", 0)]
    assert store.move_document(col, "old.txt", "new.txt", sha, None, None)
    assert _stored(store, col) == {("new.txt", 0): before}


def test_chunks_without_an_analysis_are_analysed_at_search(store: Store, unique_name: str) -> None:
    """As after an upgrade from schema 13: the same hits and quotes, with the stemming call back."""
    col = store.create_collection(unique_name, "turkish", "hash", HASH.dim)
    add_doc(store, col, "a.txt", [PAGE])
    svc = make_service(store, col.name)
    query = "yönetici nasıl seçilir aidat kurulu"
    for _ in range(3):
        stored = svc.search(query, mode="hybrid", k=3)
    with RoundTrips.counting() as with_rows:
        stored = svc.search(query, mode="hybrid", k=3)
    with store._conn() as conn:
        conn.execute(
            "DELETE FROM chunk_sentences s USING documents d WHERE d.id = s.document_id AND d.collection_id = %s",
            (col.id,),
        )
    with RoundTrips.counting() as without:
        computed = svc.search(query, mode="hybrid", k=3)
    assert [(h.chunk_id, h.quote) for h in computed] == [(h.chunk_id, h.quote) for h in stored]
    assert any(h.quote.text != h.text for h in stored)  # the long chunk is quoted in part
    assert without.count == with_rows.count + 1


def test_an_analysis_of_another_version_or_limit_is_not_trusted() -> None:
    [a] = quotes.analyse(["One sentence. Two sentences."], lambda items: [set(t.lower().split()) for t in items])
    text = quotes.encode(a)
    assert quotes.decode(text) == a
    assert quotes.decode(text, max_chars=100) is None
    assert quotes.decode(text.replace(f'"v":{quotes.ANALYSIS_VERSION}', '"v":0')) is None
    assert quotes.decode(None) is None and quotes.decode("") is None


def _as_before_migration_14(store: Store, col: Collection) -> None:
    """What migration 14 leaves of a collection ingested before it: no analyses, every document listed pending."""
    with store._conn() as conn:
        conn.execute("DELETE FROM chunk_sentences WHERE collection_id = %s", (col.id,))
        conn.execute(
            "INSERT INTO chunk_sentences_pending (collection_id, document_id) "
            "SELECT collection_id, id FROM documents WHERE collection_id = %s",
            (col.id,),
        )


def test_documents_from_before_migration_14_are_filled_in_batches_that_resume(
    store: Store, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    col = store.create_collection(unique_name, "turkish", "hash", HASH.dim)
    other = store.create_collection(unique_name + "_b", "english", "hash", HASH.dim)
    for n in range(4):
        add_doc(store, col, f"{n}.txt", [PAGE.replace("Aidat", f"Aidat {n}")])
    add_doc(store, other, "x.txt", ["The pump seals fail at high pressure. They are replaced yearly."])
    ingested = {c.id: _stored(store, c) for c in (col, other)}
    for c in (col, other):
        _as_before_migration_14(store, c)
    assert store.sentences_pending(col) == 4 and store.sentences_pending(other) == 1
    assert _stored(store, col) == {}
    monkeypatch.setattr(writes, "FILL_DOCUMENTS", 1)
    stop, seen = threading.Event(), []

    def stop_after_two(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 2:
            stop.set()  # like a sync told to stop: the batch under way is committed, the rest waits

    assert store.fill_sentences(col, progress=stop_after_two, stop=stop) == 2
    assert seen == [(1, 4), (2, 4)] and store.sentences_pending(col) == 2 and len(_stored(store, col)) == 2 * 3
    assert store.fill_sentences(col) == 2 and store.sentences_pending(col) == 0
    assert _stored(store, col) == ingested[col.id]
    assert store.sentences_pending(other) == 1  # another collection's documents wait for its own ingest
    assert store.fill_sentences() == 1 and _stored(store, other) == ingested[other.id]
    assert store.fill_sentences() == 0


def test_a_pending_document_replaced_or_deleted_meanwhile_is_no_longer_pending(store: Store, unique_name: str) -> None:
    col = store.create_collection(unique_name, "english", "hash", HASH.dim)
    add_doc(store, col, "a.txt", ["One sentence. Another one."])
    add_doc(store, col, "b.txt", ["A third sentence. A fourth one."])
    _as_before_migration_14(store, col)
    add_doc(store, col, "a.txt", ["A new version. Written after the upgrade."])
    assert store.delete_document(col, "b.txt")
    assert store.sentences_pending(col) == 0 and sorted(_stored(store, col)) == [("a.txt", 0)]


def test_an_ingest_fills_in_its_collection(store: Store, env: dict[str, str], unique_name: str, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Aidat\n\nAidat her ay ödenir. Gecikme faizi uygulanır.", encoding="utf-8")
    svc = IngestService(store, load_settings(), factory)
    try:
        assert svc.ingest([tmp_path], unique_name, language="turkish").added == ["a.md"]
        col = store.get_collection(unique_name)
        ingested = _stored(store, col)
        _as_before_migration_14(store, col)
        report = svc.ingest([tmp_path], unique_name)  # the file is unchanged: skipped, and its analyses stored
        assert report.added == [] and report.updated == []
    finally:
        svc.close()
    assert store.sentences_pending(col) == 0 and _stored(store, col) == ingested
