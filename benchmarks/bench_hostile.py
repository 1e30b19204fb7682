"""Search latency while hostile files are uploaded, beside the latency without them.

Starts ``kaynak serve``'s app with uvicorn on a loopback port (an embedded PostgreSQL in a temporary data folder,
or KAYNAK_DATABASE_URL), ingests ``samples/``, then for the same number of seconds each:

  baseline:  one client searches in a loop (GET /v1/search, hybrid, k 10), before and again after (noise check);
  hostile:   the same client searches while a second client uploads hostile files one after another: the issue's
             long-run PDF (15,000 letters in one line), a DOCX zip bomb (64 MB of spaces), 50 parts of 9.9 MB,
             a DOCX with lying sizes, billion-laughs XML, and a 2,000-page PDF (real parsing work).

Uploads are parsed by the isolated parse workers (KAYNAK_PARSE_WORKERS, here 1), never in the server process, so
the searches go on; on a machine with few cores they still share the CPU with the parsing.

    .venv/bin/python benchmarks/bench_hostile.py --seconds 20

Prints one JSON object: per phase, searches, median / p95 / max latency (ms), errors; the uploads done (each under
a new name, so nothing is skipped as unchanged or as a remembered failure) with their statuses and median time;
and the ratios hostile / baseline. The machine may be shared: report ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # testkit/

from testkit.hostile.make_corpus import billion_laughs_docx, make_pdf, zip_bomb_docx  # noqa: E402
from testkit.hostile.uploads import fifty_parts_docx, long_run_pdf, lying_docx  # noqa: E402
from testkit.servers import running  # noqa: E402

TOKEN = "bench-hostile"
QUERIES = [
    "kat mülkiyeti yönetim planı",
    "how to prevent hyphenation",
    "Super Bowl 50",
    "component props",
    "Normans in Normandy",
    "kat malikleri kurulu",
]


def cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def hostile_files() -> list[tuple[str, bytes, str]]:
    return [
        ("long-run.pdf", long_run_pdf(), "application/pdf"),
        ("zip-bomb.docx", zip_bomb_docx(), "application/octet-stream"),
        ("fifty-parts.docx", fifty_parts_docx(), "application/octet-stream"),
        ("lying-sizes.docx", lying_docx(), "application/octet-stream"),
        ("billion-laughs.docx", billion_laughs_docx(), "application/octet-stream"),
        (
            "two-thousand-pages.pdf",
            make_pdf([[f"Line {n} of the yearly report"] for n in range(1, 2001)]),
            "application/pdf",
        ),
    ]


def search_loop(url: str, collection: str, stop: threading.Event, out: list[tuple[float, int]]) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            r = client.get(
                "/v1/search",
                params={"q": QUERIES[i % len(QUERIES)], "collections": collection, "mode": "hybrid", "k": 10},
            )
            out.append((time.perf_counter() - t0, r.status_code))
            i += 1


def upload_loop(url: str, stop: threading.Event, files: list[tuple[str, bytes, str]], out: list[Any]) -> None:
    with httpx.Client(base_url=url, timeout=900, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        i = 0
        while not stop.is_set():
            name, data, ctype = files[i % len(files)]
            t0 = time.perf_counter()
            unique = f"{i:04d}-{name}"  # a new name each time: no remembered failure, no unchanged skip
            r = client.post("/v1/collections/hostile/documents", files=[("files", (unique, data, ctype))])
            out.append({"file": name, "status": r.status_code, "s": round(time.perf_counter() - t0, 2)})
            i += 1


def summary(samples: list[tuple[float, int]]) -> dict[str, Any]:
    ms = sorted(s * 1000 for s, _ in samples)
    return {
        "searches": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1),
        "max_ms": round(ms[-1], 1),
        "errors": sum(1 for _, status in samples if status != 200),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--embedder", default="hash", help="hash (default: measures the server) or e5-small")
    args = parser.parse_args()

    from kaynak.config import load_settings
    from kaynak.context import Context
    from kaynak.server import create_app

    data_dir = Path(tempfile.mkdtemp(prefix="kaynak-bench-hostile-"))
    settings = load_settings(
        data_dir=data_dir,
        database_url=os.environ.get("KAYNAK_DATABASE_URL"),
        embedder=args.embedder,
        api_token=TOKEN,
        max_upload_mb=20,
        parse_workers=1,
    )
    ctx = Context(settings)
    try:
        report = ctx.ingest.ingest([REPO / "samples"], "bench", language="turkish")
        files = hostile_files()
        result: dict[str, Any] = {
            "cpu": cpu_flags(),
            "cores": os.cpu_count(),
            "seconds": args.seconds,
            "embedder": args.embedder,
            "documents": len(report.added) + len(report.unchanged),
        }
        with running(create_app(ctx)) as url:
            httpx.get(f"{url}/v1/search", params={"q": "warm up", "collections": "bench"}, timeout=120)
            for phase in ("baseline", "hostile", "baseline_after"):
                stop = threading.Event()
                searches: list[tuple[float, int]] = []
                uploads: list[Any] = []
                threads = [threading.Thread(target=search_loop, args=(url, "bench", stop, searches))]
                if phase == "hostile":
                    threads.append(threading.Thread(target=upload_loop, args=(url, stop, files, uploads)))
                for t in threads:
                    t.start()
                time.sleep(args.seconds)
                stop.set()
                for t in threads:
                    t.join(900)
                result[phase] = summary(searches)
                if uploads:
                    per_file: dict[str, dict[str, Any]] = {}
                    for u in uploads:
                        entry = per_file.setdefault(u["file"], {"count": 0, "statuses": [], "seconds": []})
                        entry["count"] += 1
                        entry["statuses"] = sorted({*entry["statuses"], u["status"]})
                        entry["seconds"].append(u["s"])
                    for entry in per_file.values():
                        entry["median_s"] = round(statistics.median(entry.pop("seconds")), 2)
                    result[phase]["uploads"] = per_file
        b, h = result["baseline"], result["hostile"]
        result["ratio_hostile_over_baseline"] = {
            key: round(h[key] / b[key], 2) for key in ("median_ms", "p95_ms", "max_ms") if b[key]
        }
        print(json.dumps(result, indent=2, ensure_ascii=False))
    finally:
        ctx.close()
        from kaynak.store.server import stop_embedded

        stop_embedded(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
