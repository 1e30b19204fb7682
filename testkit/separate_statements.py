"""The statements a search once made one by one, kept for the round-trip test to check the folded ones against.

``Store.plan_facts`` folds ``query_terms`` and ``embedded_collection_ids``; ``Store.hit_chunks`` folds the chunk
fetch with ``ocr_confidences`` and ``chunk_files`` (what ``stale_chunks`` judges). Production no longer calls them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kaynak.staleness import stale_files
from kaynak.store import Store
from kaynak.store.retrieval import MAX_QUERY_LEXEMES, STEMMINGS, TURKISH_SURFACE_FORMS


def _analysed(
    store: Store, language: str, text: str, collection_ids: Sequence[int], limit: int
) -> list[tuple[str, int, int]]:
    """(lexeme, position, chunks of the collections containing it) of ``text`` under ``language``."""
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT u.lexeme, u.positions[1], (SELECT coalesce(sum(s.df), 0) FROM lexeme_stats s "
            "WHERE s.collection_id = ANY(%s) AND s.lexeme = u.lexeme)::bigint "
            "FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) u ORDER BY u.positions[1] LIMIT %s",
            (list(collection_ids), language, text, limit),
        ).fetchall()
    return [(r[0], int(r[1]), int(r[2])) for r in rows]


def _positions(store: Store, language: str, text: str) -> set[int]:
    """Every word position ``language`` gives ``text`` a lexeme at (``simple``: every word's)."""
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT unnest(positions) FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s)))", (language, text)
        ).fetchall()
    return {int(r[0]) for r in rows}


def query_terms(
    store: Store, language: str, text: str, collection_ids: Sequence[int], limit: int = MAX_QUERY_LEXEMES
) -> list[tuple[str, int]]:
    """``query_lexemes`` with, for each lexeme, how many chunks of the collections contain it; where the
    collections' documents are stemmed in other languages too (``documents.keyword_language``), each word's
    lexeme in those languages (and Turkish words as written) when new and occurring, replacing the collection
    language's lexeme of that word when that one occurs nowhere, and a function word of any of those stemmings
    left out (docs/adr/0038)."""
    with store._conn() as conn:
        present = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT keyword_language::text FROM documents WHERE collection_id = ANY(%s)",
                (list(collection_ids),),
            ).fetchall()
        }
    primary = _analysed(store, language, text, collection_ids, limit)
    # (extra, position, stemming's index, lexeme, df): 1 = a language documents are stemmed in, 2 = as written
    extras = [
        (1, pos, STEMMINGS.index(cfg) + 1, lexeme, df)
        for cfg in STEMMINGS
        if cfg != language and cfg in present
        for lexeme, pos, df in _analysed(store, cfg, text, collection_ids, limit)
    ]
    turkish: set[int] = set()
    if TURKISH_SURFACE_FORMS and (language == "turkish" or "turkish" in present):
        turkish = {pos for _, pos, _ in (primary if language == "turkish" else [])}
        turkish |= {pos for extra, pos, idx, _, _ in extras if STEMMINGS[idx - 1] == "turkish"}
        extras += [
            (2, pos, 3, lexeme, df) for lexeme, pos, df in _analysed(store, "simple", text, collection_ids, limit)
        ]
    idx0 = STEMMINGS.index(language) + 1
    candidates = [(0, pos, idx0, lexeme, df) for lexeme, pos, df in primary] + extras
    others = [cfg for cfg in STEMMINGS if cfg != language and cfg in present]
    if others:  # a mixed collection: a function word of one of its stemmings is left out in every analysis
        words = _positions(store, "simple", text)
        function_words = {
            pos for cfg in [language, *others] if cfg != "simple" for pos in words - _positions(store, cfg, text)
        }
        candidates = [c for c in candidates if c[1] not in function_words]
        extras = [e for e in extras if e[1] not in function_words]
    kept: list[tuple[int, str, int]] = []
    for extra, pos, idx, lexeme, df in candidates:
        if extra == 0:
            replaced = any(e[1] == pos and e[4] > 0 for e in extras)
            keep = df > 0 or not replaced
        else:
            earlier = any(c[3] == lexeme and (c[0], c[1], c[2]) < (extra, pos, idx) for c in candidates)
            keep = df > 0 and (extra == 1 or pos in turkish) and not earlier
        if keep:
            kept.append(((extra * 100000 + pos) * 4 + idx, lexeme, df))
    return [(lexeme, df) for _, lexeme, df in sorted(kept)]


def embedded_collection_ids(store: Store, collection_ids: Sequence[int]) -> set[int]:
    """The ids among ``collection_ids`` whose chunks have embeddings (what the vector leg can search)."""
    if not collection_ids:
        return set()
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT c.id FROM collections c WHERE c.id = ANY(%s) AND EXISTS "
            "(SELECT 1 FROM chunks k WHERE k.collection_id = c.id AND k.embedding IS NOT NULL)",
            (list(collection_ids),),
        ).fetchall()
    return {int(r[0]) for r in rows}


def stored_sentences(store: Store, chunk_ids: Sequence[str]) -> dict[str, str]:
    """The sentence analyses ingest stored for the chunks among ``chunk_ids`` (migration 14; stemmed with each
    document's own language since migration 17)."""
    if not chunk_ids:
        return {}
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT k.id, s.analysis FROM chunks k JOIN chunk_sentences s ON s.document_id = k.document_id "
            "AND s.ord = k.ord WHERE k.id = ANY(%s)",
            (list(chunk_ids),),
        ).fetchall()
    return {r[0]: r[1] for r in rows}


def ocr_confidences(store: Store, chunk_ids: Sequence[str]) -> dict[str, float]:
    """For the chunks among ``chunk_ids`` on OCR'd pages: Tesseract's mean confidence of that page (0–100)."""
    if not chunk_ids:
        return {}
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT c.id, (d.metadata -> 'ocr' -> 'pages' ->> c.page::text)::float8 FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s) AND d.metadata ? 'ocr'",
            (list(chunk_ids),),
        ).fetchall()
    return {r[0]: float(r[1]) for r in rows if r[1] is not None}


def stale_chunks(store: Store, chunk_ids: Sequence[str]) -> set[str]:
    """The ids among ``chunk_ids`` whose document's file has changed on disk since it was indexed."""
    if not chunk_ids:
        return set()
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT c.id, d.origin, d.file_size, d.file_mtime_ns, d.sha256 FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s)",
            (list(chunk_ids),),
        ).fetchall()
    return stale_files({r[0]: (r[1], r[2], r[3], r[4]) for r in rows})
