"""Per-language-pair figures of a ``kaynak eval`` report on ``questions-51.jsonl``, for one half or both.

    python benchmarks/docqa/summary.py REPORT_DIR [--half fit|test|all] [--modes hybrid,vector]

Rows: mode × question language pair (tr, en, tr→en, en→tr; unanswerable questions count in their language's
row). Columns: hit@1 / hit@5 / MRR@5 by page where the question has one, else by file (answerable questions);
precision of ``strong`` on the top hit; share of answerable questions whose top hit is strong and right;
``no_good_match`` on answerable and on unanswerable questions; the share of top quotes ending at a sentence end.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAIRS = ("tr", "en", "tr→en", "en→tr", "all")


def rows(report: dict, questions: dict[str, dict], half: str, modes: list[str] | None) -> list[list[str]]:
    out = []
    for mode, per in report["per_query"].items():
        if modes and mode not in modes:
            continue
        for pair in PAIRS:
            items = [
                (questions[qid], r)
                for qid, r in per.items()
                if qid in questions
                and (half == "all" or questions[qid].get("half") == half)
                and (pair == "all" or questions[qid]["lang"] == pair)
            ]
            ans = [(q, r) for q, r in items if r["answerable"]]
            una = [r for q, r in items if not r["answerable"]]
            ranks = [r["page_rank"] if q.get("page") else r["source_rank"] for q, r in ans]
            n = len(ranks)
            h1 = sum(1 for x in ranks if x == 1) / n if n else 0
            h5 = sum(1 for x in ranks if x and x <= 5) / n if n else 0
            mrr = sum(1 / x for x in ranks if x and x <= 5) / n if n else 0
            tops = [r["hits"][0] for _, r in items if r["hits"]]
            strong = [h["ok"] for h in tops if h["label"] == "strong"]
            sp = f"{sum(strong) / len(strong):.3f} ({len(strong)})" if strong else "–"
            sr = sum(1 for _, r in ans if r["hits"] and r["hits"][0]["label"] == "strong" and r["hits"][0]["ok"])
            ngm_a = sum(1 for _, r in ans if r["no_good_match"]) / n if n else 0
            ngm_u = f"{sum(1 for r in una if r['no_good_match']) / len(una):.3f}" if una else "–"
            ends = [r["quote_ends_sentence"] for _, r in items if r["quote_ends_sentence"] is not None]
            out.append(
                [mode, pair, f"{n}+{len(una)}", f"{h1:.3f}", f"{h5:.3f}", f"{mrr:.3f}", sp,
                 f"{sr / n if n else 0:.3f}", f"{ngm_a:.3f}", ngm_u, f"{sum(ends) / len(ends):.3f}" if ends else "–"]
            )  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", type=Path)
    ap.add_argument("--half", default="test", choices=("fit", "test", "all"))
    ap.add_argument("--modes", default="")
    ap.add_argument("--questions", type=Path, default=HERE / "questions-51.jsonl")
    a = ap.parse_args()
    report = json.loads((a.report / "report.json" if a.report.is_dir() else a.report).read_text())
    questions = {q["id"]: q for q in map(json.loads, a.questions.read_text().splitlines()) if q}
    head = ["mode", "pair", "ans+unans", "hit@1", "hit@5", "MRR@5", "strong prec (n)", "strong right",
            "ngm ans", "ngm unans", "quote ends sent."]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows(report, questions, a.half, [m for m in a.modes.split(",") if m]):
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
