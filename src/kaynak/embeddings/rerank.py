"""Rerankers: score (query, passage) pairs with a cross-encoder to reorder the fused top hits.

Off by default (``settings.reranker`` unset); turned on by naming one: ``st-cross:<hub model or local folder>``,
a sentence-transformers ``CrossEncoder`` (extra ``kaynak[torch]``). Model lookup, the offline guard for local
folders and the error messages are those of ``st:`` embedders (kaynak.embeddings.hf). No cross-encoder ships
inside a PyPI package, so none works out of the box offline; ``KNOWN_RERANKERS`` lists good ones to download.

``score(query, passages)`` returns one float per passage, higher = more relevant, in the model's own scale
(sigmoid probabilities for single-label models). Defined behaviour for awkward input:

* no passages → ``[]``;
* an empty or whitespace-only query → every score 0.0 (nothing to rank by; a stable sort keeps the order);
* an empty or whitespace-only passage is not sent to the model and scores 1.0 below the lowest real score
  (0.0 if there is none), so it always ranks last and the result stays finite (JSON-safe);
* query and passages are cut to 8 characters per token of the model's ``max_length`` (bounding tokenizer
  work); the model then truncates each pair to ``max_length`` tokens itself.

Models load lazily, once per (name, threads) per process, thread-safe; one ``score`` call runs at a time.
Names are looked up in a registry: ``register_reranker(name_or_prefix, factory)`` adds one (as
``kaynak.embeddings.register_embedder`` does for embedders).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kaynak.embeddings.base import check_texts, clean_text, cut_chars
from kaynak.embeddings.hf import (
    INSTALL_TORCH,
    ModelRef,
    load_model,
    require_torch_extra,
    resolve_model,
    torch_extra_installed,
)
from kaynak.embeddings.registry import Registry
from kaynak.errors import ModelLoadError, UnknownModel

PREFIX = "st-cross:"
CHARS_PER_TOKEN_CAP = 8
_OFF = {"", "none", "off", "false", "0"}


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: list[str]) -> list[float]: ...


@dataclass(frozen=True)
class KnownReranker:
    notes: str


KNOWN_RERANKERS: dict[str, KnownReranker] = {
    "BAAI/bge-reranker-v2-m3": KnownReranker("multilingual; 568M parameters"),
    "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1": KnownReranker("multilingual; small"),
    "BAAI/bge-reranker-base": KnownReranker("English and Chinese"),
    "cross-encoder/ms-marco-MiniLM-L6-v2": KnownReranker("English only; small"),
}


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder behind the Reranker protocol."""

    def __init__(self, model: str | ModelRef, *, threads: int | None = None, batch_size: int = 32) -> None:
        require_torch_extra(f"the reranker '{PREFIX}{model if isinstance(model, str) else model.spec}'")
        self.ref = model if isinstance(model, ModelRef) else resolve_model(model, prefix=PREFIX)
        self.name = PREFIX + self.ref.ident
        self.threads = threads
        self.batch_size = batch_size
        self.max_length = 512
        self._model: Any = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<CrossEncoderReranker {self.name} threads={self.threads}>"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def max_chars(self) -> int:
        return CHARS_PER_TOKEN_CAP * self.max_length

    def load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                self._model = self._load()

    def _load(self) -> Any:
        import torch
        from sentence_transformers import CrossEncoder

        if self.threads:
            torch.set_num_threads(int(self.threads))

        def loader(ident: str, local_only: bool) -> Any:
            return CrossEncoder(ident, local_files_only=local_only)

        model = load_model(self.ref, loader, prefix=PREFIX)
        labels = getattr(model, "num_labels", None)
        if labels is None:
            labels = getattr(getattr(model, "config", None), "num_labels", 1)
        if labels != 1:
            raise ModelLoadError(
                f"{self.name}: this cross-encoder has {labels} output labels; a reranker needs a model "
                "with one relevance score per pair (num_labels = 1)."
            )
        # sentence-transformers >= 6 calls it max_seq_length (max_length is a deprecated alias), 3.x max_length
        length = getattr(model, "max_seq_length", None) or getattr(model, "max_length", None)
        if isinstance(length, int) and 0 < length < 1_000_000:
            self.max_length = length
        return model

    def score(self, query: str, passages: list[str]) -> list[float]:
        items = [clean_text(p) for p in check_texts(passages)]
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        if not items:
            return []
        query = clean_text(query)
        if not query.strip():
            return [0.0] * len(items)
        rows = [i for i, p in enumerate(items) if p and not p.isspace()]
        scores = np.zeros(len(items), dtype=np.float64)
        if rows:
            self.load()
            q = cut_chars(query, self.max_chars)
            pairs = [(q, cut_chars(items[i], self.max_chars)) for i in rows]
            with self._lock:
                raw = self._model.predict(
                    pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
                )
            got = np.asarray(raw, dtype=np.float64).reshape(len(rows))
            scores[rows] = got
            floor = float(got.min()) - 1.0
        else:
            floor = 0.0
        sent = set(rows)
        scores[[i for i in range(len(items)) if i not in sent]] = floor
        return [float(s) for s in scores]


# factory(arg, threads) -> Reranker, where arg is what follows a prefix ("" for an exact name); key(arg, threads)
# -> the cache key (canonical name and threads).
RerankerFactory = Callable[[str, "int | None"], Reranker]
RerankerKey = Callable[[str, "int | None"], Hashable]


def _unknown(name: str) -> UnknownModel:
    return UnknownModel(
        f"unknown reranker '{name}'. Available: {available_rerankers()}. "
        "Set KAYNAK_RERANKER or reranker in kaynak.toml."
    )


_REGISTRY: Registry[Reranker, int | None] = Registry(_unknown)


def register_reranker(
    name_or_prefix: str, factory: RerankerFactory, *, key: RerankerKey | None = None, shown: str | None = None
) -> None:
    """Make a reranker available by name or by prefix (``"st-cross:"``: the factory gets the rest of the name);
    like ``register_embedder``. ``key`` defaults to (name, arg, threads)."""
    if name_or_prefix.strip().lower() in _OFF:
        raise ValueError(f"'{name_or_prefix}' cannot name a reranker")
    _REGISTRY.register(name_or_prefix, factory, key=key, shown=shown)


def available_rerankers() -> str:
    return ", ".join(e.shown for e in _REGISTRY.entries() if e.shown) + ", or unset for none"


def get_reranker(name: str | None, *, threads: int | None = None) -> Reranker | None:
    """The reranker called ``name`` (None, '' or 'none' = no reranking), loaded lazily and cached."""
    if name is None or name.strip().lower() in _OFF:
        return None
    return _REGISTRY.get(name, threads)


def _cross_encoder_key(arg: str, threads: int | None) -> Hashable:
    return (PREFIX + resolve_model(arg, prefix=PREFIX).ident, threads)


def _cross_encoder(arg: str, threads: int | None) -> Reranker:
    return CrossEncoderReranker(resolve_model(arg, prefix=PREFIX), threads=threads)


register_reranker(
    PREFIX,
    _cross_encoder,
    key=_cross_encoder_key,
    shown=f"{PREFIX}<hub model name or local folder> (e.g. {PREFIX}BAAI/bge-reranker-v2-m3)",
)


def list_rerankers() -> list[dict[str, Any]]:
    """Entries for ``kaynak models``: the backend and the known cross-encoders, with where their weights are."""
    extra = torch_extra_installed()
    missing = "" if extra else f" Needs {INSTALL_TORCH}."
    out: list[dict[str, Any]] = [
        {
            "name": f"{PREFIX}<model or path>",
            "kind": "reranker",
            "installed": extra,
            "dim": None,
            "path": None,
            "notes": "any sentence-transformers CrossEncoder: hub name or local folder; off by default." + missing,
        }
    ]
    for hub_id, info in KNOWN_RERANKERS.items():
        where = ModelRef(spec=hub_id, hub_id=hub_id).cached
        out.append(
            {
                "name": PREFIX + hub_id,
                "kind": "reranker",
                "installed": extra and where is not None,
                "dim": None,
                "path": str(where) if where else None,
                "notes": info.notes + ("" if where else "; not downloaded") + missing,
            }
        )
    return out
