"""Round trips per search, pinned (docs/performance-search.md, "Per-search overhead (round 4)"), and the folded
statements giving what the separate ones gave: the same hits, quotes, OCR and stale marks, plan reasons, errors and
cross-language rule as the path of separate statements (get_chunks and language_probe in the store; the others in
testkit/separate_statements.py) — and the pool's cheap connection check."""

from __future__ import annotations

import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from kaynak import quotes
from kaynak.config import Settings
from kaynak.errors import CollectionNotFound, InvalidQuery
from kaynak.quotes import MAX_QUOTE_CHARS, select_quotes, sentence_spans, word_spans
from kaynak.search import SearchResults, SearchService
from kaynak.search.hits import build_hits
from kaynak.store import Store
from kaynak.store import endpoint as endpoint_module
from kaynak.structure import article_refs, promote_matching
from kaynak.syntax import parse_query
from kaynak.types import Chunk, Collection, Page
from testkit.floats import assert_close, assert_same_ranking
from testkit.roundtrips import RoundTrips
from testkit.searching import EN_DOC, HASH, TR_DOC, add_doc, make_service
from testkit.separate_statements import (
    embedded_collection_ids,
    ocr_confidences,
    query_terms,
    stale_chunks,
    stored_sentences,
)

# Per mode, a search's round trips on a warm pool: the plan (one statement), the legs (keyword; the vector leg's
# pipeline), the chunk fetch (with OCR marks, file facts, the cross-language probe and each chunk's sentence
# analysis stored at ingest: quoting needs no stemming call).
ROUND_TRIPS = {"keyword": 3, "vector": 3, "hybrid": 4, "auto": 4}


def reference_search(svc: SearchService, query: str, collections: object, mode: str, k: int) -> SearchResults:
    """``search`` as it was before round 4 (no reranker): the probe in ``legs``, then a statement each for the
    chunks, the OCR marks and the file facts."""
    plan, legs = svc.legs(query, collections, mode, k)  # type: ignore[arg-type]
    fused = svc.fuse(plan, legs)
    refs = article_refs(query)
    syntax = parse_query(query)
    records = svc.store.get_chunks([f.id for f in (fused if refs or syntax.restricts else fused[:k])])
    fused = [f for f in fused if f.id not in records or syntax.admits(records[f.id].text)]
    if refs:
        fused = promote_matching(fused, refs, lambda f: records[f.id].section if f.id in records else None)
    top = [f for f in fused[:k] if f.id in records]
    ids = [f.id for f in top]
    ocr = ocr_confidences(svc.store, ids)  # pages read by OCR (kaynak.loaders.ocr)
    stale = stale_chunks(svc.store, ids)  # files changed on disk since (kaynak.staleness)
    sentences = stored_sentences(svc.store, ids)  # each stemmed with its document's language (migration 17)
    return SearchResults(build_hits(svc.store, top, records, plan, {}, ocr, stale, sentences=sentences), plan)


def plan_view(results: SearchResults) -> dict[str, object]:
    p = results.plan
    assert p is not None
    return {
        "collections": [c.name for c in p.collections],
        "mode": p.mode,
        "weights": p.weights,
        "reason": p.reason,
        "lexemes": p.query_lexemes,
        "embedded": p.embedded,
        "coverage": p.keyword_coverage,
        "language": p.query_language,
        "cross": p.cross_language,
    }


class PinnedEmbedder:
    """The hash embedder, except that queries listed in ``as_passage`` embed as that passage (so the vector
    leg's best chunk is known)."""

    name = "hash"

    def __init__(self, as_passage: dict[str, str]) -> None:
        self.dim = HASH.dim
        self.as_passage = as_passage

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.stack(
            [
                HASH.embed_passages([self.as_passage[t]])[0] if t in self.as_passage else HASH.embed_queries([t])[0]
                for t in texts
            ]
        )

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return HASH.embed_passages(texts)


TR_LAW = "Kat malikleri kurulu yılda bir kez toplanır ve yöneticiyi seçer; toplantıda işletme projesi görüşülür."
EN_PUMP = "The pump must be serviced every six months, and the worn seals are replaced when they leak."
QUESTION = "When is the pump serviced and what does the meeting of the owners decide?"


@pytest.fixture(scope="module")
def cols(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Collection]]:
    suffix = uuid.uuid4().hex[:8]
    tr = store.create_collection(f"rt_tr_{suffix}", "turkish", "hash", HASH.dim)
    en = store.create_collection(f"rt_en_{suffix}", "english", "hash", HASH.dim)
    bare = store.create_collection(f"rt_bare_{suffix}", "english", "hash", HASH.dim)
    mixed = store.create_collection(f"rt_mix_{suffix}", "simple", "hash", HASH.dim)
    add_doc(store, tr, "hukuk/kat.txt", TR_DOC, {"lang": "tr", "ocr": {"pages": {"1": 91.5}}})
    add_doc(store, en, "manuals/pump.md", EN_DOC, {"lang": "en"})
    add_doc(store, bare, "notes.txt", EN_DOC, embed=False)
    add_doc(store, mixed, "kanun.txt", [TR_LAW])
    add_doc(store, mixed, "pump.txt", [EN_PUMP])
    # a document whose file changed on disk since it was indexed: its hits say stale
    folder = tmp_path_factory.mktemp("rt_files")
    path = folder / "changed.txt"
    path.write_text("Madde 27 kat malikleri toplantısı ve yönetici seçimi.", encoding="utf-8")
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    store.replace_document(
        tr,
        "changed.txt",
        uuid.uuid4().hex,
        "changed",
        {},
        [Page(1, text)],
        [Chunk(0, 1, "Madde 27", 0, len(text), text)],
        HASH.embed_passages([text]),
        origin=str(path),
        file_stat=(st.st_size, st.st_mtime_ns),
    )
    path.write_text(text + " Değişti.", encoding="utf-8")
    yield {"tr": tr, "en": en, "bare": bare, "mixed": mixed}
    for c in (tr, en, bare, mixed):
        store.delete_collection(c.name)


def count(fn: object, tries: int = 1) -> tuple[object, RoundTrips]:
    """``fn()``'s result and round trips; with ``tries``, the try with the fewest (the pool may open a connection
    in the background at any time, and a connection kaynak never handed back gets an empty query before use)."""
    best: tuple[object, RoundTrips] | None = None
    for _ in range(tries):
        with RoundTrips.counting() as rt:
            out = fn()  # type: ignore[operator]
        if best is None or rt.count < best[1].count:
            best = (out, rt)
    assert best is not None
    return best


@pytest.mark.parametrize("mode", list(ROUND_TRIPS))
def test_round_trips_per_mode_are_pinned(store: Store, cols: dict[str, Collection], mode: str) -> None:
    svc = make_service(store, cols["en"].name)
    query = "worn seals leak under pressure"
    for _ in range(4):  # warm: every pooled connection handed back moments ago (they need no check then)
        svc.search(query, mode=mode)
    hits, rt = count(lambda: svc.search(query, mode=mode), tries=3)
    assert hits, mode
    assert rt.count == ROUND_TRIPS[mode], "\n".join(rt.statements)
    assert not any("empty query" in s for s in rt.statements), rt.statements
    _, rt = count(lambda: svc.highlights(query, hits), tries=3)  # type: ignore[arg-type]
    assert rt.count == 1, rt.statements


def test_the_cross_language_probe_costs_no_round_trip(store: Store, cols: dict[str, Collection]) -> None:
    svc = SearchService(
        store, Settings(collection=cols["mixed"].name, embedder="hash"), lambda name: PinnedEmbedder({QUESTION: TR_LAW})
    )
    for _ in range(4):
        svc.search(QUESTION, mode="hybrid", k=2)
    hits, rt = count(lambda: svc.search(QUESTION, mode="hybrid", k=2), tries=3)
    assert hits.plan.cross_language and "vector only" in hits.plan.reason  # type: ignore[attr-defined]
    assert rt.count == ROUND_TRIPS["hybrid"], rt.statements
    # and a keyword-only collection: the plan remembers no embeddings, nothing more is asked
    bare = make_service(store, cols["bare"].name)
    for _ in range(4):
        bare.search("pump filter", mode="auto")
    hits, rt = count(lambda: bare.search("pump filter", mode="auto"), tries=3)
    assert hits.plan.mode == "keyword" and rt.count == ROUND_TRIPS["keyword"], rt.statements  # type: ignore[attr-defined]


CASES = [
    ("worn seals leak under pressure", "en", "hybrid"),
    ("worn seals leak under pressure", "en", "keyword"),
    ("worn seals leak under pressure", "en", "vector"),
    ("kat malikleri kurulu ne zaman toplanır", "tr", "auto"),
    ("Madde 27 yönetici", "tr", "auto"),  # an article reference; a hit on an OCR'd page, one on a changed file
    ("E11000", ["en", "tr", "mixed", "bare"], "auto"),  # identifier-like, four collections ("*" would take in
    # other tests' collections, built with other embedders)
    ('"pressure gauge"', ["en", "tr", "en"], "auto"),  # quoted; a repeated name
    ("İstanbul asansör bakımı", ["tr", "bare"], "hybrid"),
    ("pump filter", "bare", "auto"),  # no embeddings: keyword
    ("the of and", "en", "auto"),  # no keyword terms: vector
    (QUESTION, "mixed", "hybrid"),  # the cross-language rule applies
    (QUESTION, "mixed", "auto"),
    ("toplanır pump", "mixed", "hybrid"),
]


@pytest.mark.parametrize(("query", "where", "mode"), CASES)
def test_search_equals_the_path_of_separate_statements(
    store: Store, cols: dict[str, Collection], query: str, where: object, mode: str
) -> None:
    def names(w: object) -> object:
        return "*" if w == "*" else [cols[x].name for x in w] if isinstance(w, list) else cols[str(w)].name

    svc = SearchService(
        store, Settings(collection=cols["en"].name, embedder="hash"), lambda name: PinnedEmbedder({QUESTION: TR_LAW})
    )
    for k in (1, 3, 10):
        new = svc.search(query, names(where), mode=mode, k=k)
        old = reference_search(svc, query, names(where), mode, k)
        assert_same_ranking([h.to_dict() for h in new], [h.to_dict() for h in old])
        assert_close(plan_view(new), plan_view(old), (query, k))
        assert svc.highlights(query, new) == svc.highlights(query, old)
    if query.startswith("Madde"):
        hits = svc.search(query, names(where), mode=mode, k=10)
        by_source = {h.source: h for h in hits}
        assert by_source["changed.txt"].stale and not by_source["hukuk/kat.txt"].stale
        kat = {h.page: h.ocr for h in hits if h.source == "hukuk/kat.txt"}  # OCR confidence on page 1 only
        assert kat[1] == {"confidence": 91.5} and all(ocr is None for page, ocr in kat.items() if page != 1)
    if query == QUESTION and mode == "hybrid":
        assert new.plan.cross_language  # type: ignore[union-attr]


def test_plan_facts_equal_the_separate_statements(store: Store, cols: dict[str, Collection]) -> None:
    query = "kat malikleri kurulu pump seals İstanbul E11000"
    groups = [[cols["tr"]], [cols["en"], cols["bare"]], [cols["mixed"], cols["tr"], cols["en"]]]
    for group in groups:
        found, terms, embedded = store.plan_facts([c.name for c in group], query, (), True)
        assert sorted(c.name for c in found) == sorted(c.name for c in group)
        assert {c.name: c for c in found} == {c.name: store.get_collection(c.name) for c in group}
        for lang in {c.language for c in group}:
            ids = [c.id for c in group if c.language == lang]
            assert terms[lang] == query_terms(store, lang, query, ids)
        assert embedded == embedded_collection_ids(store, [c.id for c in group])
    everything, _, _ = store.plan_facts(None, None)
    assert everything == store.list_collections()
    for c in everything:
        docs = store.list_documents(c, limit=100_000)
        assert (c.document_count, c.chunk_count) == (len(docs), sum(d.chunk_count for d in docs))


def test_errors_are_unchanged(store: Store, cols: dict[str, Collection]) -> None:
    svc = make_service(store, cols["en"].name)
    with pytest.raises(CollectionNotFound, match=r"no collection named 'nope'.*existing collections"):
        svc.search("pump", ["nope", 5])  # type: ignore[list-item]  # the missing name comes first
    with pytest.raises(InvalidQuery, match="must be strings"):
        svc.search("pump", [cols["en"].name, 5])  # type: ignore[list-item]
    with pytest.raises(InvalidQuery, match="must be strings"):
        svc.search("pump", [5, "nope"])  # type: ignore[list-item]
    with pytest.raises(InvalidQuery, match="unknown mode"):
        svc.search("pump", "nope", mode="fast")
    missing = make_service(store, "no_such_default_" + uuid.uuid4().hex[:6])
    with pytest.raises(CollectionNotFound, match="no collection named"):
        missing.search("pump")
    assert [c.name for c in svc.resolve_collections([cols["tr"].name, cols["en"].name, cols["tr"].name])] == [
        cols["tr"].name,
        cols["en"].name,
    ]


# ---------------------------------------------------------------------- the pool's check before use
def _store(database_url: str) -> Store:
    return Store(database_url, pool_size=1)


def test_a_connection_used_moments_ago_is_not_checked(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with _store(database_url) as one:
        one.list_collections()
        _, rt = count(one.list_collections)
        assert rt.count == 1, rt.statements
        monkeypatch.setattr(endpoint_module, "CHECK_IDLE_S", 0.0)  # idle too long: an empty query first
        time.sleep(0.01)
        _, rt = count(one.list_collections)
        assert rt.count == 2 and "empty query" in rt.statements[0], rt.statements


def test_a_connection_the_server_ended_is_replaced_without_an_error(database_url: str) -> None:
    with _store(database_url) as one:
        with one._conn() as conn:
            pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        with psycopg.connect(database_url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        deadline = time.monotonic() + 5
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline and os.name == "posix":
            time.sleep(0.01)  # the backend has gone (its socket is closed)
        assert one.list_collections() is not None  # the readable socket was noticed: checked, dropped, replaced
        with one._conn() as conn:
            assert int(conn.execute("SELECT pg_backend_pid()").fetchone()[0]) != pid


# ---------------------------------------------------------------------- quotes: one stemming call per batch
def _select_quotes_before(texts: list[str], query: set[str], lexemes_of: Callable, max_chars: int) -> list:
    """``select_quotes`` as before round 4 (a second ``lexemes_of`` call when a long sentence is cut), with today's
    window rules (terms that count, their weight within the chunk, widening and filling)."""
    all_spans = [sentence_spans(t) for t in texts]
    flat = [t[s:e] for t, spans in zip(texts, all_spans, strict=True) for s, e in spans]
    flat_lex = lexemes_of(flat) if flat and query else [set() for _ in flat]
    out: list = []
    long_cuts = []
    pos = 0
    for idx, spans in enumerate(all_spans):
        lex = flat_lex[pos : pos + len(spans)]
        pos += len(spans)
        if not spans:
            out.append((0, 0))
            continue
        scoring = {t for t in query if quotes._counts(t)} or query
        lex = quotes._extended(lex, scoring)
        local = quotes._within_chunk(None, scoring, lex)
        i, j = quotes._best_window(spans, lex, scoring, max_chars, local) if scoring else (0, 0)
        if not any(lx & scoring for lx in lex[i : j + 1]):
            i, j = 0, 0
        i, j = quotes._widen(spans, i, j, max_chars)
        s, e = quotes._fill(texts[idx], spans, i, j, max_chars)
        if e - s > max_chars:
            long_cuts.append((len(out), s, e, scoring, local))
        out.append((s, e))
    if long_cuts:
        word_lists = [word_spans(texts[idx], s, e) for idx, s, e, _, _ in long_cuts]
        words_flat = [texts[i][a:b] for (i, *_), ws in zip(long_cuts, word_lists, strict=True) for a, b in ws]
        words_lex = lexemes_of(words_flat) if words_flat and query else [set() for _ in words_flat]
        pos = 0
        for (idx, s, e, scoring, local), ws in zip(long_cuts, word_lists, strict=True):
            terms = [lx & scoring for lx in words_lex[pos : pos + len(ws)]]
            pos += len(ws)
            out[idx] = quotes._cut(ws, terms, s, e, max_chars, local)
    return out


def test_quotes_take_one_stemming_call_and_are_unchanged() -> None:
    """One ``lexemes_of`` call per batch, the quotes of before; and none with the analyses ingest stores."""
    rng = random.Random(14)
    vocab = ["pump", "seal", "leak", "pressure", "kat", "malik", "kurul", "toplanır", "the", "and", "x" * 40]

    def sentence() -> str:
        n = rng.choice([3, 8, 20, 60, 90])  # some sentences run over the 320-character limit
        return " ".join(rng.choice(vocab) for _ in range(n)).capitalize() + rng.choice([".", "!", "?", ";"])

    calls: list[int] = []

    def stems(texts: list[str]) -> list[set[str]]:
        calls.append(len(texts))
        return [{w.lower() for w in re.findall(r"\w+", t)} for t in texts]

    for _ in range(300):
        texts = [" ".join(sentence() for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 10))]
        query = set(rng.sample(vocab, rng.randint(0, 3)))
        for limit in (60, MAX_QUOTE_CHARS):
            calls.clear()
            new = select_quotes(texts, query, stems, limit)
            assert len(calls) <= 1
            assert new == _select_quotes_before(texts, query, stems, limit), (texts, query, limit)
            # analysed once (at ingest), stored as text and read back: the same quotes, and no stemming call
            stored = [quotes.decode(quotes.encode(a, limit), limit) for a in quotes.analyse(texts, stems, limit)]
            computed = quotes.quotes_and_matches(texts, query, stems, limit)
            calls.clear()
            again = quotes.quotes_and_matches(texts, query, stems, limit, stored=stored)
            assert calls == [] and again == computed and again[0] == new
