"""What every part of the store shares: the error-bounded connection (``_conn``) and the attributes ``Store`` sets.

``Store`` (``kaynak.store.store``) is composed of one mixin per job (``catalogue``, ``writes``, ``retrieval``,
``sync_state``); each reaches the database only through ``StoreBase._conn``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import psycopg

from kaynak.store.connections import Database


def like_escape(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern (``\\``, ``%`` and ``_`` escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def vector_param(vector: object) -> np.ndarray:
    """A query vector as a statement parameter: float32, sent in pgvector's binary form by the dumper every pooled
    connection registers (``endpoint.make_pool``), so neither side formats or parses 384 numbers as text. The
    values are the float32s the text form gave (it spelled each float32 exactly), so the distances are the same."""
    return np.ascontiguousarray(vector, dtype=np.float32)


class StoreBase:
    """The connection boundary shared by the store's parts (``Store.__init__`` sets the attributes)."""

    url: str
    db: Database
    _read: bool
    # Test hook: called inside replace_document's transaction just before it commits.
    _before_commit: Callable[[], None] | None

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        """A checked connection inside the error boundary (``map_errors``): no psycopg error leaves the store."""
        with self.db.connection(read=self._read) as conn:
            yield conn
