"""The Embedder protocol, and BaseEmbedder: the shared machinery every real backend is built on.

``embed_queries`` / ``embed_passages`` take lists of strings and return float32 arrays of shape (n, dim),
each row L2-normalised. Backends add their own prefixes (e5: ``query: `` / ``passage: ``).

Defined behaviour for awkward input, the same for every backend:

* Empty or whitespace-only strings (``str.isspace``) give a **zero vector**: they are not sent to the model,
  match nothing (cosine with a zero vector is undefined; pgvector leaves such rows out of an HNSW cosine
  index) and do not disturb the other rows. Every other row has unit norm.
* Input longer than ``max_chars`` characters is cut there (at the last space in the final 64 characters, if
  any) before it reaches the model; a backend may cut further to its token limit. Each cut text adds one to
  ``truncated``, a per-instance counter callers read before and after a batch to report it.
* NUL characters become spaces and lone surrogates become U+FFFD, so every string reaches the model whole.
* A bare ``str`` instead of a list is a ``TypeError`` (iterating it would embed single characters).

BaseEmbedder loads its model lazily, once, under a lock (so many threads may share one instance), and embeds
in batches of ``batch_size``, releasing the lock between batches so a query can slip in during a long ingest.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    name: str
    truncated: int

    @property
    def dim(self) -> int: ...

    @property
    def max_chars(self) -> int:  # inputs longer than this are truncated (counted in ``truncated``)
        ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...


# How far back from max_chars a cut may move to land on whitespace instead of mid-word.
_CUT_SLACK = 64


def cut_chars(text: str, limit: int) -> str:
    """``text`` shortened to at most ``limit`` characters, preferring to end at whitespace."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = max(head.rfind(" ", limit - _CUT_SLACK), head.rfind("\n", limit - _CUT_SLACK))
    return head[:space].rstrip() if space > 0 else head


def clean_text(text: str) -> str:
    """NUL → space and lone surrogates → U+FFFD, so C engines see the whole string as valid UTF-8."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # surrogatepass keeps pairs (they decode to the character they spell); lone ones become U+FFFD
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed_queries/embed_passages take a list of strings, not a single string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"expected str, got {type(t).__name__}: {t!r:.60}")
    return out


def normalise_rows(vecs: np.ndarray) -> np.ndarray:
    """float32 copy of ``vecs`` with every non-zero row scaled to unit length."""
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    np.divide(vecs, norms, out=vecs, where=norms > 0)
    return vecs


class BaseEmbedder:
    """Lazy, thread-safe, batching embedder. Subclasses set name/dim/max_chars and implement ``_load`` and
    ``_encode``; they may override ``_fit`` to apply a token limit."""

    name: str = "base"
    dim: int = 0
    max_chars: int = 2048
    batch_size: int = 32

    def __init__(self, *, threads: int | None = None, batch_size: int | None = None) -> None:
        self.threads = threads
        if batch_size is not None:
            self.batch_size = batch_size
        self.truncated = 0
        self._lock = threading.RLock()
        self._loaded = False

    def __repr__(self) -> str:
        state = "loaded" if self._loaded else "not loaded"
        return f"<{type(self).__name__} {self.name} dim={self.dim} threads={self.threads} {state}>"

    @property
    def loaded(self) -> bool:
        return self._loaded

    def load(self) -> None:
        """Load the model now (otherwise the first embed call does). Safe to call from many threads."""
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                self._load()
                self._loaded = True

    # --- for subclasses
    def _load(self) -> None:
        raise NotImplementedError

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        """(len(texts), dim) vectors for non-empty, already fitted texts. Called with the lock held."""
        raise NotImplementedError

    def _fit(self, text: str, is_query: bool) -> tuple[str, bool]:
        """The text as the model will see it, and whether it was cut."""
        if len(text) > self.max_chars:
            return cut_chars(text, self.max_chars), True
        return text, False

    # --- public
    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, True)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, False)

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        items = [clean_text(t) for t in check_texts(texts)]
        rows = [i for i, t in enumerate(items) if t and not t.isspace()]
        if not rows:
            return np.zeros((len(items), self.dim), dtype=np.float32)
        self.load()
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            with self._lock:
                batch: list[str] = []
                for i in chunk:
                    text, was_cut = self._fit(items[i], is_query)
                    batch.append(text)
                    self.truncated += was_cut
                out[chunk] = self._encode(batch, is_query)
        return normalise_rows(out)
