"""The Embedder protocol: every embedding backend looks like this to the rest of kaynak.

``embed_queries`` / ``embed_passages`` take lists of strings and return float32 arrays of shape (n, dim),
each row L2-normalised. Backends add their own prefixes (e5: ``query: `` / ``passage: ``). Empty or
whitespace-only input yields a zero vector (it matches nothing) rather than an error.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int
    max_chars: int  # inputs longer than this are truncated (counted in ``truncated``)
    truncated: int

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...
