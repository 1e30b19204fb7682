"""Finding and loading sentence-transformers models (embedders and cross-encoders) by hub name or local folder.

A model is named either by a local folder (an absolute or ``./`` path, ``~/…``, or any path that exists) or by
a Hugging Face hub id (``org/name``). Loading follows these rules, shared by ``st:`` embedders and ``st-cross:``
rerankers:

* Local folder: it must exist and hold ``modules.json`` or ``config.json``; it is loaded with
  ``local_files_only=True``, so nothing is fetched from the hub even where the hub is reachable. This is the
  offline guard; kaynak never sets HF_HUB_OFFLINE in the environment, so other hub names keep working.
* Hub id already in the local Hugging Face cache: loaded from the cache first (``local_files_only=True``),
  so a cached model works offline without minutes of retries; if that fails, from the hub.
* Hub id not cached: if the hub endpoint cannot be reached (checked with one 3-second TCP connect, skipped
  when a proxy is configured) or HF_HUB_OFFLINE is set, a ModelLoadError says so at once; otherwise
  sentence-transformers downloads it.

Every failure becomes a ModelLoadError naming the model and what to do; a missing extra is MissingExtra.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

from kaynak.errors import MissingExtra, ModelLoadError, UnknownModel

INSTALL_TORCH = "pip install 'kaynak[torch]'"

T = TypeVar("T")


def torch_extra_installed() -> bool:
    """True when sentence-transformers and torch can be imported (checked without importing them)."""
    try:
        return find_spec("sentence_transformers") is not None and find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def require_torch_extra(what: str) -> None:
    if not torch_extra_installed():
        raise MissingExtra(
            f"{what} needs sentence-transformers and PyTorch, which are in kaynak's optional extra: "
            f"{INSTALL_TORCH}  (for a CPU-only PyTorch, install it first: "
            "pip install torch --index-url https://download.pytorch.org/whl/cpu)"
        )


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache folder, resolved the way huggingface_hub does."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _is_model_dir(path: Path) -> bool:
    return (path / "modules.json").is_file() or (path / "config.json").is_file()


def hf_cached_snapshot(repo_id: str) -> Path | None:
    """The folder of ``repo_id`` in the local hub cache (the ``main`` snapshot if recorded), or None."""
    root = hf_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    snapshots = root / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = root / "refs" / "main"
    if ref.is_file():
        snap = snapshots / ref.read_text().strip()
        if _is_model_dir(snap):
            return snap
    for snap in sorted(snapshots.iterdir()):
        if _is_model_dir(snap):
            return snap
    return None


def hub_id_from_path(path: Path) -> str | None:
    """``org/name`` for a folder inside a hub cache entry (``…/models--org--name/snapshots/<rev>``)."""
    for part in reversed(path.parts):
        if part.startswith("models--"):
            return part[len("models--") :].replace("--", "/")
    return None


def _offline_flag() -> str | None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return var
    return None


def hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the hub cannot be reached, or None when it may be (a proxy is configured, or it answered)."""
    flag = _offline_flag()
    if flag:
        return f"{flag} is set"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as err:
        return f"cannot connect to {host}:{port}: {err}"


@dataclass(frozen=True)
class ModelRef:
    """A model named by the user: a local folder or a hub id (with its cached copy, if any)."""

    spec: str
    local: Path | None = None
    hub_id: str | None = None

    @property
    def ident(self) -> str:
        """The canonical identity: the absolute folder, or the hub id."""
        return str(self.local) if self.local is not None else str(self.hub_id)

    @property
    def cached(self) -> Path | None:
        return hf_cached_snapshot(self.hub_id) if self.hub_id else None

    @property
    def where(self) -> Path | None:
        """Where the weights are on this machine, if they are."""
        return self.local if self.local is not None else self.cached

    @property
    def basename(self) -> str:
        if self.local is not None:
            return hub_id_from_path(self.local) or self.local.name
        return str(self.hub_id)


def _looks_local(spec: str) -> bool:
    if spec.startswith(("/", "./", "../", "~", ".\\", "..\\")) or "\\" in spec or spec in {".", ".."}:
        return True
    if spec.count("/") > 1:  # hub ids are "name" or "org/name"
        return True
    return Path(spec).exists()


def resolve_model(spec: str, *, prefix: str) -> ModelRef:
    """Check the part after ``st:`` / ``st-cross:`` and say where the model is. Raises UnknownModel for an
    empty name, ModelLoadError for a local path that does not exist or is not a model folder."""
    spec = spec.strip()
    if not spec:
        raise UnknownModel(
            f"'{prefix}' needs a model after the colon: {prefix}<hub model name or local folder>, "
            f"e.g. {prefix}/models/my-model"
        )
    if not _looks_local(spec):
        return ModelRef(spec=spec, hub_id=spec)
    path = Path(spec).expanduser().resolve()
    if not path.exists():
        raise ModelLoadError(
            f"{prefix}{spec}: the folder {path} does not exist. Give the folder that holds the model's "
            "config.json (and modules.json for sentence-transformers models), or a hub name such as "
            f"{prefix}intfloat/multilingual-e5-small."
        )
    if not path.is_dir():
        raise ModelLoadError(
            f"{prefix}{spec}: {path} is a file; give the folder that holds the model "
            "(the one with config.json / modules.json)."
        )
    if not _is_model_dir(path):
        raise ModelLoadError(
            f"{prefix}{spec}: {path} is not a model folder (it has neither modules.json nor config.json). "
            "Point to the folder a model was saved to with save_pretrained() / save(), or downloaded to "
            "with huggingface-cli download --local-dir."
        )
    return ModelRef(spec=spec, local=path)


def load_model(ref: ModelRef, loader: Callable[[str, bool], T], *, prefix: str) -> T:
    """Call ``loader(name_or_path, local_files_only)`` following the module's rules; wrap every failure."""
    label = f"{prefix}{ref.spec}"
    if ref.local is not None:
        try:
            return loader(str(ref.local), True)
        except Exception as err:
            raise ModelLoadError(
                f"{label}: {ref.local} could not be loaded as a model ({type(err).__name__}: {err}). "
                "Check that the folder holds a complete saved model (config, weights, tokenizer)."
            ) from err
    hub_id = str(ref.hub_id)
    cached = ref.cached
    first_error: Exception | None = None
    if cached is not None:
        try:
            return loader(hub_id, True)
        except Exception as err:  # an incomplete cache entry: try the hub
            first_error = err
    reason = hub_unreachable()
    if reason is not None:
        where = (
            f"its cached copy in {cached} failed to load ({first_error})"
            if cached
            else (f"it is not in the local Hugging Face cache ({hf_cache_dir()})")
        )
        raise ModelLoadError(
            f"{label}: {where} and the model hub cannot be reached ({reason}). Download it where the hub is "
            f"reachable (huggingface-cli download {hub_id}) and copy the cache folder here, or save it to a "
            f"folder and name that: {prefix}/path/to/model."
        ) from first_error
    try:
        return loader(hub_id, False)
    except Exception as err:
        raise ModelLoadError(
            f"{label}: could not load '{hub_id}' from the Hugging Face hub ({type(err).__name__}: {err}). "
            "Check the name (org/model), your access to it (HF_TOKEN for gated models), or name a local folder."
        ) from err
