"""Web page weight and time to first result, measured in a real headless Chromium.

Ingests ``samples/`` into a fresh embedded database (temporary data folder), serves the API with the web page on a
loopback port, and runs a list of Turkish and English questions through the page's search box. For each search
the page itself records (Performance API marks):

- ``kaynak:first-result``: from the search API's answer (JSON parsed) to the results in the DOM;
- ``kaynak:first-highlighted``: from the same answer to the highlighted quotes in the DOM (includes the
  ``/v1/highlights`` round trip);

and the Resource Timing entry of ``/v1/search`` gives the API's own time (request start → response end).
Page weight is the bytes of the HTML, JavaScript, CSS and icon the page loads (and gzip'd, for reference).

    .venv/bin/python benchmarks/bench_web.py                    # hash embedder (fast; what the tests use)
    .venv/bin/python benchmarks/bench_web.py --embedder e5-small --screenshot docs/web-search-tr.png
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # testkit/

QUESTIONS = [
    "Kat malikleri kurulu ne zaman toplanır?",
    "How do I stop a word from being hyphenated?",
    "Bir sözcüğün hecelenmesini nasıl engellerim?",
    "Normanlar hangi ülkede yaşadı?",
    "What is a React component?",
    "yönetim planı nasıl değiştirilir",
    "Super Bowl 50 hangi stadyumda oynandı?",
    "kat mülkiyeti kütüğü",
]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="hash")
    ap.add_argument("--rounds", type=int, default=3, help="times each question is searched")
    ap.add_argument("--screenshot", type=Path, help="save the results of the first question here (1280 wide)")
    ap.add_argument("--lang", default="tr-TR,tr")
    args = ap.parse_args()

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from kaynak.config import load_settings
    from kaynak.context import Context
    from kaynak.store.server import embedded_uri, stop_embedded
    from testkit.servers import running
    from testkit.webapp import make_app

    data = Path(tempfile.mkdtemp(prefix="kaynak-bench-web-"))
    profile = tempfile.mkdtemp(prefix="kaynak-bench-chromium-")
    ctx = Context(load_settings(data_dir=data, database_url=embedded_uri(data), embedder=args.embedder))
    driver = None
    try:
        docs = data / "samples"
        shutil.copytree(REPO / "samples", docs, ignore=shutil.ignore_patterns("SOURCES.md"))
        t0 = time.perf_counter()
        report = ctx.ingest.ingest([docs], "samples")
        print(f"ingest: {report.summary()} ({time.perf_counter() - t0:.1f} s)")
        with running(make_app(ctx)) as url:
            options = webdriver.ChromeOptions()
            options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
            for flag in (
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1280,1000",
                f"--user-data-dir={profile}",
                "--hide-scrollbars",
            ):
                options.add_argument(flag)
            options.add_experimental_option("prefs", {"intl.accept_languages": args.lang})
            service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
            driver = webdriver.Chrome(service=service, options=options)
            driver.get(url + "/")
            WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready"))
            weights = driver.execute_script(
                "const nav = performance.getEntriesByType('navigation')[0];"
                "const res = performance.getEntriesByType('resource').filter(r => r.name.includes('/static/'));"
                "return [[location.pathname, nav.decodedBodySize, nav.encodedBodySize]]"
                ".concat(res.map(r => [new URL(r.name).pathname, r.decodedBodySize, r.encodedBodySize]))"
            )
            import httpx

            raw = {path: httpx.get(url + path).content for path, _, _ in weights}
            total = sum(len(b) for b in raw.values())
            zipped = sum(len(gzip.compress(b, 9)) for b in raw.values())
            print("\npage weight (bytes):")
            for path, body in raw.items():
                print(f"  {path:<22} {len(body):>7}")
            print(f"  {'total':<22} {total:>7}   (gzip -9: {zipped})")

            first, highlighted, api = [], [], []
            for rnd in range(args.rounds):
                for q in QUESTIONS:
                    driver.execute_script(
                        "performance.clearMarks(); performance.clearMeasures();performance.clearResourceTimings()"
                    )
                    before = driver.execute_script("return document.body.dataset.highlighted || ''")
                    box = driver.find_element("id", "q")
                    box.clear()
                    box.send_keys(q + Keys.ENTER)
                    WebDriverWait(driver, 60).until(
                        lambda d, b=before: d.execute_script(
                            "return (document.body.dataset.highlighted || '') !== arguments[0]", b
                        )
                    )
                    m = driver.execute_script(
                        "const g = n => performance.getEntriesByName(n)[0];"
                        "const r = performance.getEntriesByType('resource').find(e => e.name.endsWith('/v1/search'));"
                        "return [g('kaynak:first-result').duration, g('kaynak:first-highlighted').duration,"
                        " r ? r.responseEnd - r.requestStart : null]"
                    )
                    first.append(m[0])
                    highlighted.append(m[1])
                    if m[2] is not None:
                        api.append(m[2])
                    if rnd == 0 and q == QUESTIONS[0] and args.screenshot:
                        args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                        driver.execute_script("document.activeElement.blur()")
                        driver.save_screenshot(str(args.screenshot))
                        print(f"\nscreenshot: {args.screenshot}")
            print(
                f"\n{len(first)} searches ({args.rounds} rounds x {len(QUESTIONS)} questions), "
                f"embedder {args.embedder}, Chromium headless"
            )
            for label, values in (
                ("API /v1/search (request → response end)", api),
                ("API answer → results in DOM (first-result)", first),
                ("API answer → highlighted quotes in DOM", highlighted),
            ):
                if values:
                    print(
                        f"  {label:<46} median {statistics.median(values):6.1f} ms   "
                        f"p95 {pct(values, 0.95):6.1f} ms   max {max(values):6.1f} ms"
                    )
            print(
                f"\nmachine: {platform.machine()}, {os.cpu_count()} logical CPUs, {platform.python_version()}; "
                "shared with other work, so times are indicative"
            )
            print(
                json.dumps(
                    {
                        "page_bytes": total,
                        "page_gzip_bytes": zipped,
                        "first_result_median_ms": statistics.median(first),
                        "first_result_p95_ms": pct(first, 0.95),
                        "highlighted_median_ms": statistics.median(highlighted),
                        "api_median_ms": statistics.median(api) if api else None,
                    }
                )
            )
    finally:
        if driver is not None:
            driver.quit()
        ctx.close()
        stop_embedded(data)
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
