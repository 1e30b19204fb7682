"""Tests for kaynak.match: the models' probabilities and labels, the features, and what every face shows."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import pytest

from kaynak.match import (
    MODELS,
    PARTIAL_AT,
    PARTIAL_CROSS_AT,
    STRONG_AT,
    features,
    idf,
    label,
    match_of,
    model_name,
    no_good_match,
    passage_language,
    stub,
    weighted_coverage,
    wordless,
)
from kaynak.store import Store
from kaynak.types import Chunk, Collection, Page
from testkit.searching import EN_DOC, HASH, TR_DOC, add_doc, make_service


def test_probability_is_monotone_in_similarity_and_coverage() -> None:
    base = features({"vector": 0.80, "vector_rank": 1, "keyword_rank": 1}, 0.5, 1.0, 0.78)
    closer = features({"vector": 0.90, "vector_rank": 1, "keyword_rank": 1}, 0.5, 1.0, 0.78)
    covered = features({"vector": 0.80, "vector_rank": 1, "keyword_rank": 1}, 1.0, 1.0, 0.78)
    e5 = MODELS["e5"]
    assert 0.0 <= e5.probability(base) < e5.probability(closer) <= 1.0
    assert e5.probability(base) < e5.probability(covered)
    lexical = MODELS["lexical"]
    assert lexical.probability(features({}, 0.2, 1.0)) < lexical.probability(features({}, 0.9, 1.0))


def test_features() -> None:
    f = features({"vector": 0.9, "vector_rank": 2, "keyword_rank": 11}, 0.25, 0.5, 0.8, cross=True)
    assert f == pytest.approx(
        {
            "vector": 0.9,
            "coverage": 0.25,
            "known": 0.5,
            "agree": 0.0,
            "margin": 0.1,
            "cross": 1.0,
            "cross_vector": 0.9,
            "bm25": 0.0,
        }
    )
    assert features({"keyword": math.e - 1, "keyword_rank": 1}, 0.5, 1.0)["bm25"] == pytest.approx(1.0)
    f = features({"vector": None, "vector_rank": None, "keyword_rank": 1}, 1.0, 1.0, 0.8)
    assert f["vector"] == 0.0 and f["margin"] == 0.0 and f["agree"] == 0.0 and f["cross"] == 0.0
    assert features({"vector_rank": 3, "keyword_rank": 10}, 0, 0)["agree"] == 1.0


def test_labels_and_flag() -> None:
    assert label(PARTIAL_CROSS_AT["e5"], "e5", cross=True) == "partial" != label(PARTIAL_CROSS_AT["e5"], "e5")
    for model in MODELS:
        assert PARTIAL_AT[model] < STRONG_AT[model]
        assert label(STRONG_AT[model], model) == "strong"
        assert label(PARTIAL_AT[model], model) == "partial"
        assert label(PARTIAL_AT[model] / 2, model) == "weak"
    m = match_of(features({}, 1.0, 1.0), "lexical")
    assert set(m) == {"probability", "label"} and 0 <= m["probability"] <= 1
    assert no_good_match([]) and no_good_match([{"label": "weak"}, {"label": "weak"}])
    assert not no_good_match([{"label": "weak"}, {"label": "partial"}])


def test_a_query_without_a_word_asks_nothing() -> None:
    assert wordless("?!.,;:") and wordless("  <> --- …") and wordless("")
    assert not wordless("aidat ne kadar?") and not wordless("İ?") and not wordless("1999")
    strong = features({"vector": 0.99, "vector_rank": 1, "keyword_rank": 1}, 1.0, 1.0, 0.5)
    assert match_of(strong, "e5")["label"] == "strong"
    assert match_of(strong, "e5", asks=False) == {"probability": 0.0, "label": "weak"}


def test_model_choice_idf_and_coverage() -> None:
    assert model_name("e5-small", True) == "e5" and model_name("e5-small", False) == "lexical"
    assert model_name("hash", True) == "lexical" and model_name(None, True) == "lexical"
    assert idf(0, 100) > idf(10, 100) > idf(90, 100) > 0
    assert weighted_coverage({"a"}, {"a": 3.0, "b": 1.0}) == 0.75
    assert weighted_coverage(set(), {}) == 0.0


def test_stubs_and_passage_language() -> None:
    assert stub("Word") and stub("  Kat Mülkiyeti Kanunu \n") and stub("")
    assert not stub("The pump must be serviced every six months.")
    assert not stub("Aidat borcunu ödemeyen malike faiz işler.")  # short, but a sentence of five words
    assert passage_language("Kat malikleri kurulu yılda en az bir kez toplanır ve yönetici seçilir.", "english") == (
        "turkish"
    )
    assert passage_language("The pump must be serviced every six months by the owner.", "turkish") == "english"
    assert passage_language("E11000 hnsw.ef_search", "simple") == "simple"  # nothing to tell: the collection's


# ---------------------------------------------------------------------- through the search service
@pytest.fixture(scope="module")
def pump(store: Store) -> Iterator[Collection]:
    col = store.create_collection(f"m_en_{uuid.uuid4().hex[:8]}", "english", "hash", HASH.dim)
    add_doc(store, col, "manuals/pump.md", EN_DOC)
    # a document chunked with overlap: its two chunks share the sentence about the valve
    text = (
        "The relief valve opens at eight bar of pressure. It closes again below six bar. "
        "Check the valve yearly for corrosion."
    )
    cut = text.index("It closes")
    chunks = [Chunk(0, 1, None, 0, cut + 28, text[: cut + 28]), Chunk(1, 1, None, 0, len(text), text)]
    store.replace_document(
        col,
        "valve.txt",
        uuid.uuid4().hex,
        "valve",
        {},
        [Page(1, text)],
        chunks,
        HASH.embed_passages([c.text for c in chunks]),
    )
    yield col
    store.delete_collection(col.name)


def test_every_hit_has_a_match_and_the_response_a_flag(store: Store, pump: Collection) -> None:
    svc = make_service(store, pump.name)
    hits = svc.search("worn seals leak under high pressure", k=5)
    assert hits and all(h.match and h.match["label"] in ("strong", "partial", "weak") for h in hits)
    assert hits[0].match["label"] == "strong" and not hits.no_good_match  # type: ignore[index]
    assert hits[0].to_dict()["match"] == hits[0].match
    assert 0 <= hits[0].scores["coverage"] <= 1  # type: ignore[operator]
    nothing = svc.search("zebra migration across the savanna", k=5)
    assert nothing and all(h.match["label"] == "weak" for h in nothing)  # type: ignore[index]
    assert nothing.no_good_match
    symbols = svc.search("?!.,;:", k=5)
    assert symbols and symbols.no_good_match  # the vector leg finds chunks; none may look like an answer
    assert all(h.match == {"probability": 0.0, "label": "weak"} for h in symbols)


def test_overlapping_quotes_collapse_into_one_hit(store: Store, pump: Collection) -> None:
    svc = make_service(store, pump.name)
    hits = svc.search("relief valve opens at eight bar", k=5)
    valve = [h for h in hits if h.source == "valve.txt"]
    assert len(valve) == 1, [(h.chunk_id, h.quote.text) for h in hits]
    assert valve[0].scores["merged_rank"] in (2, 3)
    assert len(hits) == len({h.chunk_id for h in hits})


def test_group_by_document(store: Store, pump: Collection) -> None:
    svc = make_service(store, pump.name)
    every = svc.search("pressure", k=10)
    grouped = svc.search("pressure", k=10, group_by="document")
    assert sorted({h.source for h in every}) == sorted(h.source for h in grouped)
    pump_hits = sum(1 for h in every if h.source == "manuals/pump.md")
    assert {h.source: h.scores["document_hits"] for h in grouped}["manuals/pump.md"] >= pump_hits >= 2
    with pytest.raises(Exception, match="unknown grouping"):
        svc.search("pressure", group_by="page")


def test_a_heading_chunk_is_never_returned_before_a_real_passage(store: Store) -> None:
    col = store.create_collection(f"m_stub_{uuid.uuid4().hex[:8]}", "english", "hash", HASH.dim)
    try:
        add_doc(store, col, "word.txt", ["Pressure"])
        add_doc(store, col, "manuals/pump.md", EN_DOC)
        svc = make_service(store, col.name)
        hits = svc.search("pressure", k=5)
        assert [h.source for h in hits][-1] == "word.txt" and hits[0].source == "manuals/pump.md"
        assert hits[-1].match == {"probability": 0.0, "label": "weak"}
        assert len(hits.features) == len(hits)
        one = svc.search("pressure", k=1)
        assert [h.source for h in one] == ["manuals/pump.md"]
    finally:
        store.delete_collection(col.name)


def test_cross_language_is_the_passage_language_not_the_collection_one(store: Store) -> None:
    """A Turkish question about a Turkish page of an "english" collection is not a cross-language match (issue 51:
    the cross terms made such hits "strong"); an English question about it is."""
    col = store.create_collection(f"m_lang_{uuid.uuid4().hex[:8]}", "english", "hash", HASH.dim)
    try:
        add_doc(store, col, "kanun.txt", TR_DOC)
        add_doc(store, col, "manuals/pump.md", EN_DOC)
        svc = make_service(store, col.name)
        tr = svc.search("Kat malikleri kurulu yılda kaç kez toplanır?", k=5)
        assert tr.plan is not None and tr.plan.query_language == "turkish"
        by_source = {h.source: f for h, f in zip(tr, tr.features, strict=True)}
        assert by_source["kanun.txt"]["cross"] == 0.0
        en = svc.search("How often does the owners' meeting take place?", k=5)
        by_source = {h.source: f for h, f in zip(en, en.features, strict=True)}
        assert by_source["kanun.txt"]["cross"] == 1.0 and by_source.get("manuals/pump.md", {"cross": 0.0})["cross"] == 0
    finally:
        store.delete_collection(col.name)
