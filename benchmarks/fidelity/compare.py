"""Compare two fidelity runs file by file: what got better, what got worse.

    python benchmarks/fidelity/compare.py benchmarks/fidelity/results/BEFORE.json benchmarks/fidelity/results/AFTER.json

Prints Markdown: per format the files whose outcome or word recall (by at least 0.02) or page / section agreement
changed, regressions listed by name first.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path
from typing import Any

RANK = {"failed": 0, "no text": 0, "partial": 1, "ok": 2}
STEP = 0.02


def change(a: dict[str, Any], b: dict[str, Any]) -> tuple[int, str]:
    """(+1 better, -1 worse, 0 same, what changed)."""
    notes, sign = [], 0
    if a["outcome"] != b["outcome"]:
        d = RANK[b["outcome"]] - RANK[a["outcome"]]
        sign = sign or (1 if d > 0 else -1 if d < 0 else 0)
        notes.append(f"{a['outcome']} → {b['outcome']}")
    ra, rb = a.get("recall"), b.get("recall")
    if ra is not None and rb is not None and abs(rb - ra) >= STEP:
        sign = sign or (1 if rb > ra else -1)
        notes.append(f"recall {ra:.2f} → {rb:.2f}")
    for key, what in (("pages_agree", "pages"), ("sections_agree", "sections")):
        if a.get(key) is not None and b.get(key) is not None and a[key] != b[key]:
            sign = sign or (1 if b[key] else -1)
            notes.append(f"{what} {'agree' if b[key] else 'disagree'} now")
    return sign, "; ".join(notes)


def main() -> None:
    before = {r["file"]: r for r in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))}
    after = {r["file"]: r for r in json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))}
    better: dict[str, list[str]] = collections.defaultdict(list)
    worse: dict[str, list[str]] = collections.defaultdict(list)
    for name in sorted(set(before) & set(after)):
        sign, note = change(before[name], after[name])
        if sign > 0:
            better[after[name]["format"]].append(f"`{name}`: {note}")
        elif sign < 0:
            worse[after[name]["format"]].append(f"`{name}`: {note}")
    print(f"{sum(map(len, better.values()))} files better, {sum(map(len, worse.values()))} worse\n")
    for title, groups in (("Worse", worse), ("Better", better)):
        if not groups:
            continue
        print(f"**{title}**\n")
        for fmt, items in sorted(groups.items()):
            print(f"- {fmt} ({len(items)}): " + "; ".join(items))
        print()


if __name__ == "__main__":
    main()
