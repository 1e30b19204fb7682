"""Benchmark: loader throughput per format and PDF extraction artifacts, on ../shared/data/docs.

For every sample document (or the folder given with ``--docs``):

* pages per second per format, by wall clock and by CPU time of this process (other work on a shared machine
  inflates wall time; CPU time is what the loader itself costs), with characters per second and the time the
  chunker then needs for the same pages;
* for every PDF: pypdf's line-end hyphens (a word split over two lines, the continuation in lower case, counted in
  pypdf's own ``extract_text`` output, page breaks included) and how many of them are still hyphenated in the
  loaded text (the artifacts), running headers/footers and page numbers removed, pages that failed or had no
  text layer.

    python benchmarks/bench_loaders.py                  # every sample, one pass
    python benchmarks/bench_loaders.py --repeat 3       # best of three passes per file
    python benchmarks/bench_loaders.py --json out.json  # also write the figures as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kaynak.chunking import chunk_pages  # noqa: E402
from kaynak.errors import LoaderError  # noqa: E402
from kaynak.loaders import SUPPORTED_EXTENSIONS, load  # noqa: E402
from kaynak.loaders.pdf import load_pdf  # noqa: E402

sys.path.insert(0, str(ROOT))  # testkit/
from testkit.hyphenation import hyphen_artifacts, line_end_hyphens  # noqa: E402

DOCS = ROOT.parent / "shared" / "data" / "docs"
FORMATS = {".pdf": "pdf", ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".txt": "text",
           ".text": "text", ".html": "html", ".htm": "html", ".xhtml": "html", ".docx": "docx"}  # fmt: skip


def _timed(fn: Any, repeat: int) -> tuple[Any, float, float]:
    """Result of the last call, best wall seconds, best CPU seconds."""
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return result, best_wall, best_cpu


def bench_file(path: Path, repeat: int) -> dict[str, Any]:
    row: dict[str, Any] = {"file": str(path.relative_to(path.parents[1])), "format": FORMATS[path.suffix.lower()]}
    raw: list[str] = []
    try:
        if path.suffix.lower() == ".pdf":

            def run() -> Any:
                raw.clear()
                return load_pdf(path, path.read_bytes(), raw_pages=raw)

        else:

            def run() -> Any:
                return load(path)

        doc, wall, cpu = _timed(run, repeat)
    except LoaderError as err:
        row.update(error=f"{type(err).__name__}: {err.reason}")
        return row
    chunks, chunk_wall, chunk_cpu = _timed(lambda: chunk_pages(doc.pages), repeat)
    row.update(
        pages=len(doc.pages),
        chars=sum(len(p.text) for p in doc.pages),
        bytes=path.stat().st_size,
        wall=wall,
        cpu=cpu,
        chunks=len(chunks),
        chunk_cpu=chunk_cpu,
        chunk_wall=chunk_wall,
        warnings=len(doc.warnings),
        title=doc.title,
    )
    if raw:
        pairs = line_end_hyphens("\n".join(raw))
        clean = "\n".join(p.text for p in doc.pages)
        row.update(
            hyphens=len(pairs),
            artifacts=hyphen_artifacts(pairs, clean),
            running_removed=doc.metadata.get("running_lines_removed", 0),
            failed_pages=len(doc.metadata.get("failed_pages", [])),
            empty_pages=len(doc.metadata.get("pages_without_text", [])),
        )
    return row


def _rate(n: float, seconds: float) -> str:
    return f"{n / seconds:,.1f}" if seconds > 0 else "∞"


def print_tables(rows: list[dict[str, Any]]) -> None:
    ok = [r for r in rows if "error" not in r]
    by_format: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in ok:
        by_format[r["format"]].append(r)
    print("\nLoader throughput per format")
    header = f"{'format':<9} {'files':>5} {'pages':>6} {'MB':>6} {'wall s':>7} {'cpu s':>7} {'pages/s':>9} "
    header += f"{'pages/s cpu':>11} {'chars/s cpu':>12} {'chunk ms cpu':>12}"
    print(header)
    print("-" * len(header))
    totals = {"files": 0, "pages": 0, "bytes": 0, "wall": 0.0, "cpu": 0.0, "chars": 0, "chunk_cpu": 0.0}
    for fmt in sorted(by_format):
        rs = by_format[fmt]
        agg = {k: sum(r[k] for r in rs) for k in ("pages", "bytes", "wall", "cpu", "chars", "chunk_cpu")}
        agg["files"] = len(rs)
        for k in totals:
            totals[k] += agg[k]
        print(
            f"{fmt:<9} {agg['files']:>5} {agg['pages']:>6} {agg['bytes'] / 1e6:>6.2f} {agg['wall']:>7.2f} "
            f"{agg['cpu']:>7.2f} {_rate(agg['pages'], agg['wall']):>9} {_rate(agg['pages'], agg['cpu']):>11} "
            f"{_rate(agg['chars'], agg['cpu']):>12} {agg['chunk_cpu'] * 1000:>12.0f}"
        )
    print("-" * len(header))
    print(
        f"{'all':<9} {totals['files']:>5} {totals['pages']:>6} {totals['bytes'] / 1e6:>6.2f} {totals['wall']:>7.2f} "
        f"{totals['cpu']:>7.2f} {_rate(totals['pages'], totals['wall']):>9} "
        f"{_rate(totals['pages'], totals['cpu']):>11} {_rate(totals['chars'], totals['cpu']):>12} "
        f"{totals['chunk_cpu'] * 1000:>12.0f}"
    )

    pdfs = [r for r in ok if "hyphens" in r]
    if pdfs:
        print("\nPDF extraction: line-end hyphens left as artifacts, running lines removed")
        header = f"{'file':<30} {'pages':>5} {'pages/s cpu':>11} {'hyphens':>8} {'artifacts':>9} {'%':>6} "
        header += f"{'running':>8} {'failed':>6} {'no text':>7}  title"
        print(header)
        print("-" * (len(header) + 30))
        for r in pdfs:
            pct = 100 * r["artifacts"] / r["hyphens"] if r["hyphens"] else 0.0
            print(
                f"{Path(r['file']).name:<30} {r['pages']:>5} {_rate(r['pages'], r['cpu']):>11} {r['hyphens']:>8} "
                f"{r['artifacts']:>9} {pct:>6.1f} {r['running_removed']:>8} {r['failed_pages']:>6} "
                f"{r['empty_pages']:>7}  {r['title'][:50]}"
            )
        hy = sum(r["hyphens"] for r in pdfs)
        art = sum(r["artifacts"] for r in pdfs)
        print(f"{'all PDFs':<30} {'':>5} {'':>11} {hy:>8} {art:>9} {100 * art / max(hy, 1):>6.1f}")

    failed = [r for r in rows if "error" in r]
    if failed:
        print("\nRefused (with the error a user sees)")
        for r in failed:
            print(f"  {r['file']}: {r['error']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DOCS, help="folder of documents (default ../shared/data/docs)")
    parser.add_argument("--repeat", type=int, default=1, help="passes per file; the best is kept")
    parser.add_argument("--json", type=Path, help="also write every row as JSON")
    args = parser.parse_args(argv)
    if not args.docs.is_dir():
        print(f"no documents at {args.docs}", file=sys.stderr)
        return 2
    files = sorted(p for p in args.docs.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)
    files = [p for p in files if p.name not in ("SOURCES.md", "LICENSE-DOCS.md")]
    rows = []
    for path in files:
        row = bench_file(path, max(1, args.repeat))
        rows.append(row)
        status = row.get("error") or f"{row['pages']} pages, {row['cpu']:.2f} s cpu"
        print(f"  {row['file']}: {status}", file=sys.stderr)
    print_tables(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
