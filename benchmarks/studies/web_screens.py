"""Screenshots of the web page's main screens in Turkish, at desktop (1366×900) and phone (390×844) width.

Ingests ``samples/`` into a fresh embedded database (temporary data folder, hash embedder) plus a collection with a
failing DOCX, serves the API with the web page on a loopback port, and saves for each width: the search results, a
PDF citation (the hit's page view), the Collections page with the failing file, and an upload error. Written for
issue 28's before/after pictures (docs/web/), so it uses only selectors both versions of the page have.

    .venv/bin/python benchmarks/studies/web_screens.py docs/web --suffix after
    PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/studies/web_screens.py docs/web --suffix before
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # testkit/

TOKEN = "screens-token"
QUESTION = "Kat malikleri kurulu ne zaman toplanır?"
SIZES = {"desktop": (1366, 900), "phone": (390, 844)}


def save(driver: Any, out: Path, name: str, max_width: int = 900) -> None:
    """A screenshot, scaled down and palette-reduced so the PNG stays small."""
    from PIL import Image

    image = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    if image.width > max_width:
        image = image.resize((max_width, round(image.height * max_width / image.width)), Image.LANCZOS)
    image = image.quantize(colors=64)
    out.mkdir(parents=True, exist_ok=True)
    image.save(out / f"{name}.png", optimize=True)
    print(f"  {out / (name + '.png')}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--suffix", default="after")
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

    data = Path(tempfile.mkdtemp(prefix="kaynak-screens-"))
    profile = tempfile.mkdtemp(prefix="kaynak-screens-chromium-")
    ctx = Context(load_settings(data_dir=data, database_url=embedded_uri(data), embedder="hash", api_token=TOKEN))
    driver = None

    def ready(d: Any) -> bool:
        return bool(d.execute_script("return document.body.dataset.ready === '1'"))

    try:
        docs = data / "ornekler"
        shutil.copytree(REPO / "samples", docs, ignore=shutil.ignore_patterns("SOURCES.md"))
        ctx.ingest.ingest([docs], "ornekler", language="turkish")
        mixed = data / "raporlar"
        mixed.mkdir()
        (mixed / "notlar.md").write_text("# Notlar\n\nAidatlar her ayın beşinde ödenir.\n", encoding="utf-8")
        (mixed / "bozuk-sozlesme.docx").write_bytes(b"PK\x03\x04 this is not really a zip archive")
        ctx.ingest.ingest([mixed], "raporlar", language="turkish")
        empty_pdf = data / "bos.pdf"
        empty_pdf.write_bytes(b"")
        with running(make_app(ctx)) as url:
            options = webdriver.ChromeOptions()
            options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
            for flag in (
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--lang=tr",
            ):
                options.add_argument(flag)
            options.add_experimental_option("prefs", {"intl.accept_languages": "tr-TR,tr"})
            service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
            driver = webdriver.Chrome(service=service, options=options)
            wait = WebDriverWait(driver, 30)
            for size, (w, h) in SIZES.items():
                driver.set_window_size(w, h)
                # 1. search results
                driver.get(url + "/?lang=tr")
                wait.until(ready)
                box = driver.find_element("id", "q")
                box.clear()
                box.send_keys(QUESTION + Keys.ENTER)
                wait.until(lambda d: d.execute_script("return !!document.body.dataset.highlighted"))
                driver.execute_script("document.activeElement.blur()")
                save(driver, args.out, f"search-{size}-{args.suffix}")
                # 2. the PDF citation: the first hit's page view (or the PDF tab it opens)
                main_tab = driver.current_window_handle
                opener = driver.execute_script(
                    "const li = document.querySelector('#results > li');"
                    "return li.querySelector('[data-action=page]') || li.querySelector('h3 a')"
                )
                opener.click()
                time.sleep(2.5)
                tabs = [t for t in driver.window_handles if t != main_tab]
                if tabs:
                    driver.switch_to.window(tabs[0])
                    time.sleep(2.0)
                    save(driver, args.out, f"pdf-citation-{size}-{args.suffix}")
                    driver.close()
                    driver.switch_to.window(main_tab)
                else:
                    save(driver, args.out, f"pdf-citation-{size}-{args.suffix}")
                # 3. the Collections page with the failing file
                driver.get(url + "/?lang=tr")
                wait.until(ready)
                driver.find_element("css selector", ".tab[data-view=browse]").click()
                wait.until(
                    lambda d: d.execute_script(
                        "const b = [...document.querySelectorAll('#collections-table button')]"
                        ".find(b => b.textContent === 'raporlar'); if (b) b.click(); return !!b"
                    )
                )
                time.sleep(1.0)
                save(driver, args.out, f"collections-{size}-{args.suffix}")
                # 4. an upload error (an empty PDF)
                driver.execute_script("sessionStorage.setItem('kaynak.token', arguments[0])", TOKEN)
                driver.get(url + "/?lang=tr")
                wait.until(ready)
                wait.until(lambda d: d.find_element("css selector", ".tab[data-view=upload]").is_displayed())
                driver.find_element("css selector", ".tab[data-view=upload]").click()
                driver.find_element("id", "up-collection").send_keys("raporlar")
                driver.find_element("id", "up-files").send_keys(str(empty_pdf))
                driver.find_element("id", "up-submit").click()
                wait.until(
                    lambda d: d.execute_script(
                        "return !document.getElementById('alert').hidden"
                        " || document.getElementById('up-failed').children.length > 0"
                        " || (document.getElementById('up-status').textContent || '').includes('.')"
                    )
                )
                time.sleep(0.5)
                save(driver, args.out, f"upload-error-{size}-{args.suffix}")
                driver.execute_script("sessionStorage.clear()")
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
