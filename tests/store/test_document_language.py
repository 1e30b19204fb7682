"""The store writes each document stemmed in its own language (issue 50): one document or a set (a mailbox's
messages), chunks, postings and stored sentence analyses alike; a query is analysed in each language present."""

from __future__ import annotations

import hashlib
import re
import uuid

from kaynak.embeddings.hashing import HashEmbedder
from kaynak.quotes import decode
from kaynak.store import Store
from kaynak.store.writes import DocumentVersion
from kaynak.types import Chunk, Collection, Page
from testkit.languages import english_doc, turkish_doc

HASH = HashEmbedder()


def _version(source: str, text: str) -> DocumentVersion:
    chunks = [Chunk(n, 1, None, m.start(), m.end(), m.group()) for n, m in enumerate(re.finditer(r"[^\n]+", text))]
    return DocumentVersion(
        source, hashlib.sha256(text.encode()).hexdigest(), source, {}, [Page(1, text)], chunks,
        HASH.embed_passages([c.text for c in chunks]),
    )  # fmt: skip


def _stemming(store: Store, col: Collection) -> dict[str, tuple[str, set[str]]]:
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT d.source, d.keyword_language::text, array_agg(DISTINCT c.language::text) FROM documents d "
            "JOIN chunks c ON c.document_id = d.id WHERE d.collection_id = %s GROUP BY 1, 2",
            (col.id,),
        ).fetchall()
    return {r[0]: (r[1], set(r[2])) for r in rows}


def _analysis_lexemes(store: Store, col: Collection, source: str) -> set[str]:
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT s.analysis FROM chunk_sentences s JOIN documents d ON d.id = s.document_id "
            "WHERE d.collection_id = %s AND d.source = %s",
            (col.id, source),
        ).fetchall()
    out: set[str] = set()
    for (analysis,) in rows:
        decoded = decode(analysis)
        assert decoded is not None
        for lexemes in decoded.lexemes:
            out |= lexemes
    return out


def test_a_set_of_documents_is_stemmed_each_in_its_language(store: Store) -> None:
    col = store.create_collection("dl_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    try:
        members = [_version("box.mbox#1", english_doc(0)), _version("box.mbox#2", turkish_doc(0)),
                   _version("box.mbox#3", "Rapor 2024")]  # fmt: skip
        assert store.replace_document_set(col, "box.mbox", members) is not None
        assert _stemming(store, col) == {
            "box.mbox#1": ("english", {"english"}),
            "box.mbox#2": ("turkish", {"turkish"}),
            "box.mbox#3": ("english", {"english"}),  # too short to tell: the collection's language
        }
        # the stored analyses are stemmed as the postings: Turkish 'mahkemeye' → 'mahkeme'
        assert "mahkeme" in _analysis_lexemes(store, col, "box.mbox#2")
        assert {"centuri", "volunt"} <= _analysis_lexemes(store, col, "box.mbox#1")  # century, volunteers
        store.replace_document(col, "one.md", "x", "one", {}, [Page(1, turkish_doc(1))],
                               [Chunk(0, 1, None, 0, 40, turkish_doc(1)[:40])], None)  # fmt: skip
        assert _stemming(store, col)["one.md"] == ("turkish", {"turkish"})
    finally:
        store.delete_collection(col.name)


def test_a_query_is_analysed_in_each_language_present_and_only_then(store: Store) -> None:
    en = store.create_collection("dl_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    mixed = store.create_collection("dl_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    try:
        store.replace_document_set(en, "a", [_version("a#1", english_doc(1))])
        store.replace_document_set(mixed, "b", [_version("b#1", english_doc(1)), _version("b#2", turkish_doc(1))])
        query = "mahkeme bridges"
        _, pure, _ = store.plan_facts([en.name], query)
        assert pure == {"english": [("mahkem", 0), ("bridg", 0)]}  # one language: as before
        _, both, _ = store.plan_facts([mixed.name], query)
        lexemes = dict(both["english"])
        # English's 'mahkem' occurs nowhere: the Turkish word as written (mahkemenin → mahkeme) takes its place
        assert "mahkem" not in lexemes and lexemes["mahkeme"] == 1
        keys = list(lexemes)
        assert keys.index("bridg") < keys.index("mahkeme")  # the collection's language first
    finally:
        store.delete_collection(en.name)
        store.delete_collection(mixed.name)


def test_a_mixed_collection_leaves_out_the_function_words_of_each_of_its_languages(store: Store) -> None:
    mixed = store.create_collection("dl_" + uuid.uuid4().hex[:8], "english", "hash", HASH.dim)
    try:  # a Turkish page holding English UI strings: Turkish stems 'the' and 'to', English drops them
        turkish = turkish_doc(1) + "Menü: Go to the start page.\n"
        store.replace_document_set(mixed, "b", [_version("b#1", english_doc(1)), _version("b#2", turkish)])
        _, terms, _ = store.plan_facts([mixed.name], "how to find the bridges ve mahkeme")
        lexemes = dict(terms["english"])
        assert "bridg" in lexemes and lexemes["mahkeme"] == 1
        assert not {"how", "to", "the", "ve"} & set(lexemes)  # English's and Turkish's function words
    finally:
        store.delete_collection(mixed.name)
