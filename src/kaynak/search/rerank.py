"""Rerank the fused candidates: the top ``rerank_top`` rescored by the configured cross-encoder, if any."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kaynak.config import Settings
from kaynak.errors import ConfigError
from kaynak.fusion import Fused
from kaynak.types import ChunkRecord

if TYPE_CHECKING:
    from kaynak.embeddings.rerank import Reranker


def pick_reranker(
    settings: Settings, factory: Callable[[str | None], Reranker | None] | None, rerank: bool | None
) -> Reranker | None:
    """The reranker a search uses: ``rerank`` True asks for one (ConfigError without), False refuses it, None
    follows the ``reranker`` setting."""
    if rerank is False or factory is None:
        if rerank:
            raise ConfigError("reranking was asked for, but no reranker is available in this context")
        return None
    if rerank is None and not settings.reranker:
        return None
    reranker = factory(None)
    if reranker is None and rerank:
        raise ConfigError("reranking was asked for, but no reranker is configured; set KAYNAK_RERANKER")
    return reranker


def rerank_head(
    reranker: Reranker, top: int, text: str, fused: list[Fused], records: Mapping[str, ChunkRecord]
) -> tuple[list[Fused], dict[str, float]]:
    """The first ``top`` candidates in the reranker's order, then the rest as fused; and the rerank scores."""
    head = [f for f in fused[:top] if f.id in records]
    passages = [
        (f"{records[f.id].section}\n{records[f.id].text}" if records[f.id].section else records[f.id].text)
        for f in head
    ]
    scores = [float(s) for s in reranker.score(text, passages)]
    by_id = {f.id: s for f, s in zip(head, scores, strict=True)}
    order = sorted(head, key=lambda f: -by_id[f.id])
    head_ids = set(by_id)
    return order + [f for f in fused if f.id not in head_ids], by_id
