"""Match strength on real documents and XQuAD at once (issue 51): fit ``kaynak.match``'s e5 model and thresholds on
the doc-QA set's fit half plus XQuAD, report the doc-QA test half (per language pair) and XQuAD by fold.

Inputs: a ``kaynak eval`` report of ``benchmarks/docqa/questions-51.jsonl`` (its ``per_query`` holds every hit's
features and whether it answers) and the XQuAD runs of ``match_calibration.py collect --embedder e5-small``.

    export KAYNAK_DATA_DIR=/tmp/k51data2
    kaynak eval benchmarks/docqa/questions-51.jsonl -c docqa --k 5 --modes keyword,vector,hybrid --out /tmp/r51
    KAYNAK_MATCH_CACHE=/tmp/k51mcache python benchmarks/studies/match_calibration.py collect --embedder e5-small
    KAYNAK_MATCH_CACHE=/tmp/k51mcache python benchmarks/studies/match_docqa.py /tmp/r51 [--features a,b,...]

A hit "answers" when it is the right file (and page, for a question with one): the doc-QA labels are strict, so a
neighbouring page that also answers counts against ``strong``. Thresholds: ``partial`` is the largest probability
that flags at most ``--flag-answerable`` of the fit data's answerable questions (no hit reaches it); ``strong`` the
smallest probability at which at least ``--strong-precision`` of the fit data's top hits above it answer.
Dev data only; never the holdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from match_calibration import auc

HERE = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KAYNAK_MATCH_CACHE", "/tmp/kaynak-match-calibration"))
PAIRS = ("tr", "en", "tr→en", "en→tr")

# a feature of one hit from its stored features, scores and its query's other hits
Feature = Callable[[dict[str, Any], list[dict[str, Any]]], float]


def _f(name: str) -> Feature:
    return lambda h, _hits: float((h.get("features") or {}).get(name, 0.0))


def _best_vector(hits: list[dict[str, Any]]) -> float:
    return max((float((x.get("features") or {}).get("vector", 0.0)) for x in hits), default=0.0)


FEATURES: dict[str, Feature] = {
    **{n: _f(n) for n in ("vector", "coverage", "known", "agree", "margin", "cross", "cross_vector")},
    "gap": lambda h, hits: float((h.get("features") or {}).get("vector", 0.0)) - _best_vector(hits),
    "vector_first": lambda h, _: 1.0 if (h.get("scores") or {}).get("vector_rank") == 1 else 0.0,
    "keyword_first": lambda h, _: 1.0 if (h.get("scores") or {}).get("keyword_rank") == 1 else 0.0,
    "keyword_seen": lambda h, _: 1.0 if (h.get("scores") or {}).get("keyword_rank") is not None else 0.0,
    "bm25": lambda h, _: math.log1p(max(0.0, float((h.get("scores") or {}).get("keyword") or 0.0))),
    "cross_coverage": lambda h, _: (
        float((h.get("features") or {}).get("cross", 0.0)) * float((h.get("features") or {}).get("coverage", 0.0))
    ),
}
DEFAULT = ("vector", "coverage", "known", "agree", "margin", "cross", "cross_vector")


# ---------------------------------------------------------------------- data
def docqa_rows(report: Path, questions: Path, modes: Sequence[str], vector: bool = True) -> list[dict[str, Any]]:
    """One row per (mode, question): {"set", "half", "answerable", "hits": [...]}, the hits with a vector score
    (``vector``; the e5 model's) or all of them (the lexical model's)."""
    r = json.loads((report / "report.json" if report.is_dir() else report).read_text())
    qs = {q["id"]: q for q in map(json.loads, questions.read_text().splitlines()) if q}
    out = []
    for mode in modes:
        for qid, p in r["per_query"].get(mode, {}).items():
            q = qs.get(qid)
            if q is None:
                continue
            hits = [
                dict(h, relevant=h["ok"]) for h in p["hits"] if not vector or (h.get("features") or {}).get("vector")
            ]
            out.append({"set": f"docqa/{q['lang']}", "mode": mode, "half": q.get("half"), "qid": qid,
                        "answerable": p["answerable"], "hits": hits})  # fmt: skip
    return out


def xquad_rows(embedder: str = "e5-small") -> list[dict[str, Any]]:
    out = []
    for f in sorted(CACHE.glob(f"*_{embedder}.jsonl")):
        set_name, half = f.stem.split("_")[0], f.stem.split("_")[1]
        for line in f.read_text().splitlines():
            row = json.loads(line)
            if row["qid"].startswith("nonsense"):
                continue
            hits = [h for h in row["hits"] if embedder != "e5-small" or (h.get("features") or {}).get("vector")]
            out.append({"set": f"xquad/{set_name}", "half": half, "qid": row["qid"],
                        "answerable": row["answerable"], "hits": hits})  # fmt: skip
    return out


# ---------------------------------------------------------------------- model
def matrix(rows: Sequence[dict[str, Any]], feats: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y, w = [], [], []
    for row in rows:
        weight = 1.0 / max(1, len(row["hits"]))
        for h in row["hits"]:
            x.append([FEATURES[f](h, row["hits"]) for f in feats])
            y.append(1.0 if h["relevant"] else 0.0)
            w.append(row.get("weight", 1.0) * weight)
    return np.array(x, dtype=float).reshape(-1, len(feats)), np.array(y), np.array(w)


def weighted_logistic(x: np.ndarray, y: np.ndarray, sw: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """``match_calibration.logistic`` with a weight per sample (each question weighs the same in total)."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    reg = np.eye(len(w)) * l2
    reg[0, 0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -60, 60)))
        grad = xb.T @ (sw * (p - y)) + reg @ w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def probs(row: dict[str, Any], feats: Sequence[str], w: np.ndarray) -> list[float]:
    out = []
    for h in row["hits"]:
        z = w[0] + sum(wi * FEATURES[f](h, row["hits"]) for wi, f in zip(w[1:], feats, strict=True))
        out.append(1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))))
    return out


def thresholds(rows: Sequence[dict[str, Any]], feats: Sequence[str], w: np.ndarray, flag: float, prec: float
               ) -> tuple[float, float]:  # fmt: skip
    best = sorted(max(probs(r, feats, w), default=0.0) for r in rows if r["answerable"])
    partial = best[int(flag * len(best))] if best else 0.05
    tops = sorted(((probs(r, feats, w)[0], r["hits"][0]["relevant"]) for r in rows if r["hits"]), reverse=True)
    strong, right = 1.0, 0
    for i, (p, ok) in enumerate(tops, 1):
        right += ok
        if right / i >= prec:
            strong = p
    return partial, max(strong, partial + 1e-4)


PARTIAL_CROSS: float | None = None  # --partial-cross: the partial threshold of cross-language hits


def _flag_score(row: dict[str, Any], feats: Sequence[str], w: np.ndarray, partial: float) -> float:
    """The best hit's probability over its own partial threshold, times ``partial`` (so ``< partial`` = flagged)."""
    out = 0.0
    for h, p in zip(row["hits"], probs(row, feats, w), strict=True):
        cross = (h.get("features") or {}).get("cross", 0.0) == 1.0
        t = PARTIAL_CROSS if cross and PARTIAL_CROSS is not None else partial
        out = max(out, p / t * partial if t > 0 else p)
    return out


def figures(rows: Sequence[dict[str, Any]], feats: Sequence[str], w: np.ndarray, partial: float, strong: float
            ) -> dict[str, Any]:  # fmt: skip
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    best = {id(r): _flag_score(r, feats, w, partial) for r in rows}
    tops = [(probs(r, feats, w)[0], r["hits"][0]["relevant"]) for r in rows if r["hits"]]
    strong_tops = [ok for p, ok in tops if p >= strong]
    pos = [best[id(r)] for r in ans]
    neg = [best[id(r)] for r in una]
    return {
        "n": f"{len(ans)}+{len(una)}",
        "auc": round(auc(pos, neg), 3) if pos and neg else None,
        "strong_prec": f"{sum(strong_tops) / len(strong_tops):.3f} ({len(strong_tops)})" if strong_tops else "–",
        "strong_right": round(sum(1 for p, ok in tops if p >= strong and ok) / max(1, len(ans)), 3),
        "ngm_ans": round(sum(1 for p in pos if p < partial) / max(1, len(pos)), 3),
        "ngm_unans": round(sum(1 for p in neg if p < partial) / len(neg), 3) if neg else None,
    }


def table(title: str, groups: dict[str, list[dict[str, Any]]], feats: Sequence[str], w: np.ndarray,
          partial: float, strong: float) -> None:  # fmt: skip
    print(f"\n### {title}\n\n| set | ans+unans | AUC | strong precision (n) | strong & right | ngm answerable | "
          "ngm unanswerable |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for name, rows in groups.items():
        f = figures(rows, feats, w, partial, strong)
        print(f"| {name} | {f['n']} | {f['auc']} | {f['strong_prec']} | {f['strong_right']} | {f['ngm_ans']} | "
              f"{f['ngm_unans']} |")  # fmt: skip


def by_pair(rows: Sequence[dict[str, Any]], mode: str) -> dict[str, list[dict[str, Any]]]:
    """Per language pair; an unanswerable question counts in its language's same-language row and in both
    cross-language rows whose question language it shares (so every pair has unanswerable questions)."""
    rows = [r for r in rows if r.get("mode") == mode]
    out = {}
    for pair in PAIRS:
        qlang = pair.split("→")[0]
        out[f"{mode} {pair}"] = [r for r in rows if r["set"] == f"docqa/{pair}" or
                                 (not r["answerable"] and r["set"] == f"docqa/{qlang}")]  # fmt: skip
    out[f"{mode} all"] = rows
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", type=Path)
    ap.add_argument("--questions", type=Path, default=HERE / "docqa" / "questions-51.jsonl")
    ap.add_argument("--features", default=",".join(DEFAULT))
    ap.add_argument("--flag-answerable", type=float, default=0.03)
    ap.add_argument("--strong-precision", type=float, default=0.92)
    ap.add_argument("--docqa-weight", type=float, default=5.0, help="each doc-QA question weighs this many XQuAD ones")
    ap.add_argument("--current", action="store_true", help="report today's kaynak.match model instead of a fit")
    ap.add_argument("--model", choices=("e5", "lexical"), default="e5",
                    help="lexical: keyword-mode doc-QA hits and the hash-embedder XQuAD runs")  # fmt: skip
    ap.add_argument("--partial-at", type=float, help="use this partial threshold instead of the fitted one")
    ap.add_argument("--partial-cross", type=float, help="the partial threshold of cross-language hits")
    ap.add_argument("--strong-at", type=float, help="use this strong threshold instead of the fitted one")
    a = ap.parse_args()
    global PARTIAL_CROSS
    PARTIAL_CROSS = a.partial_cross
    feats = [f for f in a.features.split(",") if f]
    lexical = a.model == "lexical"
    modes = ("keyword",) if lexical else ("hybrid", "vector")
    docqa = docqa_rows(a.report, a.questions, modes, vector=not lexical)
    for r in docqa:
        r["weight"] = a.docqa_weight
    xq = xquad_rows("hash" if lexical else "e5-small")
    fit_rows = [r for r in docqa if r["half"] == "fit"]
    test_rows = [r for r in docqa if r["half"] == "test"]
    if a.current:
        from kaynak.match import MODELS, PARTIAL_AT, STRONG_AT

        m = MODELS[a.model]
        feats = list(m.coefs)
        w = np.array([m.intercept, *[m.coefs[f] for f in feats]])
        partial, strong = PARTIAL_AT[a.model], STRONG_AT[a.model]
        from kaynak import match

        PARTIAL_CROSS = getattr(match, "PARTIAL_CROSS_AT", PARTIAL_AT)[a.model]
    else:
        x, y, sw = matrix([*fit_rows, *xq], feats)
        w = weighted_logistic(x, y, sw)
        partial, strong = thresholds([*fit_rows, *xq], feats, w, a.flag_answerable, a.strong_precision)
    coefs = {f: round(float(v), 4) for f, v in zip(feats, w[1:], strict=True)}
    print(f"features {feats}\nintercept {w[0]:.4f}, coefs {coefs}")
    partial = a.partial_at if a.partial_at is not None else partial
    strong = a.strong_at if a.strong_at is not None else strong
    print(f"partial_at {partial:.4f} (cross-language hits: {PARTIAL_CROSS}), strong_at {strong:.4f}")
    for mode in modes:
        table(f"doc-QA test half, {mode}", by_pair(test_rows, mode), feats, w, partial, strong)
    table(f"doc-QA fit half, {modes[0]}", {"fit all": [r for r in fit_rows if r["mode"] == modes[0]]}, feats, w,
          partial, strong)  # fmt: skip
    xs = {f"xquad {s} {h}": [r for r in xq if r["set"] == f"xquad/{s}" and r["half"] == h]
          for s in ("tr", "en", "tr-en") for h in ("a", "b")}  # fmt: skip
    table("XQuAD (in the fit: every fold)", xs, feats, w, partial, strong)
    if not a.current:  # XQuAD two-fold: fit on doc-QA fit half + one XQuAD half, measure the other
        for train, test in (("a", "b"), ("b", "a")):
            x, y, sw = matrix([*fit_rows, *[r for r in xq if r["half"] == train]], feats)
            wf = weighted_logistic(x, y, sw)
            pf, sf = thresholds([*fit_rows, *[r for r in xq if r["half"] == train]], feats, wf, a.flag_answerable,
                                a.strong_precision)  # fmt: skip
            pf = a.partial_at if a.partial_at is not None else pf
            sf = a.strong_at if a.strong_at is not None else sf
            table(f"XQuAD half {test}, fitted on half {train}",
                  {f"xquad {s} {test}": [r for r in xq if r["set"] == f"xquad/{s}" and r["half"] == test]
                   for s in ("tr", "en", "tr-en")}, feats, wf, pf, sf)  # fmt: skip


if __name__ == "__main__":
    main()
