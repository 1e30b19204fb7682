"""Convex fusion's fill-in of the vector leg (ADR 0021) against the real embedded PostgreSQL: the keyword leg's
chunks the vector leg did not return get their exact cosine similarity; ``Store.vector_similarities``' edges."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from kaynak.config import Settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import UsageError
from kaynak.search import SearchService
from kaynak.store import Store
from kaynak.types import Chunk, Collection, Page
from testkit.roundtrips import RoundTrips

HASH = HashEmbedder()
TOPICS = [
    "The pump must be serviced every six months by a trained technician.",
    "Worn seals leak under high pressure and must be replaced at once.",
    "The filter is replaced when the pressure gauge shows a large drop.",
    "Elevators in apartment buildings are inspected once a year.",
    "Apricots grow well on the fertile plain near the river.",
    "The annual meeting of the owners elects a manager for the building.",
    "Error E11000 means that a duplicate key was inserted into the index.",
    "Recall of the graph index grows with the search list size.",
]


def add_doc(store: Store, col: Collection, source: str, text: str, embed: bool = True) -> None:
    chunks = [Chunk(0, 1, None, 0, len(text), text)]
    emb = HASH.embed_passages([text]) if embed else None
    store.replace_document(col, source, uuid.uuid4().hex, source, {}, [Page(1, text)], chunks, emb)


def service(store: Store, col: Collection, **settings: object) -> SearchService:
    return SearchService(store, Settings(collection=col.name, embedder="hash", **settings), lambda _: HASH)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def corpus(store: Store) -> Collection:
    col = store.create_collection(f"fill_{uuid.uuid4().hex[:8]}", "english", "hash", HASH.dim)
    for i, text in enumerate(TOPICS):
        add_doc(store, col, f"doc{i}.txt", text)
    return col


def test_keyword_chunks_the_vector_leg_missed_get_their_exact_similarity(store: Store, corpus: Collection) -> None:
    query = "pressure seals pump filter gauge"
    svc = service(store, corpus, candidates=2)
    plan, legs = svc.legs(query, mode="hybrid", k=1)
    _, hnsw = service(store, corpus, candidates=2, fusion_fill=False).legs(query, mode="hybrid", k=1)
    assert len(hnsw["vector"]) == 2 and legs["vector"][:2] == hnsw["vector"]  # the leg's own results come first
    vector = dict(legs["vector"])
    assert {cid for cid, _ in legs["keyword"]} <= set(vector)  # every keyword chunk now has a vector score
    filled = legs["vector"][2:]
    assert filled and [s for _, s in filled] == sorted((s for _, s in filled), reverse=True)
    records = store.get_chunks([cid for cid, _ in filled])
    q = HASH.embed_queries([query])[0]
    for cid, score in filled:
        assert score == pytest.approx(cosine(q, HASH.embed_passages([records[cid].text])[0]), abs=1e-5)
    # the fused list ranks every chunk of both legs with both scores where it has them
    fused = svc.fuse(plan, legs)
    assert all("vector" in f.scores for f in fused)


def test_no_fill_without_convex_fusion_or_outside_hybrid(store: Store, corpus: Collection) -> None:
    query = "pressure seals pump filter gauge"
    for settings, mode in (({"fusion": "rrf"}, "hybrid"), ({"fusion_fill": False}, "hybrid"), ({}, "vector")):
        _, legs = service(store, corpus, candidates=2, **settings).legs(query, mode=mode, k=1)
        assert len(legs["vector"]) == 2, settings


def test_vector_similarities_edges(store: Store, corpus: Collection) -> None:
    other = store.create_collection(f"fill_o_{uuid.uuid4().hex[:8]}", "english", "hash", HASH.dim)
    add_doc(store, other, "elsewhere.txt", "Seals and pumps in another collection.")
    add_doc(store, corpus, "bare.txt", "A chunk without an embedding about seals.", embed=False)
    q = HASH.embed_queries(["seals"])[0]
    ids = {
        r.source: cid
        for cid, r in store.get_chunks(
            [cid for cid, _ in store.keyword_search([corpus, other], None, 50, "bm25", None, lexemes=["seal"])]
        ).items()
    }
    assert {"doc1.txt", "bare.txt", "elsewhere.txt"} <= set(ids)
    got = store.vector_similarities(corpus, q, list(ids.values()))
    assert ids["doc1.txt"] in got  # this collection's embedded chunks only
    assert ids["bare.txt"] not in got and ids["elsewhere.txt"] not in got
    assert store.vector_similarities(corpus, q, []) == {}
    with pytest.raises(UsageError, match="dimensions"):
        store.vector_similarities(corpus, q[:3], [ids["doc1.txt"]])


def test_the_chunk_fetch_answers_the_fill_in_with_the_same_numbers(store: Store, corpus: Collection) -> None:
    """``hit_chunks(fill=…)`` (what ``search`` sends: one statement for the chunks and the fill-in) gives exactly
    the similarities ``vector_similarities`` gives, and only for the embedded chunks of the collections named."""
    from kaynak.store.catalogue import SimilarityFill

    q = HASH.embed_queries(["pressure seals pump filter gauge"])[0]
    ids = [cid for cid, _ in service(store, corpus).legs("pump filter seals", mode="keyword", k=8)[1]["keyword"]]
    assert len(ids) >= 3
    expected = store.vector_similarities(corpus, q, ids)
    fetched, _ = store.hit_chunks(ids, None, SimilarityFill([corpus.id], [float(x) for x in q], HASH.dim, ids[:-1]))
    assert set(fetched) == set(ids)
    got = {cid: h.similarity for cid, h in fetched.items() if cid in ids[:-1] and h.similarity is not None}
    assert got and got == {c: s for c, s in expected.items() if c in ids[:-1]}  # unembedded chunks: None
    assert fetched[ids[-1]].similarity is None  # not asked for
    elsewhere, _ = store.hit_chunks(ids, None, SimilarityFill([corpus.id + 10**9], list(q), HASH.dim, ids))
    assert all(h.similarity is None for h in elsewhere.values())
    with pytest.raises(UsageError, match="dimensions"):
        store.hit_chunks(ids, None, SimilarityFill([corpus.id], [1.0, 0.0], HASH.dim, ids))


def test_a_search_that_fills_in_folds_it_into_the_chunk_fetch(store: Store, corpus: Collection) -> None:
    """Same hits as the fill-in by its own statement, and one round trip fewer: plan, keyword leg, vector leg,
    chunks with the fill-in and their stored sentence analyses (four)."""
    query = "pressure seals pump filter gauge"
    svc = service(store, corpus, candidates=2)
    _, legs = svc.legs(query, mode="hybrid", k=3)
    assert len(legs["vector"]) > 2  # this query needs the fill-in
    for _ in range(3):
        hits = svc.search(query, mode="hybrid", k=3)
    with RoundTrips.counting() as rt:
        again = svc.search(query, mode="hybrid", k=3)
    assert rt.count == 4, rt.statements
    fused = svc.fuse(*svc.legs(query, mode="hybrid", k=3))
    assert [h.chunk_id for h in again] == [h.chunk_id for h in hits] == [f.id for f in fused[: len(again)]]
    assert [h.scores["vector"] for h in again] == [f.scores.get("vector") for f in fused[: len(again)]]


def test_the_query_embedding_starts_early_only_when_a_vector_leg_is_likely(store: Store, corpus: Collection) -> None:
    """The query's embedding is started before the plan for vector and hybrid searches; never for keyword ones, nor
    for ``auto`` before any collection is known to hold embeddings; a failed plan still raises its own error."""
    from kaynak.errors import CollectionNotFound

    asked: list[str] = []

    def factory(name: str) -> HashEmbedder:
        asked.append(name)
        return HASH

    svc = SearchService(store, Settings(collection=corpus.name, embedder="hash"), factory)
    svc.search("pump filter", mode="keyword")
    svc.search("pump filter", mode="auto")
    assert asked == ["hash"]  # auto: only the vector leg asked, after the plan
    asked.clear()
    svc.search("seals under pressure", mode="hybrid")
    assert asked and asked[0] == "hash"
    with pytest.raises(CollectionNotFound):
        svc.search("seals", collections="no_such_collection_here", mode="hybrid")
