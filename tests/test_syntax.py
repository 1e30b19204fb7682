"""Tests for kaynak.syntax: "exact phrase" and -word, parsed and applied to passages and through the search."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kaynak.errors import InvalidQuery
from kaynak.store import Store
from kaynak.syntax import fold, parse_query
from kaynak.types import Collection
from testkit.searching import add_doc, make_service


def test_parse() -> None:
    q = parse_query('"Yönetim  Planı" -madde kat malikleri')
    assert q.phrases == ["yönetim planı"] and q.excluded == ["madde"]
    assert q.text == '"Yönetim Planı" kat malikleri'
    assert parse_query("e-posta -5 derece").excluded == []  # a hyphen in a word, a minus before a digit: text
    assert parse_query("“KAT MALİKLERİ” «IĞDIR»").phrases == ["kat malikleri", "ığdır"]
    assert parse_query('say "hello').phrases == [] and not parse_query("plain words").restricts
    assert parse_query('"a -b" c').excluded == []  # a minus inside a phrase is the phrase's
    assert fold("İSTANBUL\n IĞDIR") == "istanbul ığdır"


def test_admits() -> None:
    q = parse_query('"yönetim planı" -madde')
    assert q.admits("Kat malikleri YÖNETİM\nPLANI ile bağlıdır.")
    assert not q.admits("Yönetim planı, 27. maddesi uyarınca değişir.")  # -madde leaves out maddesi
    assert not q.admits("Yönetim kurulu planı")


@pytest.fixture(scope="module")
def laws(store: Store) -> Iterator[Collection]:
    from testkit.searching import HASH

    col = store.create_collection(f"q_tr_{uuid.uuid4().hex[:8]}", "turkish", "hash", HASH.dim)
    add_doc(
        store,
        col,
        "kanun.txt",
        [
            "Yönetim planı kat maliklerini bağlar.\n\n"
            "Madde 28: yönetim planı beşte dört çoğunlukla değiştirilir.\n\n"
            "Kat malikleri kurulu planı görüşür ve yönetimi seçer."
        ],
    )
    yield col
    store.delete_collection(col.name)


def test_search_requires_phrases_and_drops_excluded(store: Store, laws: Collection) -> None:
    svc = make_service(store, laws.name)
    every = svc.search("yönetim planı", k=10)
    assert len(every) == 3
    phrase = svc.search('"yönetim planı"', k=10)
    assert len(phrase) == 2 and all("önetim planı" in h.text for h in phrase)
    both = svc.search('"yönetim planı" -madde', k=10)
    assert [h.text for h in both] == ["Yönetim planı kat maliklerini bağlar."]
    assert svc.search("kat malikleri -yönetim -plan", k=10) == []
    # a phrase no passage holds: the hits without it, and the plan says so
    missing = svc.search('"yönetim kurulu kararı" -madde', k=10)
    assert missing and missing.plan.phrase_missing and "quoted phrase" in missing.plan.reason  # type: ignore[union-attr]
    assert all("Madde" not in h.text for h in missing)
    assert not phrase.plan.phrase_missing  # type: ignore[union-attr]
    with pytest.raises(InvalidQuery, match="only excludes"):
        svc.search("-madde -kanun")
