"""SearchService against the real embedded PostgreSQL: legs, fusion, quotes, filters, bad input."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from kaynak.config import Settings
from kaynak.embeddings.base import Embedder
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import (
    CollectionMismatch,
    CollectionNotFound,
    ConfigError,
    InvalidQuery,
    KaynakError,
)
from kaynak.quotes import MAX_QUOTE_CHARS
from kaynak.search import SearchService, is_identifier_like, is_quoted, query_language
from kaynak.search.legs import cross_language
from kaynak.store import Store
from kaynak.types import Chunk, Collection, Page
from kaynak.vocabulary import MAX_QUERY_CHARS
from testkit.floats import assert_close, assert_same_ranking
from testkit.searching import EN_DOC, HASH, TR_DOC, add_doc, factory, make_service, paragraphs

SCORE_KEYS = {"vector", "vector_rank", "keyword", "keyword_rank", "fused", "rerank", "coverage"}


@pytest.fixture(scope="module")
def corpus(store: Store) -> Iterator[dict[str, Collection]]:
    suffix = uuid.uuid4().hex[:8]
    tr = store.create_collection(f"s_tr_{suffix}", "turkish", "hash", HASH.dim)
    en = store.create_collection(f"s_en_{suffix}", "english", "hash", HASH.dim)
    bare = store.create_collection(f"s_bare_{suffix}", "english", "hash", HASH.dim)
    add_doc(store, tr, "hukuk/kat-mulkiyeti.txt", TR_DOC, {"lang": "tr", "kind": "law"})
    add_doc(store, en, "manuals/pump.md", EN_DOC, {"lang": "en"})
    add_doc(store, bare, "notes.txt", EN_DOC, embed=False)
    yield {"tr": tr, "en": en, "bare": bare}
    for c in (tr, en, bare):
        store.delete_collection(c.name)


def assert_verbatim(store: Store, hits: list) -> None:
    for h in hits:
        col = store.get_collection(h.collection)
        page = store.get_page(col, h.source, h.page)
        assert page[h.char_start : h.char_end] == h.text
        assert page[h.quote.char_start : h.quote.char_end] == h.quote.text
        assert 0 < len(h.quote.text) <= MAX_QUOTE_CHARS
        assert h.char_start <= h.quote.char_start <= h.quote.char_end <= h.char_end


def test_hybrid_hits_have_scores_and_verbatim_quotes(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["tr"].name)
    hits = svc.search("kat malikleri kurulu ne zaman toplanır", k=3)
    assert hits and len(hits) <= 3
    top = hits[0]
    assert "toplanır" in top.quote.text and top.source == "hukuk/kat-mulkiyeti.txt"
    assert set(top.scores) == SCORE_KEYS
    assert top.scores["keyword_rank"] == 1 and top.scores["keyword"] > 0
    assert top.scores["vector_rank"] is not None and top.scores["rerank"] is None
    assert top.score == pytest.approx(top.scores["fused"])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert_verbatim(store, hits)
    d = top.to_dict()
    assert d["quote"]["text"] == top.quote.text and d["page"] == 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [("KAT MÜLKİYETİ", "Kat mülkiyeti"), ("IĞDIR", "Iğdır ilinde"), ("İSTANBUL'DAKİ ASANSÖR", "İstanbul'daki")],
)
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_turkish_capitals_find_lower_case_text(
    store: Store, corpus: dict[str, Collection], query: str, expected: str, mode: str
) -> None:
    svc = make_service(store, corpus["tr"].name)
    hits = svc.search(query, mode=mode, k=2)
    assert expected in hits[0].quote.text
    assert_verbatim(store, hits)


@pytest.mark.parametrize("ranking", ["bm25", "ts_rank_cd"])
def test_keyword_rankings(store: Store, corpus: dict[str, Collection], ranking: str) -> None:
    svc = make_service(store, corpus["en"].name)
    hits = svc.search("pressure gauge filter", mode="keyword", keyword_ranking=ranking, k=5)
    assert "filter" in hits[0].quote.text
    assert all(h.scores["vector"] is None and h.scores["vector_rank"] is None for h in hits)
    assert [h.scores["keyword_rank"] for h in hits] == list(range(1, len(hits) + 1))


def test_vector_mode_only_vector_scores(store: Store, corpus: dict[str, Collection]) -> None:
    hits = make_service(store, corpus["en"].name).search("worn seals leak", mode="vector", k=2)
    assert hits and all(h.scores["keyword"] is None for h in hits)
    assert hits[0].scores["vector"] == pytest.approx(hits[0].scores["vector"]) and -1 <= hits[0].scores["vector"] <= 1


def test_collections_resolution(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["tr"].name)
    both = svc.search("pump asansör", [corpus["tr"].name, corpus["en"].name], mode="keyword", k=10)
    assert {h.collection for h in both} == {corpus["tr"].name, corpus["en"].name}
    everything = svc.search("pump", "*", mode="keyword", k=10)
    assert {corpus["en"].name, corpus["bare"].name} <= {h.collection for h in everything}
    with pytest.raises(CollectionNotFound) as err:
        svc.search("pump", "no-such-collection")
    assert corpus["en"].name in str(err.value)
    with pytest.raises(CollectionNotFound):
        make_service(store, "missing-default-" + uuid.uuid4().hex[:6]).search("pump")


def test_auto_mode_decisions(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["en"].name)
    assert svc.plan("worn seals", mode="auto").mode == "hybrid"
    assert svc.plan("the of and", mode="auto").mode == "vector"
    p = svc.plan("E11000", mode="auto")
    assert p.mode == "hybrid" and p.weights["vector"] < p.weights["keyword"]
    assert svc.plan('"worn seals"', mode="auto").weights["vector"] < 1
    assert svc.plan("worn seals", corpus["bare"].name, mode="auto").mode == "keyword"
    hits = svc.search("E11000", k=3)
    assert "E11000" in hits[0].quote.text and hits[0].scores["keyword_rank"] == 1
    alpha = svc.settings.fusion_alpha  # convex fusion (default): keyword alpha × coverage, vector 1 − alpha
    same = svc.plan("worn seals leak under pressure")
    assert same.keyword_coverage == 1.0 and same.weights == pytest.approx({"vector": 1 - alpha, "keyword": alpha})
    cross = svc.plan("pompanın contaları basınç altında sızdırır mı pressure")
    assert 0 < cross.keyword_coverage < 0.5
    assert cross.weights["keyword"] == pytest.approx(alpha * cross.keyword_coverage)
    rrf = make_service(store, corpus["en"].name, fusion="rrf").plan("pompanın contaları basınç altında sızdırır mı")
    assert rrf.weights == pytest.approx({"vector": 1.0, "keyword": rrf.keyword_coverage})
    unknown = svc.plan("zebra giraffe")
    assert unknown.keyword_coverage == 0 and svc.search("zebra giraffe", mode="hybrid", k=2)
    assert is_identifier_like("hnsw.ef_search") and is_identifier_like("RFC-9457") and is_identifier_like("2024")
    assert not is_identifier_like("worn seals") and not is_identifier_like("pump") and not is_identifier_like("?")
    assert is_quoted('"kat malikleri"') and is_quoted("“kat”") and not is_quoted('kat "malik"')


def test_stop_words_only(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["en"].name)
    assert svc.search("the and of", mode="keyword") == []
    hits = svc.search("the and of", mode="hybrid", k=2)
    assert hits and all(h.scores["keyword"] is None for h in hits)
    assert_verbatim(store, hits)  # no overlap: quote is the chunk's first sentence(s)
    assert hits[0].quote.char_start == hits[0].char_start


@pytest.mark.parametrize(
    "query",
    [
        "it's",
        "a & b",
        "pump | seals",
        "!pressure",
        "filt:*",
        "back\\slash",
        "'; DROP TABLE chunks; --",
        "(pump",
        "seals <-> leak",
        "\x00pump",
    ],
)
def test_syntax_characters_are_text(store: Store, corpus: dict[str, Collection], query: str) -> None:
    svc = make_service(store, corpus["en"].name)
    for ranking in ("bm25", "ts_rank_cd"):
        hits = svc.search(query, k=3, keyword_ranking=ranking)
        assert_verbatim(store, hits)
    assert store.chunk_count(corpus["en"]) == 3


def test_long_query_is_bounded(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["en"].name)
    words = " ".join(f"term{i} pump" for i in range(1200))
    query = (words * 2)[:MAX_QUERY_CHARS]  # the longest query any face accepts (kaynak.rules, issue 12)
    t = time.perf_counter()
    hits = svc.search(query, k=3)
    assert time.perf_counter() - t < 5
    assert hits and len(svc.plan(query).query_lexemes["english"]) <= 64
    with pytest.raises(InvalidQuery, match=str(MAX_QUERY_CHARS)):
        svc.search((words * 2)[:10_000], k=3)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "  \n\t "}, "query"),
        ({"query": "pump", "k": 0}, "k"),
        ({"query": "pump", "k": 101}, "k"),
        ({"query": "pump", "k": True}, "k"),
        ({"query": "pump", "mode": "fuzzy"}, "mode"),
        ({"query": "pump", "keyword_ranking": "tfidf"}, "keyword_ranking"),
        ({"query": "pump", "filters": {"author": "x"}}, "filters"),
        ({"query": "pump", "filters": {"metadata": "x"}}, "filters"),
    ],
)
def test_invalid_requests(store: Store, corpus: dict[str, Collection], kwargs: dict, field: str) -> None:
    svc = make_service(store, corpus["en"].name)
    with pytest.raises(InvalidQuery) as err:
        svc.search(**kwargs)
    assert err.value.field == field and str(err.value)


def test_filters(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["tr"].name)
    col = corpus["tr"].name
    assert svc.search("kat", col, filters={"metadata": {"kind": "law"}}, k=3)
    assert svc.search("kat", col, filters={"metadata": {"kind": "novel"}}, k=3) == []
    assert svc.search("kat", col, filters={"source_prefix": "hukuk/"}, k=3)
    assert svc.search("kat", col, filters={"source_glob": "*.pdf"}, k=3) == []
    assert svc.search("kat", col, filters={"source_glob": "hukuk/*.txt"}, k=3)
    # one glob dialect with ingest --include (kaynak.globs): `*` stays in its folder, `**` crosses folders
    assert svc.search("kat", col, filters={"source_glob": "*.txt"}, k=3) == []
    assert svc.search("kat", col, filters={"source_glob": "**.txt"}, k=3)
    assert svc.search("kat", col, filters={"source_glob": "**/*.txt"}, k=3)


def test_forced_embedder_mismatch(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["en"].name)
    assert svc.search("pump", embedder="hash", k=1)
    with pytest.raises(CollectionMismatch) as err:
        svc.search("pump", embedder="e5-small")
    assert "'hash'" in str(err.value) and "'e5-small'" in str(err.value)


def test_dimension_mismatch(store: Store, corpus: dict[str, Collection]) -> None:
    svc = SearchService(store, Settings(collection=corpus["en"].name), lambda name: HashEmbedder(dim=32))
    with pytest.raises(CollectionMismatch):
        svc.search("pump", mode="vector")


class ReverseReranker:
    name = "reverse"

    def score(self, query: str, passages: list[str]) -> list[float]:
        return [float(i) for i in range(len(passages))]


def test_rerank(store: Store, corpus: dict[str, Collection]) -> None:
    settings = Settings(collection=corpus["tr"].name, embedder="hash", reranker="fake")
    svc = SearchService(store, settings, factory, lambda name: ReverseReranker())
    plain = make_service(store, corpus["tr"].name).search("kat malikleri kurulu", k=5)
    reranked = svc.search("kat malikleri kurulu", k=5)
    assert [h.chunk_id for h in reranked] == [h.chunk_id for h in plain][::-1]
    assert all(h.scores["rerank"] is not None and h.score == h.scores["rerank"] for h in reranked)
    assert all(h.scores["rerank"] is None for h in svc.search("kat", k=3, rerank=False))
    with pytest.raises(ConfigError):
        make_service(store, corpus["tr"].name).search("kat", rerank=True)


def test_highlights(store: Store, corpus: dict[str, Collection]) -> None:
    svc = make_service(store, corpus["tr"].name)
    hits = svc.search("KAT MALİKLERİ", k=2)
    spans = svc.highlights("KAT MALİKLERİ", hits)
    for hit, marks in zip(hits, spans, strict=True):
        words = {hit.quote.text[a:b] for a, b in marks}
        assert words and all(w.lower().startswith(("kat", "malik")) for w in words), words
        if "Kat malikleri" in hit.quote.text:
            assert {"Kat", "malikleri"} <= words


def test_filter_keeping_one_percent_still_yields_k(store: Store) -> None:
    col = store.create_collection("s_filter_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    try:
        rng = np.random.default_rng(0)
        vocab = [f"w{i}" for i in range(300)]
        for d in range(50):
            text = "\n\n".join(" ".join(rng.choice(vocab, 12)) + " common." for _ in range(20))
            add_doc(store, col, f"doc{d:02d}.txt", [text])
        assert store.chunk_count(col) == 1000
        svc = make_service(store, col.name)
        for mode in ("vector", "hybrid", "keyword"):
            hits = svc.search("common w1 w2 w3", mode=mode, k=10, filters={"source_prefix": "doc07"})
            assert len(hits) == 10 and {h.source for h in hits} == {"doc07.txt"}, mode
    finally:
        store.delete_collection(col.name)


def _bm25_scores(svc: SearchService, col: str, query: str) -> list[float]:
    return sorted(h.scores["keyword"] for h in svc.search(query, col, mode="keyword", k=50))


def test_bm25_statistics_follow_replace_and_delete(store: Store) -> None:
    a = store.create_collection("s_bm25a_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    b = store.create_collection("s_bm25b_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    svc = make_service(store, a.name)
    q = "pressure seals filter pump"
    try:
        add_doc(store, a, "one.txt", ["Pump pressure is high.\n\nSeals wear out."])
        add_doc(store, a, "two.txt", ["The filter clogs.\n\nPressure drops when the filter clogs."])
        add_doc(store, a, "three.txt", ["Pump pump pump seals."])
        add_doc(store, a, "two.txt", ["Only one line about pressure now."])  # replaced
        store.delete_document(a, "three.txt")  # deleted
        add_doc(store, b, "one.txt", ["Pump pressure is high.\n\nSeals wear out."])
        add_doc(store, b, "two.txt", ["Only one line about pressure now."])
        assert_close(_bm25_scores(svc, a.name, q), _bm25_scores(svc, b.name, q))
        assert len(_bm25_scores(svc, a.name, q)) == 3
    finally:
        store.delete_collection(a.name)
        store.delete_collection(b.name)


@pytest.fixture(scope="module")
def e5() -> Embedder:
    try:
        from kaynak.embeddings import get_embedder

        emb = get_embedder("e5-small")
        emb.embed_queries(["warm up"])
    except (ImportError, KaynakError) as err:
        pytest.skip(f"e5-small not available: {err}")
    return emb


def test_turkish_query_finds_english_document_through_vector_leg(store: Store, e5: Embedder) -> None:
    col = store.create_collection("s_x_" + uuid.uuid4().hex[:8], "english", e5.name, e5.dim)
    try:
        docs = {
            "volcano.txt": "Mount Etna is an active volcano on the east coast of Sicily, Italy.",
            "bread.txt": "Sourdough bread is leavened with a fermented starter of flour and water.",
            "football.txt": "The Super Bowl is the annual championship game of the National Football League.",
        }
        for source, text in docs.items():
            add_doc(store, col, source, [text], embedder=e5)
        svc = SearchService(store, Settings(collection=col.name), lambda name: e5)
        hits = svc.search("Sicilya'daki yanardağın adı nedir?", k=3)
        assert hits[0].source == "volcano.txt"
        assert hits[0].scores["keyword"] is None and hits[0].scores["vector_rank"] == 1
    finally:
        store.delete_collection(col.name)


def test_one_pass_search_returns_its_plan(
    store: Store, corpus: dict[str, Collection], monkeypatch: pytest.MonkeyPatch
) -> None:
    """search() plans once; the plan comes back with the hits and highlighting reuses its lexemes."""
    svc = make_service(store, corpus["tr"].name)
    calls = {"plan": 0}
    real_plan = svc.plan

    def counting_plan(*args: object, **kwargs: object) -> object:
        calls["plan"] += 1
        return real_plan(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(svc, "plan", counting_plan)
    hits = svc.search("KAT MALİKLERİ kurulu", k=3, mode="hybrid")
    assert calls["plan"] == 1 and hits.plan is not None
    assert hits.plan.mode == "hybrid" and [c.name for c in hits.plan.collections] == [corpus["tr"].name]
    assert "malik" in " ".join(hits.plan.query_lexemes["turkish"])

    def no_stemming(*args: object, **kwargs: object) -> list[str]:
        raise AssertionError("the query was stemmed again")

    monkeypatch.setattr(svc.store, "query_lexemes", no_stemming)
    marks = svc.highlights("KAT MALİKLERİ kurulu", hits)
    assert any(marks)


def test_query_vectors_are_cached(store: Store, corpus: dict[str, Collection]) -> None:
    class Counting(HashEmbedder):
        calls = 0

        def embed_queries(self, texts: list[str]) -> np.ndarray:
            Counting.calls += 1
            return super().embed_queries(texts)

    emb = Counting()
    svc = SearchService(store, Settings(collection=corpus["tr"].name, embedder="hash"), lambda name: emb)
    first = svc.search("kat malikleri", mode="vector", k=3)
    second = svc.search("kat malikleri", mode="vector", k=3)
    assert [h.chunk_id for h in first] == [h.chunk_id for h in second]
    assert Counting.calls == 1
    svc.search("ortak giderler", mode="vector", k=3)
    assert Counting.calls == 2
    svc.query_vectors.size = 1
    svc.search("yönetici seçilir", mode="vector", k=3)  # an LRU of one keeps only this query
    svc.search("kat malikleri", mode="vector", k=3)
    assert Counting.calls == 4


def test_pruned_and_full_keyword_leg_agree_in_search(store: Store, corpus: dict[str, Collection]) -> None:
    pruned = make_service(store, corpus["tr"].name)
    full = make_service(store, corpus["tr"].name, bm25_pruning=False)
    store.bm25_prune_limits = (0, 1, 0.5)
    try:
        for q in ("kat malikleri kurulu", "Iğdır kayısı", "ortak giderler arsa payı"):
            a = pruned.search(q, mode="keyword", k=5)
            b = full.search(q, mode="keyword", k=5)
            assert [h.chunk_id for h in a] == [h.chunk_id for h in b]
    finally:
        store.bm25_prune_limits = Store.bm25_prune_limits


def test_query_naming_an_article_finds_it_first(store: Store) -> None:
    col = store.create_collection("s_art_" + uuid.uuid4().hex[:8], "turkish", "hash", HASH.dim)
    articles = [
        ("Madde 26 – Toplantı", "Kurul, madde 27 ve madde 27 uyarınca 27 gün içinde toplanır; 27 kişi katılır."),
        ("Madde 27 – Genel kurul", "Genel kurul yılda bir kez toplanır ve yöneticiyi seçer."),
        ("Madde 28 – Yönetici", "Yönetici kurulun kararlarını uygular."),
    ]
    text = "\n\n".join(body for _, body in articles)
    spans = paragraphs(text)
    pairs = enumerate(zip(articles, spans, strict=True))
    chunks = [Chunk(i, 1, sec, s, e, text[s:e]) for i, ((sec, _), (s, e)) in pairs]
    emb = HASH.embed_passages([c.text for c in chunks])
    store.replace_document(col, "yonetmelik.txt", uuid.uuid4().hex, "Yönetmelik", {}, [Page(1, text)], chunks, emb)
    svc = make_service(store, col.name)
    try:
        for query in ("Madde 27", "md. 27 genel kurul", "27. madde ne diyor", "27 nci maddesi"):
            for mode in ("hybrid", "keyword"):
                hits = svc.search(query, col.name, mode=mode, k=3)
                assert hits[0].section == "Madde 27 – Genel kurul", (query, mode, [h.section for h in hits])
        plain = svc.search("27 gün kişi", col.name, mode="keyword", k=3)  # no article named: plain ranking
        assert plain[0].section == "Madde 26 – Toplantı"
    finally:
        store.delete_collection(col.name)


def test_chunks_remember_their_document_title(store: Store) -> None:
    """The keyword leg sees the document's title as extra terms of every chunk (migration 10), the stored text
    stays verbatim, the pruned and the full BM25 agree, and the document's language is recorded (migration 11)."""
    col = store.create_collection("s_title_" + uuid.uuid4().hex[:8], "turkish", "hash", HASH.dim)
    page = "Bağımsız bölümler ayrı tapuya bağlanır.\n\nOrtak yerler birlikte kullanılır ve korunur."
    chunks = [Chunk(i, 1, None, s, e, page[s:e]) for i, (s, e) in enumerate(paragraphs(page))]
    store.replace_document(
        col,
        "k.txt",
        uuid.uuid4().hex,
        "Kat Mülkiyeti Kanunu",
        {},
        [Page(1, page)],
        chunks,
        HASH.embed_passages([c.text for c in chunks]),
    )
    svc = make_service(store, col.name)
    try:
        hits = svc.search("mülkiyet kanunu", col.name, mode="keyword", k=5)
        assert len(hits) == 2 and {h.text for h in hits} == {page[s:e] for s, e in paragraphs(page)}
        assert "mülkiyet" not in page.lower()
        full = make_service(store, col.name, bm25_pruning=False).search("mülkiyet ortak", col.name, "keyword", 5)
        pruned = svc.search("mülkiyet ortak", col.name, mode="keyword", k=5)
        assert_same_ranking(
            [{"chunk_id": h.chunk_id, "score": h.scores["keyword"]} for h in pruned],
            [{"chunk_id": h.chunk_id, "score": h.scores["keyword"]} for h in full],
        )
        with store._conn() as conn:
            lang = conn.execute("SELECT language FROM documents WHERE collection_id = %s", (col.id,)).fetchone()
        assert lang[0] == "turkish"
    finally:
        store.delete_collection(col.name)


def test_query_language(store: Store, corpus: dict[str, Collection]) -> None:
    assert query_language("Kat malikleri kurulu ne zaman toplanır?") == "turkish"
    assert query_language("Which NFL team won Super Bowl 50?") == "english"
    assert query_language("E11000") is None and query_language("Madde 27") is None
    svc = make_service(store, corpus["en"].name)
    assert svc.plan("pompanın contaları basınç altında sızdırır mı").query_language == "turkish"
    assert svc.plan("worn seals leak under the pressure").query_language == "english"


def test_cross_language_rule_fuses_vector_only(store: Store) -> None:
    """An English question whose best vector match is a Turkish document, in a collection that also holds English
    documents: the keyword leg (which can only match English there) is left out. Not in a Turkish-only one."""
    mixed = store.create_collection("s_mix_" + uuid.uuid4().hex[:8], "simple", "hash", HASH.dim)
    tr_only = store.create_collection("s_tro_" + uuid.uuid4().hex[:8], "simple", "hash", HASH.dim)
    tr_text = "Kat malikleri kurulu yılda bir kez toplanır ve yöneticiyi seçer; toplantıda işletme projesi görüşülür."
    en_text = "The pump must be serviced every six months, and the worn seals are replaced when they leak."
    try:
        for col in (mixed, tr_only):
            add_doc(store, col, "kanun.txt", [tr_text])
        add_doc(store, mixed, "pump.txt", [en_text])
        svc = make_service(store, mixed.name)
        tr_chunk = svc.search("toplanır", mixed.name, mode="keyword", k=1)[0].chunk_id
        en_chunk = svc.search("pump", mixed.name, mode="keyword", k=1)[0].chunk_id
        # a word of the English document: its postings are English-stemmed (issue 50), so the question's stop words
        # ('the', 'when') no longer match it as they did when the 'simple' collection left them in
        question = "When does the owners' meeting take place, and who services the pump?"
        plan = svc.plan(question, mixed.name, mode="hybrid")
        assert plan.query_language == "english" and plan.weights["keyword"] > 0
        cross_language(svc.store, plan, en_chunk)
        assert not plan.cross_language and plan.weights["keyword"] > 0
        cross_language(svc.store, plan, tr_chunk)
        assert plan.cross_language and plan.weights["keyword"] == 0 and "vector only" in plan.reason
        other = svc.plan(question, tr_only.name, mode="hybrid")  # no English document to pull up: rule off
        cross_language(svc.store, other, svc.search("toplanır", tr_only.name, mode="keyword", k=1)[0].chunk_id)
        assert not other.cross_language
        hits = svc.search(question, mixed.name, mode="hybrid", k=2)
        assert hits and hits.plan is not None
    finally:
        store.delete_collection(mixed.name)
        store.delete_collection(tr_only.name)


def test_a_small_collection_is_not_buried_under_a_large_one(store: Store) -> None:
    """Per-collection BM25 statistics give a one-document collection low IDFs: its best keyword match scores far
    below a large collection's, and the merged top k left it out. Each collection's scores as shares of its own
    best keep it in (issue 27; the search passes per_collection=True)."""
    suffix = uuid.uuid4().hex[:8]
    big = store.create_collection(f"s_big_{suffix}", "turkish", "hash", HASH.dim)
    note = store.create_collection(f"s_note_{suffix}", "turkish", "hash", HASH.dim)
    en = store.create_collection(f"s_en_big_{suffix}", "english", "hash", HASH.dim)
    try:
        words = ["toplantı", "yönetici", "kurul", "karar", "süre", "gider", "pay", "bina", "kat", "malik"]
        paragraphs = [
            f"Madde {i}: {words[i % 10]} ve {words[(i * 3) % 10]} hakkında kurul karar verir."
            + (" Bu süre altı aya kadar uzatılabilir." if i % 10 == 0 else "")
            for i in range(60)
        ]
        add_doc(store, big, "kanun.txt", ["\n\n".join(paragraphs)])
        add_doc(
            store, en, "manual.txt", ["\n\n".join(f"Section {i}: the pump runs until it stops." for i in range(40))]
        )
        add_doc(store, note, "aidat.txt", ["Aidat aylık 750 TL olarak belirlenmiştir."])
        cols, lexemes = [big, note], store.query_lexemes("turkish", "aidat ne kadar")
        for pruned in (True, False):
            raw = store.keyword_search(cols, None, 3, "bm25", lexemes=lexemes, pruned=pruned)
            assert len(raw) == 3 and all(store.get_chunks([cid])[cid].source == "kanun.txt" for cid, _ in raw)
            fair = store.keyword_search(cols, None, 3, "bm25", lexemes=lexemes, pruned=pruned, per_collection=True)
            sources = {store.get_chunks([cid])[cid].source: score for cid, score in fair}
            assert sources.get("aidat.txt") == pytest.approx(1.0) and sources["kanun.txt"] == pytest.approx(1.0)
        ts = store.keyword_search(cols, None, 10, "ts_rank_cd", lexemes=lexemes, per_collection=True)
        assert max(score for _, score in ts) == pytest.approx(1.0) and len(ts) == 7
        # one collection: the scores are BM25's own
        assert store.keyword_search([big], None, 3, "bm25", lexemes=lexemes, per_collection=True) == (
            store.keyword_search([big], None, 3, "bm25", lexemes=lexemes)
        )
        svc = make_service(store, note.name)
        together = svc.search("aidat ne kadar", [big.name, en.name, note.name], k=10)
        assert "aidat.txt" in [h.source for h in together]
        assert all(0 < h.scores["keyword"] <= 1 for h in together if h.scores["keyword"] is not None)  # type: ignore[operator]
    finally:
        for c in (big, note, en):
            store.delete_collection(c.name)


def test_highlights_in_a_simple_collection_follow_english_and_turkish_words(store: Store) -> None:
    """A `simple` collection has no stemming or stop words: highlighting matches words as English and as Turkish
    do, so "a" and "from" are not marked and "hyphenated" marks "hyphenation" (issue 27)."""
    col = store.create_collection(f"s_simple_{uuid.uuid4().hex[:8]}", "simple", "hash", HASH.dim)
    try:
        add_doc(store, col, "help.txt", ["Hyphenation from a word can be turned off. Kat malikleri kurulu toplanır."])
        svc = make_service(store, col.name)
        hits = svc.search("How do I stop a word from being hyphenated? kurul toplantısı", k=1)
        [spans] = svc.highlights("How do I stop a word from being hyphenated? kurul toplantısı", hits)
        marked = {hits[0].quote.text[a:b].lower() for a, b in spans}
        assert "hyphenation" in marked and "word" in marked and "kurulu" in marked
        assert not marked & {"a", "from", "can", "be"}
    finally:
        store.delete_collection(col.name)


def test_a_collection_says_which_languages_its_documents_are_in(store: Store) -> None:
    col = store.create_collection(f"s_mixed_{uuid.uuid4().hex[:8]}", "english", "hash", HASH.dim)
    try:
        add_doc(store, col, "tr.txt", TR_DOC)
        add_doc(store, col, "en.txt", EN_DOC)
        svc = make_service(store, col.name)
        assert svc.document_languages([col.name]) == {col.name: ["english", "turkish"]}
        assert svc.document_languages()[col.name] == ["english", "turkish"]
        assert svc.get_collection(col.name).language == "english"  # its search configuration is one language
    finally:
        store.delete_collection(col.name)
