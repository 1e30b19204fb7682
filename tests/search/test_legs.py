"""The keyword leg in parts (``kaynak.search.legs.keyword_parts``, ADR 0032): when a search splits it, and that a
split search answers exactly as an unsplit one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kaynak.config import Settings
from kaynak.search import legs
from kaynak.store import Store
from kaynak.types import Collection
from testkit.floats import assert_same_ranking
from testkit.searching import EN_DOC, HASH, TR_DOC, add_doc, make_service


def col(chunks: int) -> Collection:
    return Collection(1, "c", "english", "hash", 8, chunk_count=chunks)


def test_parts_from_the_collection_size_and_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    auto = Settings(embedder="hash")
    monkeypatch.setattr(legs, "_cores", lambda: 2)
    assert legs.keyword_parts(auto, [col(1000)]) == 1
    assert legs.keyword_parts(auto, [col(1000), col(legs.PARTS_FROM_CHUNKS - 1)]) == 1
    assert legs.keyword_parts(auto, [col(1000), col(legs.PARTS_FROM_CHUNKS)]) == 2
    assert legs.keyword_parts(auto, []) == 1
    assert legs.keyword_parts(auto, [col(legs.PARTS_FROM_CHUNKS)], others_in_flight=1) == 1  # cores taken
    monkeypatch.setattr(legs, "_cores", lambda: 1)  # one core: a second part could only wait for it
    assert legs.keyword_parts(auto, [col(10 * legs.PARTS_FROM_CHUNKS)]) == 1
    assert legs.keyword_parts(Settings(embedder="hash", keyword_parts=3), [col(10)]) == 3  # set: as told
    assert legs.keyword_parts(Settings(embedder="hash", keyword_parts=1), [col(10**7)]) == 1


@pytest.fixture(scope="module")
def cols(store: Store) -> Iterator[dict[str, Collection]]:
    suffix = uuid.uuid4().hex[:8]
    tr = store.create_collection(f"parts_tr_{suffix}", "turkish", "hash", HASH.dim)
    en = store.create_collection(f"parts_en_{suffix}", "english", "hash", HASH.dim)
    add_doc(store, tr, "kat.txt", TR_DOC)
    add_doc(store, en, "pump.md", EN_DOC)
    add_doc(store, en, "notes.md", ["Seals are checked when the pump is serviced.\n\nThe filter is cheap."])
    yield {"tr": tr, "en": en}
    for c in (tr, en):
        store.delete_collection(c.name)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize(
    "query", ["pump seals filter", "kat malikleri kurulu ne zaman toplanır", "pressure pompa asansör bakımı"]
)
def test_a_search_in_parts_answers_as_one(store: Store, cols: dict[str, Collection], mode: str, query: str) -> None:
    names = [cols["tr"].name, cols["en"].name]
    one = make_service(store, cols["en"].name, keyword_parts=1).search(query, names, mode=mode, k=8)
    for parts in (2, 3):
        split = make_service(store, cols["en"].name, keyword_parts=parts).search(query, names, mode=mode, k=8)
        assert one, query
        assert_same_ranking([h.to_dict() for h in split], [h.to_dict() for h in one])


def test_keyword_legs_in_flight_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each keyword leg sees how many others ran beside it when it began, and leaves the count as it found it."""
    import threading

    seen: list[int] = []
    started, release = threading.Barrier(2), threading.Event()

    def fake(*args: object) -> list[tuple[str, float]]:
        seen.append(args[-1])  # type: ignore[arg-type]
        if len(seen) == 1:
            started.wait()
            release.wait(5)
        return []

    monkeypatch.setattr(legs, "_keyword_leg", fake)
    first = threading.Thread(target=legs.keyword_leg, args=(None, None, None, 10, None, "bm25"))
    first.start()
    started.wait()
    legs.keyword_leg(None, None, None, 10, None, "bm25")  # type: ignore[arg-type]
    release.set()
    first.join()
    assert seen == [0, 1] and legs._KEYWORD_LEGS.count == 0
