"""``st:<model>``: any sentence-transformers model, by hub name or local folder (extra ``kaynak[torch]``).

Prefixes: e5-family models need ``query: `` / ``passage: ``, bge English models an instruction on queries,
bge-m3 and most others nothing. They are chosen in this order:

1. ``settings.model_prefixes`` (``KAYNAK_MODEL_PREFIXES`` / kaynak.toml): ``{model: [query_prefix,
   passage_prefix]}``, keyed by the name as written after ``st:``, the hub id, or the folder's name;
2. the table of known models below (``KNOWN_EMBEDDERS``), matched on the hub id or the folder's name
   (a folder inside the hub cache, ``models--org--name/…``, counts as ``org/name``);
3. any model whose name marks it as e5 (``e5`` between separators, e.g. ``my-e5-base-tr``): e5 prefixes;
4. the ``query`` / ``document`` prompts the model itself declares in config_sentence_transformers.json;
5. none.

Length limit: sentence-transformers truncates at the model's ``max_seq_length`` tokens (512 for e5, 8192
for bge-m3, 256 for all-MiniLM-L6-v2). kaynak first cuts input to 8 characters per token of that limit
(``max_chars``), which only bounds tokenizer work on absurd input, and counts in ``truncated`` every text
the model's own truncation shortens.

Threads: ``threads`` calls ``torch.set_num_threads`` when the model loads (process-wide in PyTorch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from kaynak.embeddings.base import BaseEmbedder
from kaynak.embeddings.hf import ModelRef, load_model, require_torch_extra, resolve_model
from kaynak.errors import ConfigError, ModelLoadError

PREFIX = "st:"
E5_PREFIXES = ("query: ", "passage: ")
BGE_EN_QUERY = "Represent this sentence for searching relevant passages: "
E5_INSTRUCT_QUERY = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
CHARS_PER_TOKEN_CAP = 8


@dataclass(frozen=True)
class KnownModel:
    dim: int
    query_prefix: str
    passage_prefix: str
    max_tokens: int
    notes: str


KNOWN_EMBEDDERS: dict[str, KnownModel] = {
    "intfloat/multilingual-e5-small": KnownModel(384, *E5_PREFIXES, 512, "multilingual; full-precision e5-small"),
    "intfloat/multilingual-e5-base": KnownModel(768, *E5_PREFIXES, 512, "multilingual"),
    "intfloat/multilingual-e5-large": KnownModel(1024, *E5_PREFIXES, 512, "multilingual"),
    "intfloat/multilingual-e5-large-instruct": KnownModel(
        1024, E5_INSTRUCT_QUERY, "", 512, "multilingual; instruction on queries"
    ),
    "intfloat/e5-small-v2": KnownModel(384, *E5_PREFIXES, 512, "English only"),
    "intfloat/e5-base-v2": KnownModel(768, *E5_PREFIXES, 512, "English only"),
    "intfloat/e5-large-v2": KnownModel(1024, *E5_PREFIXES, 512, "English only"),
    "BAAI/bge-m3": KnownModel(1024, "", "", 8192, "multilingual; 8192 tokens"),
    "BAAI/bge-small-en-v1.5": KnownModel(384, BGE_EN_QUERY, "", 512, "English only"),
    "BAAI/bge-base-en-v1.5": KnownModel(768, BGE_EN_QUERY, "", 512, "English only"),
    "BAAI/bge-large-en-v1.5": KnownModel(1024, BGE_EN_QUERY, "", 512, "English only"),
    "sentence-transformers/all-MiniLM-L6-v2": KnownModel(384, "", "", 256, "English only; small and fast"),
    "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2": KnownModel(
        384, "", "", 128, "multilingual paraphrase (not for retrieval)"
    ),
    "sentence-transformers/paraphrase-multilingual-mpnet-base-v2": KnownModel(
        768, "", "", 128, "multilingual paraphrase (not for retrieval)"
    ),
}
_KNOWN_BY_KEY = {k.lower(): v for k, v in KNOWN_EMBEDDERS.items()}
_KNOWN_BY_BASENAME = {k.split("/")[-1].lower(): v for k, v in KNOWN_EMBEDDERS.items()}
_E5_NAME = re.compile(r"(?:^|[-_/.\s])(?:multilingual-)?e5(?:$|[-_/.\s])", re.IGNORECASE)


def known_model(ref: ModelRef) -> KnownModel | None:
    if ref.hub_id is not None:
        return _KNOWN_BY_KEY.get(ref.hub_id.lower())
    base = ref.basename.lower()
    return _KNOWN_BY_KEY.get(base) or _KNOWN_BY_BASENAME.get(base.split("/")[-1])


def _override(ref: ModelRef, overrides: dict[str, Any] | None) -> tuple[str, str] | None:
    if not overrides:
        return None
    keys = [ref.spec, PREFIX + ref.spec, ref.ident, PREFIX + ref.ident, ref.basename]
    if ref.local is not None:
        keys.append(ref.local.name)
    for key in keys:
        if key in overrides:
            value = overrides[key]
            if not isinstance(value, list | tuple) or len(value) != 2 or not all(isinstance(v, str) for v in value):
                raise ConfigError(
                    f"model_prefixes[{key!r}] must be a list of two strings [query_prefix, passage_prefix], "
                    f"got {value!r} (check KAYNAK_MODEL_PREFIXES and kaynak.toml)"
                )
            return value[0], value[1]
    return None


def resolve_prefixes(ref: ModelRef, overrides: dict[str, Any] | None = None) -> tuple[str, str, str] | None:
    """(query_prefix, passage_prefix, where they came from), or None to ask the model's own prompts."""
    found = _override(ref, overrides)
    if found is not None:
        return (*found, "settings.model_prefixes")
    known = known_model(ref)
    if known is not None:
        return known.query_prefix, known.passage_prefix, "kaynak's table of known models"
    if _E5_NAME.search(ref.basename):
        return (*E5_PREFIXES, "e5 family (by name)")
    return None


class SentenceTransformerEmbedder(BaseEmbedder):
    """A sentence-transformers model behind the Embedder protocol. The model loads on first use."""

    batch_size = 32

    def __init__(
        self,
        model: str | ModelRef,
        *,
        threads: int | None = None,
        prefixes: dict[str, Any] | None = None,
        batch_size: int | None = None,
    ) -> None:
        require_torch_extra(f"the embedder '{PREFIX}{model if isinstance(model, str) else model.spec}'")
        super().__init__(threads=threads, batch_size=batch_size)
        self.ref = model if isinstance(model, ModelRef) else resolve_model(model, prefix=PREFIX)
        self.name = PREFIX + self.ref.ident
        self.known = known_model(self.ref)
        resolved = resolve_prefixes(self.ref, prefixes)
        self._prefixes_pending = resolved is None
        self.query_prefix, self.passage_prefix, self.prefix_source = resolved or ("", "", "none")
        self._dim: int | None = self.known.dim if self.known and self.ref.hub_id else None
        self.max_seq_length = self.known.max_tokens if self.known else 512
        self._model: Any = None

    def __repr__(self) -> str:  # must not load the model to show dim
        state = "loaded" if self._loaded else "not loaded"
        return f"<SentenceTransformerEmbedder {self.name} dim={self._dim} threads={self.threads} {state}>"

    # dim and max_chars come from the model once it is loaded
    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:  # not in the table: only the model knows
            self.load()
        assert self._dim is not None
        return self._dim

    @property
    def max_chars(self) -> int:  # type: ignore[override]
        return CHARS_PER_TOKEN_CAP * self.max_seq_length

    def _load(self) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        if self.threads:
            torch.set_num_threads(int(self.threads))

        def loader(ident: str, local_only: bool) -> Any:
            return SentenceTransformer(ident, local_files_only=local_only)

        model = load_model(self.ref, loader, prefix=PREFIX)
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise ModelLoadError(f"{self.name}: the model does not say its embedding dimension")
        if self._dim is not None and dim != self._dim:
            # the table is wrong for this copy; trust the model
            self.known = None
        self._dim = int(dim)
        self.max_seq_length = int(model.max_seq_length or self.max_seq_length)
        if self._prefixes_pending:
            prompts = getattr(model, "prompts", None) or {}
            self.query_prefix = prompts.get("query", "") or ""
            self.passage_prefix = prompts.get("document", prompts.get("passage", "")) or ""
            if self.query_prefix or self.passage_prefix:
                self.prefix_source = "the model's own prompts"
            self._prefixes_pending = False
        self._model = model

    def _fit(self, text: str, is_query: bool) -> tuple[str, bool]:
        text, cut = super()._fit(text, is_query)
        full = (self.query_prefix if is_query else self.passage_prefix) + text
        if not cut and len(full) + 2 > self.max_seq_length:  # a token covers at least one character
            cut = self._token_count(full) > self.max_seq_length
        return text, cut

    def _token_count(self, text: str) -> int:
        tok = getattr(self._model, "tokenizer", None)
        if tok is None:
            return 0
        try:
            return len(tok(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])
        except Exception:  # an exotic tokenizer: not counted, the model still truncates
            return 0

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        prefix = self.query_prefix if is_query else self.passage_prefix
        vecs = self._model.encode(
            [prefix + t for t in texts],
            prompt="",  # never add a default prompt on top of our prefix
            batch_size=len(texts),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)
