"""Match strength: how likely a hit answers the question, and whether a search found no good match at all.

Every hit gets ``match = {"probability": p, "label": "strong" | "partial" | "weak"}`` and every response
``no_good_match`` (no hit at least ``partial``). ``p`` is a logistic model over what the search already knows
about the hit (docs/adr/0026-match-strength-and-quotes.md):

* ``vector`` — the hit's cosine similarity to the query (the vector leg's score, or its exact fill-in);
* ``coverage`` — the IDF-weighted share of the query's terms that the hit's chunk contains (IDF from the
  collection's own statistics, a term the collection never saw weighing most), so a question whose names and
  rare words are nowhere in the documents scores low even when its common words match;
* ``known`` — the share of the query's terms that occur anywhere in the searched collections (the plan's keyword
  coverage);
* ``agree`` — 1 when both legs rank the hit in their top 10;
* ``margin`` — how far the hit's similarity stands above the vector leg's 10th best (an answer stands out; for a
  question the documents do not answer, every chunk is about as similar);
* ``cross`` — 1 when the query's language is known and differs from the passage's own (``passage_language``: its
  words, else its collection's language; similarities across languages run lower, and the query's words cannot
  occur in the passage), with ``cross_vector`` its product with the similarity;
* ``bm25`` — log(1 + the keyword leg's BM25 score of the hit), 0 when the keyword leg did not find it.

Two fitted models: ``e5`` for collections embedded with an e5 model (the vector similarity is calibrated for it),
``lexical`` for every other embedder and for keyword search (no vector feature: the similarity scale of an
embedder it was not fitted on says nothing). ``e5`` was fitted by ``benchmarks/studies/match_docqa.py`` on the
doc-QA set's fit half (real documents, every language pair, unanswerable questions that share words with the
documents) and XQuAD; ``lexical`` by ``benchmarks/studies/match_calibration.py`` on XQuAD; never on the holdout.

A query without a single word (``wordless``: ``?!.,;:``) asks nothing a document can answer: its hits are ``weak``
and the response says ``no_good_match``, whatever the similarities (e5 puts punctuation near many chunks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LABELS = ("strong", "partial", "weak")
FEATURES = ("vector", "coverage", "known", "agree", "margin", "cross", "cross_vector", "bm25")
REFERENCE_RANK = 10  # ``margin`` is measured from the vector leg's similarity at this rank
AGREE_DEPTH = 10  # both legs rank the hit at most this deep: the legs agree
_WORD = re.compile(r"\w", re.UNICODE)


@dataclass(frozen=True)
class MatchModel:
    """A logistic model: p = σ(intercept + Σ coef · feature); features it has no coefficient for are unused."""

    name: str
    intercept: float
    coefs: Mapping[str, float]

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.intercept + sum(w * float(features.get(f, 0.0)) for f, w in self.coefs.items())
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


# e5: fitted by benchmarks/studies/match_docqa.py (issue 51) on the doc-QA set's fit half (benchmarks/docqa/
# questions-51.jsonl, each question weighing 20 XQuAD ones) and XQuAD tr / en / tr→en (match_calibration.py collect);
# lexical: fitted by match_calibration.py on XQuAD hash-embedder runs (issue 27). ADR 0026, round 5.
MODELS: dict[str, MatchModel] = {
    "e5": MatchModel(
        "e5",
        -39.6014,
        {
            "vector": 42.548,
            "coverage": 2.4687,
            "known": 0.8863,
            "agree": -0.1971,
            "margin": 24.6151,
            "cross": 16.254,
            "cross_vector": -16.3737,
            "bm25": 0.1803,
        },
    ),
    "lexical": MatchModel(
        "lexical", -6.3221, {"coverage": 14.0292, "known": -1.0474, "agree": 1.3017, "cross": 1.6685}
    ),
}
# A hit at least PARTIAL_AT likely to answer is "partial" (below it "weak"); a response none of whose hits reach it
# says no_good_match. A cross-language hit (the query's language is not the passage's) has its own, lower, threshold:
# its similarity runs lower. e5 (issue 51): PARTIAL_AT flags 2–5 % of XQuAD's and the doc-QA set's answerable
# same-language questions and 40–45 % of the doc-QA unanswerable ones (97–100 % of XQuAD's); STRONG_AT is where 97 %
# of the doc-QA fit half's top hits (and of XQuAD's) answer. lexical (issue 27): at most 4 % of XQuAD's answerable
# questions flagged; strong at 0.9 (issue 51: keyword-mode doc-QA strong precision 0.75 → 0.85, XQuAD 0.96–0.99).
PARTIAL_AT: dict[str, float] = {"e5": 0.1, "lexical": 0.0037}
PARTIAL_CROSS_AT: dict[str, float] = {"e5": 0.045, "lexical": 0.0037}
STRONG_AT: dict[str, float] = {"e5": 0.8, "lexical": 0.9}


def model_name(embedder: str | None, has_vector: bool) -> str:
    """``e5`` for a hit scored by an e5 embedder's vector leg, else ``lexical``."""
    if has_vector and embedder is not None and embedder.lower().startswith("e5"):
        return "e5"
    return "lexical"


def idf(df: int, n: int) -> float:
    """BM25's IDF of a term in ``df`` of ``n`` chunks (a term no chunk holds weighs most)."""
    return math.log(1.0 + (max(n, 0) - df + 0.5) / (df + 0.5))


def weighted_coverage(matched: set[str], weights: Mapping[str, float]) -> float:
    """The share of the query terms' weight that ``matched`` holds (0 when the query has no terms)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in matched) / total


def features(
    scores: Mapping[str, Any],
    coverage: float,
    known: float,
    reference: float | None = None,
    cross: bool = False,
    *,
    depth: int = AGREE_DEPTH,
) -> dict[str, float]:
    """The model's features of one hit from its ``scores`` (per-leg scores and ranks), its coverage, the query's
    ``known`` share, the vector leg's ``reference`` similarity (at ``REFERENCE_RANK``) and whether the query's
    language differs from the collection's (``cross``)."""
    raw = scores.get("vector")
    vector = float(raw) if isinstance(raw, int | float) else 0.0
    vr, kr = scores.get("vector_rank"), scores.get("keyword_rank")
    agree = 1.0 if isinstance(vr, int) and isinstance(kr, int) and vr <= depth and kr <= depth else 0.0
    margin = max(0.0, vector - reference) if reference is not None and isinstance(raw, int | float) else 0.0
    bm25 = scores.get("keyword")
    return {
        "vector": vector,
        "coverage": float(coverage),
        "known": float(known),
        "agree": agree,
        "margin": margin,
        "cross": 1.0 if cross else 0.0,
        "cross_vector": vector if cross else 0.0,
        "bm25": math.log1p(max(0.0, float(bm25))) if isinstance(bm25, int | float) else 0.0,
    }


STUB_WORDS = 4  # a passage of fewer words (and fewer than STUB_CHARS characters) is a heading or a scrap
STUB_CHARS = 40


def stub(text: str) -> bool:
    """Whether a chunk is only a heading or a few characters ("Word", "Kat Mülkiyeti Kanunu"): it cannot answer
    a question on its own, so search labels it ``weak`` and returns it only after every real passage."""
    return len(text.strip()) < STUB_CHARS and len(re.findall(r"\w+", text)) < STUB_WORDS


def passage_language(text: str, fallback: str) -> str:
    """The language a passage is written in (``turkish`` / ``english`` when its words say so, else ``fallback``,
    its collection's language): what ``cross`` compares the query's language with."""
    from kaynak.langdetect import detect_language

    return detect_language(text, min_evidence=3, min_share=0.7) or fallback


def label(probability: float, model: str, cross: bool = False) -> str:
    if probability >= STRONG_AT[model]:
        return "strong"
    if probability >= (PARTIAL_CROSS_AT if cross else PARTIAL_AT)[model]:
        return "partial"
    return "weak"


def match_of(feats: Mapping[str, float], model: str, asks: bool = True) -> dict[str, Any]:
    """``{"probability", "label"}`` of one hit; ``asks`` False (a ``wordless`` query): probability 0, ``weak``."""
    p = MODELS[model].probability(feats) if asks else 0.0
    return {"probability": round(p, 4), "label": label(p, model, feats.get("cross", 0.0) == 1.0)}


def wordless(query: str) -> bool:
    """Whether ``query`` holds no word at all (only punctuation, symbols or space: ``?!.,;:``): nothing in it can be
    answered, so every hit of such a query is ``weak`` whatever its similarity (``match_of(..., asks=False)``)."""
    return not _WORD.search(query)


def no_good_match(matches: Sequence[Mapping[str, Any]]) -> bool:
    """True when no hit is at least ``partial`` (also when there are no hits)."""
    return not any(m.get("label") in ("strong", "partial") for m in matches)
