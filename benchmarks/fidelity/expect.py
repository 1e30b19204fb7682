"""Record per-file expectations in ``corpus/MANIFEST.tsv`` from a benchmark run, for tests/loaders/test_world_files.py:

* ``must_parse``: ``yes`` when the run stored the file (ok or partial);
* ``min_recall``: the run's word recall less a margin of 0.03 (rounded down to 0.01), blank without a reference;
* ``pages``: kaynak's page count where it agreed with the reference (PDF pages, slides, sheets, chapters, …);
* ``parse_s``: the parse time measured (the tests' fast subset takes quick files).

    python benchmarks/fidelity/expect.py benchmarks/fidelity/results/AFTER.json
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "corpus" / "MANIFEST.tsv"
MARGIN = 0.03
#: files whose text holds the time they are read (a slide's automatic date field, which LibreOffice fills with the
#: conversion's clock): no recall expectation, it changes by the minute
CLOCK = frozenset({"tika/testPPT_autodate.ppt", "tika/testPPT_autodate.pptx"})


def main() -> None:
    results = {r["file"]: r for r in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))}
    with open(MANIFEST, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    cols = [c for c in rows[0] if c not in ("must_parse", "min_recall", "pages", "parse_s")] + [
        "must_parse",
        "min_recall",
        "pages",
        "parse_s",
    ]
    for row in rows:
        r = results.get(row["file"])
        row["must_parse"] = "yes" if r and r["outcome"] in ("ok", "partial") else ""
        recall = r.get("recall") if r and row["file"] not in CLOCK else None
        row["min_recall"] = "" if recall is None else f"{max(0.0, math.floor((recall - MARGIN) * 100) / 100):.2f}"
        row["parse_s"] = f"{r['wall_s']:.2f}" if r else ""
        row["pages"] = str(r["pages"]) if r and r.get("pages_agree") and r.get("pages_kind") != "rendered" else ""
    with open(MANIFEST, "w", encoding="utf-8", newline="") as f:
        f.write("\t".join(cols) + "\n")
        for row in rows:
            f.write("\t".join(row.get(c, "") for c in cols) + "\n")
    print(f"{len(rows)} rows; {sum(1 for r in rows if r['must_parse'])} must parse")


if __name__ == "__main__":
    main()
