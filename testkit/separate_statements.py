"""The statements a search once made one by one, kept for the round-trip test to check the folded ones against.

``Store.plan_facts`` folds ``query_terms`` and ``embedded_collection_ids``; ``Store.hit_chunks`` folds the chunk
fetch with ``ocr_confidences`` and ``chunk_files`` (what ``stale_chunks`` judges). Production no longer calls them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kaynak.staleness import stale_files
from kaynak.store import Store
from kaynak.store.retrieval import MAX_QUERY_LEXEMES


def query_terms(
    store: Store, language: str, text: str, collection_ids: Sequence[int], limit: int = MAX_QUERY_LEXEMES
) -> list[tuple[str, int]]:
    """``query_lexemes`` with, for each lexeme, how many chunks of the collections contain it."""
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT u.lexeme, (SELECT coalesce(sum(s.df), 0) FROM lexeme_stats s WHERE s.collection_id = ANY(%s) "
            "AND s.lexeme = u.lexeme)::bigint FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) u "
            "ORDER BY u.positions[1] LIMIT %s",
            (list(collection_ids), language, text, limit),
        ).fetchall()
    return [(r[0], int(r[1])) for r in rows]


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
