"""Rerankers: names and errors, and the real CrossEncoder loading and scoring path on a tiny model that the
test builds from a small config and saves to a temporary folder (no cross-encoder ships in any package)."""

from __future__ import annotations

import math
import socket
import sys
from pathlib import Path

import pytest

from kaynak.embeddings.rerank import CrossEncoderReranker, Reranker, get_reranker, list_rerankers
from kaynak.errors import MissingExtra, ModelLoadError, UnknownModel

QUERY = "where is the cat"
PASSAGES = ["the cat sat on the mat", "paris is the capital of france", "a dog is on the mat"]
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "capital",
    "of",
    "is",
    "what",
    "where",
    "paris",
    "france",
    "ankara",
    "başkent",
]


def build_tiny_cross_encoder(folder: Path, num_labels: int = 1) -> Path:
    """A 2-layer, 32-wide BERT sequence classifier with a 20-word WordPiece vocabulary, saved like any
    Hugging Face model (config.json, model.safetensors, tokenizer.json)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    tk = tokenizers.Tokenizer(tokenizers.models.WordPiece(vocab, unk_token="[UNK]"))
    tk.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tk.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=num_labels,
        initializer_range=0.2,
    )
    transformers.BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers")
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="module")
def reranker(tiny: Path) -> Reranker:
    r = get_reranker(f"st-cross:{tiny}")
    assert isinstance(r, CrossEncoderReranker)
    with pytest.MonkeyPatch.context() as mp:  # a local folder loads without the network
        mp.setattr(socket.socket, "connect", lambda *a, **k: (_ for _ in ()).throw(AssertionError("network")))
        r.load()
    return r


# --------------------------------------------------------------------------- names and errors


@pytest.mark.parametrize("off", [None, "", "  ", "none", "off"])
def test_off_by_default(off: str | None) -> None:
    assert get_reranker(off) is None


def test_unknown_name_lists_the_backend() -> None:
    with pytest.raises(UnknownModel, match=r"st-cross:<hub model name or local folder>.*KAYNAK_RERANKER"):
        get_reranker("bge-reranker")


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(UnknownModel):
        get_reranker("st-cross:")
    with pytest.raises(ModelLoadError, match="does not exist"):
        get_reranker(f"st-cross:{tmp_path / 'missing'}")
    with pytest.raises(ModelLoadError, match="not a model folder"):
        get_reranker(f"st-cross:{tmp_path}")


def test_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(MissingExtra, match=r"pip install 'kaynak\[torch\]'"):
        get_reranker(f"st-cross:{tmp_path}")
    assert not list_rerankers()[0]["installed"]


def test_list_rerankers() -> None:
    rows = list_rerankers()
    assert all(r["kind"] == "reranker" for r in rows)
    assert {"st-cross:<model or path>", "st-cross:BAAI/bge-reranker-v2-m3"} <= {r["name"] for r in rows}


# --------------------------------------------------------------------------- the tiny real model


def test_scores_like_the_cross_encoder_itself(reranker: Reranker, tiny: Path) -> None:
    from sentence_transformers import CrossEncoder

    scores = reranker.score(QUERY, PASSAGES)
    assert len(scores) == 3 and all(isinstance(s, float) and math.isfinite(s) for s in scores)
    direct = CrossEncoder(str(tiny), local_files_only=True).predict([(QUERY, p) for p in PASSAGES])
    assert scores == pytest.approx([float(x) for x in direct], abs=1e-5)
    assert len(set(scores)) == 3  # the text reaches the model
    assert reranker.score(QUERY, PASSAGES) == scores  # deterministic


def test_name_cache_and_protocol(reranker: Reranker, tiny: Path) -> None:
    assert isinstance(reranker, Reranker)
    assert reranker.name == f"st-cross:{tiny}"
    assert get_reranker(f"  st-cross:{tiny} ") is reranker


def test_awkward_input(reranker: Reranker) -> None:
    assert reranker.score(QUERY, []) == []
    assert reranker.score("   ", PASSAGES) == [0.0, 0.0, 0.0]
    scores = reranker.score(QUERY, ["", PASSAGES[0], " \n", PASSAGES[1]])
    real = reranker.score(QUERY, [PASSAGES[0], PASSAGES[1]])
    assert scores[1] == pytest.approx(real[0]) and scores[3] == pytest.approx(real[1])
    assert scores[0] == scores[2] == pytest.approx(min(real) - 1.0)
    assert reranker.score(QUERY, ["", " "]) == [0.0, 0.0]
    with pytest.raises(TypeError):
        reranker.score(QUERY, "one string")  # type: ignore[arg-type]
    long = reranker.score(QUERY, ["the cat " * 50_000])  # 400,000 characters: cut, then truncated by the model
    assert len(long) == 1 and math.isfinite(long[0])


def test_multi_label_model_is_rejected(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    folder = build_tiny_cross_encoder(tmp_path / "nli", num_labels=3)
    r = get_reranker(f"st-cross:{folder}")
    assert r is not None
    with pytest.raises(ModelLoadError, match="3 output labels"):
        r.score(QUERY, PASSAGES)
