"""Scoring given chunks against a query: the vector leg's exact score of chunks it did not return.

Convex fusion (``kaynak.fusion``) sums each leg's normalised score; a chunk only the keyword leg found would get
nothing from the vector leg, as if it were the least similar chunk of the collection. ``vector_similarities``
gives such chunks their real cosine similarity, by primary key, without an index scan (docs/adr/0021).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from psycopg import sql

from kaynak.errors import UsageError
from kaynak.store.base import StoreBase, vector_param
from kaynak.types import Collection


class ScoringMixin(StoreBase):
    """Exact scores of named chunks (the fusion's fill-in of a leg's missing candidates)."""

    def vector_similarities(
        self, collection: Collection, query_vector: np.ndarray, chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        """``{chunk id: cosine similarity}`` of those ``chunk_ids`` that are embedded chunks of ``collection``."""
        if not chunk_ids:
            return {}
        if len(query_vector) != collection.dim:
            raise UsageError(
                f"query vector has {len(query_vector)} dimensions; collection {collection.name!r} has {collection.dim}"
            )
        vec = vector_param(query_vector)
        query = sql.SQL(
            "SELECT id, 1 - ((embedding::vector({dim})) <=> %s::vector({dim})) FROM chunks "
            "WHERE collection_id = %s AND id = ANY(%s) AND embedding IS NOT NULL"
        ).format(dim=sql.Literal(collection.dim))
        with self._conn() as conn:
            rows = conn.execute(query, (vec, collection.id, list(chunk_ids))).fetchall()
        return {r[0]: float(r[1]) for r in rows}
