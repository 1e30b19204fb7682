"""Run every benchmark in this folder (``benchmarks/bench_*.py``) and print one combined table.

Each benchmark is a script that prints its own table (Markdown ``| a | b |`` rows, a rich box table, or a plain
table: a header line over a rule of dashes). This
runner starts each in its own process with the same Python, shows its output as it finishes, then prints a
combined Markdown table: one row per data row of every benchmark's tables, with the benchmark's name, its first
column as the item and the other columns as ``header=value``. A benchmark may also print lines
``BENCH_RESULT {"item": …, "metric": …, "value": …, "unit": …}``; these are used instead of its tables.

    python benchmarks/run.py                      # all of them
    python benchmarks/run.py --only search ingest # names containing these words
    python benchmarks/run.py --list
    python benchmarks/run.py --json results.json -- --quick   # args after -- go to every benchmark
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULT_PREFIX = "BENCH_RESULT "
_SEPARATOR = re.compile(r"^[\s|:+\-─━═┼╪╫┿╇╈╋┃│├┤┡┩╞╡╟╢]*$")
_BOX_EDGE = re.compile(r"^\s*[┏┌╭└┗╰┍┎┕┖]")


@dataclass
class BenchOutcome:
    name: str
    path: Path
    returncode: int | None
    seconds: float
    stdout: str
    stderr: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def discover(only: list[str] | None = None, folder: Path = HERE) -> list[Path]:
    found = sorted(folder.glob("bench_*.py"))
    if only:
        found = [p for p in found if any(w.lower() in p.stem.lower() for w in only)]
    return found


def _cells(line: str) -> list[str] | None:
    """The cells of a table row (``|`` or ``│``/``┃`` separated), or None if the line is not one."""
    if _SEPARATOR.match(line) or _BOX_EDGE.match(line):
        return None
    for sep in ("|", "│", "┃"):
        if line.count(sep) >= 2:
            parts = [c.strip() for c in line.strip().strip(sep).split(sep)]
            return parts if len(parts) >= 2 else None
    return None


def parse_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Tables in ``text``: each as (header cells, data rows). A table is a run of consecutive row lines."""
    tables: list[tuple[list[str], list[list[str]]]] = []
    current: list[list[str]] = []

    def close() -> None:
        if len(current) >= 2:
            tables.append((current[0], current[1:]))
        current.clear()

    for line in text.splitlines():
        if _SEPARATOR.match(line) and ("-" in line or "─" in line or "━" in line or "═" in line):
            continue  # header rule inside a table
        cells = _cells(line)
        if cells is None:
            close()
            continue
        if current and len(cells) != len(current[0]):
            close()
        current.append(cells)
    close()
    return tables


def parse_fixed_width(text: str) -> list[tuple[str, list[str]]]:
    """Plain-text tables: a header line, a rule of dashes, rows until a blank line (a second rule may precede a
    totals row). Returns (header, row lines) with runs of spaces collapsed."""
    lines = text.splitlines()
    tables: list[tuple[str, list[str]]] = []
    i = 1
    while i < len(lines):
        if re.fullmatch(r"-{10,}", lines[i].strip()) and lines[i - 1].strip() and "|" not in lines[i - 1]:
            header = " ".join(lines[i - 1].split())
            rows: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip():
                if not re.fullmatch(r"-{10,}", lines[i].strip()):
                    rows.append(" ".join(lines[i].split()))
                i += 1
            if rows:
                tables.append((header, rows))
        i += 1
    return tables


def result_rows(name: str, stdout: str) -> list[dict[str, Any]]:
    """Rows for the combined table: BENCH_RESULT lines if any, else every table's data rows."""
    rows: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            try:
                obj = json.loads(line[len(RESULT_PREFIX) :])
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                value = obj.get("value")
                unit = obj.get("unit") or ""
                rows.append(
                    {
                        "benchmark": name,
                        "item": str(obj.get("item", "")),
                        "values": f"{obj.get('metric', 'value')}={value}{(' ' + unit) if unit else ''}",
                    }
                )
    if rows:
        return rows
    for header, data in parse_tables(stdout):
        for r in data:
            values = "; ".join(f"{h}={v}" for h, v in zip(header[1:], r[1:], strict=False) if v != "")
            rows.append({"benchmark": name, "item": r[0], "values": values})
    for header_line, lines in parse_fixed_width(stdout):
        rows.append({"benchmark": name, "item": "(columns)", "values": header_line})
        for line in lines:
            item, _, rest = line.partition(" ")
            rows.append({"benchmark": name, "item": item, "values": rest})
    return rows


def run_one(path: Path, timeout: float, extra: list[str]) -> BenchOutcome:
    name = path.stem.removeprefix("bench_")
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": os.environ.get("COLUMNS", "160")}
    try:
        proc = subprocess.run(
            [sys.executable, str(path), *extra],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HERE.parent,
            env=env,
        )
        out = BenchOutcome(name, path, proc.returncode, time.perf_counter() - t0, proc.stdout, proc.stderr)
    except subprocess.TimeoutExpired as err:
        stdout = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        out = BenchOutcome(name, path, None, time.perf_counter() - t0, stdout, f"timed out after {timeout:.0f} s")
    out.rows = result_rows(name, out.stdout)
    return out


def combined_table(outcomes: list[BenchOutcome]) -> str:
    lines = ["| benchmark | item | figures |", "| --- | --- | --- |"]
    for o in outcomes:
        if not o.ok:
            why = "timed out" if o.returncode is None else f"failed (exit {o.returncode})"
            last = (o.stderr.strip().splitlines() or [""])[-1][:100].replace("|", "\\|")
            lines.append(f"| {o.name} | {why} | {last} |")
        for r in o.rows:
            lines.append(f"| {r['benchmark']} | {r['item']} | {r['values'].replace('|', '/')} |")
        if o.ok and not o.rows:
            lines.append(f"| {o.name} | (no table found) | ran {o.seconds:.1f} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", help="run benchmarks whose name contains one of these words")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark (default 1800)")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    ap.add_argument("--json", type=Path, help="also write the results to this JSON file")
    ap.add_argument("--quiet", action="store_true", help="print only the combined table")
    args = ap.parse_args(argv)
    paths = discover(args.only)
    if args.list:
        for p in paths:
            print(p.stem.removeprefix("bench_"))
        return 0
    if not paths:
        print("no benchmarks found (benchmarks/bench_*.py)", file=sys.stderr)
        return 1
    outcomes: list[BenchOutcome] = []
    for p in paths:
        print(f"== {p.name} …", file=sys.stderr, flush=True)
        o = run_one(p, args.timeout, extra)
        outcomes.append(o)
        status = "ok" if o.ok else ("timed out" if o.returncode is None else f"exit {o.returncode}")
        print(f"== {p.name}: {status} in {o.seconds:.1f} s", file=sys.stderr, flush=True)
        if not args.quiet:
            print(o.stdout.rstrip())
            if not o.ok:
                print(o.stderr.rstrip()[-2000:], file=sys.stderr)
            print()
    print("## All benchmarks\n")
    print(combined_table(outcomes))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "name": o.name,
                        "ok": o.ok,
                        "returncode": o.returncode,
                        "seconds": round(o.seconds, 2),
                        "rows": o.rows,
                    }
                    for o in outcomes
                ],
                indent=2,
                ensure_ascii=False,
            )
            + "\n",
            encoding="utf-8",
        )
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
