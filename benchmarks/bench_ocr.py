"""Benchmark: OCR quality and cost on test scans rendered from known text (testkit/ocr_fixtures.py).

1. Character error rate (CER: edit distance / reference length, whitespace runs as one space) and seconds per
   page through the image loader, for Turkish and English XQuAD paragraphs (three per A4 page, DejaVu Serif
   11 pt) rendered clean at 300 and 200 dpi, "noisy" at 300 dpi (rotated 1.5°, Gaussian grain σ 30, blur
   0.7 px, dust), "noisier" at 200 dpi (2.5°, σ 50, blur 1 px) and "grainy" at 300 dpi (1.5°, σ 80, blur 1 px).
   Turkish pages are read with ``tur+eng`` (a Turkish collection), English with ``eng`` (an English one).
2. Throughput on two cores: two processes OCR pages side by side (what two parse workers do); seconds per page
   is wall time / pages.
3. Peak memory of a long scan: a ``--pages``-page (default 100) image-only PDF (bilevel CCITT G4 pages, as
   office scanners write them) loaded by the PDF loader in a fresh process: peak RSS of that process and of the
   largest Tesseract child, wall time, CER over all pages. A 10-page PDF is measured the same way for contrast.
4. Search check: a scanned PDF of Turkish XQuAD paragraphs (one per page) is ingested (hash embedder, embedded
   PostgreSQL in a temporary folder) next to the same paragraphs as exact text; every XQuAD question about them
   is asked in keyword mode, and we count how often the right page of the right document is the top hit or in
   the top 3 — OCR against the exact text.

    python benchmarks/bench_ocr.py                  # everything (about 10 minutes on 2 shared cores)
    python benchmarks/bench_ocr.py --quick          # fewer pages (about 3 minutes)
    python benchmarks/bench_ocr.py --only cer rss   # some parts: cer, throughput, rss, search
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # testkit/

from kaynak.loaders import LoadOptions  # noqa: E402
from kaynak.loaders.image import load_image  # noqa: E402
from kaynak.loaders.ocr import tesseract_info  # noqa: E402
from testkit.ocr_fixtures import cer, image_bytes, image_pdf, merge_pdfs, paragraphs, render_page  # noqa: E402

CONDITIONS = {
    "clean 300 dpi": {"dpi": 300},
    "clean 200 dpi": {"dpi": 200},
    "noisy 300 dpi": {"dpi": 300, "rotate": 1.5, "noise": 30.0, "blur": 0.7},
    "noisier 200 dpi": {"dpi": 200, "rotate": 2.5, "noise": 50.0, "blur": 1.0},
    "grainy 300 dpi": {"dpi": 300, "rotate": 1.5, "noise": 80.0, "blur": 1.0},
}
LANGS = {"tr": "turkish", "en": "english"}


def _page(lang: str, index: int, per_page: int = 3, **kw: Any) -> tuple[Any, str]:
    texts = [t for _, t in paragraphs(lang, per_page, start=index * per_page)]
    return render_page(texts, seed=index, **kw)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (Tesseract runs as a child)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _ocr_png(args: tuple[str, int, dict[str, Any]]) -> tuple[float, float, float, float]:
    """(CER, wall seconds, confidence, CPU seconds) of one rendered page through the image loader."""
    from kaynak.errors import NoText

    lang, index, cond = args
    img, truth = _page(lang, index, **cond)
    data = image_bytes(img, "PNG", cond.get("dpi", 300))
    t0, c0 = time.perf_counter(), _cpu()
    try:
        doc = load_image(Path(f"page-{lang}-{index}.png"), data, LoadOptions(language=LANGS[lang]))
    except NoText:  # nothing read at all: every character missed
        return 1.0, time.perf_counter() - t0, 0.0, _cpu() - c0
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    return cer(truth, doc.pages[0].text), seconds, doc.metadata["ocr"]["pages"]["1"], cpu


def bench_cer(pages: int) -> list[dict[str, Any]]:
    rows = []
    print(f"\n## CER and seconds per page (one process, {pages} A4 pages of 3 paragraphs per cell)\n")
    print("| language | condition | CER mean | CER worst | wall s/page | CPU s/page | confidence |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for lang in LANGS:
        for name, cond in CONDITIONS.items():
            results = [_ocr_png((lang, i, cond)) for i in range(pages)]
            cers = [r[0] for r in results]
            row = {
                "language": lang,
                "condition": name,
                "cer_mean": statistics.fmean(cers),
                "cer_worst": max(cers),
                "seconds_per_page": statistics.fmean(r[1] for r in results),
                "cpu_seconds_per_page": statistics.fmean(r[3] for r in results),
                "confidence": statistics.fmean(r[2] for r in results),
            }
            rows.append(row)
            print(
                f"| {lang} | {name} | {row['cer_mean']:.2%} | {row['cer_worst']:.2%} | "
                f"{row['seconds_per_page']:.2f} | {row['cpu_seconds_per_page']:.2f} | {row['confidence']:.1f} |",
                flush=True,
            )
    return rows


def bench_throughput(pages: int) -> dict[str, Any]:
    jobs = [("tr", i, CONDITIONS["clean 300 dpi"]) for i in range(pages)]
    t0 = time.perf_counter()
    one = [_ocr_png(j) for j in jobs]
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        two = list(pool.map(_ocr_png, jobs))
    parallel = time.perf_counter() - t0
    out = {
        "pages": pages,
        "one_process_s_per_page": serial / pages,
        "two_processes_s_per_page": parallel / pages,
        "ocr_only_s_per_page_serial": statistics.fmean(r[1] for r in one),
        "ocr_only_s_per_page_parallel": statistics.fmean(r[1] for r in two),
    }
    print(f"\n## Throughput, Turkish clean 300 dpi pages ({pages} pages, rendering included)\n")
    print("| processes | wall s/page | OCR s/page (each process) |")
    print("| --- | --- | --- |")
    print(f"| 1 | {out['one_process_s_per_page']:.2f} | {out['ocr_only_s_per_page_serial']:.2f} |")
    print(f"| 2 | {out['two_processes_s_per_page']:.2f} | {out['ocr_only_s_per_page_parallel']:.2f} |")
    return out


_RSS_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from kaynak.loaders import LoadOptions
from kaynak.loaders.pdf import load_pdf
path = Path(sys.argv[1])
data = path.read_bytes()
t0 = time.perf_counter()
doc = load_pdf(path, data, options=LoadOptions(language="turkish"))
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
# VmHWM: this process's own peak (ru_maxrss would also count the parent's size at fork, which Linux carries over)
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({
    "wall_s": wall,
    "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
    "rss_mb": hwm / 1024,
    "pages": [p.text for p in doc.pages],
    "ocr_pages": len(doc.metadata.get("ocr", {}).get("pages", {})),
    "warnings": doc.warnings[:5],
}))
"""


def _scanned_pdf(path: Path, n: int) -> list[str]:
    """Write an n-page bilevel scan of Turkish paragraphs to ``path``; return each page's true text."""
    truths: list[str] = []
    parts: list[tuple[bytes, list[int]]] = []
    batch: list[Any] = []
    for i in range(n):
        img, truth = _page("tr", i, rotate=0.3 * ((i % 5) - 2))
        truths.append(truth)
        batch.append(img.convert("1"))
        img.close()
        if len(batch) == 10 or i == n - 1:
            parts.append((image_pdf(batch), list(range(len(batch)))))
            batch = []
    path.write_bytes(merge_pdfs(parts))
    return truths


def _tesseract_peak_mb() -> float | None:
    """Peak RSS of one Tesseract run (tur+eng) on a dense 300-dpi A4 page, measured by /usr/bin/time."""
    timer = Path("/usr/bin/time")
    info = tesseract_info()
    if not timer.exists() or info is None:
        return None
    img, _ = _page("tr", 0)
    with tempfile.TemporaryDirectory() as tmp:
        pgm = Path(tmp) / "page.pgm"
        img.save(pgm)
        done = subprocess.run(
            [str(timer), "-f", "%M", info.path, str(pgm), "stdout", "-l", "tur+eng", "--dpi", "300", "tsv"],
            capture_output=True,
            text=True,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            check=False,
        )
    try:
        return int(done.stderr.strip().splitlines()[-1]) / 1024
    except (ValueError, IndexError):
        return None


def bench_rss(pages: int) -> list[dict[str, Any]]:
    rows = []
    tess = _tesseract_peak_mb()
    print("\n## Long scans: image-only PDF (bilevel, 300 dpi), one process, Turkish (tur+eng)\n")
    print(
        "| pages | file MB | wall s | wall s/page | CPU s/page | peak RSS MB (loader) | peak RSS MB (Tesseract) "
        "| CER | OCR'd pages |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted({min(10, pages), pages}):
            path = Path(tmp) / f"scan-{n}.pdf"
            truths = _scanned_pdf(path, n)
            done = subprocess.run(
                [sys.executable, "-c", _RSS_CHILD, str(path), str(ROOT / "src")],
                capture_output=True,
                text=True,
                check=True,
            )
            res = json.loads(done.stdout.strip().splitlines()[-1])
            errors = statistics.fmean(cer(t, p) for t, p in zip(truths, res["pages"], strict=True))
            row = {
                "pages": n,
                "file_mb": path.stat().st_size / 1e6,
                "wall_s": res["wall_s"],
                "s_per_page": res["wall_s"] / n,
                "cpu_s_per_page": res["cpu_s"] / n,
                "rss_mb": res["rss_mb"],
                "tesseract_rss_mb": tess,
                "cer": errors,
                "ocr_pages": res["ocr_pages"],
            }
            rows.append(row)
            print(
                f"| {n} | {row['file_mb']:.1f} | {row['wall_s']:.0f} | {row['s_per_page']:.2f} | "
                f"{row['cpu_s_per_page']:.2f} | "
                f"{row['rss_mb']:.0f} | {tess or 0:.0f} | {errors:.2%} | {row['ocr_pages']} |",
                flush=True,
            )
    return rows


def bench_search(pages: int) -> dict[str, Any]:
    from kaynak.context import Context
    from kaynak.store.server import stop_embedded
    from kaynak.types import LoadedDocument, Page

    shared = ROOT.parent / "shared" / "data" / "retrieval" / "xquad" / "tr"
    paras = paragraphs("tr", pages, start=0)
    ids = {pid: n for n, (pid, _) in enumerate(paras, start=1)}
    queries = {}
    for line in (shared / "queries.jsonl").read_text("utf-8").splitlines():
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels = []
    for line in (shared / "qrels" / "test.tsv").read_text("utf-8").splitlines()[1:]:
        qid, pid, _ = line.split("\t")
        if pid in ids:
            qrels.append((queries[qid], ids[pid]))
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        folder = Path(tmp) / "docs"
        folder.mkdir()
        images = []
        for _, text in paras:
            img, _ = render_page([text])
            images.append(img.convert("1"))
        (folder / "tarama.pdf").write_bytes(image_pdf(images))
        ctx = Context(data_dir=data_dir, embedder="hash", database_url=None)
        try:
            t0 = time.perf_counter()
            report = ctx.ingest.ingest([folder], "scan", language="turkish")
            ingest_s = time.perf_counter() - t0
            assert report.ok, report.failed
            truth = LoadedDocument("tarama", [Page(n, text) for n, (_, text) in enumerate(paras, start=1)])
            ctx.ingest.ingest_documents("exact", [("tarama.pdf", "x", truth)], language="turkish")
            out: dict[str, Any] = {"pages": pages, "questions": len(qrels), "ingest_s": ingest_s}
            for col in ("scan", "exact"):
                top1 = top3 = 0
                for question, page in qrels:
                    hits = ctx.search.search(question, col, mode="keyword", k=3)
                    pages_found = [h.page for h in hits]
                    top1 += bool(pages_found) and pages_found[0] == page
                    top3 += page in pages_found
                out[col] = {"top1": top1 / len(qrels), "top3": top3 / len(qrels)}
            marked = ctx.search.search(qrels[0][0], "scan", mode="keyword", k=1)[0].ocr
            out["hit_ocr_mark"] = marked
        finally:
            ctx.close()
            stop_embedded(data_dir)
    print(f"\n## Search check: {pages} scanned Turkish pages, {len(qrels)} XQuAD questions, keyword mode\n")
    print("| collection | right page first | right page in top 3 |")
    print("| --- | --- | --- |")
    print(f"| scanned PDF (OCR) | {out['scan']['top1']:.1%} | {out['scan']['top3']:.1%} |")
    print(f"| exact text | {out['exact']['top1']:.1%} | {out['exact']['top3']:.1%} |")
    print(f"\nhit.ocr of a scanned hit: {out['hit_ocr_mark']}; ingest with OCR took {out['ingest_s']:.0f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer pages everywhere")
    ap.add_argument("--only", nargs="*", help="cer, throughput, rss, search")
    ap.add_argument("--pages", type=int, default=100, help="pages of the long scan (default 100)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    info = tesseract_info()
    if info is None:
        sys.exit("Tesseract is not installed: apt install tesseract-ocr tesseract-ocr-tur tesseract-ocr-eng")
    parts = set(args.only or ["cer", "throughput", "rss", "search"])
    flags = ""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        flags = " ".join(f for f in ("avx2", "avx512f", "fma") if f" {f}" in cpuinfo)
    except OSError:
        pass
    print(
        f"{info.engine} ({', '.join(info.languages)}), {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, flags: {flags or 'n/a'}; OMP_THREAD_LIMIT=1 per Tesseract; the machine may "
        f"be shared, so compare figures within one run"
    )
    results: dict[str, Any] = {"engine": info.engine}
    if "cer" in parts:
        results["cer"] = bench_cer(2 if args.quick else 4)
    if "throughput" in parts:
        results["throughput"] = bench_throughput(4 if args.quick else 8)
    if "rss" in parts:
        results["rss"] = bench_rss(20 if args.quick else args.pages)
    if "search" in parts:
        results["search"] = bench_search(10 if args.quick else 24)
    print(f"\nbenchmark process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
