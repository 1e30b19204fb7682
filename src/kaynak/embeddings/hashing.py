"""HashEmbedder: deterministic bag-of-words vectors from text, for fast tests (no model, no quality claims)."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from kaynak.text import tr_lower

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    name = "hash"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.max_chars = 100_000
        self.truncated = 0

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        if len(text) > self.max_chars:
            self.truncated += 1
            text = text[: self.max_chars]
        for word in _WORD.findall(tr_lower(text)):
            h = hashlib.blake2b(word.encode(), digest_size=8).digest()
            idx = int.from_bytes(h[:4], "little") % self.dim
            v[idx] += 1.0 if h[4] & 1 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n > 0 else v

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.embed_queries(texts)
