"""HashEmbedder: deterministic bag-of-words vectors from text, for fast tests (no model, no quality claims).

Each word (``\\w+`` after Turkish-aware lowering) adds ±1 to one of ``dim`` buckets chosen by its BLAKE2b hash;
the sum is L2-normalised. Text without any word (empty, whitespace, punctuation only) gives a zero vector.
Named ``hash`` (64 dimensions) or ``hash:<dim>``.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from kaynak.embeddings.base import BaseEmbedder
from kaynak.text import tr_lower

_WORD = re.compile(r"\w+", re.UNICODE)

DEFAULT_DIM = 64


class HashEmbedder(BaseEmbedder):
    name = "hash"
    max_chars = 100_000
    batch_size = 1024

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        super().__init__()
        if not 1 <= dim <= 16_000:
            raise ValueError(f"hash embedder dimension must be 1..16000, got {dim}")
        self.dim = dim
        self.name = "hash" if dim == DEFAULT_DIM else f"hash:{dim}"

    def _load(self) -> None:
        pass

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(tr_lower(text)):
            h = hashlib.blake2b(word.encode(), digest_size=8).digest()
            idx = int.from_bytes(h[:4], "little") % self.dim
            v[idx] += 1.0 if h[4] & 1 else -1.0
        return v

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])
